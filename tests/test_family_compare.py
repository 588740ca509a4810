"""Co-variation at calibrated budgets: a natural set beats site-independent draws on corrected-MI r
with an interval above 0, a set against itself differs by exactly 0 with a zero-width paired
interval, sets of different sizes are refused, and every contender meets every baseline and
sequential at each budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdm_mi.budgets import BEST_MI, SEQUENTIAL
from mdm_mi.errors import InputError
from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family.compare import METRICS, Reference, bootstrap_differences, covariation_budgets

KUNITZ = Path(__file__).resolve().parents[1] / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
N = 150


@pytest.fixture(scope="module")
def sets():
    """The reference (its statistics computed once), a disjoint natural set, and site-independent draws
    of the same size."""
    train, val, reference = fam.cluster_split(fam.drop_nonstandard(fam.parse_a2m(KUNITZ))[0], seed=0)
    floor = fam.sample_profile(fam.column_profile(train), N, np.random.default_rng(0))
    return (Reference.of([r.columns for r in reference[:400]], seed=0), {"natural": [r.columns for r in train[:N]],
                                                   "floor": [r.columns for r in floor]})


def test_natural_beats_site_independent_draws_on_corrected_mi(sets):
    ref, cols = sets
    out = bootstrap_differences(cols, ref, [("natural", "floor"), ("natural", "natural")], n_boot=20, seed=0)
    mi = out[("natural", "floor")]["corrected_mi_r"]
    assert mi["diff"] > 0.2 and mi["lo"] > 0 and mi["p_value"] < 0.05
    assert mi["value_first"] > mi["value_second"]
    same = out[("natural", "natural")]
    assert all(same[m]["diff"] == 0 for m in METRICS)
    assert all(same[m]["lo"] == same[m]["hi"] == 0 for m in METRICS)  # paired: both halves are the same lengths


def test_half_sample_replicates_are_the_same_in_two_worker_processes(sets):
    from mdm_mi.protein.family.compare import half_sample_metrics

    ref, cols = sets
    one = half_sample_metrics(cols, ref, n_boot=3, seed=0)
    two = half_sample_metrics(cols, ref, n_boot=3, seed=0, workers=2)
    assert one == two and len(two[1]["floor"]) == 3


def test_paired_half_samples_refuse_sets_of_different_sizes(sets):
    ref, cols = sets
    with pytest.raises(InputError, match="one size"):
        bootstrap_differences({"natural": cols["natural"], "floor": cols["floor"][:-1]}, ref,
                              [("natural", "floor")], n_boot=2, seed=0)


def test_every_contender_meets_every_baseline_at_each_budget(sets):
    ref, cols = sets
    runs = {SEQUENTIAL: {"family": SEQUENTIAL, "divisor": 1, "mean_passes": 50.0}}
    for d in (2, 4):
        for family, score in (("eb", 0.0), ("mi λ=1", 0.2), ("mi λ=2", 0.1)):
            runs[f"{family}@1/{d}"] = {"family": family, "divisor": d, "mean_passes": 50.0 / d, "calib_score": score}
    columns = {k: cols["natural"] if k.startswith("mi") else cols["floor"] for k in runs}
    rows = covariation_budgets(runs, columns, ref, n_boot=5, seed=0)
    pairs = {(r["divisor"], r["first"], r["second"], r["metric"]) for r in rows}
    firsts, seconds = ("mi λ=1", "mi λ=2", BEST_MI), ("eb", SEQUENTIAL)
    assert pairs == {(d, a, b, m) for d in (2, 4) for a in firsts for b in seconds for m in METRICS}
    assert all(r["verdict"] == "better" for r in rows if r["metric"] == "corrected_mi_r" and r["second"] != SEQUENTIAL)
