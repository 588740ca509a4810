"""Two runs of a budgets table, row by row: which rows both hold, which only one, and where the
verdict word differs; the primary contrast (mi* − EB) of each at every budget.

    python scripts/compare_verdicts.py docs/data/default-run-head24k/sudoku/budgets/hard/budgets.csv \
        docs/data/default-run/sudoku/budgets/hard/budgets.csv --names 24k 48k

A row is (set, divisor, first, second). Differences are in percentage points (the CSV's fractions ×100).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

PRIMARY = ("mi*", "eb")


def read(path: Path) -> dict[tuple, dict]:
    with path.open(newline="") as fh:
        return {(r["set"], int(r["divisor"]), r["first"], r["second"]): r for r in csv.DictReader(fh)}


def contrast(row: dict) -> str:
    pp = [100 * float(row[k]) for k in ("diff", "lo", "hi")]
    return f"{pp[0]:+.1f} [{pp[1]:+.1f}, {pp[2]:+.1f}] (Holm p {float(row['p_holm']):.2g}) {row['verdict']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--names", nargs=2, default=("first", "second"))
    args = ap.parse_args()
    a, b = read(args.first), read(args.second)
    both = [k for k in a if k in b]
    changed = [k for k in both if a[k]["verdict"] != b[k]["verdict"]]
    na, nb = args.names
    print(f"# {args.first} ({na}) against {args.second} ({nb})")
    print(f"rows: {na} {len(a)}, {nb} {len(b)}, in both {len(both)}, only in {na} {len(a) - len(both)}, "
          f"only in {nb} {len(b) - len(both)}")
    print(f"verdict words changed: {len(changed)} of {len(both)}")
    for k in changed:
        print(f"  {k[0]} ÷{k[1]} {k[2]} − {k[3]}: {a[k]['verdict']} → {b[k]['verdict']}")
    print(f"primary {PRIMARY[0]} − {PRIMARY[1]} (pp):")
    for k in both:
        if k[2:] == PRIMARY:
            print(f"  ÷{k[1]}: {na} {contrast(a[k])}; {nb} {contrast(b[k])}")


if __name__ == "__main__":
    main()
