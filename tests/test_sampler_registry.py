"""A sampler is described in one place, the ``spec`` beside its class, copied into the table by
``python -m mdm_mi.sampling.codegen``: a toy sampler added as ONE entry of the table (here monkeypatched;
the last tests add one as a contributor does: a module and a list entry, then the generator) is
calibrated (the comparisons search its parameter and the budgets table sets it against the
contenders), tabled (its columns and settings in the results tables, its runs in the workflow's grid)
and drawn (its style in the figures); the real entries still give the workflow's run names."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from conftest import MockBackbone, seeded_logits
from mdm_mi.core.fallbacks import Calibrated
from mdm_mi.core.sampler_table import SAMPLERS, Calibration, Flag, SamplerSpec, Setting, Style, decode_runs, sampler_params
from mdm_mi.core.samplers import Sampler, StepView, decode
from mdm_mi.sampling.registry import SAMPLER_CLASSES
from mdm_mi.sudoku.report import COLUMNS  # imported before any toy entry: the real table's columns

N, V = 40, 6


class Fraction(Sampler):
    """Toy policy: the ⌈frac · masked⌉ lowest-entropy masked positions per pass."""

    name = "toy"

    def __init__(self, frac: float):
        if not 0 < frac <= 1:
            raise ValueError(f"toy frac must lie in (0, 1], got {frac}")
        self.frac = float(frac)

    def select(self, view: StepView) -> torch.Tensor:
        k = torch.ceil(self.frac * view.masked.sum(1)).clamp(min=1)
        rank = view.entropy.argsort(dim=1, stable=True).argsort(dim=1)
        return (rank < k[:, None]) & view.masked

    def params(self) -> dict:
        return {"frac": self.frac}


TOY = SamplerSpec(("frac",), style=Style("fraction (toy)", "tab:pink"),
                  grid=(Setting("frac", "toy_frac", "f"),),
                  calibration=Calibration("frac", "φ", 1e-3, 1.0, "log", increasing=False))


@pytest.fixture
def toy(monkeypatch):
    """The sampler tables with the toy entry and its class added (removed again after the test)."""
    monkeypatch.setitem(SAMPLERS, "toy", TOY)
    monkeypatch.setitem(SAMPLER_CLASSES, "toy", Fraction)


def _measure(tokens: torch.Tensor):
    backbone = MockBackbone(seeded_logits(N, V, seed=3), mask_id=V)

    def measure(sampler):
        out = decode(backbone, tokens, sampler, torch.Generator().manual_seed(0))
        return float(out.passes.float().mean()), {}
    return measure


def test_toy_sampler_is_calibrated(toy):
    from mdm_mi.evaluation.calibrate import calibrate, calibrated_families

    fams = calibrated_families(N, {"mi_lambda": [1.0], "mi_on_reject": "skip", "mi_charge_first": False}, SAMPLER_CLASSES)
    assert [f.label for f in fams] == ["naive", "eb", "threshold", "mi λ=1", "toy"]
    fam = fams[-1]
    assert (fam.sampler, fam.param, fam.lo, fam.hi, fam.scale, fam.increasing) == ("toy", "frac", 1e-3, 1.0, "log", False)
    assert fam.slug == "toy" and fam.fixed == {}
    tokens = torch.full((8, N), V)
    point = calibrate(fam, target=N / 4, measure=_measure(tokens))
    assert point.on_target and 1e-3 <= point.value <= 1.0, point
    calibrated = Calibrated({"toy": {"frac": 0.25}}, at=3)  # a model's MANIFEST block
    assert sampler_params(SimpleNamespace(sampler="toy", frac=None), calibrated) == {"frac": 0.25}


def test_toy_baseline_is_compared_with_the_contenders_in_the_budgets_tables(toy):
    from mdm_mi.evaluation.budgets import BEST_MI, budget_rows, is_contender, markdown, summary_markdown

    assert not is_contender("toy") and is_contender("mi λ=1")
    rng = np.random.default_rng(0)
    base = rng.random(50)
    runs = {"sequential": {"family": "sequential", "divisor": 1, "solved": base < 0.5, "passes": np.full(50, 40)}}
    for fam, acc, params in (("toy", 0.3, {"frac": 0.2}), ("eb", 0.35, {"gamma": 0.3}),
                             ("mi λ=1", 0.4, {"gamma": 0.4, "lam": 1.0})):
        runs[f"{fam}@1/4"] = {"family": fam, "divisor": 4, "solved": base < acc, "passes": np.full(50, 10.0),
                              "calib_score": 0.0, "target": 10.0, "params": params}
    rows = budget_rows(runs, "toy set")
    pairs = {(r["first"], r["second"]) for r in rows}
    assert {("mi λ=1", "toy"), (BEST_MI, "toy"), ("toy", "sequential")} <= pairs
    assert "| 1/4 | φ=0.2 | γ=0.3 | γ=0.4 |" in markdown(rows, runs, "toy set")
    assert f"{BEST_MI} − toy" in summary_markdown(rows)


def test_toy_sampler_is_tabled_and_in_the_workflow_grid(toy, monkeypatch):
    from mdm_mi.evaluation.tables import setting_label, to_csv
    from mdm_mi.protein.report import columns as protein_columns, protein_rows
    from mdm_mi.sudoku.report import columns, tidy_rows

    level = {"n": 8, "accuracy": 0.5, "acc_lo": 0.2, "acc_hi": 0.8, "mean_passes": 10.0, "passes_ci": 1.0,
             "mean_clues": 30.0}
    summaries = [{"set": "hard", "sampler": name, "params": sampler.params(), "levels": {"all": level}}
                 for name, sampler in (("sequential", SAMPLER_CLASSES["sequential"]()), ("toy", Fraction(0.25)))]
    rows = tidy_rows(summaries)
    toy_row = next(r for r in rows if r["sampler"] == "toy")
    assert toy_row["frac"] == 0.25 and toy_row["setting"] == setting_label({"frac": 0.25}) == "frac=0.25"
    text = to_csv(rows, columns(rows))
    level_at = COLUMNS.index("level")  # the toy's column follows the grid samplers' parameter columns
    assert text.splitlines()[0].split(",") == COLUMNS[:level_at] + ["frac"] + COLUMNS[level_at:]
    assert "0.25" in text.splitlines()[-1].split(",")
    prot = protein_rows([{"sampler": "toy", "params": {"frac": 0.25}, "mean_passes": 9.0}])
    assert prot[0]["frac"] == 0.25 and "frac" in protein_columns(prot)
    grid = {"sequential": ["entropy"], "naive_k": [4], "eb_gamma": [], "mi_gamma": [], "mi_lambda": [1.0],
            "mi_on_reject": "skip", "mi_charge_first": False, "toy_frac": [0.1, 0.5]}
    assert decode_runs(grid) == {"sequential-entropy": {"sampler": "sequential", "order": "entropy"},
                                 "naive-k4": {"sampler": "naive", "k": 4},
                                 "toy-f0.1": {"sampler": "toy", "frac": 0.1},
                                 "toy-f0.5": {"sampler": "toy", "frac": 0.5}}
    monkeypatch.setitem(SAMPLERS, "toy", dataclasses.replace(TOY, grid=()))  # off the grid (as threshold):
    assert columns([r for r in rows if r["sampler"] != "toy"]) == COLUMNS  # its column only where it has rows
    assert "frac" in columns(rows)


def test_toy_sampler_is_drawn(toy, monkeypatch):
    from mdm_mi.evaluation.plotting import SAMPLER_STYLE
    from mdm_mi.protein.family.figures import style
    from mdm_mi.sudoku import report

    assert SAMPLER_STYLE["toy"] == ("fraction (toy)", "tab:pink") and list(SAMPLER_STYLE)[-1] == "toy"
    assert style("toy") == ("fraction (toy)", "tab:pink", "-")
    drawn = {}
    monkeypatch.setattr(report, "save", lambda fig, out: drawn.setdefault("fig", fig))
    rows = [{"set": "hard", "level": "all", "sampler": s, "mean_passes": p, "accuracy": 0.5, "acc_lo": 0.4,
             "acc_hi": 0.6} for s, p in (("eb", 10.0), ("toy", 12.0), ("toy", 20.0))]
    report.speed_quality(rows, "hard", "unused.png", "toy", overlay_paper=False)
    legend = {t.get_text() for t in drawn["fig"].axes[0].get_legend().get_texts()}
    assert legend == {"EB-Sampler", "fraction (toy)"}


def test_the_real_entries_give_the_workflows_run_names_and_families():
    """The run names, flags and family slugs the workflow's outputs are named by (unchanged by the table)."""
    from mdm_mi.evaluation.calibrate import calibrated_families

    grid = {"sequential": ["entropy", "margin"], "naive_k": [4], "eb_gamma": [0.2], "mi_gamma": [0.3, 1.0],
            "mi_lambda": [1.0, 2.0], "mi_on_reject": "skip", "mi_charge_first": False, "oracle_gamma": [0.3]}
    runs = decode_runs(grid)
    assert list(runs) == ["sequential-entropy", "sequential-margin", "naive-k4", "eb-g0.2", "mi-g0.3-l1.0",
                          "mi-g0.3-l2.0", "mi-g1.0-l1.0", "mi-g1.0-l2.0"]
    assert runs["mi-g0.3-l2.0"] == {"sampler": "mi", "gamma": 0.3, "lam": 2.0, "on_reject": "skip",
                                    "charge_first": False}
    fams = calibrated_families(81, {"mi_lambda": [0.5, 1.0], "mi_on_reject": "stop", "mi_charge_first": True,
                                    "indep_cap": [0.05], "two_budget_delta": [0.1], "unit_disjoint_peers": [0],
                                    "demask_eps": [0.05], "demask_mi_eps": [0.1], "mi_tv_lambda": [1.0], "dapd_theta": [1.0]},
                               SAMPLER_CLASSES)
    assert [f.slug for f in fams] == ["naive", "eb", "threshold", "mi-l0.5", "mi-l1", "mi-indep-cap0.05", "mi-2b-d0.1",
                                      "unit-disjoint-p0", "demask-e0.05", "demask-mi-e0.1", "mi-tv-l1", "dapd-t1"]
    assert fams[7].fixed == {"peers": 0} and fams[9].fixed == {"eps": 0.1} and fams[8].increasing
    assert fams[10].fixed == {"lam": 1.0, "on_reject": "stop", "charge_first": True}
    assert fams[0].hi == 81.0 and fams[2].scale == "log1m" and fams[2].increasing
    assert fams[4].fixed == {"lam": 1.0, "on_reject": "stop", "charge_first": True}
    assert fams[5].fixed == {"cap": 0.05} and math.isclose(fams[6].lo, 1e-9)


