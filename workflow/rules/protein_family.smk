# One protein family (protein.data.source: family): its data in place of the generic set (rule
# prepare_family writes the files of rule protein_data, so the protein rules run unchanged), then every
# generated set scored against the family (profile HMM, realigned column statistics, diversity), beside
# the reference rows: a natural ceiling and a site-independent floor drawn once by prepare_family, and
# the family's own generator (ArDCA, rule family_ardca), in one table; the co-variation of the
# calibrated comparison (protein_budgets.smk) at each budget.

from mdm_mi.protein.family.scores import REFERENCE_ROWS  # torch-free: ceiling, ardca, floor

FAMILY_ROWS = [*PROTEIN_RUNS, *REFERENCE_ROWS]  # a sampler run, or a reference row ({P}/data/<row>.fasta)
FAMILY_SPLITS = expand(f"{P}/data/{{s}}.a2m", s=["train", "val", "reference"])
FAMILY_FIG = f"{R}/figures"
FAMILY_FIGURES = [f"{FAMILY_FIG}/family_{f}.png" for f in ("covariation", "pass_rate", "mi_map")] + (
    [f"{FAMILY_FIG}/family_contacts.png"] if COLUMNS else []  # a column model's MI vs ArDCA and the disulphides
)
FAMILY_TARGETS = (
    [f"{P}/family/table.csv", f"{P}/family/table.md", f"{P}/family/covariation.md", f"{P}/ceiling/ceiling.md",
     *FAMILY_FIGURES]
    if FAMILY
    else []
)


