# Calibrated budgets (Sudoku): every sampler bisected to sequential's passes ÷ 2…10 on a calibration split,
# decoded on a disjoint test split, compared pairwise (per set), then one who-wins summary.
COMPARE = SUDOKU["compare"]
# a second calibration seed writes beside the default run (same backbone, head and test puzzles)
CALIB = "" if COMPARE["calib_seed"] == 0 else f"-calib{COMPARE['calib_seed']}"
BUDGETS, CEILING = f"budgets{CALIB}", f"ceiling{CALIB}"


rule sudoku_compare_part:
    """One part of a set's comparison: sequential, or one family calibrated and decoded (only the families that read the MI head wait for it)."""
    input:
        model=model_meta("sudoku"),
        head=sudoku_part_head,
        tv_head=sudoku_part_tv_head,
        radcliffe=f"{DATA}/sudoku/radcliffe_curated_5000.csv",
        easy=f"{DATA}/sudoku/hkunlp_easy_1k.csv",
        tracking=TRACKING_READY,
    output:
        part=f"{R}/sudoku/{BUDGETS}/{{cset}}/parts/{{part}}/part.json",
        arrays=f"{R}/sudoku/{BUDGETS}/{{cset}}/parts/{{part}}/part.npz",
    log:
        f"{L}/sudoku/{BUDGETS}/{{cset}}/{{part}}.log",
    benchmark:
        f"{L}/sudoku/{BUDGETS}/{{cset}}/{{part}}.bench.tsv",
    params:
        options=lambda w: sudoku_compare_flags(w.cset),
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        head=head_flag,
        tv_head=tv_head_flag,
        out_dir=parent_dir("part"),
    wildcard_constraints:
        cset="|".join(COMPARE["split_sets"]),
        part="[^/]+",
    priority: sudoku_part_priority
    threads: COMPARE["threads"]  # 1 by default: the parts decode side by side on 2 cores
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=240,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-compare-part --part {wildcards.part} --model {params.model_dir} {params.head} "
        "{params.tv_head} --radcliffe {input.radcliffe} --easy {input.easy} --set {wildcards.cset} "
        "--out-dir {params.out_dir} {params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule sudoku_compare:
    """A set's comparison: its parts merged (compare.split_sets) or every family decoded here; the paired tests, tables and curves."""
    input:
        model=model_meta("sudoku"),
        head=HEAD,
        tv_head=lambda w: tv_head_input(w.cset),
        radcliffe=f"{DATA}/sudoku/radcliffe_curated_5000.csv",
        easy=f"{DATA}/sudoku/hkunlp_easy_1k.csv",
        parts=sudoku_parts_input,
        tracking=TRACKING_READY,
    output:
        budgets=f"{R}/sudoku/{BUDGETS}/{{cset}}/budgets.csv",
        markdown=f"{R}/sudoku/{BUDGETS}/{{cset}}/budgets.md",
        runs=f"{R}/sudoku/{BUDGETS}/{{cset}}/runs.json",
        outcomes=f"{R}/sudoku/{BUDGETS}/{{cset}}/outcomes.npz",
        test=f"{R}/sudoku/{BUDGETS}/{{cset}}/test.csv",
        curve=report(f"{R}/sudoku/{BUDGETS}/{{cset}}/curve.png", caption="../report/budgets.rst", category="Budgets"),
    log:
        f"{L}/sudoku/{BUDGETS}/{{cset}}.log",
    benchmark:
        f"{L}/sudoku/{BUDGETS}/{{cset}}.bench.tsv",
    params:
        options=lambda w: sudoku_compare_flags(w.cset),
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        head_dir=parent_dir("head"),
        tv_head=tv_head_flag,
        out_dir=parent_dir("budgets"),
        parts=lambda w, input: " ".join(["--parts", *(os.path.dirname(p) for p in input.parts)]) if input.parts else "",
    wildcard_constraints:
        cset="|".join(COMPARE["sets"]),
    priority: lambda w: 13 if w.cset in COMPARE["split_sets"] else 10  # a merge: seconds that unblock the figures
    threads: lambda w: 1 if w.cset in COMPARE["split_sets"] else COMPARE["threads"]
    resources:
        gpu=lambda w: 0 if w.cset in COMPARE["split_sets"] else 1,
        mem_mb=4000,
        runtime=240,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-compare {params.parts} --model {params.model_dir} --head {params.head_dir} "
        "{params.tv_head} --radcliffe {input.radcliffe} --easy {input.easy} --set {wildcards.cset} "
        "--out-dir {params.out_dir} {params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule sudoku_budgets:
    input:
        budgets=expand(f"{R}/sudoku/{BUDGETS}/{{s}}/budgets.csv", s=COMPARE["sets"]),
        tracking=TRACKING_READY,
    output:
        report(f"{R}/sudoku/{BUDGETS}.md", caption="../report/budgets.rst", category="Budgets"),
    log:
        f"{L}/sudoku/{BUDGETS}.log",
    benchmark:
        f"{L}/sudoku/{BUDGETS}.bench.tsv",
    params:
        tracking=tracking_flags,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-budgets --inputs {input.budgets} --out {output} {params.tracking} > {log} 2>&1"


