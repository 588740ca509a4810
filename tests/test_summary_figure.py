"""The cross-domain summary figure (figure-budgets-summary): both runs.json shapes read, curves sorted
by passes, bad input one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mdm_mi.cli import main
from mdm_mi.evaluation.summary_figure import merge_panels, read_panel


def _sudoku_runs(path):
    runs = {"sequential": {"family": "sequential", "divisor": 1, "mean_passes": 40.0, "accuracy": 0.5}}
    for d, acc in ((4, 0.3), (2, 0.45)):  # written out of passes order
        runs[f"eb@1/{d}"] = {"family": "eb", "divisor": d, "mean_passes": 40.0 / d, "accuracy": acc}
        runs[f"dapd@1/{d}"] = {"family": "dapd θ=1", "divisor": d, "mean_passes": 40.0 / d, "accuracy": acc - 0.1}
    path.write_text(json.dumps({"set": "hard", "runs": runs}))
    return path


def _antibody_runs(path):
    runs = {"sequential": {"family": "sequential", "divisor": 1, "mean_passes": 12.0, "pll": [-1.5, -1.7]},
            "mi-l1@2": {"family": "mi λ=1", "divisor": 2, "mean_passes": 6.0, "pll": [-1.6, -1.8]}}
    path.write_text(json.dumps(runs))
    return path


def test_panels_read_both_comparisons(tmp_path):
    sudoku = read_panel(_sudoku_runs(tmp_path / "s.json"), "hard")
    assert sudoku.label == "accuracy (%)" and sudoku.sequential == (40.0, 50.0)
    x, y = sudoku.curves["eb"]
    assert np.all(np.diff(x) > 0) and np.allclose(y, [30.0, 45.0])
    antibody = read_panel(_antibody_runs(tmp_path / "a.json"), "CDR-H3")
    assert antibody.label.startswith("PLL") and antibody.curves["mi λ=1"][1][0] == pytest.approx(-1.7)
    protein = tmp_path / "p.json"
    protein.write_text(json.dumps({"runs": {"sequential": {"family": "sequential", "mean_passes": 70.0, "jsd": 0.09},
                                            "eb@1/2": {"family": "eb", "divisor": 2, "mean_passes": 35.0, "jsd": 0.12}}}))
    assert read_panel(protein, "Kunitz").curves["eb"][1][0] == pytest.approx(0.12)


def test_runs_of_one_comparison_at_other_budgets_join_into_one_panel(tmp_path):
    first = read_panel(_sudoku_runs(tmp_path / "s.json"), "hard")  # ÷2 and ÷4
    runs = json.loads((tmp_path / "s.json").read_text())
    eb = runs["runs"]["eb@1/2"] | {"divisor": 3, "mean_passes": 40.0 / 3, "accuracy": 0.4}
    runs["runs"] = {"eb@1/3": eb, "sequential": runs["runs"]["sequential"]}
    (tmp_path / "t.json").write_text(json.dumps(runs))
    merged = merge_panels([first, read_panel(tmp_path / "t.json", "hard")])
    x, y = merged.curves["eb"]
    assert np.allclose(x, [10.0, 40.0 / 3, 20.0]) and np.allclose(y, [30.0, 40.0, 45.0])
    assert len(merged.curves["dapd θ=1"][0]) == 2 and merged.sequential == first.sequential
    with pytest.raises(Exception, match="different qualities"):
        merge_panels([first, read_panel(_antibody_runs(tmp_path / "a.json"), "hard")])


def test_the_verb_draws_one_panel_per_comparison(tmp_path):
    out = tmp_path / "summary.png"
    assert main(["figure-budgets-summary", "--runs", str(_sudoku_runs(tmp_path / "s.json")),
                 str(_antibody_runs(tmp_path / "a.json")), "--titles", "hard", "CDR-H3", "--out", str(out),
                 "--tracking-uri", "none"]) == 0
    assert out.stat().st_size > 0


@pytest.mark.parametrize("extra, message", [(["--titles", "one", "two"], "one title per"),
                                            (["--titles", "x", "--runs", "nope.json"], "not found")])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "summary.png"
    argv = ["figure-budgets-summary", "--runs", str(_sudoku_runs(tmp_path / "s.json")), "--out", str(out),
            "--tracking-uri", "none", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not out.exists()
