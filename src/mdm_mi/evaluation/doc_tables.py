"""Markdown written from committed data files: the tables and sentences that docs render.

Every function takes the path of one data file (JSON or CSV, under docs/data/) and returns the
Markdown a page holds between its render markers (:mod:`mdm_mi.docs_jobs`). Nothing here is typed
by hand: change a number in the file and the page's block changes with it.

    print(preregistration_design(Path("docs/data/preregistration/design.json")))
"""

from __future__ import annotations

import json
from pathlib import Path


def _json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _pp(x: float) -> str:
    return f"{100 * x:.1f}"


def preregistration_design(path: Path) -> str:
    """The sample sizes of docs/preregistration.md from ``design.json``
    (``scripts/preregistration_design.py``)."""
    d = _json(path)
    s, a = d["sudoku"], d["antibody"]
    psi = ", ".join(f"÷{k} {v:.3f}" for k, v in sorted(s["discordance_by_divisor"].items(), key=lambda kv: int(kv[0])))
    sd = ", ".join(f"÷{k} {v:.3f}" for k, v in sorted(a["sd_by_divisor"].items(), key=lambda kv: int(kv[0])))
    return "\n".join([
        "| | Sudoku (paper-shape backbone) | AntiBERTy (CDR-H3 infilling) |",
        "|---|---|---|",
        f"| pilot | `{s['pilot']}` | `{a['pilot']}` |",
        f"| pilot spread | discordant share ψ of mi* vs EB: {psi} | SD of one VH's paired PLL difference: {sd} |",
        f"| planned from | ψ = {s['discordance_planned']:.3f} (the largest) | SD = {a['sd_planned']:.3f} nats/residue (the largest) |",
        f"| budgets (÷ sequential's passes; the first is primary) | {', '.join(f'÷{x}' for x in s['divisors'])} | "
        f"{', '.join(f'÷{x}' for x in [4] + [y for y in a['divisors'] if y != 4])} |",
        f"| effect or precision | the paper's +{_pp(s['delta'])} pp, {100 * d['power']:.0f}% power, two-sided 5% | 95% interval ±{a['half_width']:.2f} nats/residue |",
        f"| items needed | {s['pairs_needed']:,} puzzles | {a['vh_needed']} VH |",
        f"| items available | {s['test_available']:,} (of {s['hard_pool']:,} Hard+Expert, less {s['calibration']} "
        f"calibration and {s['validation']} validation); power there {_pp(s['power_at_available'])}% | "
        f"{a['vh_available']} test lineages; at the pilot's {a['fills_pilot']} fills ±{a['half_width_at_available']:.3f}; "
        f"the run: {a['fills']} fills |",
        f"| generated puzzles needed | {s['generated_needed']} | — |",
        f"| equivalence margin (TOST) | ±{_pp(s['margin'])} pp | ±{a['margin']:.2f} nats/residue "
        f"({a['vh_needed_power_margin']} VH give 80% power against it) |",
    ]) + "\n"


def provenance(path: Path) -> str:
    """A data folder's ``provenance.json`` as a two-column table: command, commit, machine, date, cost."""
    p = _json(path)
    rows = [(k, p[k]) for k in ("command", "commit", "machine", "date", "cpu_minutes", "wall_minutes") if k in p]
    cell = lambda v: f"`{v}`" if isinstance(v, str) and len(v) > 30 else str(v)  # noqa: E731
    return "\n".join(["| | |", "|---|---|"] + [f"| {k.replace('_', ' ')} | {cell(v)} |" for k, v in rows]) + "\n"
