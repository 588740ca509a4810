"""The Sudoku comparison in parts (:mod:`mdm_mi.evaluation.parts`): sequential and each calibrated
family decoded as jobs of their own (``sudoku-compare-part``), merged by ``sudoku-compare --parts``.
On two cores the parts fill both, and a family that reads no head starts before the head is trained.
A part records its decode seconds, its chunk record and the fingerprints of the heads it was given;
its per-puzzle arrays are in ``part.npz``.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from mdm_mi.evaluation.parts import read_parts
from mdm_mi.infra.errors import InputError
from mdm_mi.sudoku.data import PuzzleSet

ARRAYS_FILE = "part.npz"
ARRAYS = ("solved", "passes", "setting_solved", "setting_passes")
# arguments that do not change a part's runs: where it runs and writes, and what only the merge does
# (the model is keyed by its fingerprint, the data files by a digest of the puzzles they give)
NOT_IN_KEY = frozenset({"part", "parts", "out_dir", "threads", "device", "bootstrap", "chunks", "head", "tv_head",
                        "model", "radcliffe", "easy"})


def part_key(args, calib: PuzzleSet, test: PuzzleSet, model_fingerprint: str) -> dict:
    """What every part of one comparison and its merge share: the arguments that fix the runs, the
    model's fingerprint and a digest of the calibration and test puzzles."""
    key = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(args).items() if k not in NOT_IN_KEY}
    digest = hashlib.sha256(np.ascontiguousarray(calib.puzzles).tobytes() + np.ascontiguousarray(test.puzzles).tobytes())
    return key | {"model": model_fingerprint, "puzzles": digest.hexdigest()[:16]}


def merged_parts(dirs, key: dict, expected: list[str], heads: dict) -> tuple[dict[str, dict], dict, dict | None]:
    """The runs of the part folders ``dirs`` in ``expected``'s order → (run id → run, seconds
    {calibration_s, test_s summed, parts: part → its seconds}, the chunk record of them all). One-line
    :class:`InputError` as :func:`mdm_mi.evaluation.parts.read_parts`, and for a part made with
    another head than ``heads`` (the merge's fingerprints)."""
    runs, metas = read_parts(dirs, key, expected, ARRAYS, ARRAYS_FILE, "sudoku-compare-part")
    for meta in metas.values():
        other = sorted(h for h, identity in meta["heads"].items() if heads.get(h) != identity)
        if other:
            raise InputError(f"{meta['dir']}: part made with another {' and '.join(other)} than this comparison's")
    seconds = {s: sum(m["seconds"][s] for m in metas.values()) for s in ("calibration_s", "test_s")}
    return runs, seconds | {"parts": {p: m["seconds"] for p, m in metas.items()}}, merge_records(
        [m["chunks"] for m in metas.values()])


def merge_records(records: list[dict | None]) -> dict | None:
    """The parts' chunk records (:meth:`mdm_mi.evaluation.chunks.ChunkStore.record`) as one: chunks read
    and decoded summed, commits joined; the seconds are the folder's (every part scans the folder the
    parts share, so the largest is the latest scan). None when no part kept chunks."""
    kept = [r for r in records if r is not None]
    if not kept:
        return None
    return {"read": sum(r["read"] for r in kept), "decoded": sum(r["decoded"] for r in kept),
            "commits": sorted({c for r in kept for c in r["commits"]}),
            "decode_seconds": max(r["decode_seconds"] for r in kept),
            "decode_cpu_seconds": max(r["decode_cpu_seconds"] for r in kept)}
