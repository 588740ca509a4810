# Proteins: data → protein MDM (a small ESM-C trained here or shipped, or ESM-C 300M) → probing labels →
# MI head → unconditional generation with every sampler (one job per setting). The data come
# from one Pfam family (protein.data.source: family, rule prepare_family in protein_family.smk) or from
# UniRef50 + CATH (generic, rule protein_data below); both write the same files to {P}/data.

P = f"{R}/protein"
PL = f"{L}/protein"
PMI = PROTEIN["mi"]
FAMILY = PROTEIN["data"]["source"] == "family"
PROTEIN_MODEL = f"{P}/model/meta.json"
ESMC_WEIGHTS = PROTEIN["esmc_weights"] or f"{PROTEIN['esmc_dir']}/esmc_300m_2024_12_v0.pth"


PROTEIN_RUNS = decode_runs(PROTEIN["samplers"])
PROTEIN_JOBS = expand(f"{P}/eval/{{r}}.json", r=PROTEIN_RUNS)


wildcard_constraints:
    protein_run="|".join(map(re.escape, PROTEIN_RUNS)),


if not FAMILY:

    rule protein_data:
        input:
            train=f"{DATA}/protein/train_uniref50_cath.fasta",
            reference=f"{DATA}/protein/uniref50_len50-100.fasta",
            tracking=TRACKING_READY,
        output:
            fasta=expand(f"{P}/data/{{s}}.fasta", s=["train", "heldout", "reference", "reference2"]),
            contexts=expand(f"{P}/data/{{s}}_contexts.npy", s=["train", "heldout"]),
            summary=f"{P}/data/summary.json",
        log:
            f"{PL}/data.log",
        benchmark:
            f"{PL}/data.bench.tsv",
        params:
            options=cli_flags({k: v for k, v in PROTEIN["data"].items() if k != "source"} | {"seed": config["seed"]}),
            tracking=tracking_flags,
            out_dir=parent_dir("summary"),
        priority: 30  # seconds of work that unblock the protein chain: not queued behind the long jobs
        threads: 1
        resources:
            mem_mb=2000,
            runtime=20,
        conda:
            ENV
        shell:
            "python -m mdm_mi protein-data --train-fasta {input.train} --reference-fasta {input.reference} "
            "--out-dir {params.out_dir} {params.options} {params.tracking} > {log} 2>&1"


# protein-pretrain's optional inputs: the aligned training split (sequence weights) and the validation
# split (checkpoint selection), only when the training keys that read them are on
PRETRAIN_INPUTS = ({"alignment": f"{P}/data/train.a2m"} if PROTEIN["train"]["reweight_identity"] else {}) | (
    {"val": f"{P}/data/reference2.fasta" if FAMILY else f"{P}/data/heldout.fasta"}
    if PROTEIN["train"]["eval_every"]
    else {}
)


if PROTEIN["backbone"] == "trained":

    rule protein_pretrain:
        input:
            train=f"{P}/data/train.fasta",
            extra=list(PRETRAIN_INPUTS.values()),
            tracking=TRACKING_READY,
        output:
            weights=f"{SEQUENCE_MODEL}/model.safetensors",
            meta=f"{SEQUENCE_MODEL}/meta.json",
        log:
            f"{PL}/pretrain.log",
        benchmark:
            f"{PL}/pretrain.bench.tsv",
        params:
            options=cli_flags(
                PROTEIN["model"] | PROTEIN["train"] | ({"whole_sequences": True} if FAMILY else {}) | PRETRAIN_INPUTS
            ),
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
            "python -m mdm_mi protein-pretrain --train {input.train} --out {params.out_dir} "
            "{params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"

if PROTEIN["backbone"] == "trained" and COLUMNS:

    rule column_pretrain:
        input:
            alignment=f"{P}/data/train.a2m",
            val=f"{P}/data/val.a2m",
            tracking=TRACKING_READY,
        output:
            weights=f"{P}/model/model.safetensors",
            meta=PROTEIN_MODEL,
        log:
            f"{PL}/column_pretrain.log",
        benchmark:
            f"{PL}/column_pretrain.bench.tsv",
        params:
            options=cli_flags(PROTEIN["columns"]["model"] | PROTEIN["columns"]["train"]),
            job=job_flags(),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        threads: 1  # a 1.3M-parameter model: on 2 shared cores two threads ran 5x slower than one (2026-12-03)
        resources:
            gpu=1,
            mem_mb=4000,
            runtime=120,
        conda:
            ENV
        shell:
            "python -m mdm_mi column-pretrain --alignment {input.alignment} --val {input.val} --out {params.out_dir} "
            "{params.options} {params.job} --threads {threads} {params.tracking} > {log} 2>&1"

elif PROTEIN["backbone"] == "esmc-300m":

    if not PROTEIN["esmc_weights"]:

        rule download_esmc:
            output:
                ESMC_WEIGHTS,
            log:
                f"{L}/download_esmc.log",
            benchmark:
                f"{L}/download_esmc.bench.tsv",
            params:
                dest=PROTEIN["esmc_dir"],
            threads: 1
            resources:
                mem_mb=2000,
                runtime=60,
            conda:
                ENV
            shell:
                "python -m mdm_mi download-esmc --dest {params.dest} > {log} 2>&1"

    rule import_esmc:
        input:
            weights=ESMC_WEIGHTS,
            tracking=TRACKING_READY,
        output:
            meta=PROTEIN_MODEL,
        log:
            f"{PL}/import_esmc.log",
        benchmark:
            f"{PL}/import_esmc.bench.tsv",
        params:
            options=cli_flags({"hidden_layer": PROTEIN["model"]["hidden_layer"], "esmc_bf16": PROTEIN["esmc_bf16"]}),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        threads: 1
        resources:
            mem_mb=8000,
            runtime=30,
        conda:
            ENV
        shell:
            "python -m mdm_mi import-esmc --weights {input.weights} --out {params.out_dir} "
            "{params.options} {params.tracking} > {log} 2>&1"


rule generate:
    input:
        model=PROTEIN_MODEL,
        reference=f"{P}/data/reference.fasta",
        reference2=f"{P}/data/reference2.fasta",
        head=lambda w: PROTEIN_HEAD if PROTEIN_RUNS[w.protein_run]["sampler"] in HEAD_SAMPLERS else [],
        embedder=EMBEDDER_INPUT,
        tracking=TRACKING_READY,
    output:
        summary=f"{P}/eval/{{protein_run}}.json",
        fasta=f"{P}/eval/{{protein_run}}.fasta",
    log:
        f"{PL}/eval/{{protein_run}}.log",
    benchmark:
        f"{PL}/eval/{{protein_run}}.bench.tsv",
    params:
        sampler=lambda w: cli_flags(PROTEIN_RUNS[w.protein_run]),
        head=lambda w, input: f"--head {os.path.dirname(input.head)}" if input.head else "",
        options=cli_flags(PROTEIN["generate"]),
        embedder=embedder_flag,
        job=job_flags(),
        tracking=tracking_flags,
        model_dir=parent_dir("model"),
    priority: 5  # after the comparison's parts, before the chain's end: short jobs that fill the cores
    threads: 1
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=240,
    conda:
        ENV
    shell:
        "python -m mdm_mi generate --model {params.model_dir} --reference {input.reference} "
        "--reference2 {input.reference2} --out {output.fasta} --summary {output.summary} {params.sampler} "
        "{params.head} {params.options} {params.embedder} --quiet {params.job} --threads {threads} {params.tracking} "
        "> {log} 2>&1"
