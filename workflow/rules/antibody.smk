# AntiBERTy on natural human VH (docs/record/antibody.md; config antibody):
#   snakemake antibody --cores 2 --configfile config/antibody.yaml
# import_antiberty (pickle read with weights_only=True, written once as safetensors with a MANIFEST) →
# antibody_data (split by lineage: label contexts, calibration, test) → labels and the MI head (rules
# label and train_head of mi.smk, domain hf, sized by hf.mi) → antibody_compare for each set (CDR-H3;
# all three CDRs): samplers calibrated to sequential's passes ÷ d, paired by context → the MI-map
# figure with the ranks of known pairs. The run's hf domain holds AntiBERTy, so these rules are off
# while hf.model names another model.

AB = config["antibody"]
A = f"{R}/antibody"
AL = f"{L}/antibody"
AB_MODEL = model_meta("hf")
AB_DATA = f"{R}/hf/data"
ANTIBODY_FIGURES = [] if HF_ON else [
    *expand(f"{A}/{{set}}/budgets.png", set=AB["sets"]),
    f"{R}/figures/antibody_mi_map.png",
    f"{R}/figures/hf_head_scatter.png",
]
ANTIBODY_TARGETS = [*expand(f"{A}/{{set}}/budgets.md", set=AB["sets"]), *ANTIBODY_FIGURES]





if not HF_ON:

    rule import_antiberty:
        input:
            tracking=TRACKING_READY,
        output:
            meta=AB_MODEL,
            manifest=f"{R}/hf/model/MANIFEST.json",
        log:
            f"{AL}/import_antiberty.log",
        benchmark:
            f"{AL}/import_antiberty.bench.tsv",
        params:
            options=cli_flags({"source": AB["source"], "hidden_layer": AB["hidden_layer"]}),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        threads: 1
        resources:
            mem_mb=4000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi import-antiberty --out {params.out_dir} {params.options} {params.tracking} > {log} 2>&1"

    rule antibody_data:
        input:
            model=AB_MODEL,
            tsv=AB["tsv"],
            tracking=TRACKING_READY,
        output:
            contexts=expand(f"{AB_DATA}/{{s}}_contexts{{ext}}", s=["train", "heldout"], ext=[".npy", ".json", "_maskable.npy"]),
            tables=expand(f"{AB_DATA}/{{s}}.tsv", s=["labels", "calibration", "test"]),
            summary=f"{AB_DATA}/summary.json",
        log:
            f"{AL}/data.log",
        benchmark:
            f"{AL}/data.bench.tsv",
        params:
            options=cli_flags({k: AB[k] for k in ("calibration_fraction", "test_fraction", "label_scopes", "scope_weights")}
                              | {"seed": config["seed"]}),
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
            "python -m mdm_mi antibody-data --model {params.model_dir} --tsv {input.tsv} --out-dir {params.out_dir} "
            "{params.options} {params.tracking} > {log} 2>&1"

    rule antibody_compare:
        input:
            model=AB_MODEL,
            head=head_file("hf"),
            tv_head=lambda w: antibody_tv_head(w.set),
            calibration=f"{AB_DATA}/calibration.tsv",
            test=f"{AB_DATA}/test.tsv",
            tracking=TRACKING_READY,
        output:
            budgets=f"{A}/{{set}}/budgets.md",
            runs=f"{A}/{{set}}/runs.json",
            figure=report(f"{A}/{{set}}/budgets.png", caption="../report/antibody_budgets.rst", category="antibody"),
        log:
            f"{AL}/{{set}}/compare.log",
        benchmark:
            f"{AL}/{{set}}/compare.bench.tsv",
        params:
            options=lambda w: antibody_compare_options(w.set),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            head_dir=parent_dir("head"),
            tv_head=tv_head_flag,
            data_dir=parent_dir("test"),
            out_dir=parent_dir("runs"),
        wildcard_constraints:
            set="cdr3|cdrs",
        threads: config["threads"]
        resources:
            mem_mb=8000,
            runtime=120,
        conda:
            ENV
        shell:
            "python -m mdm_mi antibody-compare --model {params.model_dir} --head {params.head_dir} {params.tv_head} "
            "--data-dir {params.data_dir} --set-name {wildcards.set} --out-dir {params.out_dir} {params.options} "
            "--threads {threads} {params.tracking} > {log} 2>&1"

    rule decisive_antibody:
        """Target of config/decisive_antibody.yaml (issue 48): the CDR-H3 comparison, resumable, and the head's fidelity."""
        input:
            f"{A}/cdr3/budgets.md",
            f"{R}/hf/head_fidelity.json",

    rule figure_antibody_mi:
        input:
            model=AB_MODEL,
            head=head_file("hf"),
            test=f"{AB_DATA}/test.tsv",
            tracking=TRACKING_READY,
        output:
            figure=report(f"{R}/figures/antibody_mi_map.png", caption="../report/antibody_mi_map.rst", category="antibody"),
            ranks=f"{A}/pair_ranks.json",
        log:
            f"{AL}/figure_mi_map.log",
        benchmark:
            f"{AL}/figure_mi_map.bench.tsv",
        params:
            options=cli_flags(AB["figure"] | {"seed": config["seed"]}),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            head_dir=parent_dir("head"),
            data_dir=parent_dir("test"),
        threads: config["threads"]
        resources:
            mem_mb=8000,
            runtime=60,
        conda:
            ENV
        shell:
            "python -m mdm_mi figure-antibody-mi --model {params.model_dir} --head {params.head_dir} "
            "--data-dir {params.data_dir} --out {output.figure} --ranks {output.ranks} {params.options} "
            "--threads {threads} {params.tracking} > {log} 2>&1"
