# Helpers shared by the rules: result paths, config → CLI flags, tracking flags, sampler grids.
import os
import re

from mdm_mi.calibrate import standard_families  # torch-free: the protein comparison's part names

NAME = config["name"]
R = f"results/{NAME}"
L = f"logs/{NAME}"
DATA = f"{workflow.basedir}/resources/data"
SUDOKU = config["sudoku"]
PROTEIN = config["protein"]
DOMAINS = "sudoku|protein"  # the {domain} wildcard of the rules both domains share (mi.smk)


def model_meta(domain):
    """The backbone checkpoint of ``domain`` (its meta.json), whichever rule writes it."""
    return f"{R}/{domain}/model/meta.json"


def head_file(domain):
    """The MI head weights of ``domain`` (written by rule train_head)."""
    return f"{R}/{domain}/head/model.safetensors"


HEAD, PROTEIN_HEAD = head_file("sudoku"), head_file("protein")


def label_shards(domain, split):
    """Every label shard of one split of ``domain`` (the inputs of rule train_head)."""
    n_shards = config[domain]["mi"]["n_shards"]
    return expand(f"{R}/{domain}/labels/{split}/shard{{i}}.safetensors", i=range(n_shards))


def cli_flags(options):
    """{'batch_size': 8, 'augment': True, 'givens': [1, 2]} → '--batch-size 8 --augment --givens 1 2';
    a None value is left out (the verb's own default, which is None too)."""
    parts = []
    for key, value in options.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        flag = f"--{name}"
        if isinstance(value, bool):
            parts.append(flag if value else f"--no-{name}")
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
            f"--rule {rule_name} --wildcard config={NAME} {tags}"
        )

    return flags


def job_flags():
    """Device and seed flags of GPU-capable jobs (their shell adds ``--threads {threads}``)."""
    return cli_flags({"device": config["device"], "seed": config["seed"]})


LABEL_SPLITS = "train|val|test"  # MI label splits: val and test are disjoint parts of one held-out draw


def label_options(mi, split):
    """The label verb's flags for ``split`` under an ``mi`` config section: train labels its whole
    draw of train_contexts; val and test label their parts of one draw of val_contexts +
    test_contexts distinct contexts (val first), so they share no sequence and no context."""
    if split == "train":
        n_contexts, method, part = mi["train_contexts"], mi["train_method"], {}
    else:
        n_contexts, method = mi["val_contexts"] + mi["test_contexts"], mi["eval_method"]
        part = {"split": split, "val_contexts": mi["val_contexts"]}
    options = {
        "n_contexts": n_contexts,
        "n_shards": mi["n_shards"],
        "method": method,
        "tol": mi["tol"],
        "batch_size": mi["label_batch_size"],
    }
    return cli_flags(options | part)


def oracle_runs():
    """The exact-MI oracle (λ = 1) and the MI head at the same settings, on the small oracle set."""
    grid = SUDOKU["samplers"]
    mi = {"on_reject": grid["mi_on_reject"], "charge_first": grid["mi_charge_first"], "lam": 1.0}
    runs = {}
    for g in grid["oracle_gamma"]:
        runs[f"mi-oracle-g{g}"] = {"sampler": "mi-oracle", "gamma": g} | mi
        runs[f"mi-g{g}-l1.0"] = {"sampler": "mi", "gamma": g} | mi
    return runs


def decode_runs(grid):
    """Run name → sampler flags, from a sampler grid (config sudoku.samplers or protein.samplers)."""
    runs = {f"sequential-{o}": {"sampler": "sequential", "order": o} for o in grid["sequential"]}
    runs |= {f"naive-k{k}": {"sampler": "naive", "k": k} for k in grid["naive_k"]}
    runs |= {f"eb-g{g}": {"sampler": "eb", "gamma": g} for g in grid["eb_gamma"]}
    mi = {"on_reject": grid["mi_on_reject"], "charge_first": grid["mi_charge_first"]}
    runs |= {
        f"mi-g{g}-l{lam}": {"sampler": "mi", "gamma": g, "lam": lam} | mi
        for g in grid["mi_gamma"]
        for lam in grid["mi_lambda"]
    }
    return runs


SUDOKU_RUNS = decode_runs(SUDOKU["samplers"])
ORACLE_RUNS = oracle_runs()
ALL_RUNS = SUDOKU_RUNS | ORACLE_RUNS
EVAL_JOBS = [
    *expand(f"{R}/sudoku/eval/{{s}}/{{r}}.json", s=SUDOKU["eval"]["sets"], r=SUDOKU_RUNS),
    *expand(f"{R}/sudoku/eval/oracle/{{r}}.json", r=ORACLE_RUNS),
]


def parent_dir(key):
    """Params function: the folder holding the named input or output file (checkpoint folders)."""

    def get(wildcards, input, output):
        files = {**dict(input.items()), **dict(output.items())}
        return os.path.dirname(files[key])

    return get


def rule_family_flags(cset):
    """``sudoku-compare``'s mi-indep / mi-2b settings on the sets listed in ``compare.rule_sets``; none
    elsewhere (those sets compare sequential, naive, EB, threshold and MI-guided only)."""
    compare = SUDOKU["compare"]
    if cset not in compare["rule_sets"]:
        return {}
    return {"indep_tau": compare["indep_tau"], "two_budget_delta": compare["two_budget_delta"]}


def set_size_flags(cset):
    """Comparison-set size flags of ``sudoku-compare``: only those the set uses, so that resizing one
    set reruns only that set's comparison (and graded's, which is revealed from hard's test split)."""
    compare = SUDOKU["compare"]
    if cset == "graded":
        return {"graded_per_level": compare["graded_per_level"], "graded_givens": SUDOKU["data"]["graded_givens"],
                "test_puzzles": compare["test_puzzles"]["hard"]}
    return {"test_puzzles": compare["test_puzzles"][cset]}


def protein_compare_flags(merge):
    """Flags shared by every part of the protein comparison and its merge (the bootstrap is the merge's only)."""
    compare = {k: v for k, v in PROTEIN["compare"].items() if merge or k != "bootstrap"}
    return cli_flags(
        compare
        | {k: PROTEIN["generate"][k] for k in ("n", "temperature", "clusters", "embed_layer", "batch_size", "bf16")}
        | {"mi_on_reject": PROTEIN["samplers"]["mi_on_reject"], "mi_charge_first": PROTEIN["samplers"]["mi_charge_first"]}
    )


def protein_compare_parts():
    """The protein comparison's jobs: sequential, then each calibrated family by its slug."""
    samplers, compare = PROTEIN["samplers"], PROTEIN["compare"]
    families = standard_families(2, compare["mi_lambda"], samplers["mi_on_reject"], samplers["mi_charge_first"],
                                 compare["indep_tau"], compare["two_budget_delta"])
    return ["sequential"] + [f.slug for f in families]
