"""Atomic file writes: an output appears complete or not at all, so a killed job never leaves a
half-written file that a later rule would trust."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | Path, obj) -> None:
    """Write ``obj`` as indented JSON atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_npy(path: str | Path, array) -> None:
    """Write a numpy array as ``.npy`` atomically (never pickled; load with ``allow_pickle=False``)."""
    import numpy as np

    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.save(fh, array, allow_pickle=False)


def read_json(path: str | Path):
    """Read a JSON file."""
    return json.loads(Path(path).read_text())
