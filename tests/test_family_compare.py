"""Co-variation at calibrated budgets: a natural set beats site-independent draws on corrected-MI r
with an interval above 0, a set against itself differs by exactly 0 with a zero-width paired
interval, sets of different sizes are refused, every contender meets every baseline and sequential
at each budget, and a tabled difference is the reported one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL
from mdm_mi.infra.errors import InputError
from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family.covariation import (
    METRICS,
    Reference,
    covariation_budgets,
    covariation_markdown,
    covariation_stats,
    jackknife_differences,
    run_scores,
)

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
    out = jackknife_differences(cols, ref, [("natural", "floor"), ("natural", "natural")], seed=0)
    mi = out[("natural", "floor")]["corrected_mi_r"]
    assert mi["diff"] > 0.2 and mi["lo"] > 0 and mi["p_value"] < 0.05
    assert mi["value_first"] > mi["value_second"]
    same = out[("natural", "natural")]
    assert all(same[m]["diff"] == 0 for m in METRICS)
    assert all(same[m]["lo"] == same[m]["hi"] == 0 for m in METRICS)  # paired: the same groups left out of both


def test_set_stats_are_the_same_in_two_worker_processes(sets):
    ref, cols = sets
    one = covariation_stats(cols, ref, seed=0)
    two = covariation_stats(cols, ref, seed=0, workers=2)
    for k in cols:
        assert one[k].value == two[k].value and one[k].n == two[k].n == N
        assert all(np.array_equal(one[k].loo[m], two[k].loo[m]) for m in METRICS)


def test_paired_comparisons_refuse_sets_of_different_sizes(sets):
    ref, cols = sets
    with pytest.raises(InputError, match="one size"):
        jackknife_differences({"natural": cols["natural"], "floor": cols["floor"][:-1]}, ref,
                           [("natural", "floor")], seed=0)


def _budget_runs(cols):
    runs = {SEQUENTIAL: {"family": SEQUENTIAL, "divisor": 1, "mean_passes": 50.0}}
    for d in (2, 4):
        for family, score in (("eb", 0.0), ("mi λ=1", 0.2), ("mi λ=2", 0.1)):
            runs[f"{family}@1/{d}"] = {"family": family, "divisor": d, "mean_passes": 50.0 / d, "calib_score": score}
    return runs, {k: cols["natural"] if k.startswith("mi") else cols["floor"] for k in runs}


def test_every_contender_meets_every_baseline_at_each_budget(sets):
    ref, cols = sets
    runs, columns = _budget_runs(cols)
    rows = covariation_budgets(runs, covariation_stats(columns, ref, seed=0))
    pairs = {(r["divisor"], r["first"], r["second"], r["metric"]) for r in rows}
    firsts, seconds = ("mi λ=1", "mi λ=2", BEST_MI), ("eb", SEQUENTIAL)
    assert pairs == {(d, a, b, m) for d in (2, 4) for a in firsts for b in seconds for m in METRICS}
    assert all(r["verdict"] == "better" for r in rows if r["metric"] == "corrected_mi_r" and r["second"] != SEQUENTIAL)


def test_a_tabled_difference_is_the_reported_difference(sets):
    """scores.json's r of each run (the first table of covariation.md) are the values the differences
    are taken of: same shuffles, same reference (until 2026-12-03 they were not, and a reported
    difference could have the other sign from the tabled values')."""
    ref, cols = sets
    runs, columns = _budget_runs(cols)
    runs = {k: v for k, v in runs.items() if k == SEQUENTIAL or v["family"] != "mi λ=2"}
    columns = {k: columns[k] for k in runs}
    columns["eb@1/4"] = [c[:-3] + "---" for c in cols["floor"]]  # another set: not a copy of eb@1/2
    stats = covariation_stats(columns, ref, seed=0)
    scores = {k: run_scores(stats[k], columns[k], ref, np.zeros(N), 0.0) for k in runs}
    rows = covariation_budgets(runs, stats)
    run_of = {(r["divisor"], r["family"]): k for k, r in runs.items()} | {(d, SEQUENTIAL): SEQUENTIAL for d in (2, 4)}
    for row in rows:
        first, second = (scores[run_of[(row["divisor"], f)]] for f in (row["first"].replace(BEST_MI, "mi λ=1"),
                                                                     row["second"]))
        assert row["value_first"] == first[row["metric"]] and row["value_second"] == second[row["metric"]]
        assert row["diff"] == first[row["metric"]] - second[row["metric"]]
        assert row["lo"] <= row["diff"] <= row["hi"]
    text = covariation_markdown(runs, scores, rows, N)
    eb4 = scores["eb@1/4"]["corrected_mi_r"]
    assert f"{eb4:.3f} / " in text and "paired grouped jackknife" in text and "†" not in text
    runs["eb@1/4"] = runs["eb@1/4"] | {"on_target": False}  # a calibration that missed its budget is marked
    marked = covariation_markdown(runs, scores, rows, N)
    assert marked.count("†") == 1 + 1 + len(METRICS)  # its cell, the note, mi* − eb at 1/4 in each metric


def test_small_sets_get_a_finite_interval_without_warnings(sets):
    """16 sequences make two jackknife groups: no second-order correction (it needs four), t on 1 df."""
    import warnings

    ref, cols = sets
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jackknife_differences({k: v[:16] for k, v in cols.items()}, ref, [("natural", "floor")], seed=0)
    for r in out[("natural", "floor")].values():
        assert np.isfinite([r["lo"], r["hi"], r["p_value"]]).all() and r["lo"] <= r["diff"] <= r["hi"]


def test_tost_t_matches_the_interval_rule():
    """Equivalence at 5% ⇔ the 90% t-interval lies inside ±margin; a zero-width estimate decides."""
    from scipy.stats import t

    from mdm_mi.evaluation.stats import tost_t

    se, df, margin = 0.02, 29, 0.05
    half = t.ppf(0.95, df) * se
    assert tost_t(margin - half - 1e-9, se, df, margin) < 0.05 < tost_t(margin - half + 1e-6, se, df, margin)
    assert tost_t(0.0, se, df, margin) == pytest.approx(t.sf(margin / se, df))
    assert tost_t(0.01, 0.0, df, margin) == 0.0 and tost_t(0.06, 0.0, df, margin) == 1.0


def test_covariation_verdicts_name_the_primary_contrast_and_need_tost_for_equivalence():
    from mdm_mi.evaluation.verdicts import primary_sentences
    from mdm_mi.protein.family.covariation import covariation_scale, covariation_verdicts

    def row(d, second, metric, diff, se, p):
        return {"set": "family", "divisor": d, "metric": metric, "first": "mi*", "second": second, "diff": diff,
                "lo": diff - 2 * se, "hi": diff + 2 * se, "se": se, "df": 29.0, "p_value": p, "passes_first": 10.0}

    rows = covariation_verdicts([row(2, "eb", "corrected_mi_r", 0.001, 0.01, 0.9),    # tight around 0: equivalent
                                 row(4, "eb", "corrected_mi_r", 0.0, 0.08, 1.0),      # wide: not resolved
                                 row(2, "eb", "c_ij_r", 0.2, 0.01, 1e-6),             # C_ij r: secondary
                                 row(2, "naive", "corrected_mi_r", -0.3, 0.05, 1e-5)])
    assert [r["role"] for r in rows] == ["primary", "primary", "secondary", "secondary"]
    assert [r["verdict"] for r in rows] == ["equivalent", "not resolved", "better", "worse"]
    assert rows[0]["family_size"] == 2 and rows[2]["family_size"] == 2
    sentences = primary_sentences(rows, covariation_scale())
    assert len(sentences) == 2 and "equivalent within ±0.05" in sentences[0] and "not resolved" in sentences[1]
