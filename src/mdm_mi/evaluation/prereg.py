"""The pre-registered analysis of a Sudoku comparison (docs/preregistration.md, issue 48): its primary
contrast, its secondary families with Holm's correction inside each, and the answer it gives.

- **primary**: Algorithm 1 with λ = 1 (``mi λ=1``) − EB at sequential's passes ÷ :data:`PRIMARY_DIVISOR`,
  alone in its family (no correction);
- **secondary**, one Holm family each: ``mi λ=1`` − EB at the other budgets; ``mi*`` − EB at every
  budget; ``mi λ=1`` − naive at every budget; ``mi λ=1`` − sequential at every budget;
- everything else the comparison tabulates is exploratory.

Each row's verdict is the comparison's (:func:`mdm_mi.evaluation.verdicts.verdict_word`): better / worse
(Holm p < 5%), equivalent (Holm TOST p < 5% at ±:data:`MARGIN`), not resolved. The primary verdict
answers the paper's question: **confirmed** (better), **refuted** (equivalent or worse), **not answered**.

    rows = prereg_rows(runs, "hard")           # runs with per-puzzle outcomes (doc_tables.read_sudoku_comparison)
    answer = answer_of(primary_row(rows))      # "confirmed" | "refuted" | "not answered"
    rows = antibody_prereg_rows(read_csv_rows("results/x/antibody/cdr3/budgets.csv"))

AntiBERTy's rows come from ``antibody-compare``'s long-format CSV (per-VH means over fills, paired t):
the same families on its ``pll`` metric, equivalence by Student's TOST at ±:data:`ANTIBODY_MARGIN`
nats/residue, and one more secondary family, ``mi λ=1`` − EB in ``recovery`` at every budget.
"""

from __future__ import annotations

import csv
from pathlib import Path

from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL, budget_rows
from mdm_mi.evaluation.stats import tost_t
from mdm_mi.evaluation.verdicts import classify

PRIMARY_DIVISOR = 4  # docs/data/preregistration/design.json: the first of the Sudoku divisors
MARGIN = 0.02  # ±2 pp: the design's Sudoku equivalence margin (a test holds both to design.json)
ANTIBODY_MARGIN = 0.10  # nats/residue: the design's AntiBERTy margin
ANTIBODY_METRIC, RECOVERY = "pll", "recovery"
RECOVERY_FAMILY = "secondary: recovery"
NUMBERS = ("divisor", "n", "passes_first", "passes_second", "value_first", "value_second", "diff", "lo", "hi",
           "p_value", "se", "df")
ALGORITHM_1 = "mi λ=1"
PRIMARY = "primary"
SECONDARY = {("eb", False): "secondary: the other budgets", ("naive", None): "secondary: against naive",
             (SEQUENTIAL, None): "secondary: against sequential"}
BEST_MI_FAMILY = "secondary: mi*"
EXPLORATORY = "exploratory"
ANSWERS = {"better": "confirmed", "equivalent": "refuted", "worse": "refuted", "not resolved": "not answered"}


def prereg_role(row: dict) -> str:
    """A budgets row's family in the pre-registered analysis (its Holm family is (set, role))."""
    if row["first"] == BEST_MI:
        return BEST_MI_FAMILY if row["second"] == "eb" else EXPLORATORY
    if row["first"] != ALGORITHM_1:
        return EXPLORATORY
    if row["second"] == "eb" and row["divisor"] == PRIMARY_DIVISOR:
        return PRIMARY
    at_primary = row["divisor"] == PRIMARY_DIVISOR
    return SECONDARY.get((row["second"], at_primary if row["second"] == "eb" else None), EXPLORATORY)


def antibody_role(row: dict) -> str:
    """:func:`prereg_role` on the ``pll`` rows; ``mi λ=1`` − EB in ``recovery`` is its own family."""
    if row["metric"] == RECOVERY:
        return RECOVERY_FAMILY if (row["first"], row["second"]) == (ALGORITHM_1, "eb") else EXPLORATORY
    return prereg_role(row) if row["metric"] == ANTIBODY_METRIC else EXPLORATORY


def read_csv_rows(path: str | Path) -> list[dict]:
    """A long-format comparison CSV's rows, its number columns as numbers (``divisor`` and ``n`` as int)."""
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r | {k: (int(float(r[k])) if k in ("divisor", "n") else float(r[k])) for k in NUMBERS if k in r}
            for r in rows]


def antibody_prereg_rows(rows: list[dict]) -> list[dict]:
    """The pre-registered rows of an ``antibody-compare`` CSV (:func:`read_csv_rows`): each family's
    Holm p and Student TOST at ±:data:`ANTIBODY_MARGIN`, exploratory rows left out, primary first."""
    out = [r for r in classify(rows, role_of=antibody_role,
                               equivalence_p=lambda r: tost_t(r["diff"], r["se"], r["df"], ANTIBODY_MARGIN))
           if r["role"] != EXPLORATORY]
    order = [PRIMARY, *SECONDARY.values(), BEST_MI_FAMILY, RECOVERY_FAMILY]
    return sorted(out, key=lambda r: (order.index(r["role"]), r["divisor"]))


def prereg_rows(runs: dict[str, dict], set_name: str) -> list[dict]:
    """Every pre-registered row (exploratory ones left out) of a comparison's ``runs`` (with per-puzzle
    ``solved`` and ``passes``), classified with Holm inside each family, primary first."""
    rows = [r for r in classify(budget_rows(runs, set_name), margin=MARGIN, role_of=prereg_role)
            if r["role"] != EXPLORATORY]
    order = [PRIMARY, *SECONDARY.values(), BEST_MI_FAMILY]
    return sorted(rows, key=lambda r: (order.index(r["role"]), r["divisor"]))


def primary_row(rows: list[dict]) -> dict:
    """The primary row of :func:`prereg_rows`; ValueError naming what is missing when there is none."""
    found = [r for r in rows if r["role"] == PRIMARY]
    if len(found) != 1:
        raise ValueError(f"the comparison has no {ALGORITHM_1} − EB row at ÷{PRIMARY_DIVISOR}: run it with "
                         f"--mi-lambda 1 and divisor {PRIMARY_DIVISOR}")
    return found[0]


def answer_of(primary: dict) -> str:
    """The paper's question answered by the primary verdict: confirmed, refuted or not answered."""
    return ANSWERS[primary["verdict"]]
