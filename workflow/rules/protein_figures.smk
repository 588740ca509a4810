# Protein tables and figures from results already computed (part of `snakemake figures`).

PFIG = f"{R}/figures"
PROTEIN_FIGURES = [
    f"{PFIG}/protein_paper_table.md",
    f"{PFIG}/protein_speed_quality.png",
    f"{PFIG}/protein_mi_map.png",
    f"{PFIG}/protein_head_scatter.png",
]
PROTEIN_MI_RUN = next((r for r in PROTEIN_RUNS if r.startswith("mi-")), next(iter(PROTEIN_RUNS)))


rule protein_table:
    input:
        summaries=PROTEIN_JOBS,
        model=PROTEIN_MODEL,
    output:
        table=f"{P}/table.csv",
        markdown=report(f"{P}/table.md", caption="../report/protein_table.rst", category="Proteins"),
    log:
        f"{PL}/table.log",
    benchmark:
        f"{PL}/table.bench.tsv",
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
        "python -m mdm_mi protein-table --inputs {input.summaries} --model {params.model_dir} "
        "--out {output.table} --markdown {output.markdown} {params.tracking} > {log} 2>&1"


rule protein_paper_table:
    input:
        table=rules.protein_table.output.table,
        model=PROTEIN_MODEL,
    output:
        report(f"{PFIG}/protein_paper_table.md", caption="../report/protein_paper_table.rst", category="Proteins"),
    log:
        f"{L}/figures/protein_paper_table.log",
    benchmark:
        f"{L}/figures/protein_paper_table.bench.tsv",
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
        "python -m mdm_mi protein-paper-table --table {input.table} --model {params.model_dir} "
        "--out {output} {params.tracking} > {log} 2>&1"


rule figure_protein_speed_quality:
    input:
        table=rules.protein_table.output.table,
        model=PROTEIN_MODEL,
    output:
        report(f"{PFIG}/protein_speed_quality.png", caption="../report/protein_speed_quality.rst", category="Proteins"),
    log:
        f"{L}/figures/protein_speed_quality.log",
    benchmark:
        f"{L}/figures/protein_speed_quality.bench.tsv",
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
        "python -m mdm_mi figure-protein-speed-quality --table {input.table} --model {params.model_dir} "
        "--out {output} {params.tracking} > {log} 2>&1"


rule figure_protein_mi:
    input:
        model=PROTEIN_MODEL,
        head=f"{P}/head/meta.json",
        generated=f"{P}/eval/{PROTEIN_MI_RUN}.fasta",
        test=expand(f"{P}/labels/test/shard{{i}}.safetensors", i=range(PMI["n_shards"])),
    output:
        png=report(f"{PFIG}/protein_mi_map.png", caption="../report/protein_mi_map.rst", category="Proteins"),
        csv=f"{PFIG}/protein_mi_map.csv",
    log:
        f"{L}/figures/protein_mi_map.log",
    benchmark:
        f"{L}/figures/protein_mi_map.bench.tsv",
    params:
        job=cli_flags({"device": config["device"], "seed": config["seed"]}),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        head_dir=parent_dir("head"),
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=30,
    conda:
        ENV
    shell:
        "python -m mdm_mi figure-protein-mi --model {params.model_dir} --head {params.head_dir} "
        "--generated {input.generated} --test {input.test} --out {output.png} --csv {output.csv} "
        "{params.job} {params.tracking} > {log} 2>&1"


