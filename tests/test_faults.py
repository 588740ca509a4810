"""Faults a workflow run meets: a job killed mid-way and rerun, parallel jobs tracking to one MLflow
store (they spool, one mirror makes the runs), and an MLflow store that cannot be used. Files on disk
stay trustworthy through all of them.

The kill tests SIGKILL real processes (a writer inside ``atomic_path``; a whole ``snakemake`` process
group during pretraining). The slow one runs a small part of the smoke DAG three times.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO
from mdm_mi.infra.config import load_config
from mdm_mi.infra.io import read_json, write_json
from mdm_mi.infra.tracking import init_store
from test_workflow import SNAKEMAKE, VENV_BIN, snakemake

DATA = REPO / "resources" / "data" / "sudoku"
PYTHON_M = [sys.executable, "-m", "mdm_mi"]


def head_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is left in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group led by ``proc`` and wait until none of it is left."""
    pgid = proc.pid  # started with start_new_session=True: it leads its own group
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(pgid), "processes of the killed group are still running"


# --- 1a. a writer killed inside atomic_path ---------------------------------------------------------

HALF_WRITER = textwrap.dedent("""
    import sys, time
    from mdm_mi.infra.io import atomic_path

    with atomic_path(sys.argv[1]) as tmp, tmp.open("w") as fh:
        fh.write('{"half": ')
        fh.flush()
        print(tmp, flush=True)  # tell the parent: half written
        time.sleep(120)
""")


