"""The protein-family figures on tiny synthetic inputs: match-column maps are square, symmetric and
blank where a column is a gap; curves run in order of passes; the figures are written; bad inputs are
one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from mdm_mi.cli import main
from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL
from mdm_mi.infra.errors import InputError
from mdm_mi.protein.family import figure_jobs, figures as ff
from mdm_mi.protein.family import metrics as fm
from mdm_mi.protein.family.covariation import FIELDS
from mdm_mi.protein.family.scores import REFERENCE_ROWS

METRICS = ("corrected_mi_r", "c_ij_r", "f_i_r", "hmm_pass_rate")


def test_match_positions_skip_insertions_and_mark_gaps():
    # sequence "aCD" + "ef" + "G": 'a' unaligned, C D in match columns 0 1, gap at 2, 'ef' inserted, G at 3
    assert ff.match_positions("aCD-efG").tolist() == [1, 2, -1, 5]


def test_match_column_map_is_symmetric_with_gap_columns_blank():
    rng = np.random.default_rng(0)
    matrix = rng.random((7, 7))  # not symmetric
    positions = ff.match_positions("aCD-efG")
    out = ff.to_match_columns(matrix, positions)
    assert out.shape == (len(positions), len(positions))
    assert np.array_equal(np.isnan(out), np.isnan(out.T)) and np.allclose(np.nan_to_num(out), np.nan_to_num(out.T))
    assert np.isnan(out[2]).all() and np.isnan(np.diag(out)).all()
    assert out[0, 1] == pytest.approx((matrix[1, 2] + matrix[2, 1]) / 2)


def test_natural_map_is_the_corrected_mi_of_each_column_pair():
    cols = ["ACDE", "ACDF", "GHDE", "GHDF", "ACKE", "GHKF"] * 5
    condensed = fm.corrected_mi(cols, seed=0, residues_only=True)
    natural = ff.square(condensed, 4)
    assert natural.shape == (4, 4) and np.allclose(np.nan_to_num(natural), np.nan_to_num(natural.T))
    assert natural[0, 1] == pytest.approx(condensed[0]) and natural[2, 3] == pytest.approx(condensed[-1])
    assert natural[0, 1] == natural.max(where=np.isfinite(natural), initial=-np.inf)  # columns 0 and 1 coupled


def test_map_agreement_uses_pairs_finite_on_both():
    a = ff.square(np.arange(6.0), 4)
    b = a.copy()
    b[0, 1] = b[1, 0] = np.nan
    r, pairs = ff.map_agreement(a, b)
    assert pairs == 5 and r == pytest.approx(1.0)


# --- the passes figures ---------------------------------------------------------------------------------


def _runs_and_scores(rng) -> tuple[dict, dict]:
    """protein-compare's runs and family-compare's scores of three families at three budgets, plus
    sequential, listed out of passes order."""
    runs, scores = {SEQUENTIAL: {"family": SEQUENTIAL, "divisor": 1, "mean_passes": 50.0}}, {}
    for fam in ("eb", "mi λ=1", "naive"):
        for d in (4, 2, 8):
            runs[f"{fam}@1/{d}"] = {"family": fam, "divisor": d, "mean_passes": 50.0 / d + rng.random(),
                                    "calib_score": 0.0}
    for run_id in runs:
        scores[run_id] = {k: float(rng.random()) for k in METRICS}
    return runs, scores


def _covariation_rows(runs: dict) -> list[dict]:
    rows = []
    for d in (2, 4, 8):
        for second in ("eb", "naive", SEQUENTIAL):
            for metric in ("corrected_mi_r", "c_ij_r"):
                other = runs[SEQUENTIAL if second == SEQUENTIAL else f"{second}@1/{d}"]
                rows.append({"set": "family", "divisor": d, "metric": metric, "first": BEST_MI, "second": second,
                             "n": 20, "passes_first": runs[f"mi λ=1@1/{d}"]["mean_passes"],
                             "passes_second": other["mean_passes"], "value_first": 0.2, "value_second": 0.1,
                             "diff": 0.1, "lo": -0.05, "hi": 0.2, "p_value": 0.3, "verdict": "not resolved"})
    return rows


@pytest.fixture
def outputs(tmp_path) -> dict[str, Path]:
    """Tiny family-compare, protein-compare and family-score outputs."""
    rng = np.random.default_rng(0)
    runs, scores = _runs_and_scores(rng)
    paths = {"runs": tmp_path / "runs.json", "scores": tmp_path / "scores.json",
             "covariation": tmp_path / "covariation.csv"}
    paths["runs"].write_text(json.dumps({"runs": runs}))
    paths["scores"].write_text(json.dumps({"n": 20, "hmm_threshold": 1.0, "scores": scores}))
    with paths["covariation"].open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows(_covariation_rows(runs))
    grid = []
    for row, sampler, params, passes in (("eb-g4.0", "eb", {"gamma": 4.0}, 9.0), ("eb-g1.0", "eb", {"gamma": 1.0}, 30.0),
                                         ("mi-g4.0-l1.0", "mi", {"gamma": 4.0, "lam": 1.0}, 11.0),
                                         ("ceiling", "ceiling", {}, None), ("ardca", "ardca", {}, None),
                                         ("floor", "floor", {}, None)):
        paths[row] = tmp_path / f"{row}.json"
        paths[row].write_text(json.dumps({"row": row, "sampler": sampler, "params": params, "mean_passes": passes,
                                          "n": 20, **{k: float(rng.random()) for k in METRICS}}))
        grid.append(paths[row])
    paths["grid"] = grid
    paths["references"] = [paths[row] for row in REFERENCE_ROWS]
    return paths


def test_calibrated_curves_run_in_order_of_passes(outputs):
    runs = json.loads(outputs["runs"].read_text())["runs"]
    scores = json.loads(outputs["scores"].read_text())["scores"]
    points = ff.calibrated_points(scores, runs)
    lines = ff.curves(points, "corrected_mi_r")
    assert set(lines) == {"eb", "mi λ=1", "naive"}  # sequential is a point, not a curve
    for x, y in lines.values():
        assert len(x) == len(y) == 3 and np.all(np.diff(x) > 0)


def test_differences_are_mi_star_minus_each_baseline_in_order_of_passes(outputs):
    rows = ff.read_covariation(outputs["covariation"])
    diffs = ff.differences(rows, "c_ij_r")
    assert set(diffs) == {"eb", "naive", SEQUENTIAL}
    assert all(np.all(np.diff([r["passes_first"] for r in rs]) > 0) for rs in diffs.values())


def test_fixed_grid_rows_group_mi_by_lambda_and_keep_the_reference_rows_apart():
    rows, refs = ff.fixed_grid_points([
        {"row": "mi-a", "sampler": "mi", "params": {"lam": 2.0}, "mean_passes": 5},
        {"row": "eb-a", "sampler": "eb", "params": {"gamma": 1.0}, "mean_passes": 7},
        {"row": "ceiling", "sampler": "ceiling", "mean_passes": None}])
    assert [r["family"] for r in rows] == ["mi λ=2", "eb"] and set(refs) == {"ceiling"}


def test_both_passes_figures_are_written(outputs, tmp_path):
    cov, rate = tmp_path / "figs" / "cov.png", tmp_path / "figs" / "rate.png"
    assert main(["figure-family-covariation", "--scores", str(outputs["scores"]), "--runs", str(outputs["runs"]),
                 "--covariation", str(outputs["covariation"]), "--references", *map(str, outputs["references"]),
                 "--out", str(cov)]) == 0
    assert main(["figure-family-pass-rate", "--inputs", *map(str, outputs["grid"]), "--scores",
                 str(outputs["scores"]), "--runs", str(outputs["runs"]), "--out", str(rate)]) == 0
    for png in (cov, rate):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_inputs_are_one_line(outputs, tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("set,divisor\nfamily,2\n")
    base = ["figure-family-covariation", "--scores", str(outputs["scores"]), "--runs", str(outputs["runs"]),
            "--covariation", str(outputs["covariation"]), "--references", *map(str, outputs["references"]),
            "--out", str(tmp_path / "x.png")]
    for flag, value in (("--scores", broken), ("--covariation", bad_csv), ("--references", tmp_path / "missing.json")):
        argv = list(base)
        argv[argv.index(flag) + 1] = str(value)
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "x.png").exists()


def test_both_figures_need_every_reference_row(outputs, tmp_path):
    with pytest.raises(InputError, match="need the reference rows ceiling, ardca, floor; got ceiling, floor"):
        figure_jobs.figure_family_covariation(figure_jobs.CovariationFigureArgs(
            outputs["scores"], outputs["runs"], outputs["covariation"], (outputs["ceiling"], outputs["floor"]),
            out=tmp_path / "unused.png"), None)
    with pytest.raises(InputError, match="need the reference rows"):
        figure_jobs.figure_family_pass_rate(figure_jobs.PassRateFigureArgs(tuple(outputs["grid"][:3]), outputs["scores"],
                                                         outputs["runs"], out=Path("unused.png")), None)


def test_scores_of_runs_missing_from_runs_json_are_refused(outputs):
    runs = json.loads(outputs["runs"].read_text())["runs"]
    scores = json.loads(outputs["scores"].read_text())["scores"]
    with pytest.raises(InputError, match="not in runs.json"):
        ff.calibrated_points(scores, {k: v for k, v in runs.items() if k != "eb@1/2"})


def test_mi_map_figure_and_csv_are_written(tmp_path):
    head_map = ff.to_match_columns(np.random.default_rng(0).random((7, 7)), ff.match_positions("aCD-efG"))
    natural = ff.square(np.arange(6.0) / 10, 4)
    ff.mi_map_figure(head_map, natural, tmp_path / "mi.png", "title", "head", "natural")
    ff.write_map_csv(tmp_path / "mi.csv", head_map, natural)
    assert (tmp_path / "mi.png").read_bytes()[:4] == b"\x89PNG"
    rows = list(csv.DictReader((tmp_path / "mi.csv").open()))
    assert len(rows) == 6 and rows[1] == {"i": "1", "j": "3", "head": "", "natural": "0.1"}  # column 3 is a gap
