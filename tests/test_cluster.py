"""Running on a cluster: every rule sizes its jobs, the Slurm profile plans the workflow and turns a
GPU rule into an sbatch call that asks for a GPU (with fake Slurm commands on PATH), and MLflow can
live on a tracking server instead of a sqlite file."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO
from mdm_mi.cli import main
from test_workflow import SNAKEMAKE, VENV_BIN, snakemake

PROFILE = REPO / "workflow" / "profiles" / "slurm"
RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
RUN_KEYS = ("shell:", "run:", "script:", "notebook:", "wrapper:")  # a rule without one only gathers targets
GPU_MARKERS = ("job_flags()", '"device"')  # how a rule passes --device to its command
FAKE_SLURM = {
    "sbatch": 'echo "$@" >> "$FAKE_SLURM_LOG"; echo "sbatch: error: fake sbatch" >&2; exit 1',
    **{tool: "exit 0" for tool in ("sinfo", "sacct", "squeue", "scontrol", "sacctmgr", "sshare")},
}


def rule_blocks() -> dict[str, str]:
    """Rule name → the text of its definition, from the Snakefile and ``workflow/rules/*.smk`` (rules inside
    ``if`` blocks included: a block ends at the first line indented no deeper than ``rule``)."""
    blocks = {}
    for path in RULE_FILES:
        lines = path.read_text().splitlines()
        for start, line in enumerate(lines):
            match = re.match(r"(\s*)rule (\w+):", line)
            if not match:
                continue
            indent, body = len(match.group(1)), []
            for later in lines[start + 1:]:
                stripped = later.strip()
                if stripped and not stripped.startswith("#") and len(later) - len(later.lstrip()) <= indent:
                    break
                body.append(later)
            blocks[match.group(2)] = "\n".join(body)
    return blocks


def missing_sizes(body: str) -> list[str]:
    """What a job-running rule lacks of ``threads``, ``mem_mb``, ``runtime`` and (GPU rules) ``gpu``."""
    need = {"threads": r"^\s*threads:", "mem_mb": r"^\s*mem_mb\s*=", "runtime": r"^\s*runtime\s*="}
    if any(marker in body for marker in GPU_MARKERS):
        need["gpu"] = r"^\s*gpu\s*="
    return [name for name, pattern in need.items() if not re.search(pattern, body, re.MULTILINE)]


def test_every_rule_declares_threads_mem_runtime_and_gpu():
    blocks = rule_blocks()
    lacking = {
        name: missing_sizes(body)
        for name, body in blocks.items()
        if any(key in body for key in RUN_KEYS) and missing_sizes(body)
    }
    assert not lacking, f"rules missing resources (rule: missing): {lacking}"


@pytest.mark.parametrize("configfile", ["smoke.yaml", "config.yaml"])
def test_rule_parser_sees_every_rule(tmp_path, configfile):
    proc = snakemake(tmp_path, "--list-rules", configfile=configfile)
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed and listed <= set(rule_blocks()), listed - set(rule_blocks())


def test_slurm_profile_dry_run(tmp_path):
    proc = snakemake(tmp_path, "-n", "--profile", str(PROFILE))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"Using profile {PROFILE}" in proc.stdout + proc.stderr


def fake_slurm_bin(folder: Path) -> Path:
    """Scripts named like the Slurm commands: ``sbatch`` records its arguments and refuses the job,
    the query tools answer nothing."""
    folder.mkdir()
    for tool, body in FAKE_SLURM.items():
        script = folder / tool
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    return folder


def test_slurm_profile_submits_gpu_rule_with_a_gpu(tmp_path):
    """The pretraining job becomes one sbatch call with the rule's GPU, memory, time and threads."""
    work, log = tmp_path / "work", tmp_path / "sbatch.log"
    (work / "results" / "tracking").mkdir(parents=True)
    (work / "results" / "tracking" / "smoke.json").write_text("{}")  # first: inputs older than outputs
    data = work / "results" / "smoke" / "sudoku" / "data"
    data.mkdir(parents=True)
    for name in ("hard", "easy", "levels", "graded", "oracle"):
        (data / f"{name}.csv").touch()
    for name in ("train_solutions.npy", "heldout_solutions.npy", "summary.json"):
        (data / name).touch()  # every upstream output exists, so only pretraining is submitted
    bin_dir = fake_slurm_bin(tmp_path / "bin")
    cmd = [str(SNAKEMAKE), "results/smoke/sudoku/model/meta.json", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", str(REPO / "config" / "smoke.yaml"),
           "--profile", str(PROFILE), "--retries", "0", "--slurm-init-seconds-before-status-checks", "1"]
    env = os.environ | {"PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
                        "FAKE_SLURM_LOG": str(log)}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "fake sbatch" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    (call,) = log.read_text().splitlines()
    assert "--comment rule_sudoku_pretrain" in call
    for flag in ("--gpus=1", "--mem 8000", "-t 600", "--cpus-per-task=1"):
        assert flag in call, call


def free_port() -> int:
    """A TCP port nothing listens on (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_init_tracking_unreachable_server_is_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"http://127.0.0.1:{free_port()}"
    out = tmp_path / "marker.json"
    start = time.monotonic()
    code = main(["init-tracking", "--uri", uri, "--experiment-name", "x", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert err.startswith(f"error: MLflow tracking server {uri} unreachable") and "\n" not in err, err
    assert time.monotonic() - start < 60  # not MLflow's default minutes of retries
    assert list(tmp_path.iterdir()) == []  # no sqlite file, no mlruns/


@pytest.fixture
def mlflow_server(tmp_path):
    """A local ``mlflow server`` (its own sqlite store and artifact folder): its URI."""
    port, store = free_port(), tmp_path / "server"
    store.mkdir()
    cmd = [str(VENV_BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
           "--backend-store-uri", f"sqlite:///{store}/mlflow.db", "--artifacts-destination", str(store / "art")]
    proc = subprocess.Popen(cmd, cwd=store, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("mlflow server did not start in 120 s")
        yield uri
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_jobs_track_to_a_server_and_write_nothing_local(mlflow_server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    metrics = {"n": 2, "accuracy": 0.5, "acc_lo": 0.1, "acc_hi": 0.9, "mean_passes": 3.0, "passes_ci": 0.5,
               "mean_clues": 30.0}
    summary = tmp_path / "eval.json"
    summary.write_text(json.dumps({"set": "easy", "sampler": "eb", "params": {"gamma": 0.2},
                                   "levels": {"all": metrics}}))
    run = [sys.executable, "-m", "mdm_mi"]
    tracking = ["--tracking-uri", mlflow_server, "--experiment", "cluster-test"]
    init = subprocess.run([*run, "init-tracking", "--uri", mlflow_server, "--experiment-name", "cluster-test",
                           "--out", "marker.json"], cwd=work, capture_output=True, text=True, timeout=180)
    assert init.returncode == 0, init.stderr
    job = subprocess.run([*run, "sudoku-table", "--inputs", str(summary), "--out", "t.csv",
                          "--markdown", "t.md", *tracking, "--rule", "sudoku_table"],
                         cwd=work, capture_output=True, text=True, timeout=180)
    assert job.returncode == 0, job.stderr
    assert sorted(p.name for p in work.iterdir()) == ["marker.json", "t.csv", "t.md"]  # no mlruns/, no .db
    assert json.loads((work / "marker.json").read_text())["uri"] == mlflow_server

    import mlflow

    runs = mlflow.MlflowClient(mlflow_server).search_runs(
        [mlflow.MlflowClient(mlflow_server).get_experiment_by_name("cluster-test").experiment_id])
    assert [(r.data.tags["rule"], r.info.status) for r in runs] == [("sudoku_table", "FINISHED")]
