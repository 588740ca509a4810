"""A comparison in parts on disk, for every domain: sequential, and each calibrated family, decoded as
jobs of their own (``sudoku-compare-part``, ``protein-compare-part``) and merged by the comparison verb
with ``--parts``. No family's runs depend on another's, so the merge makes the runs one job would.

A part folder holds ``part.json`` (the part's name, the settings it shares with the merge under
``spec``, whatever else the domain records, and each run without its array fields, in run order) and
an ``.npz`` file of those arrays (run ``i``'s field ``f`` as ``run{i}.{f}``).

    write_part(out, runs, {"part": "eb", "spec": key}, ARRAYS, "part.npz")
    runs, metas = read_parts(dirs, key, part_names(families), ARRAYS, "part.npz", "sudoku-compare-part")
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mdm_mi.evaluation.budgets import SEQUENTIAL
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, read_json, write_json

PART_FILE = "part.json"


def part_names(families) -> list[str]:
    """The parts of one comparison: sequential, then each calibrated family (:class:`Family`) by its slug."""
    return [SEQUENTIAL] + [f.slug for f in families]


def write_part(out: Path, runs: dict[str, dict], meta: dict, arrays: tuple[str, ...], arrays_file: str) -> None:
    """``part.json`` (``meta`` and each run without its ``arrays`` fields; other arrays as lists) and
    ``arrays_file``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    order = list(runs)
    saved = {f"run{i}.{a}": np.asarray(runs[k][a]) for i, k in enumerate(order) for a in arrays if a in runs[k]}
    with atomic_path(out / arrays_file) as tmp, tmp.open("wb") as fh:  # a file object: no suffix added
        np.savez(fh, **saved)
    body = {k: {f: (v.tolist() if isinstance(v, np.ndarray) else v) for f, v in r.items() if f not in arrays}
            for k, r in runs.items()}
    write_json(out / PART_FILE, meta | {"order": order, "runs": body})


def read_parts(dirs, key: dict, expected: list[str], arrays: tuple[str, ...], arrays_file: str,
               verb: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """The runs of every part folder, in ``expected``'s order → (run id → run with its ``arrays`` read
    back, part name → its ``part.json`` with its folder under ``dir``). One-line :class:`InputError`
    when a folder is no ``verb`` output, a part is repeated, missing or unknown, or was made with
    other settings than ``key`` (only the key's settings count: a part may hold more)."""
    parts: dict[str, dict] = {}
    for d in map(Path, dirs):
        if not (d / PART_FILE).is_file() or not (d / arrays_file).is_file():
            raise InputError(f"{d} is not a {verb} output ({PART_FILE} and {arrays_file})")
        part = read_json(d / PART_FILE)
        diff = sorted(k for k in key if k not in part["spec"] or part["spec"][k] != key[k])
        if diff:
            raise InputError(f"{d}: part made with other settings than this comparison ({', '.join(diff)})")
        if part["part"] in parts:
            raise InputError(f"part {part['part']!r} given twice")
        parts[part["part"]] = part | {"dir": str(d)}
    missing, unknown = [p for p in expected if p not in parts], [p for p in parts if p not in expected]
    if missing or unknown:
        raise InputError(f"parts missing: {', '.join(missing) or 'none'}; not of this comparison: "
                         f"{', '.join(unknown) or 'none'}")
    runs = {}
    for name in expected:
        part = parts[name]
        with np.load(Path(part["dir"]) / arrays_file, allow_pickle=False) as saved:
            for i, run_id in enumerate(part["order"]):
                runs[run_id] = part["runs"][run_id] | {a: saved[f"run{i}.{a}"] for a in arrays if f"run{i}.{a}" in saved}
    return runs, {name: parts[name] for name in expected}
