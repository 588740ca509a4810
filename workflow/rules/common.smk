# Helpers of the rules of both domains, kept here as snakemake --lint asks: result paths, config →
# CLI flags, tracking flags, sampler grids, then each domain's comparison flags.
import dataclasses
import os
import re
import subprocess
import sys

from mdm_mi.core.sampler_table import (HEAD_SAMPLERS, SAMPLERS, TV_HEAD, calibrated_variants, decode_runs, extra_family_keys,
                                       slug)  # torch-free: the fixed grid's runs, the rules' lists, the protein comparison's part names
from mdm_mi.protein.decode_flags import DecodeFlags  # torch-free: the keys of protein.generate the oracle takes
from mdm_mi.infra.spool import spool_dir  # mlflow-free: whether jobs spool for the tracking store

NAME = config["name"]
R = f"results/{NAME}"
L = f"logs/{NAME}"
DATA = f"{workflow.basedir}/resources/data"
SUDOKU = config["sudoku"]
PROTEIN = config["protein"]
COLUMNS = PROTEIN["architecture"] == "columns"  # the protein model is a column model; the sequence model embeds
SEQUENCE_MODEL = f"{R}/protein/{'embedder' if COLUMNS else 'model'}"  # the sequence model's folder
EMBEDDER_INPUT = [f"{SEQUENCE_MODEL}/meta.json"] if COLUMNS else []  # the cluster-JSD metric's embedder
DOMAINS = "sudoku|protein|hf"  # the {domain} wildcard of the rules the domains share (mi.smk)
ENV = "../../envs/mdm-mi.yaml"  # every job's conda environment (snakemake --sdm conda), from workflow/rules/


def model_meta(domain):
    """The backbone checkpoint of ``domain`` (its meta.json), whichever rule writes it."""
    return f"{R}/{domain}/model/meta.json"


def head_file(domain):
    """The MI head weights of ``domain`` (written by rule train_head)."""
    return f"{R}/{domain}/head/model.safetensors"


HEAD, PROTEIN_HEAD = head_file("sudoku"), head_file("protein")
TV_HEAD_KEYS = tuple(s.calibration.each.key for s in SAMPLERS.values() if s.pairwise == TV_HEAD)


def tv_head_meta(domain, settings):
    """``[meta.json]`` of ``domain``'s TV head (DEMASK's target; rule train_head, ``{head}`` = tv_head;
    docs/record/rivals.md) when ``settings`` (a comparison's config keys) calibrate a family that reads it
    (demask, mi-tv), else ``[]``: the input of that comparison's rule."""
    return [f"{R}/{domain}/tv_head/meta.json"] if any(settings.get(k) for k in TV_HEAD_KEYS) else []


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


def picked(section, flags):
    """The keys of a config section that are fields of the dataclass ``flags`` (what a verb that takes
    those flags but not the whole section is given)."""
    names = {f.name for f in dataclasses.fields(flags)}
    return {k: v for k, v in section.items() if k in names}


def mi_flags(grid):
    """The single settings of a sampler grid (config <domain>.samplers) as the verbs' flags, named by the
    sampler table's ``shared`` settings (MI-guided's: mi_on_reject → --on-reject, mi_charge_first →
    --charge-first)."""
    return {s.flag: grid[s.key] for spec in SAMPLERS.values() for s in spec.shared}


def tracking_flags(wildcards):
    """Params function: the tracking flags of one job, its wildcards as tags. The CLI tags the run with
    the name of the verb's rule (each is named after its verb), so no rule spells out its own name."""
    tags = " ".join(f"--wildcard {k}={v}" for k, v in wildcards.items())
    return (
        f"--tracking-uri {config['tracking']['uri']} --experiment {config['tracking']['experiment']} "
        f"--wildcard config={NAME} {tags}"
    )


def mirror_tracking():
    """``mdm-mi track`` on the config's store when jobs spool for it (a sqlite:/// store; a server gets
    its runs from the jobs, ``none`` none); a failure is a warning, never the workflow's result."""
    tracking = config["tracking"]
    if spool_dir(tracking["uri"]) is None:
        return
    try:
        shell(f"python -m mdm_mi track --tracking-uri {tracking['uri']} --experiment {tracking['experiment']}")
    except subprocess.CalledProcessError as exc:
        print(f"tracking: the MLflow mirror failed ({exc}); rerun it with `mdm-mi track`", file=sys.stderr)


def job_flags():
    """Device and seed flags of GPU-capable jobs (their shell adds ``--threads {threads}``)."""
    return cli_flags({"device": config["device"], "seed": config["seed"]})


LABEL_SPLITS = "train|val|test"  # MI label splits: val and test are disjoint parts of one held-out draw


