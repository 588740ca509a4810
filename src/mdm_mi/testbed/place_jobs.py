"""The verb ``testbed-place``: the testbed's regimes, or one real backbone, measured by the statistic of
:mod:`mdm_mi.testbed.placement` (EB's dependence share at a budget), so that the backbone can be
placed on the testbed's map.

    mdm-mi testbed-place --testbed-runs docs/data/testbed/runs.csv --out docs/data/testbed/placement/regimes.json
    mdm-mi testbed-place --name "Sudoku, paper-shape" --model results/x/sudoku/model \
        --labels results/x/sudoku/labels/test/shard*.safetensors --runs results/x/sudoku/budgets/hard/runs.json \
        --out docs/data/testbed/placement/sudoku-paper.json

EB's γ is the one its matched run spends the budget at (weighted over its settings): a regime's from
the testbed's ``runs.csv``, a backbone's from its comparison's ``runs.json`` (``sudoku-compare``'s run
``eb@1/<d>``, or ``antibody-compare``'s ``eb@<d>``: one setting calibrated on its calibration split).
Writes ``--out`` (JSON: ``divisor`` and ``rows``, one per regime or backbone, each with the inputs it
was measured from); rows already in it under other names are kept, so one file gathers the map's
regimes and every backbone placed on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h
from mdm_mi.infra.io import write_json
from mdm_mi.infra.runtime import setup
from mdm_mi.testbed.placement import parse_setting_text, profile, masked_entropy, regime_profile, weighted_setting
from mdm_mi.testbed.regimes import REGIMES
from mdm_mi.testbed.report import read_table
from mdm_mi.testbed.study import StudySettings, rounded

PLACE_DIVISOR = 4  # the pre-registered primary budget: sequential's passes ÷ 4


@dataclass(frozen=True)
class PlaceArgs:
    out: Path = field(metadata=h("output JSON"))
    divisor: int = field(default=PLACE_DIVISOR, metadata=h("the budget (sequential's passes ÷ d) whose EB setting is used"))
    testbed_runs: Path | None = field(default=None, metadata=h(
        "the testbed's runs.csv: measure every regime in it (the testbed's default sizes and seed)"))
    name: str | None = field(default=None, metadata=h("the backbone's name in the table"))
    model: Path | None = field(default=None, metadata=h("the backbone's folder"))
    labels: tuple[Path, ...] = field(default=(), metadata=h("its test label shards (exact or certified MI)"))
    runs: Path | None = field(default=None, metadata=h("its comparison's runs.json (sudoku-, protein- or antibody-compare; or its EB part's part.json), for EB's γ"))
    threads: int = field(default=1, metadata=h("torch CPU threads"))


def testbed_place(args: PlaceArgs, tracker) -> None:
    setup(args.threads, 0)
    if (args.testbed_runs is None) == (args.model is None):
        raise InputError("pass --testbed-runs (the regimes) or --model with --labels, --runs and --name (a backbone)")
    if args.model is not None and not (args.labels and args.runs and args.name):
        raise InputError("a backbone needs --model, --labels, --runs and --name")
    earlier = read_placement(args.out, args.divisor)
    rows = regime_rows(args.testbed_runs, args.divisor) if args.testbed_runs else [backbone_row(args)]
    inputs = {k: str(v) for k, v in (("testbed_runs", args.testbed_runs), ("model", args.model), ("runs", args.runs))
              if v is not None} | ({"labels": [str(p) for p in args.labels]} if args.labels else {})
    rows = [rounded(r) | {"inputs": inputs} for r in rows]
    names = {r["name"] for r in rows}
    write_json(args.out, {"divisor": args.divisor, "rows": [r for r in earlier if r["name"] not in names] + rows})
    tracker.log_artifact(args.out)


def read_placement(path: Path, divisor: int) -> list[dict]:
    """The rows already in ``path`` (none if it does not exist); refused if they were measured at
    another budget: each invocation adds or replaces its own rows (by name) and keeps the others."""
    if not Path(path).is_file():
        return []
    try:
        found = json.loads(Path(path).read_text())
        rows, at = found["rows"], found["divisor"]
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{path} is not a testbed-place file: choose another --out") from None
    if at != divisor:
        raise InputError(f"{path} holds rows at ÷{at}, not ÷{divisor}: choose another --out")
    return rows


def regime_rows(runs_csv: Path, divisor: int) -> list[dict]:
    """One row per regime of the testbed's ``runs.csv``: its EB γ at ``divisor`` and :func:`regime_profile`."""
    if not Path(runs_csv).is_file():
        raise InputError(f"testbed runs table not found: {runs_csv}")
    eb = {r["regime"]: r for r in read_table(runs_csv) if r["rule"] == "eb" and int(r["divisor"]) == divisor}
    if not eb:
        raise InputError(f"{runs_csv} has no EB run at ÷{divisor}")
    settings = StudySettings()
    return [{"name": name, "kind": "testbed regime", **regime_profile(REGIMES[name], settings,
                                                                      parse_setting_text(row["setting"]))}
            for name, row in eb.items()]


def eb_gamma(path: Path, divisor: int) -> float:
    """EB's γ at ``divisor`` in a comparison's ``runs.json`` (or a part's ``part.json``): ``sudoku-compare``'s
    run ``eb@1/<d>`` (the weighted mean of its matched settings), ``protein-compare``'s ``eb@1/<d>`` or
    ``antibody-compare``'s ``eb@<d>`` (one calibrated setting each, in ``params``)."""
    try:
        found = json.loads(Path(path).read_text())
        runs = found["runs"] if isinstance(found.get("runs"), dict) else found  # sudoku-compare's, antibody-compare's
    except (OSError, ValueError, AttributeError):
        runs = {}
    for key in (f"eb@1/{divisor}", f"eb@{divisor}"):
        run = runs.get(key)
        if isinstance(run, dict) and ("settings" in run or "gamma" in run.get("params", {})):
            return weighted_setting(run["settings"], "gamma") if "settings" in run else float(run["params"]["gamma"])
    raise InputError(f"{path}: no EB run at ÷{divisor} (eb@1/{divisor} of sudoku-compare and protein-compare, "
                     f"eb@{divisor} of antibody-compare)")


def backbone_row(args: PlaceArgs) -> dict:
    """The backbone's :func:`profile` on its test label shards at the EB γ of its comparison."""
    from mdm_mi.models.loading import load_model, model_fingerprint  # lazy: the regimes need no model loading
    from mdm_mi.mi.contexts import load_label_shards

    gamma = eb_gamma(args.runs, args.divisor)
    backbone, _ = load_model(args.model)
    labels = load_label_shards(args.labels, "mi", backbone, model_fingerprint(args.model), args.model)  # foreign shards refused
    entropy = masked_entropy(backbone, labels["contexts"])
    return {"name": args.name, "kind": "backbone", **profile(entropy, labels["label"], labels["masked"], gamma)}
