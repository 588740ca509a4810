# Mutual information, one rule per stage for every domain ({domain} = sudoku | protein | hf): probing labels
# (scatter over shards) → MI head → fidelity → scatter figure. Labels come in three splits: train
# (from the training sequences), and val (choosing the head's size, steps and number of contexts) and
# test (the reported fidelity only), the two disjoint parts of one draw of distinct held-out contexts.

MI_CONFIG = {"sudoku": SUDOKU["mi"], "protein": PROTEIN["mi"], "hf": config["hf"]["mi"]}
LABEL_SOURCE = {"sudoku": "{part}_solutions.npy",  # in {R}/{domain}/data/; a column model's contexts are aligned rows
                "protein": "{part}_column_contexts.npy" if COLUMNS else "{part}_contexts.npy", "hf": "{part}_contexts.npy"}
HEAD_TARGETS = {"head": "mi", "tv_head": "tv"}  # rule train_head's folders: the MI head, DEMASK's TV head (docs/record/rivals.md)
LABEL_RESOURCES = {"sudoku": {"mem_mb": 4000, "runtime": 240}, "protein": {"mem_mb": 8000, "runtime": 480},
                   "hf": {"mem_mb": 8000, "runtime": 480}}


rule label:
    input:
        model=lambda w: model_meta(w.domain),
        sequences=lambda w: f"{R}/{w.domain}/data/"
        + LABEL_SOURCE[w.domain].format(part="train" if w.split == "train" else "heldout"),
        tracking=TRACKING_READY,
    output:
        f"{R}/{{domain}}/labels/{{split}}/shard{{shard}}.safetensors",
    log:
        f"{L}/{{domain}}/labels/{{split}}/shard{{shard}}.log",
    benchmark:
        f"{L}/{{domain}}/labels/{{split}}/shard{{shard}}.bench.tsv",
    params:
        options=lambda w: label_options(MI_CONFIG[w.domain], w.split),
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    wildcard_constraints:
        domain=DOMAINS,
        split=LABEL_SPLITS,
        shard=r"\d+",
    priority: lambda w: 21 if w.split == "train" else 20  # labels gate every comparison; the long train shards first
    threads: 1  # shards run side by side, one per core
    resources:
        gpu=1,
        mem_mb=lambda w: LABEL_RESOURCES[w.domain]["mem_mb"],
        runtime=lambda w: LABEL_RESOURCES[w.domain]["runtime"],
    conda:
        ENV
    shell:
        "python -m mdm_mi label --model {params.model_dir} --sequences {input.sequences} "
        "--shard {wildcards.shard} {params.options} --out {output} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule train_head:
    input:
        model=lambda w: model_meta(w.domain),
        train=lambda w: label_shards(w.domain, "train"),
        val=lambda w: label_shards(w.domain, "val"),
        test=lambda w: label_shards(w.domain, "test"),
        tracking=TRACKING_READY,
    output:
        head=f"{R}/{{domain}}/{{head}}/model.safetensors",
        meta=f"{R}/{{domain}}/{{head}}/meta.json",
        fidelity=report(f"{R}/{{domain}}/{{head}}_fidelity.json", caption="../report/head_fidelity.rst", category="MI"),
        pairs=f"{R}/{{domain}}/{{head}}_pairs.csv",
    log:
        f"{L}/{{domain}}/train_{{head}}.log",
    benchmark:
        f"{L}/{{domain}}/train_{{head}}.bench.tsv",
    params:
        options=lambda w: cli_flags(MI_CONFIG[w.domain]["head"] | MI_CONFIG[w.domain]["head_train"]),
        target=lambda w: HEAD_TARGETS[w.head],
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
        out_dir=parent_dir("meta"),
    wildcard_constraints:
        domain=DOMAINS,
        head="|".join(HEAD_TARGETS),
    priority: 20  # the labels and heads gate every comparison: scheduled before the fixed grid
    threads: 1  # a small model: runs beside another job rather than holding both cores of a 2-core machine
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    conda:
        ENV
    shell:
        "python -m mdm_mi train-head --target {params.target} --model {params.model_dir} --labels {input.train} "
        "--val {input.val} --test {input.test} --out {params.out_dir} --fidelity {output.fidelity} "
        "--pairs {output.pairs} {params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule figure_scatter:
    input:
        pairs=f"{R}/{{domain}}/head_pairs.csv",
        fidelity=f"{R}/{{domain}}/head_fidelity.json",
        model=lambda w: model_meta(w.domain),
    output:
        report(f"{R}/figures/{{domain}}_head_scatter.png", caption="../report/scatter.rst", category="MI"),
    log:
        f"{L}/figures/{{domain}}_scatter.log",
    benchmark:
        f"{L}/figures/{{domain}}_scatter.bench.tsv",
    params:
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    wildcard_constraints:
        domain=DOMAINS,
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi figure-scatter --pairs {input.pairs} --fidelity {input.fidelity} "
        "--model {params.model_dir} --out {output} {params.tracking} > {log} 2>&1"
