# Sudoku: data → pretrain → evaluate (one job per sampler setting and set) → table.

wildcard_constraints:
    sudoku_set="|".join([*SUDOKU["eval"]["sets"], "oracle"]),
    sudoku_run="|".join(map(re.escape, ALL_RUNS)),


rule prepare_sudoku:
    input:
        radcliffe=f"{DATA}/sudoku/radcliffe_curated_5000.csv",
        easy=f"{DATA}/sudoku/hkunlp_easy_1k.csv",
        tracking=TRACKING_READY,
    output:
        sets=expand(f"{R}/sudoku/data/{{s}}.csv", s=["hard", "easy", "levels", "graded", "oracle"]),
        solutions=f"{R}/sudoku/data/train_solutions.npy",
        heldout=f"{R}/sudoku/data/heldout_solutions.npy",
        summary=f"{R}/sudoku/data/summary.json",
    log:
        f"{L}/sudoku/data.log",
    benchmark:
        f"{L}/sudoku/data.bench.tsv",
    params:
        options=cli_flags(SUDOKU["data"] | {"seed": config["seed"]}),
        tracking=tracking_flags,
        out_dir=parent_dir("summary"),
    priority: 30  # seconds of work that unblock the Sudoku chain: not queued behind the long jobs
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        ENV
    shell:
        "python -m mdm_mi prepare-sudoku --radcliffe {input.radcliffe} --easy {input.easy} "
        "--out-dir {params.out_dir} {params.options} {params.tracking} > {log} 2>&1"


if SUDOKU["backbone"] == "trained":

    rule sudoku_pretrain:
        input:
            solutions=rules.prepare_sudoku.output.solutions,
            tracking=TRACKING_READY,
        output:
            weights=f"{R}/sudoku/model/model.safetensors",
            meta=f"{R}/sudoku/model/meta.json",
        log:
            f"{L}/sudoku/pretrain.log",
        benchmark:
            f"{L}/sudoku/pretrain.bench.tsv",
        params:
            options=cli_flags(SUDOKU["model"] | SUDOKU["train"]),
            job=job_flags(),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        threads: config["threads"]
        resources:
            gpu=1,
            mem_mb=8000,
            runtime=600,
        conda:
            ENV
        shell:
            "python -m mdm_mi sudoku-pretrain --solutions {input.solutions} --out {params.out_dir} "
            "{params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"

rule sudoku_evaluate:
    input:
        model=model_meta("sudoku"),
        puzzles=f"{R}/sudoku/data/{{sudoku_set}}.csv",
        head=lambda w: HEAD if ALL_RUNS[w.sudoku_run]["sampler"] in HEAD_SAMPLERS else [],
        tracking=TRACKING_READY,
    output:
        summary=f"{R}/sudoku/eval/{{sudoku_set}}/{{sudoku_run}}.json",
        per_puzzle=f"{R}/sudoku/eval/{{sudoku_set}}/{{sudoku_run}}.csv",
    log:
        f"{L}/sudoku/eval/{{sudoku_set}}/{{sudoku_run}}.log",
    benchmark:
        f"{L}/sudoku/eval/{{sudoku_set}}/{{sudoku_run}}.bench.tsv",
    params:
        sampler=lambda w: cli_flags(ALL_RUNS[w.sudoku_run]),
        head=lambda w, input: f"--head {os.path.dirname(input.head)}" if input.head else "",
        options=cli_flags({k: v for k, v in SUDOKU["eval"].items() if k != "sets"}),
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    threads: 1  # decoding jobs run side by side, one per core
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=120,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-evaluate --model {params.model_dir} --puzzles {input.puzzles} "
        "--out {output.summary} --per-puzzle {output.per_puzzle} {params.sampler} {params.head} {params.options} "
        "{params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule sudoku_table:
    input:
        EVAL_JOBS,
    output:
        table=report(f"{R}/sudoku/table.csv", caption="../report/sudoku_table.rst", category="Sudoku"),
        markdown=report(f"{R}/sudoku/table.md", caption="../report/sudoku_table.rst", category="Sudoku"),
    log:
        f"{L}/sudoku/table.log",
    benchmark:
        f"{L}/sudoku/table.bench.tsv",
    params:
        tracking=tracking_flags,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-table --inputs {input} --out {output.table} --markdown {output.markdown} "
        "{params.tracking} > {log} 2>&1"

