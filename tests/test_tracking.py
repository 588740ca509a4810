"""Tracking on a local store: a job spools its record (no mlflow import) and ``mdm-mi track`` mirrors
the spool into MLflow, one run per job, exactly and idempotently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mdm_mi.cli import main
from mdm_mi.infra import spool
from mdm_mi.infra.tracking import NullTracker, TrackingArgs, TrackingUnavailable, mirror_spool, open_tracker


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """One sqlite store for the module (made once: its migrations take seconds); each test uses its
    own experiment."""
    root = tmp_path_factory.mktemp("store")
    return f"sqlite:///{root}/mlflow.db"


def runs_of(uri: str, experiment: str) -> tuple:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return client, client.search_runs([client.get_experiment_by_name(experiment).experiment_id])


def job(uri: str, experiment: str, **wildcards) -> TrackingArgs:
    return TrackingArgs(uri, experiment, "toy_rule", {"config": "test", **wildcards}, "hash123")


def test_a_record_round_trips_into_mlflow_with_exact_params_metrics_artifacts_and_tags(store, tmp_path):
    artifact = tmp_path / "table.csv"
    artifact.write_text("a,b\n1,2\n")
    with open_tracker(job(store, "round-trip", set="hard")) as tracker:
        assert isinstance(tracker, spool.SpoolTracker)
        tracker.log_params({"lr": 0.001, "model": {"width": 64}, "name": "x" * 600})
        for step in range(5):
            tracker.log_metrics({"loss": 1.0 / (step + 1), "flag": True, "text": "no"}, step=step * 10)
        tracker.log_metrics({"givens=17": {"accuracy": 0.5}})
        tracker.log_artifact(artifact)
        tracker.log_artifact(tmp_path / "missing.json")  # nothing to copy: left out, as MLflow would
    artifact.write_text("changed after the job\n")  # the spool kept the file as it was when logged

    assert mirror_spool(store, "round-trip") == (1, 0)
    client, (run,) = runs_of(store, "round-trip")
    assert run.info.status == "FINISHED" and run.info.run_name == "toy_rule/test/hard"
    assert run.info.start_time <= run.info.end_time
    tags = run.data.tags
    assert (tags["rule"], tags["config_hash"], tags["wildcard.config"], tags["wildcard.set"]) == \
        ("toy_rule", "hash123", "test", "hard")
    assert tags["git_commit"]
    assert run.data.params == {"lr": "0.001", "model.width": "64", "name": "x" * 500}
    history = client.get_metric_history(run.info.run_id, "loss")
    assert sorted((m.step, m.value) for m in history) == [(10 * s, 1.0 / (s + 1)) for s in range(5)]
    assert run.data.metrics == {"loss": 0.2, "givens_17.accuracy": 0.5}
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["table.csv"]
    local = client.download_artifacts(run.info.run_id, "table.csv", str(tmp_path / "down"))
    assert Path(local).read_text() == "a,b\n1,2\n"


def test_mirroring_twice_gives_the_same_runs(store):
    for i in range(3):
        with open_tracker(job(store, "twice", job=str(i))) as tracker:
            tracker.log_metrics({"value": i})
    assert mirror_spool(store, "twice") == (3, 0)
    _, first = runs_of(store, "twice")
    assert mirror_spool(store, "twice") == (0, 3)
    assert main(["track", "--tracking-uri", store, "--experiment", "twice"]) == 0
    _, second = runs_of(store, "twice")
    assert sorted(r.info.run_id for r in first) == sorted(r.info.run_id for r in second)
    assert len(second) == 3


def test_a_running_record_mirrored_mid_run_is_replaced_when_it_finishes(store, monkeypatch):
    monkeypatch.setattr(spool, "FLUSH_SECONDS", 0.0)  # every log call rewrites the record
    with open_tracker(job(store, "progress")) as tracker:
        tracker.log_metrics({"loss": 3.0}, step=0)
        assert mirror_spool(store, "progress") == (1, 0)
        client, (running,) = runs_of(store, "progress")
        assert running.info.status == "RUNNING" and running.data.metrics == {"loss": 3.0}
        tracker.log_metrics({"loss": 2.0}, step=1)
    assert mirror_spool(store, "progress") == (1, 0)
    client, (done,) = runs_of(store, "progress")  # replaced, not duplicated
    assert done.info.status == "FINISHED" and done.info.run_id != running.info.run_id
    assert sorted((m.step, m.value) for m in client.get_metric_history(done.info.run_id, "loss")) == [(0, 3.0), (1, 2.0)]
    assert done.data.tags["spool.record"] == running.data.tags["spool.record"]


def test_a_job_that_raises_gives_a_failed_run(store):
    with pytest.raises(RuntimeError), open_tracker(job(store, "failing")) as tracker:
        tracker.log_metrics({"before": 1.0})
        raise RuntimeError("boom")
    mirror_spool(store, "failing")
    _, (run,) = runs_of(store, "failing")
    assert run.info.status == "FAILED" and run.data.metrics == {"before": 1.0}


def test_a_job_on_a_local_store_does_not_import_mlflow(tmp_path):
    code = ("import sys; from mdm_mi.infra.tracking import TrackingArgs, open_tracker\n"
            f"with open_tracker(TrackingArgs('sqlite:///{tmp_path}/m.db', 'e', 'r')) as t:\n"
            "    t.log_metrics({'x': 1})\n"
            "assert 'mlflow' not in sys.modules and 'sqlalchemy' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    (record,) = (tmp_path / "m-spool").glob("*.json")
    assert json.loads(record.read_text())["status"] == "FINISHED"


def test_a_spool_that_cannot_be_written_is_one_line_and_the_job_goes_on(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    uri = f"sqlite:///{tmp_path}/a-file/mlflow.db"
    with open_tracker(job(uri, "nowhere")) as tracker:
        assert type(tracker) is NullTracker
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tracking skipped: cannot use MLflow at {uri} (") and line.endswith(")")
    with pytest.raises(TrackingUnavailable):
        mirror_spool(uri, "nowhere")


def test_track_refuses_a_server_or_none(capsys):
    assert main(["track", "--tracking-uri", "http://127.0.0.1:1", "--experiment", "e"]) == 2
    assert main(["track", "--tracking-uri", "none", "--experiment", "e"]) == 2
    assert all(line.startswith("error: track mirrors a local store") for line in capsys.readouterr().err.splitlines())