class CappedFraction(Fraction):
    """Toy contender with a swept setting: :class:`Fraction` whose ``frac`` is calibrated at each ``width``
    (reads the MI head, like the rules beyond Algorithm 1)."""

    name = "toy-swept"
    uses_pairwise = True

    def __init__(self, frac: float, width: float):
        super().__init__(frac)
        self.width = float(width)

    def params(self) -> dict:
        return {"frac": self.frac, "width": self.width}


SWEPT_TOY = SamplerSpec(("frac", "width"), "head", style=Style("swept (toy)", "tab:olive"),
                        own_flags={"frac": Flag("float | None", "a fraction"), "width": Flag("float | None", "a width")},
                        grid=(Setting("frac", "toy_swept_frac", "f"), Setting("width", "toy_swept_width", "w")),
                        calibration=Calibration("frac", "φ", 1e-3, 1.0, "log", increasing=False,
                                                each=Setting("width", "toy_widths", "w", "ω", "toy: widths, each calibrated")))


def test_the_generated_table_and_schema_keys_are_current():
    """``core/sampler_entries.py`` and the schema's sampler keys are what the classes' specs give
    (``python -m mdm_mi.sampling.codegen --check``, as CI runs it through this test)."""
    from mdm_mi.sampling.codegen import specs, stale

    assert stale(write=False) == [], "run: python -m mdm_mi.sampling.codegen"
    assert specs() == SAMPLERS and list(specs()) == list(SAMPLER_CLASSES)