def test_writer_killed_mid_write_leaves_previous_file_intact(tmp_path):
    target = tmp_path / "out" / "summary.json"
    write_json(target, {"good": 1})
    proc = subprocess.Popen([sys.executable, "-c", HALF_WRITER, str(target)], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        tmp = Path(proc.stdout.readline().strip())
        assert tmp.parent == target.parent and tmp.read_text() == '{"half": '
    finally:
        kill_group(proc)
        proc.stdout.close()
    assert read_json(target) == {"good": 1}
    assert tmp.exists()  # SIGKILL skips every cleanup: the half file stays, but under a temporary name

    write_json(target, {"good": 2})  # the next good write sweeps the dead writer's temporary file
    assert read_json(target) == {"good": 2}
    assert sorted(p.name for p in target.parent.iterdir()) == ["summary.json"]


def test_writer_killed_mid_first_write_leaves_no_target(tmp_path):
    target = tmp_path / "model" / "meta.json"
    proc = subprocess.Popen([sys.executable, "-c", HALF_WRITER, str(target)], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert Path(proc.stdout.readline().strip()).exists()
    finally:
        kill_group(proc)
        proc.stdout.close()
    assert not target.exists()


# --- 1b. the DAG killed during pretraining, then rerun -----------------------------------------------

EVAL = "results/smoke/sudoku/eval/hard/sequential-entropy"  # needs data → pretrain → evaluate
MODEL = "results/smoke/sudoku/model"
PRETRAIN_LOG = "logs/smoke/sudoku/pretrain.log"
# More steps than smoke.yaml, logged often, so the kill lands inside training with room to spare.
LONGER_TRAINING = "sudoku:\n  train: {steps: 150, log_every: 5}\n"


def dag_args(workdir: Path) -> list[str]:
    override = workdir.parent / f"{workdir.name}-override.yaml"
    override.write_text(LONGER_TRAINING)
    return ["--cores", "2", "--configfile", str(REPO / "config" / "smoke.yaml"), str(override), "--",
            f"{EVAL}.json"]


def run_dag(workdir: Path) -> None:
    proc = snakemake(workdir, *dag_args(workdir), configfile=None, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


def training_steps_logged(workdir: Path) -> list[int]:
    log = workdir / PRETRAIN_LOG
    lines = log.read_text().splitlines() if log.exists() else []
    return [int(line.split()[1]) for line in lines if line.startswith("step ")]


def start_dag_and_kill_during_training(workdir: Path) -> None:
    """Start the DAG in its own process group; SIGKILL the group once pretraining logged a step."""
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           *dag_args(workdir)]
    env = os.environ | {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    out = (workdir.parent / f"{workdir.name}-killed.out").open("w")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not training_steps_logged(workdir):
            assert proc.poll() is None, "snakemake ended before pretraining started"
            assert time.monotonic() < deadline, "pretraining did not start in 300 s"
            time.sleep(0.02)
    finally:
        kill_group(proc)
        out.close()


def eval_results(workdir: Path) -> dict:
    """What the DAG computed: losses, the evaluation summary (without its timing) and per-puzzle rows."""
    meta = read_json(workdir / MODEL / "meta.json")
    summary = read_json(workdir / f"{EVAL}.json")
    del summary["seconds"]
    with (workdir / f"{EVAL}.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {"final_loss": meta["metrics"]["final_loss"],
            "losses": [(r["step"], r["loss"]) for r in meta["history"]],
            "summary": summary, "per_puzzle": rows}


def assert_rerun_refuses_half_outputs(workdir: Path) -> None:
    """Had the killed job written its outputs in place, half files would be on disk now: snakemake's
    incomplete markers keep a rerun from trusting them (it stops and names ``--rerun-incomplete``)."""
    half = {workdir / MODEL / "model.safetensors": b"half", workdir / MODEL / "meta.json": b'{"half": '}
    for path, text in half.items():
        path.write_bytes(text)
    plan = snakemake(workdir, "-n", *dag_args(workdir)[2:], configfile=None)
    said = plan.stdout + plan.stderr
    assert plan.returncode != 0 and "IncompleteFilesException" in said, said[-3000:]
    assert all(str(path.relative_to(workdir)) in said for path in half)
    for path in half:
        path.unlink()


@pytest.mark.slow
def test_dag_killed_during_pretraining_reruns_to_the_same_metrics(tmp_path):
    from mlflow.tracking import MlflowClient

    clean, killed = tmp_path / "clean", tmp_path / "killed"
    run_dag(clean)
    expected = eval_results(clean)

    start_dag_and_kill_during_training(killed)
    steps = training_steps_logged(killed)
    assert steps and steps[-1] < 150, f"the kill came after training ended: {steps}"
    # nothing of the killed job or its dependants is on disk, not even under a temporary name
    for name in ("model.safetensors", "meta.json"):
        assert not (killed / MODEL / name).exists(), name
    assert not (killed / f"{EVAL}.json").exists()
    assert not [p for p in (killed / "results").rglob("*") if p.name.endswith(".tmp")]
    assert (killed / "results/smoke/sudoku/data/summary.json").exists()  # finished jobs stay done

    locked = snakemake(killed, *dag_args(killed), configfile=None)  # SIGKILL left snakemake's lock behind
    said = locked.stdout + locked.stderr
    assert locked.returncode != 0 and "--unlock" in said, said[-3000:]
    unlock = snakemake(killed, "--unlock", *dag_args(killed)[2:], configfile=None)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    assert_rerun_refuses_half_outputs(killed)

    run_dag(killed)  # the plain command again
    assert eval_results(killed) == expected
    client = MlflowClient(f"sqlite:///{killed}/results/mlflow.db")
    experiment = client.get_experiment_by_name(load_config(REPO / "config" / "smoke.yaml")["tracking"]["experiment"])
    runs = client.search_runs([experiment.experiment_id], filter_string="tags.rule = 'sudoku_pretrain'")
    # the killed job's spooled record stays RUNNING (SIGKILL skips its end), and the rerun's mirror
    # shows it beside the rerun's complete one
    assert sorted(r.info.status for r in runs) == ["FINISHED", "RUNNING"]
    (done,) = [r for r in runs if r.info.status == "FINISHED"]
    assert done.data.metrics["final_loss"] == expected["final_loss"]


# --- 2. parallel jobs tracking to one sqlite store: each spools its record, one mirror makes the runs --

N_JOBS, N_STEPS = 4, 25
TRACKED_JOB = textwrap.dedent("""
    import pathlib, sys, time
    from mdm_mi.infra.tracking import TrackingArgs, open_tracker  # imported before the barrier, so every
                                                                  # job starts logging at the same moment

    uri, i, go, folder = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
    while not go.exists():
        time.sleep(0.01)
    args = TrackingArgs(uri, "faults", "parallel_job", {"config": "test", "job": str(i)}, f"hash{i}")
    with open_tracker(args) as tracker:
        tracker.log_params({"job": i, "model": {"width": 10 * i}})
        for step in range(%d):
            tracker.log_metrics({"value": 100 * i + step}, step=step)
        artifact = folder / f"job{i}.json"
        artifact.write_text('{"job": %%d}' %% i)
        tracker.log_artifact(artifact)
        tracker.log_metrics({"final": float(i)})
    assert "mlflow" not in sys.modules  # a job on a local store only spools
""" % N_STEPS)


@pytest.mark.slow
def test_parallel_jobs_on_one_sqlite_store_lose_nothing(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path}/store/mlflow.db"
    init_store(uri, "faults")
    go, folder = tmp_path / "go", tmp_path / "artifacts"
    folder.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", TRACKED_JOB, uri, str(i), str(go), str(folder)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for i in range(N_JOBS)]
    try:
        go.touch()
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
        assert "tracking skipped" not in err, err[-3000:]
    mirror = subprocess.run([*PYTHON_M, "track", "--tracking-uri", uri, "--experiment", "faults"],
                            capture_output=True, text=True, timeout=300)
    assert mirror.returncode == 0 and f"{N_JOBS} runs mirrored" in mirror.stdout, mirror.stderr[-3000:]

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("faults").experiment_id])
    by_job = {int(r.data.tags["wildcard.job"]): r for r in runs}
    assert len(runs) == N_JOBS and sorted(by_job) == list(range(N_JOBS))
    commit = head_commit()
    for i, run in by_job.items():
        assert run.info.status == "FINISHED"
        assert run.info.run_name == f"parallel_job/test/{i}"
        tags = run.data.tags
        assert (tags["rule"], tags["wildcard.config"], tags["config_hash"]) == ("parallel_job", "test", f"hash{i}")
        assert tags["git_commit"] == commit
        assert run.data.params == {"job": str(i), "model.width": str(10 * i)}
        assert run.data.metrics == {"value": 100 * i + N_STEPS - 1, "final": float(i)}
        history = client.get_metric_history(run.info.run_id, "value")
        assert sorted((m.step, m.value) for m in history) == [(s, 100 * i + s) for s in range(N_STEPS)]
        assert [a.path for a in client.list_artifacts(run.info.run_id)] == [f"job{i}.json"]
        local = client.download_artifacts(run.info.run_id, f"job{i}.json", str(tmp_path))
        assert json.loads(Path(local).read_text()) == {"job": i}


# --- 3. an MLflow store that cannot be used -----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never answers: its URI."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def prepare_sudoku(workdir: Path, uri: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A real, cheap CLI job (builds tiny evaluation sets) that tracks to ``uri``."""
    argv = [*PYTHON_M, "prepare-sudoku", "--radcliffe", str(DATA / "radcliffe_curated_5000.csv"),
            "--easy", str(DATA / "hkunlp_easy_1k.csv"), "--out-dir", "data", "--n-train-solutions", "4",
            "--hard-max-puzzles", "2", "--easy-max-puzzles", "2", "--levels-max-puzzles", "1",
            "--graded-givens", "35", "--graded-per-level", "1", "--oracle-max-puzzles", "1", "--seed", "0",
            "--tracking-uri", uri, "--experiment", "faults", "--rule", "prepare_sudoku"]
    return subprocess.run(argv, cwd=workdir, env=os.environ | (env or {}), capture_output=True, text=True,
                          timeout=300)


def assert_job_done_without_tracking(proc, workdir: Path, uri: str, seconds: float, quiet: bool = False) -> None:
    """The job wrote its files and said one ``tracking skipped`` line (or, with ``quiet``, nothing
    about tracking: a job on a local store only spools, and the mirror meets the store), in time."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(workdir / "data" / "summary.json")["n_train"] == 4
    for name in ("hard.csv", "easy.csv", "levels.csv", "graded.csv", "oracle.csv", "train_solutions.npy"):
        assert (workdir / "data" / name).is_file(), name
    said = [line for line in proc.stderr.splitlines() if "tracking" in line]
    if quiet and not said:
        assert seconds < 90, f"the job waited {seconds:.0f} s on tracking"
        return
    assert_one_skipped_line(proc.stderr, uri)
    assert seconds < 90, f"the job waited {seconds:.0f} s on MLflow"


def assert_one_skipped_line(stderr: str, uri: str) -> None:
    said = [line for line in stderr.splitlines() if "tracking" in line]
    assert len(said) == 1 and said[0].startswith(f"tracking skipped: cannot use MLflow at {uri} ("), stderr
    assert said[0].endswith(")"), said  # the reason fits on the line (SQLAlchemy's spans several)


def test_unreachable_tracking_server_skips_tracking(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"  # connection refused
    start = time.monotonic()
    proc = prepare_sudoku(tmp_path, uri)
    assert_job_done_without_tracking(proc, tmp_path, uri, time.monotonic() - start)


@pytest.mark.slow
def test_silent_tracking_server_skips_tracking_after_the_timeout(tmp_path, silent_server):
    """A server that takes connections but never answers costs the HTTP timeout, not hours."""
    start = time.monotonic()
    proc = prepare_sudoku(tmp_path, silent_server, env={"MLFLOW_HTTP_REQUEST_TIMEOUT": "3"})
    assert_job_done_without_tracking(proc, tmp_path, silent_server, time.monotonic() - start)


def corrupt_db(root: Path) -> str:
    (root / "mlflow.db").write_bytes(b"this is not an sqlite database\n" * 100)
    return f"sqlite:///{root}/mlflow.db"


def db_under_a_file(root: Path) -> str:
    (root / "a-file").write_text("")
    return f"sqlite:///{root}/a-file/mlflow.db"


def db_is_a_folder(root: Path) -> str:
    (root / "mlflow.db").mkdir()
    return f"sqlite:///{root}/mlflow.db"


@pytest.mark.parametrize("bad_store", [corrupt_db, db_under_a_file, db_is_a_folder])
def test_unusable_sqlite_store_skips_tracking(tmp_path, bad_store):
    """The job does its work (spooling quietly, or one line when not even the spool can be written);
    the mirror says one line, exits 0, leaves the store as it was and keeps the spool for a later try."""
    store, work = tmp_path / "store", tmp_path / "work"
    store.mkdir()
    work.mkdir()
    uri = bad_store(store)

    def the_store():
        return {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "mlflow-spool" not in p.parts}

    before = the_store()
    start = time.monotonic()
    proc = prepare_sudoku(work, uri)
    assert_job_done_without_tracking(proc, work, uri, time.monotonic() - start, quiet=bad_store is not db_under_a_file)
    spooled = sorted((store / "mlflow-spool").glob("*.json"))
    assert len(spooled) == (0 if bad_store is db_under_a_file else 1)

    start = time.monotonic()
    mirror = subprocess.run([*PYTHON_M, "track", "--tracking-uri", uri, "--experiment", "faults"], cwd=work,
                            capture_output=True, text=True, timeout=300)
    assert mirror.returncode == 0, mirror.stderr[-3000:]
    assert_one_skipped_line(mirror.stderr, uri)
    assert time.monotonic() - start < 90
    assert the_store() == before  # left as it was
    assert sorted((store / "mlflow-spool").glob("*.json")) == spooled  # kept for a later try