if FAMILY:

    rule prepare_family:
        input:
            a2m=os.path.join(workflow.basedir, PROTEIN["family"]["a2m"]),
            tracking=TRACKING_READY,
        output:
            fasta=expand(f"{P}/data/{{s}}.fasta", s=["train", "reference", "reference2", "ceiling", "floor"]),
            a2m=FAMILY_SPLITS,
            contexts=expand(f"{P}/data/{{s}}_contexts.npy", s=["train", "heldout"]),
            column_contexts=expand(f"{P}/data/{{s}}_column_contexts.npy", s=["train", "heldout"]),
            nonstandard=f"{P}/data/nonstandard.json",
            summary=f"{P}/data/summary.json",
        log:
            f"{PL}/data.log",
        benchmark:
            f"{PL}/data.bench.tsv",
        params:
            options=cli_flags(
                {k: PROTEIN["data"][k] for k in ("n_train_contexts", "n_heldout_contexts")}
                | {"identity": PROTEIN["family"]["identity"], "n_score": PROTEIN["generate"]["n"], "seed": config["seed"]}
            ),
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
            "python -m mdm_mi prepare-family --a2m {input.a2m} --out-dir {params.out_dir} {params.options} "
            "{params.tracking} > {log} 2>&1"

    rule family_ardca:
        input:
            splits=FAMILY_SPLITS,
            data=f"{P}/data/summary.json",
            tracking=TRACKING_READY,
        output:
            fasta=f"{P}/data/ardca.fasta",
            fit=f"{P}/data/ardca.json",
        log:
            f"{PL}/family/ardca.log",
        benchmark:
            f"{PL}/family/ardca.bench.tsv",
        params:
            options=cli_flags({"seed": config["seed"]}),
            tracking=tracking_flags,
            data_dir=parent_dir("data"),
        threads: 1
        resources:
            mem_mb=2000,
            runtime=20,  # the Kunitz fit: 27 s of one core
        conda:
            ENV
        shell:
            "python -m mdm_mi family-ardca --data-dir {params.data_dir} --out {output.fasta} --fit {output.fit} "
            "{params.options} {params.tracking} > {log} 2>&1"

    rule family_score:
        input:
            fasta=lambda w: (f"{P}/eval/" if w.family_row in PROTEIN_RUNS else f"{P}/data/") + f"{w.family_row}.fasta",
            summary=lambda w: f"{P}/eval/{w.family_row}.json" if w.family_row in PROTEIN_RUNS else [],
            splits=FAMILY_SPLITS,
            data=f"{P}/data/summary.json",
            tracking=TRACKING_READY,
        output:
            f"{P}/family/{{family_row}}.json",
        log:
            f"{PL}/family/{{family_row}}.log",
        benchmark:
            f"{PL}/family/{{family_row}}.bench.tsv",
        params:
            summary=lambda w, input: f"--summary {input.summary}" if input.summary else "",
            options=cli_flags({"clusters": PROTEIN["generate"]["clusters"], "seed": config["seed"]}),
            tracking=tracking_flags,
            data_dir=parent_dir("data"),
        wildcard_constraints:
            family_row="|".join(map(re.escape, FAMILY_ROWS)),
        threads: 1
        resources:
            mem_mb=2000,
            runtime=20,
        conda:
            ENV
        shell:
            "python -m mdm_mi family-score --fasta {input.fasta} {params.summary} --row {wildcards.family_row} "
            "--data-dir {params.data_dir} {params.options} --out {output} {params.tracking} > {log} 2>&1"

    rule family_loss:
        input:
            model=PROTEIN_MODEL,
            data=f"{P}/data/summary.json",
            tracking=TRACKING_READY,
        output:
            f"{P}/family/loss.json",
        log:
            f"{PL}/family/loss.log",
        benchmark:
            f"{PL}/family/loss.bench.tsv",
        params:
            job=job_flags(),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            data_dir=parent_dir("data"),
        threads: config["threads"]
        resources:
            gpu=1,
            mem_mb=2000,
            runtime=20,
        conda:
            ENV
        shell:
            "python -m mdm_mi family-loss --model {params.model_dir} --data-dir {params.data_dir} --out {output} "
            "{params.job} --threads {threads} {params.tracking} > {log} 2>&1"

    rule family_table:
        input:
            scores=expand(f"{P}/family/{{r}}.json", r=FAMILY_ROWS),
            loss=f"{P}/family/loss.json",
            model=PROTEIN_MODEL,
        output:
            table=f"{P}/family/table.csv",
            markdown=report(f"{P}/family/table.md", caption="../report/family_table.rst", category="Proteins"),
        log:
            f"{PL}/family/table.log",
        benchmark:
            f"{PL}/family/table.bench.tsv",
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
            "python -m mdm_mi family-table --inputs {input.scores} --loss {input.loss} --model {params.model_dir} "
            "--out {output.table} --markdown {output.markdown} {params.tracking} > {log} 2>&1"

    rule family_compare:
        input:
            runs=f"{P}/budgets/runs.json",
            splits=FAMILY_SPLITS,
            data=f"{P}/data/summary.json",
            tracking=TRACKING_READY,
        output:
            table=f"{P}/family/covariation.csv",
            markdown=report(f"{P}/family/covariation.md", caption="../report/family_table.rst", category="Budgets"),
            scores=f"{P}/family/scores.json",
        log:
            f"{PL}/family/compare.log",
        benchmark:
            f"{PL}/family/compare.bench.tsv",
        params:
            options=cli_flags({"seed": config["seed"]}),
            tracking=tracking_flags,
            budgets_dir=parent_dir("runs"),
            data_dir=parent_dir("data"),
            out_dir=parent_dir("table"),
        priority: 10  # the protein chain is the run's critical path: ahead of the Sudoku comparisons
        threads: 2  # the chain's last long job: its sets' jackknife split over two processes
        resources:
            mem_mb=2000,
            runtime=60,
        conda:
            ENV
        shell:
            "python -m mdm_mi family-compare --budgets-dir {params.budgets_dir} --data-dir {params.data_dir} "
            "--out-dir {params.out_dir} {params.options} --threads {threads} {params.tracking} > {log} 2>&1"

    rule figure_family_covariation:
        input:
            scores=rules.family_compare.output.scores,
            runs=f"{P}/budgets/runs.json",
            covariation=rules.family_compare.output.table,
            references=expand(f"{P}/family/{{r}}.json", r=REFERENCE_ROWS),
        output:
            report(f"{FAMILY_FIG}/family_covariation.png", caption="../report/family_figures.rst", category="Proteins"),
        log:
            f"{L}/figures/family_covariation.log",
        benchmark:
            f"{L}/figures/family_covariation.bench.tsv",
        params:
            tracking=tracking_flags,
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi figure-family-covariation --scores {input.scores} --runs {input.runs} "
            "--covariation {input.covariation} --references {input.references} --out {output} "
            "{params.tracking} > {log} 2>&1"

    rule figure_family_pass_rate:
        input:
            inputs=expand(f"{P}/family/{{r}}.json", r=FAMILY_ROWS),
            scores=rules.family_compare.output.scores,
            runs=f"{P}/budgets/runs.json",
        output:
            report(f"{FAMILY_FIG}/family_pass_rate.png", caption="../report/family_figures.rst", category="Proteins"),
        log:
            f"{L}/figures/family_pass_rate.log",
        benchmark:
            f"{L}/figures/family_pass_rate.bench.tsv",
        params:
            tracking=tracking_flags,
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi figure-family-pass-rate --inputs {input.inputs} --scores {input.scores} "
            "--runs {input.runs} --out {output} {params.tracking} > {log} 2>&1"

    rule figure_family_mi:
        input:
            model=PROTEIN_MODEL,
            head=f"{P}/head/meta.json",
            splits=FAMILY_SPLITS,
            data=f"{P}/data/summary.json",
        output:
            png=report(f"{FAMILY_FIG}/family_mi_map.png", caption="../report/family_figures.rst", category="Proteins"),
            csv=f"{FAMILY_FIG}/family_mi_map.csv",
        log:
            f"{L}/figures/family_mi_map.log",
        benchmark:
            f"{L}/figures/family_mi_map.bench.tsv",
        params:
            job=cli_flags({"device": config["device"], "seed": config["seed"]}),
            tracking=tracking_flags,
            model_dir=parent_dir("model"),
            head_dir=parent_dir("head"),
            data_dir=parent_dir("data"),
        threads: 1
        resources:
            gpu=1,
            mem_mb=4000,
            runtime=30,
        conda:
            ENV
        shell:
            "python -m mdm_mi figure-family-mi --model {params.model_dir} --head {params.head_dir} "
            "--data-dir {params.data_dir} --out {output.png} --csv {output.csv} {params.job} {params.tracking} "
            "> {log} 2>&1"

    if COLUMNS:

        rule figure_column_contacts:
            input:
                model=PROTEIN_MODEL,
                splits=FAMILY_SPLITS,
                data=f"{P}/data/summary.json",
            output:
                png=report(f"{FAMILY_FIG}/family_contacts.png", caption="../report/family_figures.rst", category="Proteins"),
                json=f"{FAMILY_FIG}/family_contacts.json",
            log:
                f"{L}/figures/family_contacts.log",
            benchmark:
                f"{L}/figures/family_contacts.bench.tsv",
            params:
                tracking=tracking_flags,
                model_dir=parent_dir("model"),
                data_dir=parent_dir("data"),
            threads: 1
            resources:
                mem_mb=4000,
                runtime=30,
            conda:
                ENV
            shell:
                "python -m mdm_mi figure-column-contacts --model {params.model_dir} --data-dir {params.data_dir} "
                "--out {output.png} --json {output.json} {params.tracking} > {log} 2>&1"