def test_the_generator_refuses_a_flag_no_entry_or_two_entries_introduce():
    from mdm_mi.infra.errors import InputError
    from mdm_mi.sampling.codegen import flag_fields

    orphan = {**SAMPLERS, "toy": dataclasses.replace(TOY, own_flags={})}
    with pytest.raises(InputError, match="flag 'frac' of toy: no entry introduces it"):
        flag_fields(orphan)
    twice = {**SAMPLERS, "toy": SamplerSpec(("gamma",), own_flags={"gamma": Flag("float", "again")})}
    with pytest.raises(InputError, match="flag 'gamma' is introduced by both eb and toy"):
        flag_fields(twice)


def test_toy_sampler_with_a_swept_setting_needs_one_entry(monkeypatch):
    """One entry makes the comparisons' families, the workflow's per-set rule lists and decode list,
    the results tables' columns and the figures' style; the generator writes its new flags as fields
    (here subclasses standing for the regenerated ``SamplerFlags`` / ``SweptFlags``)."""
    from mdm_mi.core.sampler_table import SamplerFlags, extra_family_keys
    from mdm_mi.evaluation.calibrate import comparison_families
    from mdm_mi.evaluation.plotting import SAMPLER_STYLE
    from mdm_mi.evaluation.tables import param_columns
    from mdm_mi.infra.flags import h
    from mdm_mi.sampling.codegen import flag_fields, swept_fields

    monkeypatch.setitem(SAMPLERS, "toy-swept", SWEPT_TOY)
    monkeypatch.setitem(SAMPLER_CLASSES, "toy-swept", CappedFraction)
    fields = [line.split(":")[0].strip() for line in flag_fields(SAMPLERS)]
    assert fields[-3:] == ["frac", "width", "oracle_tol"] and "frac: float | None = field(default=None, " \
        "metadata=h('toy-swept: a fraction'))" in "\n".join(flag_fields(SAMPLERS))
    assert swept_fields(SAMPLERS)[-1].split(":")[0].strip() == "toy_widths"

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class ToyFlags(SamplerFlags):
        frac: float | None = dataclasses.field(default=None, metadata=h("toy: a fraction"))
        width: float | None = dataclasses.field(default=None, metadata=h("toy: a width"))

    assert extra_family_keys()[-1] == "toy_widths"  # turned off on the sudoku sets outside extra_family_sets
    from mdm_mi.core.sampler_table import SweptFlags

    empty = {f.name: [] for f in dataclasses.fields(SweptFlags)}  # every real swept setting off
    args = SimpleNamespace(**empty | {"mi_lambda": [1.0], "toy_widths": [2.0, 3.0]}, on_reject="skip", charge_first=False)
    fams = comparison_families(N, args, SAMPLER_CLASSES)  # calibrated
    assert [f.label for f in fams][-2:] == ["toy-swept ω=2", "toy-swept ω=3"]
    assert fams[-1].slug == "toy-swept-w3" and fams[-1].fixed == {"width": 3.0}
    assert fams[-1].build(0.5).params() == {"frac": 0.5, "width": 3.0}
    flags = ToyFlags(sampler="toy-swept")
    calibrated = Calibrated({"toy-swept": {"frac": 0.25, "width": 2.0}}, at=3)  # a model's MANIFEST block
    assert sampler_params(flags, calibrated) == {"frac": 0.25, "width": 2.0}
    assert "frac" in param_columns() and "width" in param_columns()  # tabled
    assert SAMPLER_STYLE["toy-swept"] == ("swept (toy)", "tab:olive")  # drawn
    grid = {"toy_swept_frac": [0.5], "toy_swept_width": [2.0]}  # the workflow's decode list
    assert decode_runs(grid) == {"toy-swept-f0.5-w2.0": {"sampler": "toy-swept", "frac": 0.5, "width": 2.0}}


