# Shipped backbones ({domain}.backbone: pretrained): import resources/pretrained/<folder> into the
# run after checking its sha256 manifest and that it was trained on this run's own training split.

PRETRAINED = [d for d in ("sudoku", "protein") if config[d]["backbone"] == "pretrained"]  # hf: import_hf
TRAIN_DATA = {"sudoku": f"{R}/sudoku/data/train_solutions.npy", "protein": f"{R}/protein/data/train.fasta"}

if PRETRAINED:

    rule import_pretrained:
        input:
            manifest=lambda w: os.path.join(workflow.basedir, config[w.domain]["pretrained"], "MANIFEST.json"),
            data=lambda w: TRAIN_DATA[w.domain],
            tracking=TRACKING_READY,
        output:
            weights=f"{R}/{{domain}}/model/model.safetensors",
            meta=f"{R}/{{domain}}/model/meta.json",
        log:
            f"{L}/{{domain}}/import_pretrained.log",
        params:
            source=lambda w, input: os.path.dirname(input.manifest),
            tracking=tracking_flags,
            out_dir=parent_dir("meta"),
        wildcard_constraints:
            domain="|".join(PRETRAINED),
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
