"""Copy a run's result files into a committed data folder, with the provenance that made them.

    python scripts/commit_run_data.py --results /path/to/checkout/results/cpu-default --out docs/data/default-run \
        --files sudoku/budgets/hard/runs.json sudoku/budgets/hard/outcomes.npz ... \
        --command "snakemake --cores 2" --config config/config.yaml --commit 8f860a3 \
        --wall-minutes 61.2 --cpu-minutes 97.0 --note "other jobs shared the cores"

Each file keeps its path below ``--results``; ``.npz`` files are rewritten compressed (same arrays).
``provenance.json`` holds the command, the config file's text, the commit, the machine (CPU model,
cores), the date and the cost. Results are data: docs render their tables from these files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".npz":
        with np.load(src, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        with dst.open("wb") as fh:
            np.savez_compressed(fh, **arrays)
    else:
        shutil.copyfile(src, dst)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--files", nargs="+", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--config", type=Path, default=None)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--wall-minutes", type=float, required=True)
    ap.add_argument("--cpu-minutes", type=float, default=None)
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    missing = [f for f in args.files if not (args.results / f).is_file()]
    if missing:
        raise SystemExit(f"error: not in {args.results}: {', '.join(missing)}")
    for f in args.files:
        copy(args.results / f, args.out / f)
    provenance = {
        "command": args.command, "commit": args.commit, "date": time.strftime("%Y-%m-%d"),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()}",
        "wall_minutes": round(args.wall_minutes, 1), "files": sorted(args.files), "note": args.note,
    }
    if args.cpu_minutes is not None:
        provenance["cpu_minutes"] = round(args.cpu_minutes, 1)
    if args.config is not None:
        provenance["config"] = str(args.config)
        provenance["config_text"] = args.config.read_text()
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(args.files)} files and provenance.json to {args.out}")


if __name__ == "__main__":
    main()
