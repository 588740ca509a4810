"""Atomic file writes: an output appears complete or not at all, so a killed job never leaves a
half-written file that a later rule would trust.

    with atomic_path("results/x.csv") as tmp:
        tmp.write_text("a,b\n")
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sys
import tempfile
from pathlib import Path

from mdm_mi.infra.errors import InputError

MANIFEST = "MANIFEST.json"  # a shipped checkpoint's sha256 per file and calibration (resources/pretrained/); torch-free here


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    The temporary name carries the writer's process id (``.name.<pid>.<random>.tmp``): one left by a
    writer that was killed (SIGKILL skips the cleanup below) is removed by the next good write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
        _remove_stale_temps(path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _remove_stale_temps(path: Path) -> None:
    """Delete temporary files of ``path`` whose writer process no longer exists."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and not _process_exists(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | Path, obj) -> None:
    """Write ``obj`` as indented JSON atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_npy(path: str | Path, array) -> None:
    """Write a numpy array as ``.npy`` atomically (never pickled; load with ``allow_pickle=False``)."""
    import numpy as np  # lazy: torch-free: the workflow imports this module to build its DAG

    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.save(fh, array, allow_pickle=False)


def read_json(path: str | Path):
    """Read a JSON file; one-line :class:`InputError` for one that is not readable text or not JSON (a
    missing file stays :class:`FileNotFoundError`, also one line at the CLI)."""
    path = Path(path)
    try:
        text = path.read_text()
    except (PermissionError, IsADirectoryError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {type(exc).__name__}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                         "write it again or restore it") from None


def read_text_input(path: Path | str, what: str) -> str:
    """The text of ``path`` (``-`` = stdin) with a one-line error for a missing or unreadable file."""
    if str(path) == "-":
        return sys.stdin.read()
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} file {path} is a folder, not a file")
    if not path.is_file():
        raise InputError(f"{what} file not found: {path}")
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} file {path}: {type(exc).__name__}") from None


def read_jsons(paths, what: str) -> list:
    """Read every JSON file of ``paths``; one-line :class:`InputError` naming the first missing one
    (``what`` names the kind, e.g. ``"summary"``) before any is read."""
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise InputError(f"{what} not found: {missing[0]}")
    return [read_json(p) for p in paths]
