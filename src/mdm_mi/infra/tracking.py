"""The one module that imports mlflow. Files on disk are the truth; MLflow mirrors them.

A job opens one run (tags: rule, wildcards, git commit, config hash), logs params, metrics and
artifacts, and closes it. On a local ``sqlite:///`` store the job only spools its record
(``infra/spool.py``, no mlflow import) and :func:`mirror_spool` (``mdm-mi track``, run when the
workflow ends) makes the run; on a server the job logs to it directly. If MLflow cannot be used the
job still writes its files and the tracker says, once, that tracking was skipped. Tests use
:class:`NullTracker`.

    with open_tracker(TrackingArgs(uri, "mdm-mi", "pretrain", {"domain": "sudoku"}, "abc123")) as tr:
        tr.log_metrics({"loss": 0.1})
    mirror_spool(uri, "mdm-mi")
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.spool import SpoolTracker, mlflow_metrics, mlflow_params, read_records, spool_dir

RETRIES = 5  # sqlite can be briefly locked by a parallel job
RETRY_SECONDS = 1.0


@dataclass(frozen=True)
class TrackingArgs:
    """Where and how to record one job."""

    uri: str
    experiment: str
    rule: str
    wildcards: dict = field(default_factory=dict)
    config_hash: str = ""


def git_commit() -> str:
    """The repository's HEAD commit, or ``unknown`` outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class NullTracker:
    """Records nothing."""

    def log_params(self, params: dict) -> None:
        """Ignore params."""

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        """Ignore metrics."""

    def log_artifact(self, path: str | Path) -> None:
        """Ignore an artifact."""


# Errors that waiting cannot cure: a rejected value, a file that is no sqlite database or cannot be
# opened, a server that MLflow's own HTTP client already retried.
PERMANENT = ("INVALID_PARAMETER_VALUE", "file is not a database", "unable to open database file",
             "Max retries exceeded")


def _permanent(exc: Exception) -> bool:
    """Whether retrying ``exc`` is pointless (OS errors such as a missing or unwritable folder too)."""
    return isinstance(exc, OSError) or any(m in f"{getattr(exc, 'error_code', '')} {exc}" for m in PERMANENT)


def _retry(fn, *args, **kwargs):
    """Call ``fn`` retrying briefly on transient errors (e.g. ``database is locked``); a permanent
    error (see :data:`PERMANENT`) is raised at once."""
    for attempt in range(RETRIES):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - MLflow raises many kinds; the last one propagates
            if attempt == RETRIES - 1 or _permanent(exc):
                raise
            time.sleep(RETRY_SECONDS * (attempt + 1))


def one_line(exc: Exception) -> str:
    """``Type: first line of the message`` (SQLAlchemy appends the SQL and a link on more lines)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__


class MlflowTracker(NullTracker):
    """Mirror a job into one MLflow run; any MLflow failure turns it into a NullTracker."""

    def __init__(self, mlflow_module):
        self.mlflow = mlflow_module
        self.ok = True

    def _safe(self, fn, *args, **kwargs):
        if not self.ok:
            return
        try:
            _retry(fn, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            self.ok = False
            print(f"tracking skipped: MLflow call failed ({one_line(exc)})", file=sys.stderr)

    def log_params(self, params: dict) -> None:
        self._safe(self.mlflow.log_params, mlflow_params(params))

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        self._safe(self.mlflow.log_metrics, mlflow_metrics(metrics), step=step)

    def log_artifact(self, path: str | Path) -> None:
        if Path(path).exists():
            self._safe(self.mlflow.log_artifact, str(path))


class TrackingUnavailable(RuntimeError):
    """The tracking server named by the URI cannot be reached (one line, for the user)."""


# The store check before a run gives up in seconds, not after MLflow's default minutes of retries.
QUICK_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


def is_server_uri(uri: str) -> bool:
    """``http(s)://host:port``: a tracking server keeps the runs and artifacts, nothing is local."""
    return uri.startswith(("http://", "https://"))


