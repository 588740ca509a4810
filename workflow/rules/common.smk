import re

# Helpers shared by the rules: result paths, config → CLI flags, tracking flags.
import hashlib
import json

R = f"results/{config['name']}"
L = f"logs/{config['name']}"
DATA = f"{workflow.basedir}/resources/data"
CONFIG_HASH = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]


def cli_flags(options):
    """{'batch_size': 8, 'augment': True, 'givens': [1, 2]} → '--batch-size 8 --augment --givens 1 2'."""
    parts = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            parts.append(" ".join([flag, *map(str, value)]))
        else:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def tracking_flags(rule_name):
    """Tracking flags of one job; wildcards are added from the job at run time."""

    def flags(wildcards):
        tags = " ".join(f"--wildcard {k}={v}" for k, v in wildcards.items())
        return (
            f"--tracking-uri {config['tracking']['uri']} --experiment {config['tracking']['experiment']} "
            f"--rule {rule_name} --config-hash {CONFIG_HASH} --wildcard config={config['name']} {tags}"
        )

    return flags


def job_flags():
    """Device, threads and seed flags of GPU-capable jobs."""
    return cli_flags({"device": config["device"], "threads": config["threads"], "seed": config["seed"]})
