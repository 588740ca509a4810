"""docs/data/family-inference/summary.json (the numbers docs/methods.md binds) is what
scripts/family_inference_summary.py reads from benchmarks/family_inference.log now."""
import json
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_committed_simulation_summary_is_the_logs_tables(tmp_path):
    out = tmp_path / "summary.json"
    argv, sys.argv = sys.argv, ["family_inference_summary.py", str(REPO / "benchmarks/family_inference.log"), str(out)]
    try:
        runpy.run_path(str(REPO / "scripts/family_inference_summary.py"), run_name="__main__")
    finally:
        sys.argv = argv
    fresh = json.loads(out.read_text())
    assert fresh == json.loads((REPO / "docs/data/family-inference/summary.json").read_text())
    new = fresh["procedures"]["new"]["reference fixed"]
    assert new["null, paired"]["c_ij_r"] == {"size_pct": 7.2, "coverage_pct": 92.8, "half_width": 0.0124, "sd": 0.0067,
                                            "true_diff": 0.0}
    assert new["shift, paired"]["corrected_mi_r"]["size_pct"] is None  # "—": no size for a true shift
    assert fresh["monte_carlo_points"] == {"200": 1.5, "400": 1.1}
