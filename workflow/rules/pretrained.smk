# Shipped backbones ({domain}.backbone: pretrained): import resources/pretrained/<folder> into the
# run after checking its sha256 manifest and that it was trained on this run's own training split.
# With protein.architecture columns the protein model is the shipped column model and the shipped
# sequence model goes to {R}/protein/embedder (the cluster-JSD metric's embedder).

IMPORTS = {}  # run folder (below {R}) → (shipped folder, the training data it must match)
if SUDOKU["backbone"] == "pretrained":
    IMPORTS["sudoku/model"] = (SUDOKU["pretrained"], f"{R}/sudoku/data/train_solutions.npy")
if PROTEIN["backbone"] == "pretrained":
    IMPORTS[SEQUENCE_MODEL.removeprefix(f"{R}/")] = (PROTEIN["pretrained"], f"{R}/protein/data/train.fasta")
    if COLUMNS:
        IMPORTS["protein/model"] = (PROTEIN["columns"]["pretrained"], f"{R}/protein/data/train.a2m")

if IMPORTS:

    rule import_pretrained:
        input:
            manifest=lambda w: os.path.join(workflow.basedir, IMPORTS[w.folder][0], "MANIFEST.json"),
            data=lambda w: IMPORTS[w.folder][1],
            tracking=TRACKING_READY,
        output:
            weights=f"{R}/{{folder}}/model.safetensors",
            meta=f"{R}/{{folder}}/meta.json",
        log:
            f"{L}/{{folder}}/import_pretrained.log",
        benchmark:
            f"{L}/{{folder}}/import_pretrained.bench.tsv",
        params:
            source=lambda w, input: os.path.dirname(input.manifest),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        wildcard_constraints:
            folder="|".join(map(re.escape, IMPORTS)),
        priority: 30  # seconds of work that unblock a label chain: not queued behind the long jobs
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        conda:
            ENV
        shell:
            "python -m mdm_mi import-pretrained --source {params.source} --data {input.data} "
            "--out {params.out_dir} {params.tracking} > {log} 2>&1"
