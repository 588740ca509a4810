"""The numbers behind answer.md's limitations (issue 64) are computed from committed data and are current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mdm_mi.evaluation.pass_gap import pass_gap

REPO = Path(__file__).resolve().parents[1]


def _row(divisor, passes_first, passes_second, value_second):
    return {"first": "a", "second": "b", "metric": "m", "divisor": divisor, "passes_first": passes_first,
            "passes_second": passes_second, "value_second": value_second}


def test_the_pass_gap_is_priced_at_the_second_rules_own_secant():
    """b gains 0.1 per pass between its two dearest budgets (4 → 5 passes): a rule one pass short at
    ÷3 is handicapped by 0.1, one 10% short by 10%; a cheaper budget does not enter the rate."""
    rows = [_row(3, 4.0, 5.0, -1.0), _row(4, 3.6, 4.0, -1.1), _row(6, 2.0, 2.0, -3.0)]
    gap = pass_gap(rows, "a", "b", "m")
    assert gap["rate_per_pass"] == pytest.approx(0.1) and gap["rate_between"] == ["4", "3"]
    assert gap["budgets"]["3"]["handicap"] == pytest.approx(0.1) and gap["budgets"]["3"]["share"] == pytest.approx(-0.2)
    assert gap["budgets"]["6"]["handicap"] == 0


def test_the_committed_antibody_limits_are_current(tmp_path):
    """docs/data/decisive-antibody/limits.json is what scripts/antibody_limits.py writes now."""
    import runpy
    import shutil
    import sys

    run = tmp_path / "run"
    shutil.copytree(REPO / "docs/data/decisive-antibody/antibody", run / "antibody")
    argv, sys.argv = sys.argv, ["antibody_limits.py", str(run)]
    try:
        runpy.run_path(str(REPO / "scripts/antibody_limits.py"), run_name="__main__")
    finally:
        sys.argv = argv
    fresh, committed = (json.loads(p.read_text()) for p in (run / "limits.json", REPO / "docs/data/decisive-antibody/limits.json"))
    assert {k: v for k, v in fresh.items() if k != "source"} == {k: v for k, v in committed.items() if k != "source"}
