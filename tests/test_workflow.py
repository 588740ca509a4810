"""Properties of the Snakemake workflow: it plans (``-n``), lints, every job's command parses with the
CLI, and (slow) the smoke DAG runs end to end in a fresh working directory with one MLflow run per job.

Snakemake runs from the repository with ``--snakefile`` and ``--directory tmp_path``: results/ and
logs/ are relative to the working directory, resources/ to ``workflow.basedir``.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO
from mdm_mi.cli import build_parser
from mdm_mi.core.sampler_table import SAMPLERS, TV_HEAD, extra_family_keys
from mdm_mi.infra.config import load_config
from mdm_mi.protein.family.scores import REFERENCE_ROWS

VENV_BIN = REPO / ".venv" / "bin"
SNAKEMAKE = VENV_BIN / "snakemake"
CONFIGS = ["smoke.yaml", "config.yaml"]
NOT_TRACKED = {"all", "init_tracking"}  # jobs that open no MLflow run


def snakemake(workdir: Path, *args: str, configfile: str | None = "smoke.yaml", timeout: int = 120):
    """Run the venv's snakemake on the repository's Snakefile in ``workdir``."""
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), *args]
    if configfile is not None:
        cmd += ["--configfile", str(REPO / "config" / configfile)]
    env = os.environ | {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}  # `python` in rules
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def job_counts(output: str) -> Counter:
    """The ``Job stats`` table of a snakemake run or dry run → rule → count."""
    table = output[output.index("Job stats:"):]
    counts = Counter()
    for line in table.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def shell_commands(output: str) -> list[list[str]]:
    """``Shell command:`` lines of ``snakemake -n -p`` → argv lists without the log redirection."""
    commands = []
    for line in output.splitlines():
        if line.startswith("Shell command: ") and line != "Shell command: None":  # rule all: None
            argv = shlex.split(line.removeprefix("Shell command: "))
            commands.append(argv[: argv.index(">")] if ">" in argv else argv)
    return commands


@pytest.fixture(scope="module", params=CONFIGS)
def dry_run(request, tmp_path_factory):
    """(config file, completed ``snakemake -n -p`` in an empty working directory)."""
    workdir = tmp_path_factory.mktemp("dry")
    return request.param, snakemake(workdir, "-n", "-p", configfile=request.param)


def test_dry_run_exits_0(dry_run):
    name, proc = dry_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_dry_run_plans_one_evaluation_per_set_and_baseline_setting(dry_run):
    name, proc = dry_run
    cfg = load_config(REPO / "config" / name)
    samplers = cfg["sudoku"]["samplers"]
    settings = {("sequential", "--order", o) for o in samplers["sequential"]}
    settings |= {("naive", "--k", str(k)) for k in samplers["naive_k"]}
    settings |= {("eb", "--gamma", str(g)) for g in samplers["eb_gamma"]}
    planned = Counter()
    for argv in shell_commands(proc.stdout + proc.stderr):
        if argv[3] != "sudoku-evaluate":
            continue
        puzzles = Path(argv[argv.index("--puzzles") + 1]).stem
        sampler = argv[argv.index("--sampler") + 1]
        flag = {"sequential": "--order", "naive": "--k", "eb": "--gamma"}.get(sampler)
        if flag is not None:
            planned[(puzzles, sampler, flag, argv[argv.index(flag) + 1])] += 1
    expected = Counter({(s, *setting): 1 for s in cfg["sudoku"]["eval"]["sets"] for setting in settings})
    assert planned == expected
    counts = job_counts(proc.stdout + proc.stderr)
    family = cfg["protein"]["data"]["source"] == "family"
    data_rule = "prepare_family" if family else "protein_data"
    for rule in ("init_tracking", "prepare_sudoku", "sudoku_table", "all", data_rule, "protein_table"):
        assert counts[rule] == 1, rule
    assert counts["protein_data" if family else "prepare_family"] == 0  # one data source per run
    backbone_rule = {"trained": "{}_pretrain", "pretrained": "import_pretrained", "esmc-300m": "import_esmc"}
    planned_backbones = Counter(backbone_rule[cfg[d]["backbone"]].format(d) for d in ("sudoku", "protein"))
    if cfg["protein"]["architecture"] == "columns":  # the column model beside the sequence model (the embedder)
        planned_backbones[{"trained": "column_pretrain", "pretrained": "import_pretrained"}[cfg["protein"]["backbone"]]] += 1
    assert all(counts[rule] == n for rule, n in planned_backbones.items()), planned_backbones
    compare = cfg["protein"]["compare"]  # sequential, naive, EB, threshold, then each swept rule's values
    assert counts["protein_compare_part"] == 4 + sum(len(compare[k]) for k in ("mi_lambda", "indep_cap", "two_budget_delta"))
    assert counts["sudoku_compare"] == len(cfg["sudoku"]["compare"]["sets"])  # one calibrated comparison per set
    assert counts["sudoku_budgets"] == counts["protein_compare"] == 1
    sudoku_compare = cfg["sudoku"]["compare"]  # DEMASK's TV head beside the MI head when a set calibrates a rule reading it
    tv_keys = [s.calibration.each.key for s in SAMPLERS.values() if s.pairwise == TV_HEAD]
    tv_head = any(c in sudoku_compare["extra_family_sets"] and any(sudoku_compare[k] for k in tv_keys) for c in sudoku_compare["sets"])
    assert counts["train_head"] == 2 + tv_head  # one rule for both domains and both heads
    assert counts["generate"] == len(
        [*cfg["protein"]["samplers"]["sequential"], *cfg["protein"]["samplers"]["naive_k"],
         *cfg["protein"]["samplers"]["eb_gamma"]]) + len(cfg["protein"]["samplers"]["mi_gamma"]) * len(
        cfg["protein"]["samplers"]["mi_lambda"])
    # the family table: every generated set and each reference row (ceiling, ArDCA, floor) scored once
    assert counts["family_score"] == (counts["generate"] + len(REFERENCE_ROWS) if family else 0)
    assert counts["family_table"] == counts["family_ardca"] == int(family)


def test_every_planned_command_parses_with_the_cli(dry_run):
    """The flags the rules build from the config are exactly those the CLI's dataclasses accept."""
    _, proc = dry_run
    commands = shell_commands(proc.stdout + proc.stderr)
    assert len(commands) >= 5
    parser = build_parser()
    for argv in commands:
        assert argv[:3] == ["python", "-m", "mdm_mi"], argv
        ns = parser.parse_args(argv[3:])  # SystemExit(2) on an unknown or missing flag
        assert ns.verb == argv[3]