def init_store(uri: str, experiment: str) -> None:
    """Create the tracking store and experiment once, before parallel jobs write to it.

    ``sqlite:///path`` creates the database's folder and puts artifacts beside it. A server URI
    creates nothing here: the experiment is made on the server (which stores its artifacts), and an
    unreachable server raises :class:`TrackingUnavailable` after one quick retry.
    """
    import mlflow  # lazy: mlflow adds ~1 s to every CLI start

    artifacts = None
    if uri.startswith("sqlite:///"):
        folder = Path(uri.removeprefix("sqlite:///")).parent
        folder.mkdir(parents=True, exist_ok=True)
        artifacts = (folder / "mlartifacts").resolve().as_uri()  # beside the DB, not in the cwd
    mlflow.set_tracking_uri(uri)
    if not is_server_uri(uri):
        _create_experiment(mlflow, experiment, artifacts)
        return
    quick = {k: v for k, v in QUICK_HTTP.items() if k not in os.environ}  # the user's settings win
    try:
        with _environ(quick):
            _create_experiment(mlflow, experiment, None)
    except Exception as exc:  # noqa: BLE001 - MLflow wraps connection errors in several types
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise TrackingUnavailable(
            f"MLflow tracking server {uri} unreachable ({reason}); start it, or set tracking.uri "
            "to another server, a sqlite:/// file or none"
        ) from None


def _create_experiment(mlflow, experiment: str, artifacts: str | None) -> None:
    if mlflow.get_experiment_by_name(experiment) is None:
        mlflow.create_experiment(experiment, artifact_location=artifacts)


@contextlib.contextmanager
def _environ(values: dict):
    """Set environment variables for the duration of a block."""
    os.environ.update(values)
    try:
        yield
    finally:
        for key in values:
            os.environ.pop(key, None)


def _tags(args: TrackingArgs) -> tuple[str, dict]:
    """A job's run name (``rule/wildcard values``) and tags (rule, wildcards, git commit, config hash)."""
    tags = {"rule": args.rule, "git_commit": git_commit(), "config_hash": args.config_hash}
    tags.update({f"wildcard.{k}": str(v) for k, v in args.wildcards.items()})
    return "/".join([args.rule, *(str(v) for v in args.wildcards.values())]), tags


@contextlib.contextmanager
def open_tracker(args: TrackingArgs | None):
    """Yield a tracker for one job; the run ends FINISHED or FAILED with the job.

    ``none`` (or no ``args``) gives a :class:`NullTracker`; a local ``sqlite:///`` store a
    :class:`~mdm_mi.infra.spool.SpoolTracker` (no mlflow import: :func:`mirror_spool` makes the run
    later); any other URI (a server) an MLflow run made at once.
    """
    if args is None or args.uri in ("", "none"):
        yield NullTracker()
    elif spool_dir(args.uri) is not None:
        with _spooled(args) as tracker:
            yield tracker
    else:
        with _direct(args) as tracker:
            yield tracker


@contextlib.contextmanager
def _spooled(args: TrackingArgs):
    name, tags = _tags(args)
    try:
        tracker = SpoolTracker.start(spool_dir(args.uri), args.experiment, name, tags)
    except OSError as exc:
        print(f"tracking skipped: cannot use MLflow at {args.uri} ({one_line(exc)})", file=sys.stderr)
        yield NullTracker()
        return
    status = "FAILED"
    try:
        yield tracker
        status = "FINISHED"
    finally:
        tracker.end(status)


@contextlib.contextmanager
def _direct(args: TrackingArgs):
    try:
        import mlflow  # lazy: mlflow adds ~2 s to every CLI start, and most runs do not track

        mlflow.set_tracking_uri(args.uri)
        name, tags = _tags(args)
        quick = {k: v for k, v in QUICK_HTTP.items() if k not in os.environ}  # the user's settings win
        with _environ(quick if is_server_uri(args.uri) else {}):
            _retry(mlflow.set_experiment, args.experiment)
            _retry(mlflow.start_run, run_name=name, tags=tags)
    except Exception as exc:  # noqa: BLE001
        print(f"tracking skipped: cannot use MLflow at {args.uri} ({one_line(exc)})", file=sys.stderr)
        yield NullTracker()
        return
    tracker, status = MlflowTracker(mlflow), "FAILED"
    try:
        yield tracker
        status = "FINISHED"
    finally:
        with contextlib.suppress(Exception):
            _retry(mlflow.end_run, status=status)


# --- the mirror: spooled records → MLflow runs ---------------------------------------------------------

