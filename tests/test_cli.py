"""Properties of the command line (:func:`mdm_mi.cli.main`): ``sudoku-evaluate`` writes its summary and
per-puzzle files, bad input is one ``error:`` line with exit code 2 and no output, ``sudoku-table`` builds
the table, and tracking mirrors a job into one MLflow run."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from conftest import REPO, write_csv
from mdm_mi.cli import main
from mdm_mi.infra.tracking import NullTracker, TrackingArgs, open_tracker
from mdm_mi.sudoku.report import COLUMNS

SUMMARY_KEYS = {"sampler", "params", "set", "seconds", "levels"}
LEVEL_KEYS = {"n", "accuracy", "acc_lo", "acc_hi", "mean_passes", "passes_ci", "mean_clues"}
RECORD_KEYS = ["level", "clues", "passes", "solved", "matches_solution", "grid"]
SAMPLER_FLAGS = {
    "sequential": ["--sampler", "sequential", "--order", "margin"],
    "naive": ["--sampler", "naive", "--k", "4"],
    "eb": ["--sampler", "eb", "--gamma", "0.5"],
}


def evaluate_argv(model, puzzles, out_dir: Path, sampler=("--sampler", "sequential"), extra=()) -> list[str]:
    return ["sudoku-evaluate", "--model", str(model), "--puzzles", str(puzzles), "--out", str(out_dir / "summary.json"),
            "--per-puzzle", str(out_dir / "per_puzzle.csv"), *sampler, "--device", "cpu", "--threads", "1",
            "--batch-size", "2", *extra]


def read_records(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == RECORD_KEYS
        return list(reader)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_checkpoint, easy_rows) -> dict[str, Path]:
    """Sampler name → output folder of one ``sudoku-evaluate`` run on 3 easy puzzles."""
    root = tmp_path_factory.mktemp("eval")
    puzzles = write_csv(root / "three.csv", ["puzzle", "solution", "level"],
                        [[r["puzzle"], r["solution"], r["level"]] for r in easy_rows[:3]])
    out = {}
    for name, flags in SAMPLER_FLAGS.items():
        (root / name).mkdir()
        assert main(evaluate_argv(tiny_checkpoint, puzzles, root / name, flags)) == 0
        out[name] = root / name
    return out


# --- evaluate --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SAMPLER_FLAGS))
def test_evaluate_writes_summary_with_expected_keys(evaluated, name):
    summary = json.loads((evaluated[name] / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS
    assert summary["sampler"] == name and summary["set"] == "three"
    assert summary["params"] == {"sequential": {"order": "margin"}, "naive": {"k": 4}, "eb": {"gamma": 0.5}}[name]
    assert set(summary["levels"]) == {"all", "easy"}
    for level in summary["levels"].values():
        assert set(level) == LEVEL_KEYS and level["n"] == 3
        eps = 1e-12  # the Wilson bounds are computed in floating point
        assert -eps <= level["acc_lo"] <= level["accuracy"] + eps <= level["acc_hi"] + 2 * eps <= 1 + 3 * eps


@pytest.mark.parametrize("name", list(SAMPLER_FLAGS))
def test_evaluate_writes_per_puzzle_csv(evaluated, easy_rows, name):
    records = read_records(evaluated[name] / "per_puzzle.csv")
    assert len(records) == 3
    for rec, row in zip(records, easy_rows):
        blanks = row["puzzle"].count("0")
        assert rec["level"] == "easy" and int(rec["clues"]) == 81 - blanks
        assert len(rec["grid"]) == 81 and "0" not in rec["grid"]
        assert all(g == p for g, p in zip(rec["grid"], row["puzzle"]) if p != "0")  # clues kept
        passes = int(rec["passes"])
        if name == "sequential":
            assert passes == blanks
        elif name == "naive":
            assert passes == -(-blanks // 4)
        else:
            assert 1 <= passes <= blanks
        assert rec["solved"] in ("True", "False") and rec["matches_solution"] in ("True", "False")
        if rec["matches_solution"] == "True":
            assert rec["solved"] == "True"
    summary = json.loads((evaluated[name] / "summary.json").read_text())
    mean = sum(int(r["passes"]) for r in records) / 3
    assert summary["levels"]["all"]["mean_passes"] == pytest.approx(mean)


def test_evaluate_accepts_a_puzzle_only_csv(tmp_path, tiny_checkpoint, easy_rows):
    puzzles = write_csv(tmp_path / "only.csv", ["puzzle"], [[r["puzzle"].replace("0", ".")] for r in easy_rows[:3]])
    assert main(evaluate_argv(tiny_checkpoint, puzzles, tmp_path)) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["levels"]) == {"all"} and summary["levels"]["all"]["n"] == 3
    records = read_records(tmp_path / "per_puzzle.csv")
    assert [r["level"] for r in records] == ["all"] * 3
    assert [r["matches_solution"] for r in records] == [""] * 3  # no solution column: unknown


def test_evaluate_is_seeded(tmp_path, tiny_checkpoint, evaluated):
    """Re-running the same command gives the same grids and passes."""
    summary = json.loads((evaluated["eb"] / "summary.json").read_text())
    puzzles = evaluated["eb"].parent / "three.csv"
    assert main(evaluate_argv(tiny_checkpoint, puzzles, tmp_path, SAMPLER_FLAGS["eb"])) == 0
    again = json.loads((tmp_path / "summary.json").read_text())
    assert again["levels"] == summary["levels"]
    assert read_records(tmp_path / "per_puzzle.csv") == read_records(evaluated["eb"] / "per_puzzle.csv")


def test_summary_accuracy_lies_within_its_interval():
    from mdm_mi.sudoku.evaluate import summarise

    for solved in ([False] * 3, [True] * 3, [True, False, False]):
        records = [{"level": "x", "clues": 30, "passes": 5, "solved": s} for s in solved]
        for m in summarise(records).values():
            assert 0.0 <= m["acc_lo"] <= m["accuracy"] <= m["acc_hi"] <= 1.0, m


# --- bad input -------------------------------------------------------------------------------------


def _bad_csv(tmp_path: Path, kind: str, rows) -> Path:
    good = [[r["puzzle"], r["solution"]] for r in rows[:2]]
    if kind == "no-puzzle-column":
        return write_csv(tmp_path / "bad.csv", ["grid", "solution"], good)
    if kind == "header-only":
        return write_csv(tmp_path / "bad.csv", ["puzzle"], [])
    p = rows[2]["puzzle"]
    bad_puzzle = {
        "80-chars": p[:80],
        "letter": p[:5] + "x" + p[6:],
        "broken-rule": "11" + p[2:],
    }.get(kind)
    if bad_puzzle is not None:
        return write_csv(tmp_path / "bad.csv", ["puzzle", "solution"], good + [[bad_puzzle, rows[2]["solution"]]])
    if kind == "solution-with-blanks":
        return write_csv(tmp_path / "bad.csv", ["puzzle", "solution"], good + [[p, p]])
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "fragments"),
    [
        ("no-puzzle-column", ["needs a 'puzzle' column", "grid"]),
        ("header-only", ["no puzzles"]),
        ("80-chars", ["line 4", "81 cells", "got 80"]),
        ("letter", ["line 4", "characters other than 1-9", "'x'"]),
        ("broken-rule", ["line 4", "break a rule"]),
        ("solution-with-blanks", ["line 4", "solution has blanks"]),
    ],
)
def test_bad_csv_is_one_error_line_and_exit_2(tmp_path, capsys, tiny_checkpoint, easy_rows, kind, fragments):
    puzzles = _bad_csv(tmp_path, kind, easy_rows)
    assert_user_error(capsys, evaluate_argv(tiny_checkpoint, puzzles, tmp_path), tmp_path, fragments)


def assert_user_error(capsys, argv, out_dir: Path, fragments):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (out_dir / "summary.json").exists()
    assert not (out_dir / "per_puzzle.csv").exists()
    assert not list(out_dir.glob(".*.tmp"))  # no half-written temporaries


def test_bad_solution_error_names_the_solution_column(tmp_path, capsys, tiny_checkpoint, easy_rows):
    rows = [[r["puzzle"], r["solution"]] for r in easy_rows[:2]] + [[easy_rows[2]["puzzle"], ""]]
    puzzles = write_csv(tmp_path / "bad.csv", ["puzzle", "solution"], rows)
    assert_user_error(capsys, evaluate_argv(tiny_checkpoint, puzzles, tmp_path), tmp_path, ["line 4", "solution"])


def test_missing_checkpoint_is_a_user_error(tmp_path, capsys, easy_csv):
    argv = evaluate_argv(tmp_path / "no-model", easy_csv, tmp_path)
    assert_user_error(capsys, argv, tmp_path, ["--model", "no-model: folder not found"])


def test_checkpoint_of_another_domain_is_a_user_error(tmp_path, capsys, tiny_checkpoint, easy_csv):
    model = shutil.copytree(tiny_checkpoint, tmp_path / "model")
    meta = json.loads((model / "meta.json").read_text())
    (model / "meta.json").write_text(json.dumps(meta | {"domain": "protein"}))
    assert_user_error(capsys, evaluate_argv(model, easy_csv, tmp_path), tmp_path, ["'protein'"])


def test_missing_puzzle_file_is_a_user_error(tmp_path, capsys, tiny_checkpoint):
    argv = evaluate_argv(tiny_checkpoint, tmp_path / "nope.csv", tmp_path)
    assert_user_error(capsys, argv, tmp_path, ["--puzzles", "nope.csv: file not found"])


@pytest.mark.parametrize(
    ("sampler", "fragments"),
    [
        (["--sampler", "beam"], ["unknown sampler 'beam'"]),
        (["--sampler", "naive", "--k", "0"], ["--k must be >= 1, got 0"]),
        (["--sampler", "eb", "--gamma", "-1"], ["gamma must be >= 0"]),
        (["--sampler", "sequential", "--order", "random"], ["order must be"]),
    ],
)
def test_bad_sampler_is_a_user_error(tmp_path, capsys, tiny_checkpoint, easy_csv, sampler, fragments):
    argv = evaluate_argv(tiny_checkpoint, easy_csv, tmp_path, sampler)
    assert_user_error(capsys, argv, tmp_path, fragments)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_gpu_is_a_user_error(tmp_path, capsys, tiny_checkpoint, easy_csv):
    argv = evaluate_argv(tiny_checkpoint, easy_csv, tmp_path, extra=["--device", "cuda"])
    assert_user_error(capsys, argv, tmp_path, ["no CUDA GPU"])


def test_missing_required_flag_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["sudoku-evaluate", "--model", str(tmp_path)])
    assert info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_malformed_wildcard_is_a_user_error(tmp_path, capsys, tiny_checkpoint, easy_csv):
    argv = evaluate_argv(tiny_checkpoint, easy_csv, tmp_path, extra=["--wildcard", "oops"])
    assert main(argv) == 2


# --- sudoku-table ----------------------------------------------------------------------------------------


def test_gather_builds_table_from_two_summaries(tmp_path, evaluated):
    inputs = [str(evaluated["naive"] / "summary.json"), str(evaluated["sequential"] / "summary.json")]
    table, markdown = tmp_path / "t" / "table.csv", tmp_path / "t" / "table.md"
    assert main(["sudoku-table", "--inputs", *inputs, "--out", str(table), "--markdown", str(markdown)]) == 0
    with table.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    assert [(r["sampler"], r["setting"], r["level"]) for r in rows] == [
        ("naive", "k=4", "all"), ("naive", "k=4", "easy"),
        ("sequential", "order=margin", "all"), ("sequential", "order=margin", "easy"),
    ]
    assert [(r["k"], r["order"], r["gamma"]) for r in rows] == [("4", "", "")] * 2 + [("", "margin", "")] * 2
    assert all(r["set"] == "three" and r["n"] == "3" for r in rows)
    lines = markdown.read_text().splitlines()
    assert lines[0].startswith("| set | sampler |") and len(lines) == 4  # header, rule, two 'all' rows
    assert "| three | naive | k=4 | 3 |" in lines[2] and "| three | sequential | order=margin | 3 |" in lines[3]


def test_gather_sorts_by_set_then_sampler(tmp_path):
    level = {"n": 1, "accuracy": 1.0, "acc_lo": 0.2, "acc_hi": 1.0, "mean_passes": 2.0, "passes_ci": 0.0,
             "mean_clues": 30.0}
    paths = []
    for i, (set_, sampler, params) in enumerate([("b", "eb", {"gamma": 0.1}), ("a", "naive", {"k": 2}),
                                                  ("a", "eb", {"gamma": 0.2})]):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps({"set": set_, "sampler": sampler, "params": params, "seconds": 0.0,
                                    "levels": {"x": level, "all": level}}))
        paths.append(str(path))
    table = tmp_path / "table.csv"
    assert main(["sudoku-table", "--inputs", *paths, "--out", str(table), "--markdown", str(tmp_path / "t.md")]) == 0
    with table.open(newline="") as fh:
        keys = [(r["set"], r["sampler"], r["level"]) for r in csv.DictReader(fh)]
    assert keys == [("a", "eb", "all"), ("a", "eb", "x"), ("a", "naive", "all"), ("a", "naive", "x"),
                    ("b", "eb", "all"), ("b", "eb", "x")]


def test_gather_with_a_missing_input_is_a_user_error(tmp_path, capsys):
    argv = ["sudoku-table", "--inputs", str(tmp_path / "nope.json"), "--out", str(tmp_path / "summary.json"),
            "--markdown", str(tmp_path / "per_puzzle.csv")]
    assert_user_error(capsys, argv, tmp_path, ["nope.json"])


# --- tracking --------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [None, TrackingArgs("none", "e", "r"), TrackingArgs("", "e", "r")])
def test_tracking_none_yields_a_null_tracker(args):
    with open_tracker(args) as tracker:
        assert type(tracker) is NullTracker
        tracker.log_params({"a": {"b": 1}})
        tracker.log_metrics({"x": 1.0}, step=3)
        tracker.log_artifact("nowhere")


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory) -> str:
    """A fresh sqlite MLflow store with experiment ``test-exp`` (created once: it takes seconds)."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root}/mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the experiment's artifact root is ./mlruns at creation time
        assert main(["init-tracking", "--uri", uri, "--experiment-name", "test-exp", "--out", str(root / "ok.json")]) == 0
    return uri