# verb → the config sections its rule passes whole: ("a.b", prefix, keys left out; one ending in _ is a
# prefix), or a section's keys that are fields of a flags dataclass. A key added to one of these sections reaches the verb's command
# without an edit to the rule; the test above checks that the verb takes it.
WHOLE_SECTIONS = {
    "sudoku-pretrain": [("sudoku.model", "", ()), ("sudoku.train", "", ())],
    "train-head": [("{domain}.mi.head", "", ()), ("{domain}.mi.head_train", "", ())],
    "sudoku-evaluate": [("sudoku.eval", "", ("sets",))],
    "sudoku-compare": [("sudoku.compare", "", ("sets", "split_sets", "extra_family_sets", "test_puzzles", "graded_per_level", *extra_family_keys(),
                                               "resume_chunks", "threads"))],  # per set (their own test),
    # the rule's (test_resume_chunks_name_each_jobs_chunk_folder)
    "sudoku-compare-part": [("sudoku.compare", "", ("sets", "split_sets", "extra_family_sets", "test_puzzles", "graded_per_level",
                                                    *extra_family_keys(), "resume_chunks", "threads"))],
    "sudoku-oracle-ceiling": [("sudoku.oracle", "", ())],
    "generate": [("protein.generate", "", ())],
    # a part gets its own swept value only (test_each_protein_part_gets_its_own_swept_value_only)
    "protein-compare-part": [("protein.generate", "", ()),
                             ("protein.compare", "", ("bootstrap", "mi_lambda", *extra_family_keys()))],
    "protein-compare": [("protein.generate", "", ()), ("protein.compare", "", ())],
    "protein-oracle-ceiling": [("protein.oracle", "", ()), ("protein.generate", "", "DecodeFlags")],
}


def _section(cfg: dict, dotted: str) -> dict:
    for key in dotted.split("."):
        cfg = cfg[key]
    return cfg


