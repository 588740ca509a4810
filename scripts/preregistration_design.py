"""The pre-registered sample sizes (docs/preregistration.md), computed from the committed pilots.

    python scripts/preregistration_design.py --out docs/data/preregistration/design.json

Sudoku: the share of discordant puzzles ψ between mi* and EB on the paper-shape backbone, backed
out of the pilot's 95% interval of mi* − EB at each budget (half-width ≈ z·√(ψ/n)), from
docs/record/figures/sudoku-paper/budgets_hard.md (300 puzzles: a record, not re-checkable). AntiBERTy: the standard deviation of one
VH's paired PLL difference (mi λ=1 − EB, mean of 2 fills) = se·√n, from
docs/figures/antibody/cdr3/budgets.csv (16 VH). Sizes: mdm_mi.evaluation.power.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
from pathlib import Path

from mdm_mi.evaluation.power import mcnemar_pairs, mcnemar_power, mean_pairs_for_half_width, mean_pairs_for_power
from mdm_mi.evaluation.stats import Z95

SUDOKU_PILOT = "docs/record/figures/sudoku-paper/budgets_hard.md"
ANTIBODY_PILOT = "docs/figures/antibody/cdr3/budgets.csv"
PAPER_DELTA = 0.026  # the paper's MI-guided − EB at ~15 passes: 63.6% − 61.0% (mdm_mi.evaluation.paper)
SUDOKU_MARGIN = 0.02  # ±2 pp: the project's equivalence margin for accuracies
ANTIBODY_HALF_WIDTH = 0.05  # nats/residue: the 95% interval issue 48 asks for
ANTIBODY_MARGIN = 0.10  # nats/residue: equivalence margin (a fifth to a third of parallel filling's cost)
HARD_POOL = 2000  # Radcliffe Hard + Expert puzzles in resources/data/sudoku (PROVENANCE.md)
CALIBRATION = 100  # puzzles the calibration split takes from that pool
VALIDATION = 0  # λ is chosen on the calibration split (never tested): no split of its own (amendment 1)
ANTIBODY_LINEAGES = 231  # test lineages (one VH each) of resources/data/antibody
FILLS_PILOT = 2  # fills per VH in the pilot
FILLS = 4  # fills per VH in the decisive run (the pilot's spread holds the noise between fills)
SUDOKU_DIVISORS = (4, 8, 12, 16)  # ÷4 primary (the paper's ~15 passes)
ANTIBODY_DIVISORS = (3, 4, 6)  # ÷4 primary
ORACLE_DIVISORS, ORACLE_SUBSET = (4, 12), 300
HEAD_CONTEXTS, PEARSON_GOAL = 2000, 0.85
LEVEL, POWER = 0.95, 0.80


def sudoku_discordance(path: Path) -> dict[int, float]:
    """ψ at each budget of the pilot: n · (half-width / z)², from the mi* − eb cell of each row."""
    text = path.read_text()
    n = int(re.search(r"\((\d+) test puzzles", text)[1])
    header = next(l for l in text.splitlines() if l.startswith("| budget | ") and "resolves" in l)
    col = [c.strip() for c in header.strip("|").split("|")].index("eb")
    out = {}
    for line in text.splitlines():
        m = re.match(r"\| 1/(\d+) \|", line)
        if m and "[" in line and line.count("|") > col + 1:
            cell = [c.strip() for c in line.strip("|").split("|")][col]
            if "[" not in cell:
                continue
            lo, hi = (float(x) / 100 for x in re.search(r"\[([^,]+), ([^\]]+)\]", cell).groups())
            out[int(m[1])] = n * ((hi - lo) / 2 / Z95) ** 2
    return out


def antibody_sd(path: Path) -> dict[int, float]:
    """The SD of one VH's paired PLL difference, mi λ=1 − eb, at each budget: se · √n."""
    with path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["metric"] == "pll" and r["first"] == "mi λ=1" and r["second"] == "eb"]
    return {int(r["divisor"]): float(r["se"]) * math.sqrt(int(r["n"])) for r in rows}


def design() -> dict:
    psi = sudoku_discordance(Path(SUDOKU_PILOT))
    sd = antibody_sd(Path(ANTIBODY_PILOT))
    psi_max, sd_max = max(psi.values()), max(sd.values())
    n_sudoku = mcnemar_pairs(PAPER_DELTA, psi_max)
    available = HARD_POOL - CALIBRATION - VALIDATION
    return {
        "level": LEVEL, "power": POWER,
        "sudoku": {"divisors": SUDOKU_DIVISORS, "oracle_divisors": ORACLE_DIVISORS, "oracle_subset": ORACLE_SUBSET,
                   "head_contexts": HEAD_CONTEXTS, "pearson_goal": PEARSON_GOAL, "pilot": SUDOKU_PILOT, "discordance_by_divisor": psi, "discordance_planned": psi_max,
                   "delta": PAPER_DELTA, "margin": SUDOKU_MARGIN, "pairs_needed": n_sudoku,
                   "hard_pool": HARD_POOL, "calibration": CALIBRATION, "validation": VALIDATION,
                   "test_available": available, "generated_needed": max(0, n_sudoku - available),
                   "power_at_available": mcnemar_power(available, PAPER_DELTA, psi_max)},
        "antibody": {"divisors": ANTIBODY_DIVISORS, "fills_pilot": FILLS_PILOT, "pilot": ANTIBODY_PILOT, "sd_by_divisor": sd, "sd_planned": sd_max,
                     "half_width": ANTIBODY_HALF_WIDTH, "margin": ANTIBODY_MARGIN,
                     "vh_needed": mean_pairs_for_half_width(sd_max, ANTIBODY_HALF_WIDTH),
                     "vh_needed_power_margin": mean_pairs_for_power(ANTIBODY_MARGIN, sd_max),
                     "vh_available": ANTIBODY_LINEAGES, "fills": FILLS,
                     "half_width_at_available": Z95 * sd_max / math.sqrt(ANTIBODY_LINEAGES)},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    out = Path(parser.parse_args().out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(design(), indent=2, sort_keys=True) + "\n")
    print(out.read_text())
