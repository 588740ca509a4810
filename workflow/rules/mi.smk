# Mutual information on Sudoku: probing labels (scatter over shards) → MI head → fidelity.
# Labels come in three splits: train (from the training grids), and val (choosing the head's size,
# steps and number of contexts) and test (the reported fidelity only), the two disjoint parts of one
# draw of distinct held-out contexts (real Radcliffe solutions).

MI = SUDOKU["mi"]
HEAD = f"{R}/sudoku/head/model.safetensors"
SHARDS = range(MI["n_shards"])


rule sudoku_label:
    input:
        model=rules.sudoku_pretrain.output.meta,
        sequences=lambda w: f"{R}/sudoku/data/{'train' if w.split == 'train' else 'heldout'}_solutions.npy",
        tracking=TRACKING_READY,
    output:
        f"{R}/sudoku/labels/{{split}}/shard{{shard}}.safetensors",
    log:
        f"{L}/sudoku/labels/{{split}}/shard{{shard}}.log",
    params:
        options=lambda w: label_options(MI, w.split),
        job=job_flags(),
        tracking=tracking_flags("sudoku_label"),
        model_dir=parent_dir("model"),
    wildcard_constraints:
        split=LABEL_SPLITS,
        shard=r"\d+",
    threads: 1  # shards run side by side, one per core
    resources:
        gpu=1,
        mem_mb=4000,
        runtime=240,
    conda:
        "../../envs/mdm-mi.yaml"
    shell:
        "python -m mdm_mi label --model {params.model_dir} --sequences {input.sequences} "
        "--shard {wildcards.shard} {params.options} --out {output} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"


rule sudoku_train_head:
    input:
        model=rules.sudoku_pretrain.output.meta,
        train=expand(f"{R}/sudoku/labels/train/shard{{i}}.safetensors", i=SHARDS),
        val=expand(f"{R}/sudoku/labels/val/shard{{i}}.safetensors", i=SHARDS),
        test=expand(f"{R}/sudoku/labels/test/shard{{i}}.safetensors", i=SHARDS),
        tracking=TRACKING_READY,
    output:
        head=HEAD,
        meta=f"{R}/sudoku/head/meta.json",
        fidelity=report(f"{R}/sudoku/head_fidelity.json", caption="../report/head_fidelity.rst", category="MI"),
        pairs=f"{R}/sudoku/head_pairs.csv",
    log:
        f"{L}/sudoku/train_head.log",
    params:
        options=cli_flags(MI["head"] | MI["head_train"]),
        job=job_flags(),
        tracking=tracking_flags("sudoku_train_head"),
        model_dir=parent_dir("model"),
        out_dir=parent_dir("meta"),
    threads: config["threads"]
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=120,
    conda:
        "../../envs/mdm-mi.yaml"
    shell:
        "python -m mdm_mi train-head --model {params.model_dir} --labels {input.train} "
        "--val {input.val} --test {input.test} --out {params.out_dir} --fidelity {output.fidelity} "
        "--pairs {output.pairs} {params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"