def test_resume_chunks_name_each_jobs_chunk_folder(tmp_path):
    """config/decisive_sudoku.yaml (resume_chunks, threads 2): the comparison's parts and the oracle ceiling
    keep their chunks in folders of their own beside their outputs and take both threads."""
    proc = snakemake(tmp_path, "-n", "-p", "--cores", "2", "decisive_sudoku", configfile="decisive_sudoku.yaml")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = {argv[3]: argv for argv in shell_commands(proc.stdout + proc.stderr)}
    for verb, folder in (("sudoku-compare-part", "budgets/hard.chunks"), ("sudoku-oracle-ceiling", "ceiling/hard.chunks")):
        argv = found[verb]
        assert argv[argv.index("--chunks") + 1] == f"results/decisive-sudoku/sudoku/{folder}"
        assert argv[argv.index("--threads") + 1] == "2"
    assert "--chunks" not in " ".join(a for argv in shell_commands(snakemake(tmp_path, "-n", "-p").stdout) for a in argv)


def test_rules_pass_whole_config_sections(dry_run):
    """Every key of a section a rule passes whole is on its verb's command line with the config's value
    (a None value is left out: the verb's default, None too); protein-oracle-ceiling is given every key of
    protein.generate that is a DecodeFlags field: how the comparison decoded."""
    import dataclasses

    from mdm_mi.protein.decode_flags import DecodeFlags

    name, proc = dry_run
    cfg = load_config(REPO / "config" / name)
    parser, seen = build_parser(), Counter()
    for argv in shell_commands(proc.stdout + proc.stderr):
        if argv[3] not in WHOLE_SECTIONS:
            continue
        seen[argv[3]] += 1
        ns = parser.parse_args(argv[3:])
        domain = next((d for d in ("protein", "hf") if f"/{d}/" in " ".join(argv)), "sudoku")
        for dotted, prefix, left_out in WHOLE_SECTIONS[argv[3]]:
            if left_out == "DecodeFlags":
                left_out = {k for k in _section(cfg, dotted) if k not in {f.name for f in dataclasses.fields(DecodeFlags)}}
            for key, value in _section(cfg, dotted.format(domain=domain)).items():
                skipped = key in left_out or key.startswith(tuple(k for k in left_out if k.endswith("_")))
                if skipped or not key.startswith(prefix) or value is None:
                    continue
                flag = key.removeprefix(prefix)
                given = {f"--{flag.replace('_', '-')}", f"--no-{flag.replace('_', '-')}"} & set(argv)
                assert given, f"{argv[3]} lacks --{flag} ({dotted}.{key})"
                got = getattr(ns, flag)
                assert (list(got) if isinstance(got, tuple) else got) == value, (argv[3], key)
    assert {"sudoku-evaluate", "train-head", "sudoku-compare", "generate", "protein-compare", "protein-oracle-ceiling"} <= set(seen)


def test_each_protein_part_gets_its_own_swept_value_only(dry_run):
    """protein-compare-part: the part's own list cut to its value, the other rules' lists empty, and
    Algorithm 1's λ list whole on the parts that are not Algorithm 1's; the merge gets every list."""
    name, proc = dry_run
    compare = load_config(REPO / "config" / name)["protein"]["compare"]
    commands = shell_commands(proc.stdout + proc.stderr)
    parser = build_parser()
    parts = [parser.parse_args(c[3:]) for c in commands if c[3] == "protein-compare-part"]
    assert parts
    for ns in parts:
        own = {k: list(getattr(ns, k)) for k in extra_family_keys() if getattr(ns, k)}
        if ns.part.startswith("mi-l"):
            assert list(ns.mi_lambda) == [float(ns.part.removeprefix("mi-l"))] and not own, ns.part
        else:
            assert list(ns.mi_lambda) == compare["mi_lambda"] and len(own) <= 1, ns.part
            assert all(len(v) == 1 and v[0] in compare[k] for k, v in own.items()), ns.part
    (merge,) = [parser.parse_args(c[3:]) for c in commands if c[3] == "protein-compare"]
    assert all(list(getattr(merge, k)) == compare[k] for k in ("mi_lambda", *extra_family_keys()))


def test_rules_beyond_algorithm_1_are_calibrated_only_on_the_rule_sets(dry_run):
    """``sudoku.compare.extra_family_sets``: mi-indep / mi-2b flags on those sets' comparisons, none elsewhere."""
    name, proc = dry_run
    compare = load_config(REPO / "config" / name)["sudoku"]["compare"]
    parser = build_parser()
    seen = {}
    for argv in shell_commands(proc.stdout + proc.stderr):
        if argv[3] == "sudoku-compare":
            ns = parser.parse_args(argv[3:])
            seen[ns.set] = tuple(tuple(getattr(ns, k)) for k in extra_family_keys())
    assert set(seen) == set(compare["sets"])
    for cset, lists in seen.items():
        if cset in compare["extra_family_sets"]:
            assert [list(v) for v in lists] == [compare[k] for k in extra_family_keys()], cset
        else:
            assert all(v == () for v in lists), cset
    if name == "smoke.yaml":  # the smoke config keeps both paths: one set with the rules, one without
        assert set(compare["sets"]) - set(compare["extra_family_sets"]) and set(compare["sets"]) & set(compare["extra_family_sets"])


