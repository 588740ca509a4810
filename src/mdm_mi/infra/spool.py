"""A job's tracking record, spooled as a JSON file beside a local MLflow store (no mlflow import).

Importing mlflow and opening its sqlite store costs a job ~2.5 CPU-seconds; a job on a local store
writes its record here instead, and ``mdm-mi track`` (``infra/tracking.mirror_spool``) replays the
spool into MLflow, one run per record, when the workflow ends. ``sqlite:///results/mlflow.db`` spools
to ``results/mlflow-spool/``: ``<id>.json`` (experiment, run name, tags, params, metric histories,
artifact names, start/end time, status) and ``<id>/`` (copies of the artifacts, taken at log time).

    tracker = SpoolTracker.start(Path("results/mlflow-spool"), "mdm-mi", "prepare_sudoku/smoke", tags)
    tracker.log_metrics({"loss": 0.1}, step=3)
    tracker.end("FINISHED")
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import time
import uuid
from pathlib import Path

from mdm_mi.infra.io import atomic_path

FLUSH_SECONDS = 30.0  # a long job's record is rewritten at most this often while it logs


def metric_key(key: str) -> str:
    """A name MLflow accepts (letters, digits, ``_ - . / space``): ``givens=17.accuracy`` →
    ``givens_17.accuracy``."""
    return re.sub(r"[^\w\-. /]", "_", key)


def flatten(d: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}} → {"a.b": 1}``."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def mlflow_params(params: dict) -> dict:
    """Params as MLflow keeps them: flattened, keys sanitised, values strings of at most 500 chars."""
    return {metric_key(k): str(v)[:500] for k, v in flatten(params).items()}


def mlflow_metrics(metrics: dict) -> dict:
    """The numbers of ``metrics`` (flattened, keys sanitised; booleans and text left out) as floats."""
    return {metric_key(k): float(v) for k, v in flatten(metrics).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def spool_dir(uri: str) -> Path | None:
    """The spool folder of a local ``sqlite:///<folder>/<name>.db`` store (``<folder>/<name>-spool``);
    None for any other URI (a server, ``none``, an in-memory store)."""
    path = uri.removeprefix("sqlite:///")
    if not uri.startswith("sqlite:///") or path in ("", ":memory:"):
        return None
    db = Path(path)
    return db.parent / f"{db.stem}-spool"


def now_ms() -> int:
    return int(time.time() * 1000)


class SpoolTracker:
    """Record one job in the spool (the tracker a job gets for a local store).

    The record is written atomically when the job starts (RUNNING), at most every
    :data:`FLUSH_SECONDS` while it logs, and when it ends; a job killed by SIGKILL leaves its last
    RUNNING record. A write that fails later turns the tracker off with one line.
    """

    def __init__(self, folder: Path, record: dict):
        self.folder, self.record = folder, record
        self.path = folder / f"{record['id']}.json"
        self.files = folder / record["id"]  # the artifacts' copies
        self.written = 0.0
        self.ok = True

    @classmethod
    def start(cls, folder: Path, experiment: str, run_name: str, tags: dict) -> SpoolTracker:
        """Write the RUNNING record; an ``OSError`` (the folder cannot be made or written) propagates."""
        record = {"id": uuid.uuid4().hex, "experiment": experiment, "run_name": run_name, "tags": tags,
                  "params": {}, "metrics": {}, "artifacts": [], "start_time": now_ms(), "end_time": None,
                  "status": "RUNNING"}
        tracker = cls(folder, record)
        tracker._write()
        return tracker

    def _write(self) -> None:
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps(self.record, indent=1) + "\n")
        self.written = time.monotonic()

    def _save(self, force: bool = False) -> None:
        if not self.ok or (not force and time.monotonic() - self.written < FLUSH_SECONDS):
            return
        try:
            self._write()
        except OSError as exc:
            self.ok = False
            print(f"tracking skipped: cannot write the spool {self.folder} ({exc})", file=sys.stderr)

    def log_params(self, params: dict) -> None:
        self.record["params"].update(mlflow_params(params))
        self._save()

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        stamp = now_ms()
        for key, value in mlflow_metrics(metrics).items():
            self.record["metrics"].setdefault(key, []).append([step or 0, value, stamp])
        self._save()

    def log_artifact(self, path: str | Path) -> None:
        """Copy the file now (it may change before the mirror runs); MLflow keeps it by its name."""
        path = Path(path)
        if not path.is_file() or not self.ok:
            return
        try:
            self.files.mkdir(exist_ok=True)
            shutil.copyfile(path, self.files / path.name)
        except OSError as exc:
            self.ok = False
            print(f"tracking skipped: cannot write the spool {self.folder} ({exc})", file=sys.stderr)
            return
        if path.name not in self.record["artifacts"]:
            self.record["artifacts"].append(path.name)
        self._save()

    def end(self, status: str) -> None:
        """The final record: FINISHED or FAILED, with its end time."""
        self.record.update(status=status, end_time=now_ms())
        self._save(force=True)


def read_records(folder: Path, experiment: str) -> list[tuple[dict, str]]:
    """The spool's records of ``experiment``, oldest first, each with its version (a hash of its
    file: it changes whenever the job rewrote the record)."""
    out = []
    for path in folder.glob("*.json") if folder.is_dir() else ():
        text = path.read_bytes()
        try:
            record = json.loads(text)
        except ValueError:
            print(f"tracking: {path} is not a record; left out", file=sys.stderr)
            continue
        if record.get("experiment") == experiment:
            out.append((record, hashlib.sha256(text).hexdigest()[:16]))
    return sorted(out, key=lambda r: (r[0]["start_time"], r[0]["id"]))