@pytest.mark.parametrize("domain", ["sudoku", "protein"])
def test_the_schema_has_a_key_for_each_entrys_config_settings(domain):
    """The second place a sampler's config setting lives: the schema (its one default). Every grid and
    shared setting of an entry is a key of ``<domain>.samplers``, every swept one of ``<domain>.compare``."""
    from mdm_mi.core.sampler_table import swept_settings
    from mdm_mi.infra.config import load_schema

    section = load_schema()["properties"][domain]["properties"]
    grid = {s.key for spec in SAMPLERS.values() for s in (*spec.grid, *spec.shared)}
    assert grid <= set(section["samplers"]["properties"]), grid - set(section["samplers"]["properties"])
    swept = {s.key for s in swept_settings()}
    assert swept <= set(section["compare"]["properties"]), swept - set(section["compare"]["properties"])


# --- adding a sampler as a contributor does: the edits on a copy of the tree, the files they touch ---------------

TOY_MODULE = '''"""A toy rule (tests/test_sampler_registry.py adds it to a copy of the tree): the ⌈frac · masked⌉
lowest-entropy masked positions per pass; ``width`` is a swept setting the comparisons calibrate at."""

from __future__ import annotations

import torch

from mdm_mi.core.sampler_spec import Calibration, Flag, SamplerSpec, Setting, Style
from mdm_mi.core.samplers import Sampler, StepView


class ToyFraction(Sampler):
    name = "toy"
    spec = SamplerSpec(("frac", "width"), style=Style("toy", "tab:pink"),
                       own_flags={"frac": Flag("float | None", "a fraction"), "width": Flag("float | None", "a width")},
                       calibration=Calibration("frac", "φ", 1e-3, 1.0, "log", increasing=False,
                                               each=Setting("width", "toy_widths", "w", "ω", "toy: widths, each calibrated")))

    def __init__(self, frac: float, width: float):
        self.frac, self.width = float(frac), float(width)

    def select(self, view: StepView) -> torch.Tensor:
        k = torch.ceil(self.frac * view.masked.sum(1)).clamp(min=1)
        rank = view.entropy.argsort(dim=1, stable=True).argsort(dim=1)
        return (rank < k[:, None]) & view.masked

    def params(self) -> dict:
        return {"frac": self.frac, "width": self.width}
'''