def tracked_runs(uri: str, rule: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("test-exp")
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.rule = '{rule}'",
                              order_by=["attributes.start_time ASC"])
    return client, runs


def test_tracking_sqlite_records_one_run_per_job_with_tags(tmp_path, mlflow_store, evaluated):
    """One job → one FINISHED run tagged rule/git_commit/config_hash/wildcards; a failing job → FAILED.
    Without --rule (as the workflow runs it) the rule tag is the rule named after the verb."""
    tracking = ["--tracking-uri", mlflow_store, "--experiment", "test-exp", "--config-hash", "abc123",
                "--wildcard", "config=smoke"]
    inputs = [str(evaluated["naive"] / "summary.json"), str(evaluated["eb"] / "summary.json")]
    argv = ["sudoku-table", "--inputs", *inputs, "--out", str(tmp_path / "table.csv"),
            "--markdown", str(tmp_path / "table.md"), *tracking]
    assert main(argv) == 0
    assert main([*argv[:2], str(tmp_path / "missing.json"), *argv[3:]]) == 2
    assert main(["track", "--tracking-uri", mlflow_store, "--experiment", "test-exp"]) == 0  # the spool → runs

    client, runs = tracked_runs(mlflow_store, "sudoku_table")
    assert [r.info.status for r in runs] == ["FINISHED", "FAILED"]
    run = runs[0]
    tags = run.data.tags
    assert tags["rule"] == "sudoku_table" and tags["config_hash"] == "abc123"
    assert tags["wildcard.config"] == "smoke"
    assert tags["git_commit"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}", tags["git_commit"])
    assert run.info.run_name == "sudoku_table/smoke"
    assert run.data.metrics["n_rows"] == 4
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"table.csv", "table.md"}