rule figure_budgets_summary:
    """Every calibrated family's accuracy against passes, one panel per compared set (docs/record/rivals.md)."""
    input:
        runs=expand(f"{R}/sudoku/{BUDGETS}/{{s}}/runs.json", s=COMPARE["sets"]),
        tracking=TRACKING_READY,
    output:
        f"{R}/sudoku/{BUDGETS}/summary.png",
    log:
        f"{L}/sudoku/{BUDGETS}/summary.log",
    benchmark:
        f"{L}/sudoku/{BUDGETS}/summary.bench.tsv",
    params:
        titles=[f"Sudoku {s}" for s in COMPARE["sets"]],
        tracking=tracking_flags,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi figure-budgets-summary --runs {input.runs} --titles {params.titles:q} --out {output} "
        "{params.tracking} > {log} 2>&1"


rule sudoku_oracle_ceiling:
    input:
        model=model_meta("sudoku"),
        runs=rules.sudoku_compare.output.runs,
        outcomes=rules.sudoku_compare.output.outcomes,
        tracking=TRACKING_READY,
    output:
        json=f"{R}/sudoku/{CEILING}/{{cset}}/ceiling.json",
        markdown=f"{R}/sudoku/{CEILING}/{{cset}}/ceiling.md",
    log:
        f"{L}/sudoku/{CEILING}/{{cset}}.log",
    benchmark:
        f"{L}/sudoku/{CEILING}/{{cset}}.bench.tsv",
    params:
        options=lambda w: cli_flags(SUDOKU["oracle"]
                                    | ({"chunks": f"{R}/sudoku/{CEILING}/{w.cset}.chunks"} if COMPARE["resume_chunks"] else {})),
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        compare_dir=parent_dir("runs"),
        out_dir=parent_dir("json"),
    threads: COMPARE["threads"]
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=600,
    conda:
        ENV
    shell:
        "python -m mdm_mi sudoku-oracle-ceiling --model {params.model_dir} --compare-dir {params.compare_dir} "
        "--out-dir {params.out_dir} {params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule oracle_ceiling:
    """Target: the MI-oracle ceiling on every comparison set (expensive on CPU, not in the default run)."""
    input:
        expand(f"{R}/sudoku/{CEILING}/{{s}}/ceiling.md", s=COMPARE["sets"]),


rule decisive_sudoku:
    """Target of config/decisive_sudoku.yaml (issue 48): the hard comparison, its MI-oracle ceiling, the head's fidelity."""
    input:
        f"{R}/sudoku/{BUDGETS}/hard/budgets.md",
        f"{R}/sudoku/{CEILING}/hard/ceiling.md",
        f"{R}/sudoku/head_fidelity.json",