def label_options(mi, split):
    """The label verb's flags for ``split`` under an ``mi`` config section: train labels its whole
    draw of train_contexts; val and test label their parts of one draw of val_contexts +
    skip_contexts + test_contexts distinct contexts (val first, test last, the skipped ones spent on
    earlier choices), so they share no sequence and no context."""
    if split == "train":
        n_contexts, method, part = mi["train_contexts"], mi["train_method"], {}
    else:
        n_contexts, method = mi["val_contexts"] + mi["skip_contexts"] + mi["test_contexts"], mi["eval_method"]
        part = {"split": split, "val_contexts": mi["val_contexts"], "skip_contexts": mi["skip_contexts"]}
    options = {
        "n_contexts": n_contexts,
        "n_shards": mi["n_shards"],
        "method": method,
        "tol": mi["tol"],
        "k": mi["topk_k"],
        "batch_size": mi["label_batch_size"],
    }
    return cli_flags(options | part)


def oracle_runs():
    """The exact-MI oracle (λ = 1) and the MI head at the same settings, on the small oracle set."""
    grid = SUDOKU["samplers"]
    mi = mi_flags(grid) | {"lam": 1.0}
    runs = {}
    for g in grid["oracle_gamma"]:
        runs[f"mi-oracle-g{g}"] = {"sampler": "mi-oracle", "gamma": g} | mi
        runs[f"mi-g{g}-l1.0"] = {"sampler": "mi", "gamma": g} | mi
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


def extra_family_flags(cset):
    """``sudoku-compare``'s settings of the extra families beyond Algorithm 1 (``sampler_table.extra_family_keys``:
    mi-indep, mi-2b, the rivals) on the sets listed in ``compare.extra_family_sets``; empty elsewhere (those sets compare sequential,
    naive, EB, threshold and MI-guided only)."""
    compare = SUDOKU["compare"]
    on = cset in compare["extra_family_sets"]
    return {k: compare[k] if on else [] for k in extra_family_keys()}


def set_size_flags(cset):
    """Comparison-set size flags of ``sudoku-compare``: only those the set uses, so that resizing one
    set reruns only that set's comparison (and graded's, which is revealed from hard's test split)."""
    compare = SUDOKU["compare"]
    if cset == "graded":
        return {"graded_per_level": compare["graded_per_level"], "graded_givens": SUDOKU["data"]["graded_givens"],
                "test_puzzles": compare["test_puzzles"]["hard"]}
    return {"test_puzzles": compare["test_puzzles"][cset]}


def tv_head_input(cset):
    """The TV head's meta.json when a family reading it (demask, mi-tv) is calibrated on set ``cset``."""
    return tv_head_meta("sudoku", extra_family_flags(cset))


def tv_head_flag(wildcards, input):
    """``--tv-head`` of ``sudoku-compare`` (or ``protein-compare``, ``antibody-compare``) when its set reads the TV head."""
    return f"--tv-head {os.path.dirname(input.tv_head[0])}" if input.tv_head else ""


# the protein comparison's TV head, when protein.compare calibrates a family that reads it (docs/record/rivals.md)
PROTEIN_TV_HEAD = tv_head_meta("protein", config["protein"]["compare"])


def sudoku_compare_parts(cset):
    """The Sudoku comparison's jobs on set ``cset``, part → the sampler it decodes: sequential, then each
    calibrated family by its slug (the comparison's λ grid and the set's extra families)."""
    settings = SUDOKU["samplers"] | SUDOKU["compare"] | extra_family_flags(cset)
    return {"sequential": "sequential"} | {slug(label): name for label, name, _ in calibrated_variants(settings)}


def sudoku_part_head(wildcards):
    """The MI head of a Sudoku comparison part whose family reads it (``[]`` for the others: they
    start before the head is trained, and a retrained head does not rerun them)."""
    return [HEAD] if sudoku_compare_parts(wildcards.cset).get(wildcards.part) in HEAD_SAMPLERS else []


def sudoku_part_tv_head(wildcards):
    """The TV head of a Sudoku comparison part whose family reads it (demask, mi-tv)."""
    sampler = SAMPLERS.get(sudoku_compare_parts(wildcards.cset).get(wildcards.part))
    return tv_head_input(wildcards.cset) if sampler is not None and sampler.pairwise == TV_HEAD else []


def sudoku_parts_input(wildcards):
    """The part files a set's comparison merges (none when the set is decoded in one job); ``BUDGETS``
    is the comparisons' folder (rules/sudoku_budgets.smk)."""
    if wildcards.cset not in SUDOKU["compare"]["split_sets"]:
        return []
    return expand(f"{R}/sudoku/{BUDGETS}/{wildcards.cset}/parts/{{part}}/part.json", part=sudoku_compare_parts(wildcards.cset))