# (file, the line the text goes after — or None for a new file —, how many times, the text): what
# docs/developing.md's "Adding a sampler" asks a contributor to write; then the generator runs
TOY_EDITS = (
    ("src/mdm_mi/mi/toy_rule.py", None, 0, TOY_MODULE),
    ("src/mdm_mi/sampling/registry.py", "from mdm_mi.mi.tv_guided import TVGuided\n", 1,
     "from mdm_mi.mi.toy_rule import ToyFraction\n"),
    ("src/mdm_mi/sampling/registry.py", "    OracleMI,\n", 1, "    ToyFraction,\n"),
)
GENERATED = ["src/mdm_mi/core/sampler_entries.py", "workflow/schemas/config.schema.yaml"]

TOY_CHECK = r'''
import argparse, dataclasses, json
from types import SimpleNamespace
from mdm_mi.cli import build_parser
from mdm_mi.core.sampler_table import SweptFlags, swept_settings
from mdm_mi.evaluation.calibrate import comparison_families
from mdm_mi.infra.config import load_schema
from mdm_mi.sampling.registry import SAMPLER_CLASSES
from mdm_mi.user.solve import SolveArgs, user_sampler

verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
flags = {v: sorted(o for a in verbs[v]._actions for o in a.option_strings)
         for v in ("solve", "infill", "sudoku-compare", "protein-compare", "antibody-compare")}
samplers = {v: next(a.help for a in verbs[v]._actions if "--sampler" in a.option_strings).split(" (")[0].split(" | ")
            for v in ("solve", "infill")}
toy = user_sampler(SolveArgs(sampler="toy", frac=0.5, width=2.0))
swept = {f.name: () for f in dataclasses.fields(SweptFlags)} | {"mi_lambda": (1.0,), "toy_widths": (2.0, 3.0)}
families = comparison_families(81, SimpleNamespace(**swept, on_reject="skip", charge_first=False), SAMPLER_CLASSES)
schema = load_schema()["properties"]
print(json.dumps({
    "samplers": samplers, "flags": flags,
    "toy": [type(toy).__name__, toy.params()], "families": [[f.label, f.slug, f.fixed] for f in families],
    "schema": {d: "toy_widths" in schema[d]["properties"]["compare"]["properties"] for d in ("sudoku", "protein", "hf", "antibody")},
}))
'''


