"""Compare two results folders file by file, ignoring wall-clock fields: the check that a refactor
"gives the same outputs". JSON keys and CSV columns that are timings (named in TIMING, or ending in
``seconds``/``minutes``) are dropped before comparing; safetensors files compare their tensors (their
header's metadata may hold timings); MLflow's own store and artifacts are left out; every other file
must be byte-identical.

    python scripts/compare_results.py /tmp/before/results/smoke /tmp/after/results/smoke
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

TIMING = {"seconds", "minutes", "train_minutes", "calibration_s", "test_s"}
MLFLOW = {"mlartifacts", "mlflow.db", "mlflow-spool"}  # the tracking mirror: run ids and times differ


def _timing(key: str) -> bool:
    return key in TIMING or key.endswith(("seconds", "minutes"))


def _strip(obj):
    """``obj`` without timing keys, recursively."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not _timing(k)}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def normalised(path: Path):
    """What must be equal: JSON without timing keys, CSV without timing columns, else the bytes."""
    if path.suffix == ".json":
        return _strip(json.loads(path.read_text()))
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        return [{k: v for k, v in r.items() if not _timing(k)} for r in rows]
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        return {k: (v.dtype.str, v.shape, v.tobytes()) for k, v in load_file(path).items()}
    return path.read_bytes()


def compare(a: Path, b: Path) -> list[str]:
    """Relative paths that are missing on one side or differ after normalising."""
    def files(root: Path) -> set[Path]:
        return {p.relative_to(root) for p in root.rglob("*") if p.is_file() and not MLFLOW.intersection(p.relative_to(root).parts)}

    files_a, files_b = files(a), files(b)
    out = [f"only in {a}: {p}" for p in sorted(files_a - files_b)]
    out += [f"only in {b}: {p}" for p in sorted(files_b - files_a)]
    out += [f"differs: {p}" for p in sorted(files_a & files_b) if normalised(a / p) != normalised(b / p)]
    return out


if __name__ == "__main__":
    problems = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(problems) or "identical (timing fields aside)")
    sys.exit(1 if problems else 0)
