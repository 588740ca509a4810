"""Decodes kept on disk in fixed chunks, so that a long comparison can stop and resume.

A comparison decodes one item set (puzzles, sequences) under many sampler settings. With a
:class:`ChunkStore`, the set is cut into chunks of ``chunk_items`` consecutive items, and each chunk's
outcome under one setting is saved as ``<folder>/<key>.npz`` the moment it is decoded. A rerun of the
same command reads back every chunk it finds and decodes only the rest, so a run stopped after hours
loses at most one chunk. The merged arrays equal an unchunked decode: every item draws from its own
keyed stream (:mod:`mdm_mi.core.streams`), fixed by its index in the set, whatever else its batch holds.

The key is the sha256 of everything that fixes a chunk's outcome: the run's ``identity`` (the caller
names the model and head weights and the seed), the chunk's first index and its items' bytes, and the
sampler's name and setting (:meth:`mdm_mi.core.samplers.Sampler.stream_tag`), and the ``part`` the
caller names when one item set and setting yield several outcomes (an infilling run's fill ``k``, or
the scores of that fill: ``part="fill 2"``, ``"score fill 2"``; none for Sudoku). It does not hash the
code: after a change to decoding code, delete the folder (each chunk records the commit that wrote it,
in ``commit``, so a run can list them). Each chunk also keeps the wall and CPU seconds its decode took
(``seconds``, ``cpu_seconds``), so a run spread over many invocations states its whole cost
(:meth:`ChunkStore.record`).

    store = ChunkStore(Path("budgets/hard.chunks"), identity="model=… head=… seed=0")
    out = store.decode(puzzles, sampler, lambda start, stop: {"solved": ..., "passes": ...})
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from mdm_mi.infra.io import atomic_path
from mdm_mi.infra.tracking import git_commit

CHUNK_ITEMS = 100  # items per saved chunk: a stopped Sudoku run on the 4M backbone loses under a minute
COMMIT_KEY = "commit"
SECONDS_KEY, CPU_KEY = "seconds", "cpu_seconds"  # the chunk's decode: wall and process CPU seconds
META_KEYS = (COMMIT_KEY, SECONDS_KEY, CPU_KEY)  # what a chunk file holds besides its outcome

DecodeRange = Callable[[int, int], dict[str, np.ndarray]]  # (start, stop) → name → array (stop − start, ...)


@dataclass
class ChunkStore:
    """Per-chunk outcomes of decodes under ``folder`` (created on first write), keyed by ``identity``
    and the chunk's content; ``hits`` and ``misses`` count the chunks read back and decoded."""

    folder: Path
    identity: str
    chunk_items: int = CHUNK_ITEMS
    hits: int = 0
    misses: int = 0
    commit: str = field(default_factory=git_commit)

    def __post_init__(self) -> None:
        if self.chunk_items < 1:
            raise ValueError(f"chunk_items must be >= 1, got {self.chunk_items}")
        self.folder = Path(self.folder)

    def key(self, items: np.ndarray, start: int, tag: str, part: str = "") -> str:
        """The chunk file's name for ``items`` (this chunk's rows) starting at index ``start``, decoded
        by the sampler setting ``tag``, outcome ``part`` (none: the key of a run without parts)."""
        digest = hashlib.sha256()
        fields = {"identity": self.identity, "start": start, "sampler": tag,
                  "shape": list(items.shape), "dtype": str(items.dtype)} | ({"part": part} if part else {})
        header = json.dumps(fields, sort_keys=True)
        digest.update(header.encode())
        digest.update(np.ascontiguousarray(items).tobytes())
        return digest.hexdigest()[:32]

    def decode(self, items: np.ndarray, sampler, decode_range: DecodeRange, part: str = "") -> dict[str, np.ndarray]:
        """``decode_range(start, stop)`` of every chunk of ``items (P, ...)`` not on disk yet, each saved
        as soon as it is decoded, merged with the saved ones in order → name → array ``(P, ...)``;
        ``part`` names which of several outcomes of the same items and setting this is."""
        parts: list[dict[str, np.ndarray]] = []
        for start in range(0, len(items), self.chunk_items):
            stop = min(start + self.chunk_items, len(items))
            path = self.folder / f"{self.key(items[start:stop], start, sampler.stream_tag(), part)}.npz"
            parts.append(self._read(path, stop - start) if path.is_file() else self._decode(path, decode_range, start, stop))
        if not parts:
            return {}
        return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}

    def _read(self, path: Path, n: int) -> dict[str, np.ndarray]:
        with np.load(path) as saved:
            arrays = {name: saved[name] for name in saved.files if name not in META_KEYS}
        if any(len(a) != n for a in arrays.values()):
            raise ValueError(f"chunk {path} holds another number of items than {n}: delete {self.folder} and rerun")
        self.hits += 1
        return arrays

    def _decode(self, path: Path, decode_range: DecodeRange, start: int, stop: int) -> dict[str, np.ndarray]:
        wall, cpu = time.perf_counter(), time.process_time()
        arrays = {k: np.asarray(v) for k, v in decode_range(start, stop).items()}
        return self._write(path, arrays, {SECONDS_KEY: time.perf_counter() - wall, CPU_KEY: time.process_time() - cpu})

    def _write(self, path: Path, arrays: dict[str, np.ndarray], cost: dict[str, float]) -> dict[str, np.ndarray]:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, tmp.open("wb") as fh:  # a file object: np.savez adds no suffix
            np.savez(fh, **{COMMIT_KEY: np.array(self.commit)}, **{k: np.array(v) for k, v in cost.items()}, **arrays)
        self.misses += 1
        return arrays

    def record(self) -> dict:
        """What a run's result files say of its chunks: how many were read back and decoded, the
        commits that decoded the folder's chunks, and the wall and CPU seconds of all their decodes
        (whichever invocation made them; chunks written before chunks kept their time count 0)."""
        commits, seconds, cpu = self._scan()
        return {"read": self.hits, "decoded": self.misses, "commits": commits,
                "decode_seconds": round(seconds, 3), "decode_cpu_seconds": round(cpu, 3)}

    def commits(self) -> list[str]:
        """The commits that wrote this folder's chunks, sorted (for a run's provenance)."""
        return self._scan()[0]

    def _scan(self) -> tuple[list[str], float, float]:
        found, seconds, cpu = set(), 0.0, 0.0
        for path in sorted(self.folder.glob("*.npz")):
            with np.load(path) as saved:
                if COMMIT_KEY in saved.files:
                    found.add(str(saved[COMMIT_KEY]))
                seconds += float(saved[SECONDS_KEY]) if SECONDS_KEY in saved.files else 0.0
                cpu += float(saved[CPU_KEY]) if CPU_KEY in saved.files else 0.0
        return sorted(found), seconds, cpu