def test_tracking_accepts_the_graded_set_level_names(tmp_path, capsys, monkeypatch, mlflow_store, tiny_checkpoint,
                                                     easy_rows):
    monkeypatch.setattr("mdm_mi.infra.tracking.RETRY_SECONDS", 0.0)  # a rejected name is retried 5 times otherwise
    puzzles = write_csv(tmp_path / "graded.csv", ["puzzle", "level"],
                        [[r["puzzle"], "givens=35"] for r in easy_rows[:2]])
    tracking = ["--tracking-uri", mlflow_store, "--experiment", "test-exp", "--rule", "graded_eval"]
    capsys.readouterr()
    assert main(evaluate_argv(tiny_checkpoint, puzzles, tmp_path, extra=tracking)) == 0
    assert main(["track", "--tracking-uri", mlflow_store, "--experiment", "test-exp"]) == 0
    assert "tracking skipped" not in capsys.readouterr().err
    client, (run,) = tracked_runs(mlflow_store, "graded_eval")
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"summary.json"}


@pytest.mark.parametrize("shipped", ["sudoku", "sudoku-paper", "protein-kunitz", "protein-kunitz-columns"])
def test_omitted_sampler_parameters_are_the_models_calibrated_ones(shipped):
    """Every sampler the shipped backbone's MANIFEST calibrated takes its values there when its flags
    are omitted; one it did not calibrate is a one-line error naming the flag to give."""
    from mdm_mi.core.fallbacks import read_calibrated
    from mdm_mi.core.sampler_table import SAMPLERS, SamplerFlags, sampler_params
    from mdm_mi.infra.errors import InputError

    calibrated = read_calibrated(REPO / "resources" / "pretrained" / shipped)
    for name, spec in SAMPLERS.items():
        own = calibrated.params(spec.settings_of or name)
        if not spec.calibration and not spec.settings_of:
            continue
        if not own:
            with pytest.raises(InputError, match="no calibrated"):
                sampler_params(SamplerFlags(sampler=name), calibrated)
            continue
        omitted = sampler_params(SamplerFlags(sampler=name), calibrated)
        assert set(omitted) == set(spec.flags)
        for flag in spec.flags:
            if getattr(SamplerFlags(), flag) is None:  # omitted: the manifest's value
                assert omitted[flag] == own[flag], (name, flag)
        assert None not in omitted.values(), name  # every parameter a sampler takes has a value
    given = sampler_params(SamplerFlags(sampler="eb", gamma=0.7))  # given: no model needed
    assert given == {"gamma": 0.7}


def test_old_verb_names_still_run_with_one_note(tmp_path, capsys, tiny_checkpoint, easy_rows):
    """``evaluate`` and ``sudoku-data`` (renamed in issue 40) run as ``sudoku-evaluate`` and
    ``prepare-sudoku`` for one release, with one note on stderr."""
    from mdm_mi.cli import RENAMED, VERBS, renamed

    assert set(RENAMED.values()) <= set(VERBS) and not set(RENAMED) & set(VERBS)
    assert renamed(["sudoku-data", "--help"]) == ["prepare-sudoku", "--help"]
    capsys.readouterr()
    puzzles = write_csv(tmp_path / "p.csv", ["puzzle"], [[easy_rows[0]["puzzle"]]])
    argv = ["evaluate", *evaluate_argv(tiny_checkpoint, puzzles, tmp_path)[1:]]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "note: `evaluate` is now `sudoku-evaluate`" in err and (tmp_path / "summary.json").is_file()