def _tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for part in ("src/mdm_mi", "workflow/schemas")
            for p in (root / part).rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def toy_added(tmp_path_factory):
    """A copy of the package and the schema with :data:`TOY_EDITS` applied and the generator run → (the
    files the edits touched, the files the generator rewrote, what the copy's verbs and comparisons then
    say about the toy)."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    from conftest import REPO

    root = tmp_path_factory.mktemp("toy_tree")
    for part in ("src/mdm_mi", "workflow/schemas"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    before = _tree_files(root)
    for rel, anchor, times, text in TOY_EDITS:
        path = root / rel
        if anchor is None:
            assert not path.exists(), rel
            path.write_text(text)
            continue
        source = path.read_text()
        assert source.count(anchor) == times, (rel, anchor, source.count(anchor))
        path.write_text(source.replace(anchor, anchor + text))
    edited = _tree_files(root)
    touched = sorted(rel for rel in edited if before.get(rel) != edited[rel])
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "OMP_NUM_THREADS": "1"}
    # what CI says before the generator runs (--check: exit 1), then the generator itself, in one process
    gen = subprocess.run([sys.executable, "-c", "from mdm_mi.sampling.codegen import codegen_main as m; "
                          "import sys; print(m(['--check'])); sys.exit(m([]))"],
                         capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert gen.returncode == 0 and gen.stdout.splitlines()[0] == "1" and "stale" in gen.stderr, gen.stderr[-3000:]
    after = _tree_files(root)
    generated = sorted(rel for rel in after if edited.get(rel) != after[rel])
    out = subprocess.run([sys.executable, "-c", TOY_CHECK], capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return touched, generated, json.loads(out.stdout.splitlines()[-1])


def test_a_toy_sampler_added_in_one_file_and_a_list_entry_reaches_the_verbs_and_the_schema(toy_added):
    """The edits a contributor makes (a module holding the class and its spec, and its import and entry
    in ``SAMPLER_LIST``), then ``python -m mdm_mi.sampling.codegen`` (which ``--check`` asked for), make
    the toy a ``solve`` and ``infill`` ``--sampler`` choice with its ``--frac`` / ``--width`` flags, a
    family of each calibrated comparison at every ``--toy-widths`` value, a flag of ``sudoku-compare``,
    ``protein-compare`` and ``antibody-compare``, and a key of each comparison's schema section."""
    touched, generated, seen = toy_added
    assert touched == ["src/mdm_mi/mi/toy_rule.py", "src/mdm_mi/sampling/registry.py"]
    assert generated == GENERATED
    assert seen["samplers"]["solve"][-1] == "toy" == seen["samplers"]["infill"][-1]
    assert seen["toy"] == ["ToyFraction", {"frac": 0.5, "width": 2.0}]
    assert {"--frac", "--width", "--sampler"} <= set(seen["flags"]["solve"]) & set(seen["flags"]["infill"])
    assert all("--toy-widths" in seen["flags"][v] for v in ("sudoku-compare", "protein-compare", "antibody-compare"))
    assert seen["families"][-2:] == [["toy ω=2", "toy-w2", {"width": 2.0}], ["toy ω=3", "toy-w3", {"width": 3.0}]]
    assert seen["schema"] == {"sudoku": True, "protein": True, "hf": True, "antibody": True}


def test_developing_md_counts_the_files_the_toy_sampler_touched(toy_added):
    """docs/developing.md's "Adding a sampler (N files and a test)" is the number the toy measured."""
    import re

    from conftest import REPO

    touched, _, _ = toy_added
    heading = re.search(r"^## Adding a sampler \((\d+) files and a test\)$", (REPO / "docs/developing.md").read_text(), re.M)
    assert heading and int(heading.group(1)) == len(touched), (heading and heading.group(0), touched)


def test_the_workflow_reads_the_sampler_table_without_torch():
    """The DAG parse imports the table (``workflow/rules/common.smk``): it must stay torch-free."""
    import subprocess
    import sys

    code = ("import sys; import mdm_mi.core.sampler_table, mdm_mi.protein.decode_flags; "
            "assert 'torch' not in sys.modules, 'the sampler table loaded torch'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
