# Your own Hugging Face masked LM (config hf; docs/your_model.md): mark the model folder → split and
# encode your sequences → probing labels and the MI head (rules label and train_head of mi.smk, domain
# hf) → calibrated comparison of MI-guided, EB, naive and threshold decoding by cluster JSD on the
# held-out sequences. Off while hf.model is null; `snakemake hf` runs it alone.

HF = config["hf"]
H = f"{R}/hf"
HL = f"{L}/hf"
HF_ON = HF["model"] is not None
HF_MODEL = model_meta("hf")
HF_HEAD = head_file("hf")
HF_TARGETS = [f"{H}/budgets/runs.json", f"{R}/figures/hf_head_scatter.png"] if HF_ON else []


if HF_ON:

    rule import_hf:
        input:
            weights=f"{HF['model']}/config.json",
            tracking=TRACKING_READY,
        output:
            meta=HF_MODEL,
        log:
            f"{HL}/import_hf.log",
        benchmark:
            f"{HL}/import_hf.bench.tsv",
        params:
            options=cli_flags({k: HF[k] for k in ("alphabet", "hidden_layer", "bf16")}),
            tracking=tracking_flags,
            weights=parent_dir("weights"),
            out_dir=parent_dir("meta"),
        threads: 1
        resources:
            mem_mb=4000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi import-hf --weights {params.weights} --out {params.out_dir} {params.options} "
            "{params.tracking} > {log} 2>&1"

    rule hf_data:
        input:
            model=HF_MODEL,
            sequences=HF["sequences"],
            tracking=TRACKING_READY,
        output:
            contexts=expand(f"{H}/data/{{s}}_contexts.npy", s=["train", "heldout"]),
            reference=f"{H}/data/reference.fasta",
            summary=f"{H}/data/summary.json",
        log:
            f"{HL}/data.log",
        benchmark:
            f"{HL}/data.bench.tsv",
        params:
            options=cli_flags({"heldout_fraction": HF["heldout_fraction"], "seed": config["seed"]}),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            out_dir=parent_dir("summary"),
        threads: 1
        resources:
            mem_mb=4000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi hf-data --model {params.model_dir} --sequences {input.sequences} "
            "--out-dir {params.out_dir} {params.options} {params.tracking} > {log} 2>&1"

    rule hf_compare:
        input:
            model=HF_MODEL,
            head=HF_HEAD,
            reference=f"{H}/data/reference.fasta",
            tracking=TRACKING_READY,
        output:
            runs=f"{H}/budgets/runs.json",
        log:
            f"{HL}/compare.log",
        benchmark:
            f"{HL}/compare.bench.tsv",
        params:
            options=cli_flags(HF["compare"] | HF["generate"] | mi_flags(HF["samplers"])),
            job=job_flags(),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            head_dir=parent_dir("head"),
            out_dir=parent_dir("runs"),
        threads: config["threads"]
        resources:
            gpu=1,
            mem_mb=8000,
            runtime=600,
        conda:
            ENV
        shell:
            "python -m mdm_mi hf-compare --model {params.model_dir} --head {params.head_dir} "
            "--reference {input.reference} --out-dir {params.out_dir} {params.options} {params.job} "
            "--threads {threads} {params.tracking} > {log} 2>&1"
