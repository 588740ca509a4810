"""Compare two results folders file by file, ignoring wall-clock fields: the check that a refactor
"gives the same outputs". JSON keys and CSV columns named in TIMING are dropped before comparing;
every other file must be byte-identical.

    python scripts/compare_results.py /tmp/before/results/smoke /tmp/after/results/smoke
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

TIMING = {"seconds", "minutes", "train_minutes", "calibration_s", "test_s"}


def _strip(obj):
    """``obj`` without timing keys, recursively."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def normalised(path: Path):
    """What must be equal: JSON without timing keys, CSV without timing columns, else the bytes."""
    if path.suffix == ".json":
        return _strip(json.loads(path.read_text()))
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]
    return path.read_bytes()


def compare(a: Path, b: Path) -> list[str]:
    """Relative paths that are missing on one side or differ after normalising."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = [f"only in {a}: {p}" for p in sorted(files_a - files_b)]
    out += [f"only in {b}: {p}" for p in sorted(files_b - files_a)]
    out += [f"differs: {p}" for p in sorted(files_a & files_b) if normalised(a / p) != normalised(b / p)]
    return out


if __name__ == "__main__":
    problems = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(problems) or "identical (timing fields aside)")
    sys.exit(1 if problems else 0)
