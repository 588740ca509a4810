# Calibrated budgets (proteins): every parallel sampler bisected to sequential's passes ÷ 2…10 on
# calibration lengths, decoded at those settings (one job per part), merged and compared by cluster JSD;
# with a family (protein.data.source: family), the exact-MI oracle at mi*'s settings beside the head.

# sequential, then one job per calibrated family (mdm_mi.evaluation.calibrate.Family.slug): decoded side by side
PROTEIN_COMPARE_PARTS = protein_compare_parts()
PROTEIN_MI_PARTS = [p for p in PROTEIN_COMPARE_PARTS if p.startswith("mi-l")]  # Algorithm 1 at each λ: the oracle's settings


rule protein_compare_part:
    input:
        model=PROTEIN_MODEL,
        head=PROTEIN_HEAD,
        tv_head=PROTEIN_TV_HEAD,
        reference=f"{P}/data/reference.fasta",
        embedder=EMBEDDER_INPUT,
        tracking=TRACKING_READY,
    output:
        part=f"{P}/budgets/parts/{{part}}/part.json",
        emb=f"{P}/budgets/parts/{{part}}/emb.npz",
    log:
        f"{PL}/budgets/{{part}}.log",
    benchmark:
        f"{PL}/budgets/{{part}}.bench.tsv",
    params:
        options=lambda w: protein_part_flags(w.part),
        embedder=embedder_flag,
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        head_dir=parent_dir("head"),
        tv_head=tv_head_flag,
        out_dir=parent_dir("part"),
    wildcard_constraints:
        part="|".join(map(re.escape, PROTEIN_COMPARE_PARTS)),
    priority: lambda w: 9 if w.part == "sequential" else 10  # the critical path, ahead of the Sudoku comparisons; the short part last
    threads: 1  # the parts decode side by side, and beside the Sudoku comparisons on 2 cores
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=300,
    conda:
        ENV
    shell:
        "python -m mdm_mi protein-compare-part --part {wildcards.part} --model {params.model_dir} "
        "--head {params.head_dir} {params.tv_head} --reference {input.reference} --out-dir {params.out_dir} {params.options} "
        "{params.embedder} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule protein_compare:
    input:
        model=PROTEIN_MODEL,
        head=PROTEIN_HEAD,
        reference=f"{P}/data/reference.fasta",
        parts=expand(f"{P}/budgets/parts/{{part}}/part.json", part=PROTEIN_COMPARE_PARTS),
        tv_head=PROTEIN_TV_HEAD,
        embedder=EMBEDDER_INPUT,
        tracking=TRACKING_READY,
    output:
        budgets=f"{P}/budgets/budgets.csv",
        markdown=report(f"{P}/budgets/budgets.md", caption="../report/budgets.rst", category="Budgets"),
        runs=f"{P}/budgets/runs.json",
    log:
        f"{PL}/budgets.log",
    benchmark:
        f"{PL}/budgets.bench.tsv",
    params:
        options=protein_compare_flags(merge=True),
        embedder=embedder_flag,
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        head_dir=parent_dir("head"),
        tv_head=tv_head_flag,
        out_dir=parent_dir("budgets"),
        parts=lambda w, input: " ".join(os.path.dirname(p) for p in input.parts),
    priority: 10
    threads: 1
    resources:
        gpu=1,  # embeds the reference with the backbone for the cluster-JSD bootstrap
        mem_mb=4000,
        runtime=60,
    conda:
        ENV
    shell:
        "python -m mdm_mi protein-compare --parts {params.parts} --model {params.model_dir} --head {params.head_dir} "
        "{params.tv_head} "
        "--reference {input.reference} --out-dir {params.out_dir} {params.options} {params.embedder} {params.job} "
        "--threads {threads} {params.tracking} > {log} 2>&1"


if FAMILY:

    rule protein_oracle_ceiling:
        """The MI oracle (certified probing MI in Algorithm 1) beside the head and sequential, per sequence."""
        input:
            model=PROTEIN_MODEL,
            head=PROTEIN_HEAD,
            parts=expand(f"{P}/budgets/parts/{{part}}/part.json", part=PROTEIN_MI_PARTS),
            splits=FAMILY_SPLITS,
            data=f"{P}/data/summary.json",
            tracking=TRACKING_READY,
        output:
            json=f"{P}/ceiling/ceiling.json",
            markdown=report(f"{P}/ceiling/ceiling.md", caption="../report/family_table.rst", category="Budgets"),
        log:
            f"{PL}/ceiling.log",
        benchmark:
            f"{PL}/ceiling.bench.tsv",
        params:
            options=cli_flags(PROTEIN["oracle"] | picked(PROTEIN["generate"], DecodeFlags)),
            job=job_flags(),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            head_dir=parent_dir("head"),
            parts=lambda w, input: " ".join(os.path.dirname(p) for p in input.parts),
            data_dir=parent_dir("data"),
            out_dir=parent_dir("json"),
        priority: 10  # starts once the MI-guided parts are done, beside the other parts: not at the chain's end
        threads: 1
        resources:
            gpu=1,
            mem_mb=4000,
            runtime=600,
        conda:
            ENV
        shell:
            "python -m mdm_mi protein-oracle-ceiling --model {params.model_dir} --head {params.head_dir} "
            "--parts {params.parts} --data-dir {params.data_dir} --out-dir {params.out_dir} "
            "{params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"