def test_smoke_commands_carry_the_smoke_settings(tmp_path):
    proc = snakemake(tmp_path, "-n", "-p", "sudoku_pretrain")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (pretrain,) = [c for c in shell_commands(proc.stdout + proc.stderr) if c[3] == "sudoku-pretrain"]
    ns = build_parser().parse_args(pretrain[3:])
    assert (ns.d_model, ns.n_layers, ns.steps, ns.device, ns.threads) == (32, 1, 20, "cpu", 1)
    assert ns.compile is False


def test_smoke_settings_do_not_depend_on_the_working_directory(tmp_path):
    """From a directory that holds config/config.yaml (like the repository root) the smoke DAG must
    be the same as from an empty one."""
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    proc = snakemake(tmp_path, "-n", "-p", "sudoku_pretrain")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (pretrain,) = [c for c in shell_commands(proc.stdout + proc.stderr) if c[3] == "sudoku-pretrain"]
    assert build_parser().parse_args(pretrain[3:]).compile is False


@pytest.mark.parametrize("train", [{}, {"reweight_identity": 0.8, "eval_every": 5, "dropout": 0.1}])
def test_protein_pretrain_reads_the_alignment_and_validation_split_only_when_asked(tmp_path, train):
    extra = tmp_path / "train.yaml"
    extra.write_text(f"protein:\n  train: {json.dumps(train)}\n")
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "-p",
           "--configfile", str(REPO / "config" / "smoke.yaml"), str(extra), "--", "protein_pretrain"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (pretrain,) = [c for c in shell_commands(proc.stdout + proc.stderr) if c[3] == "protein-pretrain"]
    ns = build_parser().parse_args(pretrain[3:])
    assert (ns.reweight_identity, ns.eval_every, ns.dropout) == (train.get("reweight_identity", 0.0),
                                                                 train.get("eval_every", 0), train.get("dropout", 0.0))
    if train:
        assert ns.alignment.parts[-2:] == ("data", "train.a2m") and ns.val.parts[-2:] == ("data", "reference2.fasta")
    else:
        assert ns.alignment is None and ns.val is None


@pytest.mark.parametrize(("backbones", "imports"), [({"sudoku": "pretrained"}, ["sudoku"]),
                                                 ({"sudoku": "pretrained", "protein": "pretrained"},
                                                  ["protein", "protein", "sudoku"])])
def test_pretrained_backbones_replace_pretraining(tmp_path, backbones, imports):
    """``<domain>.backbone: pretrained`` plans the hash-checked import of that domain's shipped
    backbone, given the run's own training data to check, instead of its pretraining job (proteins:
    the column model into protein/model, checked against train.a2m, and the sequence model, the
    metric's embedder, into protein/embedder, checked against train.fasta)."""
    extra = tmp_path / "pretrained.yaml"
    extra.write_text("".join(f"{d}:\n  backbone: {b}\n" for d, b in backbones.items()))
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "-p",
           "--configfile", str(REPO / "config" / "smoke.yaml"), str(extra)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout + proc.stderr)
    assert counts["import_pretrained"] == len(imports)
    assert all(counts[f"{d}_pretrain"] == 0 for d in imports) and counts["column_pretrain"] == int("protein" not in imports)
    commands = [c for c in shell_commands(proc.stdout + proc.stderr) if c[3] == "import-pretrained"]
    args = [build_parser().parse_args(c[3:]) for c in commands]
    assert sorted(a.out.parts[-2] for a in args) == sorted(imports)
    assert all(a.data is not None and a.data.parts[-3] == a.out.parts[-2] for a in args)
    if "protein" in imports:
        data = {a.out.name: a.data.name for a in args if a.out.parts[-2] == "protein"}
        assert data == {"model": "train.a2m", "embedder": "train.fasta"}


def test_the_snakefile_runs_the_packages_cross_field_checks(tmp_path):
    """A config the schema accepts but the package rejects (t_min > t_max) stops the DAG before any job."""
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["sudoku"]["train"] = cfg["sudoku"].get("train", {}) | {"t_min": 0.9, "t_max": 0.5}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n",
           "--configfile", str(bad)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "t_min 0.9 > t_max 0.5" in proc.stdout + proc.stderr