def sudoku_part_priority(wildcards):
    """The longest work first on 2 cores: the parts that read the MI head (they wait for it: the
    critical path), then the hard set's (1,000 test puzzles), the graded set's, sequential last (short)."""
    if sudoku_part_head(wildcards):
        return 12
    return 8 if wildcards.part == "sequential" else (10 if wildcards.cset == "hard" else 9)


def head_flag(wildcards, input):
    """``--head`` of a job given the MI head (a Sudoku comparison part whose family reads it)."""
    return f"--head {os.path.dirname(input.head[0])}" if input.head else ""


SUDOKU_COMPARE_PER_SET = ("sets", "split_sets", "extra_family_sets", "test_puzzles", "graded_per_level", *extra_family_keys())


def sudoku_compare_flags(cset):
    """``sudoku-compare``'s flags on set ``cset``: config sudoku.compare but the list of sets, the keys
    given per set (:func:`set_size_flags`, :func:`extra_family_flags`), with the MI-guided settings of sudoku.samplers; with resume_chunks,
    ``--chunks`` names the set's folder of decoded chunks beside its outputs."""
    compare = SUDOKU["compare"]
    shared = {k: v for k, v in compare.items()
              if k not in SUDOKU_COMPARE_PER_SET and k not in ("resume_chunks", "threads")}
    chunks = {"chunks": f"{R}/sudoku/{BUDGETS}/{cset}.chunks"} if compare["resume_chunks"] else {}
    return cli_flags(shared | chunks | set_size_flags(cset) | extra_family_flags(cset) | mi_flags(SUDOKU["samplers"]))


def protein_compare_flags(merge, lists=None):
    """Flags of every part of the protein comparison and of its merge: config protein.compare (the
    bootstrap is the merge's only; ``lists``, swept config key → values, in place of config's:
    :func:`protein_part_flags`), protein.generate and the MI-guided settings of protein.samplers."""
    compare = {k: v for k, v in PROTEIN["compare"].items() if merge or k != "bootstrap"} | (lists or {})
    return cli_flags(compare | PROTEIN["generate"] | mi_flags(PROTEIN["samplers"]))


def protein_part_flags(part):
    """Flags of one part of the protein comparison: :func:`protein_compare_flags` with the part's own
    swept list (λ, ε, θ, ...) cut to its value and the other families' lists emptied (Algorithm 1's λ
    list stays whole on the other parts: ``--mi-lambda`` takes one value at least). A part's runs depend
    only on its own value (``protein.compare_jobs.PART_KEYS``), so its job reruns only when its own
    settings change: one more ε in the config decodes one more part (one more λ: every part but the
    other rules')."""
    lists = dict.fromkeys(extra_family_keys(), [])
    for label, sampler, fixed in calibrated_variants(PROTEIN["samplers"] | PROTEIN["compare"]):
        each = SAMPLERS[sampler].calibration.each
        if slug(label) == part and each is not None:
            lists[each.key] = [fixed[each.flag]]
    return protein_compare_flags(merge=False, lists=lists)


def protein_compare_parts():
    """The protein comparison's jobs: sequential, then each calibrated family by its slug."""
    variants = calibrated_variants(PROTEIN["samplers"] | PROTEIN["compare"])  # by config key; the comparison's λ grid wins
    return ["sequential"] + [slug(label) for label, _, _ in variants]


def embedder_flag(wildcards, input):
    """``--embedder`` of a column model's decoding jobs (the sequence model embeds their proteins)."""
    return f"--embedder {os.path.dirname(input.embedder[0])}" if input.embedder else ""


def antibody_tv_head(set_name):
    """The TV head's meta.json (domain hf) when antibody set ``set_name`` calibrates a family that reads
    it (demask, mi-tv): the labels' shards then train it beside the MI head."""
    ab = config["antibody"]
    return tv_head_meta("hf", ab["compare"] | ab["set_compare"][set_name])


def antibody_compare_options(set_name):
    """Rule antibody_compare's flags: antibody.compare with the set's own antibody.set_compare keys;
    the oracle only for the sets in oracle_sets; with resume_chunks, ``--chunks`` names the set's folder
    of kept fills beside its outputs."""
    ab = config["antibody"]
    own = ab["set_compare"][set_name]
    unknown = set(own) - set(ab["compare"])
    if unknown:
        raise ValueError(f"antibody.set_compare.{set_name} has keys that antibody.compare lacks: {sorted(unknown)}")
    merged = ab["compare"] | own
    opts = {k: v for k, v in merged.items() if k not in ("oracle_sets", "resume_chunks")}
    if set_name not in ab["compare"]["oracle_sets"]:
        opts["oracle_contexts"] = 0
    chunks = {"chunks": f"{R}/antibody/{set_name}.chunks"} if merged["resume_chunks"] else {}
    return cli_flags(opts | chunks | {"seed": config["seed"]})
