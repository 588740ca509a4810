# MLflow: init_tracking makes the store before any job runs; jobs on a local (sqlite) store spool their
# records beside it, and the run's end (success or error) mirrors the spool into MLflow, one run per job.
onsuccess:
    mirror_tracking()


onerror:
    mirror_tracking()


rule init_tracking:
    output:
        "results/tracking/{config_name}.json",
    log:
        "logs/tracking/{config_name}.log",
    benchmark:
        "logs/tracking/{config_name}.bench.tsv",
    params:
        uri=config["tracking"]["uri"],
        experiment=config["tracking"]["experiment"],
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        ENV
    shell:
        "python -m mdm_mi init-tracking --uri {params.uri} --experiment-name {params.experiment} "
        "--out {output} > {log} 2>&1"


TRACKING_READY = f"results/tracking/{config['name']}.json"