@pytest.mark.parametrize("configfile", CONFIGS)
def test_lint_exits_0(tmp_path, configfile):
    proc = snakemake(tmp_path, "--lint", configfile=configfile)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


# --- the smoke DAG end to end ----------------------------------------------------------------------


@pytest.mark.slow
def test_smoke_dag_runs_in_a_fresh_directory(tmp_path):
    from mlflow.tracking import MlflowClient

    cfg = load_config(REPO / "config" / "smoke.yaml")
    plan = snakemake(tmp_path, "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    expected = job_counts(plan.stdout + plan.stderr)

    proc = snakemake(tmp_path, "--cores", "2", timeout=1800)
    logs = "\n".join(f"--- {p}\n{p.read_text()[-2000:]}" for p in sorted((tmp_path / "logs").rglob("*.log")))
    assert proc.returncode == 0, proc.stderr[-5000:] + logs

    table = tmp_path / "results" / cfg["name"] / "sudoku" / "table.csv"
    with table.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    have = {(r["set"], r["sampler"]) for r in rows if r["level"] == "all"}
    for set_ in cfg["sudoku"]["eval"]["sets"]:
        for sampler in ("sequential", "naive", "eb"):
            assert (set_, sampler) in have, (set_, sampler)
    assert all(0 <= float(r["accuracy"]) <= 1 and float(r["mean_passes"]) >= 1 for r in rows)
    assert (table.parent / "table.md").is_file()

    client = MlflowClient(f"sqlite:///{tmp_path}/results/mlflow.db")
    experiment = client.get_experiment_by_name(cfg["tracking"]["experiment"])
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    tracked = Counter({rule: n for rule, n in expected.items() if rule not in NOT_TRACKED})
    assert Counter(r.data.tags["rule"] for r in runs) == tracked
    assert all(r.info.status == "FINISHED" for r in runs)
    assert all(re.fullmatch(r"[0-9a-f]{12}", r.data.tags["config_hash"]) for r in runs)
    assert all(r.data.tags["wildcard.config"] == cfg["name"] for r in runs)
    assert all(re.fullmatch(r"[0-9a-f]{40}|unknown", r.data.tags["git_commit"]) for r in runs)
    # every job mirrored itself completely: no MLflow call was rejected
    skipped = [str(p) for p in (tmp_path / "logs").rglob("*.log") if "tracking skipped" in p.read_text()]
    assert not skipped, skipped
    # the MI part of the DAG: MI-guided rows, the exact-MI oracle, the head's fidelity, every figure
    assert ("hard", "mi") in have
    assert ("oracle", "mi-oracle") in {(r["set"], r["sampler"]) for r in rows}
    results = tmp_path / "results" / cfg["name"]
    fidelity = json.loads((results / "sudoku" / "head_fidelity.json").read_text())
    assert fidelity["reported"] == "test"  # val chooses the head, test is reported
    assert all(key in fidelity[split] for split in ("val", "test") for key in ("pearson", "spearman", "mae", "auroc"))
    for name in ("sudoku_paper_table.md", "sudoku_mi_map.png", "sudoku_mi_map.csv", "sudoku_head_scatter.png",
                 *(f"sudoku_speed_quality_{s}.png" for s in cfg["sudoku"]["eval"]["sets"])):
        assert (results / "figures" / name).is_file(), name
    # the protein part: every sampler generated and was scored, the table, figures and the head
    with (results / "protein" / "table.csv").open(newline="") as fh:
        prow = list(csv.DictReader(fh))
    assert {r["sampler"] for r in prow} == {"sequential", "naive", "eb", "mi"}
    assert all(0 <= float(r["jsd"]) <= 1 and float(r["mean_passes"]) >= 1 for r in prow)
    protein_fidelity = json.loads((results / "protein" / "head_fidelity.json").read_text())
    assert all("pearson" in protein_fidelity[split] for split in ("val", "test"))
    for name in ("protein_paper_table.md", "protein_speed_quality.png", "protein_mi_map.png",
                 "protein_mi_map.csv", "protein_head_scatter.png"):
        assert (results / "figures" / name).is_file(), name
    if cfg["protein"]["data"]["source"] == "family":  # the family table: every setting, ceiling and floor
        with (results / "protein" / "family" / "table.csv").open(newline="") as fh:
            frows = list(csv.DictReader(fh))
        assert {r["sampler"] for r in frows} == {"sequential", "naive", "eb", "mi", "ceiling", "ardca", "floor"}
        assert all(0 <= float(r["hmm_pass_rate"]) <= 1 for r in frows)
    # calibrated budgets: every sampler at every budget on every comparison set, paired rows, summaries
    from mdm_mi.evaluation.budgets import read_csv

    compare = cfg["sudoku"]["compare"]
    for set_ in compare["sets"]:
        brows = read_csv(results / "sudoku" / "budgets" / set_ / "budgets.csv")
        assert {r["divisor"] for r in brows} == set(compare["divisors"])
        assert {"mi*", "mi λ=1"} <= {r["first"] for r in brows}
        assert {"eb", "naive", "threshold", "sequential"} <= {r["second"] for r in brows}
        assert all(0 <= r["p_value"] <= 1 and r["lo"] <= r["diff"] <= r["hi"] for r in brows)
    assert "mi* − eb" in (results / "sudoku" / "budgets.md").read_text()
    with (results / "protein" / "budgets" / "budgets.csv").open(newline="") as fh:
        pb = list(csv.DictReader(fh))
    assert {r["second"] for r in pb} >= {"eb", "naive", "sequential"} and {r["first"] for r in pb} >= {"mi*"}


def antibody_plan(workdir: Path, *configs: str, target: str = "antibody") -> list[list[str]]:
    """The commands of ``snakemake -n -p --cores 2 target`` with ``configs`` (config/ files) in ``workdir``;
    the VH table is read from the working directory, so the repository's is named."""
    tsv = workdir / "tsv.yaml"
    tsv.write_text(f"antibody:\n  tsv: {REPO / 'resources' / 'data' / 'antibody' / 'vh_public.tsv'}\n")
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "-n", "-p",
           "--cores", "2", "--configfile", *(str(REPO / "config" / c) for c in configs), str(tsv), "--", target]
    env = os.environ | {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return shell_commands(proc.stdout + proc.stderr)


def test_the_antibody_rivals_overlay_trains_a_tv_head_and_passes_it(tmp_path):
    """config/antibody-rivals.yaml (demask ε, mi-tv λ on AntiBERTy) plans train-head --target tv on
    the hf label shards beside the MI head, and antibody-compare reads it; antibody.yaml alone does not."""
    def plan(*configs):
        commands = antibody_plan(tmp_path, *configs)
        heads = [build_parser().parse_args(c[3:]) for c in commands if c[3] == "train-head"]
        compares = [build_parser().parse_args(c[3:]) for c in commands if c[3] == "antibody-compare"]
        return heads, compares

    heads, (compare,) = plan("antibody.yaml", "antibody-rivals.yaml")  # CDR-H3 only
    assert sorted(h.target for h in heads) == ["mi", "tv"]
    assert compare.tv_head is not None and compare.tv_head.name == "tv_head" and compare.demask_eps and compare.mi_tv_lambda
    heads, compares = plan("antibody.yaml")
    assert [h.target for h in heads] == ["mi"] and all(c.tv_head is None and not c.demask_eps for c in compares)


def test_the_decisive_antibody_run_takes_every_lineage_and_keeps_its_chunks(tmp_path):
    """config/decisive_antibody.yaml (docs/preregistration.md): one CDR-H3 comparison of every test and
    calibration lineage (no --n-test, --n-calibration), 4 fills at ÷4, ÷3, ÷6, mi λ among 1, 0.5, 2, no
    oracle, its fills kept in antibody/cdr3.chunks beside its outputs, both threads; and the head's
    fidelity. config/antibody.yaml keeps no chunks."""
    commands = antibody_plan(tmp_path, "decisive_antibody.yaml", target="decisive_antibody")
    (argv,) = [c for c in commands if c[3] == "antibody-compare"]
    ns = build_parser().parse_args(argv[3:])
    assert ns.chunks == Path("results/decisive-antibody/antibody/cdr3.chunks") and ns.threads == 2
    assert ns.n_test is None and ns.n_calibration is None and ns.set_name == "cdr3"
    assert (ns.fills, ns.divisors, ns.mi_lambda, ns.samplers) == (4, [4, 3, 6], [1.0, 0.5, 2.0], ["naive", "eb"])
    assert ns.oracle_contexts == 0 and not ns.margin
    assert any(c[3] == "train-head" and "--fidelity" in c for c in commands)
    assert all("--chunks" not in c for c in antibody_plan(tmp_path, "antibody.yaml"))
