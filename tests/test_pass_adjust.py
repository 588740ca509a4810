"""The pass-adjusted contrast (docs/preregistration.md, amendment 4) on runs whose answer is known."""
import math

import numpy as np
import pytest

from mdm_mi.antibody.pass_adjust import bracket, pass_adjusted_rows

P = 40  # contexts


def _run(family: str, divisor: int, passes: float, scores: np.ndarray) -> dict:
    return {"family": family, "divisor": divisor, "mean_passes": passes, "pll": scores.tolist()}


def _runs(delta: float, first_passes: dict[int, float], noise: np.ndarray) -> dict:
    """EB's per-context score is exactly linear in passes (base + 0.1·passes); the first rule's is what
    EB would score at its passes, plus ``delta`` and ``noise`` (mean 0)."""
    base = np.linspace(-2.5, -1.5, P)
    eb = {d: p for d, p in {3: 5.0, 4: 4.0, 6: 2.5}.items()}
    runs = {f"eb@{d}": _run("eb", d, p, base + 0.1 * p) for d, p in eb.items()}
    runs |= {f"mi-l1@{d}": _run("mi-l1", d, p, base + 0.1 * p + delta + noise) for d, p in first_passes.items()}
    return runs


def test_bracket_picks_the_adjacent_pair_and_flags_extrapolation():
    passes = {"a": 1.0, "b": 2.0, "c": 4.0}
    assert bracket(passes, 3.0) == ("b", "c", 0.5, False)
    assert bracket(passes, 1.5) == ("a", "b", 0.5, False)
    assert bracket(passes, 0.5) == ("a", "b", -0.5, True)
    assert bracket(passes, 5.0) == ("b", "c", 1.5, True)
    with pytest.raises(AssertionError):
        bracket({"a": 1.0, "b": 1.0}, 1.0)


def test_a_rule_on_the_reference_curve_differs_by_exactly_its_offset():
    noise = np.resize([0.02, -0.02], P)  # mean 0, SD known
    rows = pass_adjusted_rows(_runs(0.03, {4: 3.7, 3: 4.6, 6: 2.4}, noise), "mi-l1", "eb", "pll", primary=4, margin=0.1)
    assert [r["divisor"] for r in rows] == [4, 3, 6] and rows[0]["role"] == "primary"
    for r in rows:
        assert r["diff"] == pytest.approx(0.03, abs=1e-12)  # the linear curve is interpolated exactly
        assert r["se"] == pytest.approx(np.std(noise, ddof=1) / math.sqrt(P))
    by = {r["divisor"]: r for r in rows}
    assert by[4]["between"] == ["eb@6", "eb@4"] and by[4]["weight"] == pytest.approx((3.7 - 2.5) / 1.5)
    assert by[3]["between"] == ["eb@4", "eb@3"] and not by[3]["extrapolated"]
    assert by[6]["between"] == ["eb@6", "eb@4"] and by[6]["extrapolated"] and by[6]["weight"] < 0
    assert by[4]["passes_second_same_budget"] == 4.0 and by[4]["passes_first"] == 3.7
    assert {r["family_size"] for r in rows[1:]} == {2} and rows[0]["family_size"] == 1


def test_the_unadjusted_gap_would_have_been_the_pass_handicap():
    """Without adjustment the first rule looks 0.1·(4.0 − 3.7) worse at ÷4; adjusted, it ties."""
    runs = _runs(0.0, {4: 3.7}, np.resize([0.01, -0.01], P))
    raw = np.mean(runs["mi-l1@4"]["pll"]) - np.mean(runs["eb@4"]["pll"])
    assert raw == pytest.approx(-0.03)
    (row,) = pass_adjusted_rows(runs, "mi-l1", "eb", "pll", primary=4, margin=0.1)
    assert row["diff"] == pytest.approx(0.0, abs=1e-12) and row["verdict"] == "equivalent"


def test_verdict_words_follow_the_registered_rule():
    noise = np.resize([0.01, -0.01], P)
    (better,) = pass_adjusted_rows(_runs(0.2, {4: 3.7}, noise), "mi-l1", "eb", "pll", primary=4, margin=0.1)
    (worse,) = pass_adjusted_rows(_runs(-0.2, {4: 3.7}, noise), "mi-l1", "eb", "pll", primary=4, margin=0.1)
    (unclear,) = pass_adjusted_rows(_runs(0.0, {4: 3.7}, np.resize([1.0, -1.0], P)), "mi-l1", "eb", "pll",
                                    primary=4, margin=0.1)
    assert (better["verdict"], worse["verdict"], unclear["verdict"]) == ("better", "worse", "not resolved")


def test_the_committed_pass_adjusted_contrast_is_current(tmp_path):
    """docs/data/decisive-antibody/pass_adjusted.json is what scripts/antibody_pass_adjusted.py writes
    now from the committed runs.json, and its block renders each rule's own passes."""
    import json
    import runpy
    import shutil
    import sys
    from pathlib import Path

    from mdm_mi.antibody.report import pass_adjusted_block

    repo = Path(__file__).resolve().parents[1]
    run = tmp_path / "run"
    shutil.copytree(repo / "docs/data/decisive-antibody/antibody", run / "antibody")
    argv, sys.argv = sys.argv, ["antibody_pass_adjusted.py", str(run)]
    try:
        runpy.run_path(str(repo / "scripts/antibody_pass_adjusted.py"), run_name="__main__")
    finally:
        sys.argv = argv
    committed = repo / "docs/data/decisive-antibody/pass_adjusted.json"
    fresh, old = (json.loads(p.read_text()) for p in (run / "pass_adjusted.json", committed))
    assert {k: v for k, v in fresh.items() if k != "source"} == {k: v for k, v in old.items() if k != "source"}
    text = pass_adjusted_block(committed)
    assert "| primary | 1/4 | 3.69 / 3.87 |" in text and "extrapolated" in text
