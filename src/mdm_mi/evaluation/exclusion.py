"""What a pre-registered Sudoku primary rules out, added after the results.

The registered analysis (:mod:`mdm_mi.evaluation.prereg`) tests equivalence inside ±2 pp. Saying the
paper's claim is "refuted" goes further than that test: what the run shows is that the paper's own
difference is excluded on this backbone. This module states that, and no more:

- the one-sided p that the primary difference lies below each bound (the upper test of a TOST,
  :func:`mdm_mi.evaluation.paired.below_p`), against the paper's MI-guided − EB and the registered margin;
- what is not ruled out on the lower side (the 95% interval's lower end);
- the backbone's sequential accuracy beside the paper's, and a cited published figure for a small MDM.

    record = exclusion_record(runs, "hard")     # runs: doc_tables.read_sudoku_comparison
    record["below"]["paper"]["p"]               # p that mi λ=1 − EB < the paper's +2.6 pp
"""

from __future__ import annotations

import numpy as np

from mdm_mi.evaluation import paper, prereg
from mdm_mi.evaluation.budgets import SEQUENTIAL
from mdm_mi.evaluation.paired import below_p
from mdm_mi.evaluation.verdicts import cells

NOTE = ("added after the results (issue 64); the registered analysis is prereg.py's, unchanged: these are "
        "one-sided tests of the registered primary against bounds chosen after it was seen")


def paper_difference() -> float:
    """The paper's MI-guided − EB on hard Sudoku (Table 1), as a fraction (+0.026)."""
    acc = {name: a for name, _, _, _, a in paper.SUDOKU}
    return round((acc["mi"] - acc["eb"]) / 100, 6)


def exclusion_of(row: dict, bounds: dict[str, float]) -> dict:
    """For a primary row (:func:`mdm_mi.evaluation.prereg.primary_row`): each named bound with the
    one-sided p that the difference lies below it, and the lower side the interval leaves open."""
    table = cells(row)
    return {
        "diff": row["diff"], "lo": row["lo"], "hi": row["hi"], "n": row["n"], "divisor": row["divisor"],
        "p_tost_registered": row["p_tost_holm"], "verdict": row["verdict"],
        "below": {name: {"bound": b, "p": below_p(*table, b)} for name, b in bounds.items()},
        "not_ruled_out_worse": max(0.0, -row["lo"]),
    }


def exclusion_record(runs: dict[str, dict], set_name: str) -> dict:
    """The exclusion of a pre-registered Sudoku comparison's primary (against the paper's difference and
    the registered margin), its sequential accuracy beside the paper's, and the cited small-MDM figure."""
    row = prereg.primary_row(prereg.prereg_rows(runs, set_name))
    record = exclusion_of(row, {"paper": paper_difference(), "margin": prereg.SUDOKU_MARGIN})
    paper_seq = next(a for name, _, _, _, a in paper.SUDOKU if name == SEQUENTIAL)
    record["sequential"] = {"accuracy": float(np.mean(runs[SEQUENTIAL]["solved"])), "paper": paper_seq / 100}
    record["cited"] = dict(paper.SMALL_MDM_SUDOKU)
    return {"note": NOTE, "contrast": f"{prereg.REGISTERED_MI} − eb", **record}
