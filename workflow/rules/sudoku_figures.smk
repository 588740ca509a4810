# Sudoku figures and tables from results already computed (part of `snakemake figures`).

FIG = f"{R}/figures"
SUDOKU_FIGURES = [
    *expand(f"{FIG}/sudoku_speed_quality_{{s}}.png", s=SUDOKU["eval"]["sets"]),
    f"{FIG}/sudoku_paper_table.md",
    f"{FIG}/sudoku_mi_map.png",
    f"{FIG}/sudoku_head_scatter.png",
]


rule figure_speed_quality:
    input:
        table=rules.sudoku_table.output.table,
        model=model_meta("sudoku"),
    output:
        report(
            f"{FIG}/sudoku_speed_quality_{{sudoku_set}}.png",
            caption="../report/speed_quality.rst",
            category="Sudoku",
        ),
    log:
        f"{L}/figures/speed_quality_{{sudoku_set}}.log",
    benchmark:
        f"{L}/figures/speed_quality_{{sudoku_set}}.bench.tsv",
    params:
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi figure-speed-quality --table {input.table} --set {wildcards.sudoku_set} "
        "--model {params.model_dir} --out {output} {params.tracking} > {log} 2>&1"


rule paper_table:
    input:
        table=rules.sudoku_table.output.table,
        model=model_meta("sudoku"),
    output:
        report(f"{FIG}/sudoku_paper_table.md", caption="../report/paper_table.rst", category="Sudoku"),
    log:
        f"{L}/figures/paper_table.log",
    benchmark:
        f"{L}/figures/paper_table.bench.tsv",
    params:
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi paper-table --table {input.table} --set hard --model {params.model_dir} "
        "--out {output} {params.tracking} > {log} 2>&1"


rule figure_mi_map:
    input:
        model=model_meta("sudoku"),
        head=f"{R}/sudoku/head/meta.json",
        puzzles=f"{R}/sudoku/data/hard.csv",
    output:
        png=report(f"{FIG}/sudoku_mi_map.png", caption="../report/mi_map.rst", category="MI"),
        csv=report(f"{FIG}/sudoku_mi_map.csv", caption="../report/mi_map_values.rst", category="MI"),
    log:
        f"{L}/figures/mi_map.log",
    benchmark:
        f"{L}/figures/mi_map.bench.tsv",
    params:
        job=cli_flags({"device": config["device"]}),
        tracking=tracking_flags,
        head_dir=parent_dir("head"),
        model_dir=parent_dir("model"),
    threads: config["threads"]
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=30,
    conda:
        ENV
    shell:
        "python -m mdm_mi figure-mi-map --model {params.model_dir} --head {params.head_dir} "
        "--puzzles {input.puzzles} --out {output.png} --csv {output.csv} {params.job} "
        "{params.tracking} > {log} 2>&1"