RECORD_TAG, VERSION_TAG = "spool.record", "spool.version"  # which record a run mirrors, and which version
BATCH_METRICS, BATCH_PARAMS = 1000, 100  # MLflow's log_batch limits


def mirror_spool(uri: str, experiment: str) -> tuple[int, int]:
    """Replay the spool of the local store ``uri`` into MLflow: one run per record of ``experiment``
    → ``(runs made, runs already up to date)``.

    Idempotent: each run carries its record's id and version; a record that changed since its run
    was made (RUNNING → FINISHED, more metrics) replaces that run (the old one is deleted). When the
    store cannot be used this raises :class:`TrackingUnavailable` (one line) before writing to it, and
    the spool stays for a later try. Two mirrors of one spool take turns (a lock file in the spool).
    """
    folder = spool_dir(uri)
    if folder is None:
        raise ValueError(f"{uri} is not a local sqlite:/// store: its jobs track to it directly")
    try:
        _check_store(uri)
    except (OSError, sqlite3.Error) as exc:
        raise TrackingUnavailable(f"cannot use MLflow at {uri} ({one_line(exc)})") from None
    if not read_records(folder, experiment):
        return 0, 0
    with _lock(folder / ".mirror.lock"):
        try:
            return _mirror(uri, experiment, folder, read_records(folder, experiment))
        except Exception as exc:  # noqa: BLE001 - MLflow raises many kinds
            raise TrackingUnavailable(f"cannot use MLflow at {uri} ({one_line(exc)})") from None


def _check_store(uri: str) -> None:
    """Read an existing store once, without creating or changing anything (a folder or a corrupt file
    fails here); a store not made yet needs a folder above it, not a file."""
    path = Path(uri.removeprefix("sqlite:///"))
    if path.exists():
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            db.execute("PRAGMA schema_version").fetchone()
        return
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir():
        raise NotADirectoryError(f"{parent} is not a folder")


@contextlib.contextmanager
def _lock(path: Path):
    import fcntl  # POSIX only, like the workflow

    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _mirror(uri: str, experiment: str, folder: Path, records: list[tuple[dict, str]]) -> tuple[int, int]:
    import mlflow  # lazy: only the mirror pays for it

    init_store(uri, experiment)
    client = mlflow.MlflowClient(uri)
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    runs: dict[str, list] = {}
    for run in _all_runs(client, experiment_id):
        runs.setdefault(run.data.tags.get(RECORD_TAG), []).append(run)
    made = 0
    for record, version in records:
        mine = runs.get(record["id"], [])
        current = [r for r in mine if r.data.tags.get(VERSION_TAG) == version][:1]
        for run in mine:
            if run not in current:
                _retry(client.delete_run, run.info.run_id)
        if not current:
            _make_run(client, experiment_id, record, version, folder / record["id"])
            made += 1
    return made, len(records) - made


def _all_runs(client, experiment_id: str) -> list:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=10000, page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _make_run(client, experiment_id: str, record: dict, version: str, files: Path) -> None:
    """One run from one record; its version tag is set last, so a mirror cut short is redone."""
    from mlflow.entities import Metric, Param

    tags = record["tags"] | {RECORD_TAG: record["id"]}
    run_id = _retry(client.create_run, experiment_id, start_time=record["start_time"], tags=tags,
                    run_name=record["run_name"]).info.run_id
    params = [Param(k, v) for k, v in record["params"].items()]
    metrics = [Metric(k, value, stamp, step) for k, history in record["metrics"].items()  # no repeats: one
               for step, value, stamp in dict.fromkeys(map(tuple, history))]  # batch may not hold a row twice
    for i in range(0, len(params), BATCH_PARAMS):
        _retry(client.log_batch, run_id, params=params[i:i + BATCH_PARAMS])
    for i in range(0, len(metrics), BATCH_METRICS):
        _retry(client.log_batch, run_id, metrics=metrics[i:i + BATCH_METRICS])
    for name in record["artifacts"]:
        _retry(client.log_artifact, run_id, str(files / name))
    if record["status"] != "RUNNING":
        _retry(client.set_terminated, run_id, record["status"], record["end_time"])
    _retry(client.set_tag, run_id, VERSION_TAG, version)
