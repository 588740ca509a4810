"""The one module that imports mlflow. Files on disk are the truth; MLflow mirrors them.

A job opens one run (tags: rule, wildcards, git commit, config hash), logs params, metrics and
artifacts, and closes it. If MLflow cannot be reached the job still writes its files and the tracker
says, once, that tracking was skipped. Tests use :class:`NullTracker`.

    with open_tracker(TrackingArgs(uri, "mdm-mi", "pretrain", {"domain": "sudoku"}, "abc123")) as tr:
        tr.log_metrics({"loss": 0.1})
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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


def metric_key(key: str) -> str:
    """A name MLflow accepts (letters, digits, ``_ - . / space``): ``givens=17.accuracy`` →
    ``givens_17.accuracy``."""
    return re.sub(r"[^\w\-. /]", "_", key)


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
        flat = {metric_key(k): str(v)[:500] for k, v in _flatten(params).items()}
        self._safe(self.mlflow.log_params, flat)

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        numeric = {metric_key(k): float(v) for k, v in _flatten(metrics).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        self._safe(self.mlflow.log_metrics, numeric, step=step)

    def log_artifact(self, path: str | Path) -> None:
        if Path(path).exists():
            self._safe(self.mlflow.log_artifact, str(path))


def _flatten(d: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}} → {"a.b": 1}``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


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


def _check_sqlite(uri: str) -> None:
    """Open a ``sqlite:///`` store once, so a folder, a corrupt or an unwritable file fails at once
    (MLflow retries opening such a store for about 100 s)."""
    path = uri.removeprefix("sqlite:///")
    if not uri.startswith("sqlite:///") or path in ("", ":memory:"):
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
        db.execute("PRAGMA schema_version").fetchone()


@contextlib.contextmanager
def open_tracker(args: TrackingArgs | None):
    """Yield a tracker for one job (a :class:`NullTracker` when ``args`` is None or ``uri`` is
    ``none``); the run ends FINISHED or FAILED with the job."""
    if args is None or args.uri in ("", "none"):
        yield NullTracker()
        return
    try:
        import mlflow  # lazy: mlflow adds ~2 s to every CLI start, and most runs do not track

        _check_sqlite(args.uri)
        mlflow.set_tracking_uri(args.uri)
        tags = {"rule": args.rule, "git_commit": git_commit(), "config_hash": args.config_hash}
        tags.update({f"wildcard.{k}": str(v) for k, v in args.wildcards.items()})
        name = "/".join([args.rule, *(str(v) for v in args.wildcards.values())])
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
