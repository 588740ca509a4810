"""The pre-registered analysis of a Sudoku comparison (docs/preregistration.md): its primary
contrast, its secondary families with Holm's correction inside each, and the answer it gives.

- **primary**: Algorithm 1 with λ = 1 (``mi λ=1``) − EB at sequential's passes ÷ :data:`PRIMARY_DIVISOR`,
  alone in its family (no correction);
- **secondary**, one Holm family each: ``mi λ=1`` − EB at the other budgets; ``mi*`` − EB at every
  budget; ``mi λ=1`` − naive at every budget; ``mi λ=1`` − sequential at every budget;
- everything else the comparison tabulates is exploratory.

Each row's verdict is the comparison's (:func:`mdm_mi.evaluation.verdicts.verdict_word`): better / worse
(Holm p < 5%), equivalent (Holm TOST p < 5% at ±:data:`SUDOKU_MARGIN`), not resolved. The primary verdict
answers the paper's question: **confirmed** (better), **refuted** (equivalent or worse), **not answered**.

    rows = prereg_rows(runs, "hard")           # runs with per-puzzle outcomes (doc_tables.read_sudoku_comparison)
    answer = answer_of(primary_row(rows))      # "confirmed" | "refuted" | "not answered"
    rows = antibody_prereg_rows(read_csv("results/x/antibody/cdr3/budgets.csv"))   # evaluation.budgets.read_csv

AntiBERTy's rows come from ``antibody-compare``'s long-format CSV (per-VH means over fills, paired t):
the same families on its ``pll`` metric, equivalence by Student's TOST at ±:data:`ANTIBODY_MARGIN`
nats/residue, and one more secondary family, ``mi λ=1`` − EB in ``recovery`` at every budget.
"""

from __future__ import annotations

from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL, budget_rows
from mdm_mi.evaluation.stats import tost_t
from mdm_mi.evaluation.verdicts import classify

PRIMARY_DIVISOR = 4  # docs/data/preregistration/design.json: the first of the Sudoku divisors
SUDOKU_MARGIN = 0.02  # ±2 pp: the design's Sudoku equivalence margin (a test holds both to design.json)
ANTIBODY_MARGIN = 0.10  # nats/residue: the design's AntiBERTy margin
ANTIBODY_METRIC, RECOVERY = "pll", "recovery"
RECOVERY_FAMILY = "secondary: recovery"
REGISTERED_MI = "mi λ=1"  # the registered contender: Algorithm 1 at λ = 1 (its family label)
PRIMARY = "primary"
OTHER_BUDGETS = "secondary: the other budgets"
AGAINST = {"naive": "secondary: against naive", SEQUENTIAL: "secondary: against sequential"}
BEST_MI_FAMILY = "secondary: mi*"
EXPLORATORY = "exploratory"
ORDER = (PRIMARY, OTHER_BUDGETS, *AGAINST.values(), BEST_MI_FAMILY, RECOVERY_FAMILY)  # the tables' order
ANSWERS = {"better": "confirmed", "equivalent": "refuted", "worse": "refuted", "not resolved": "not answered"}


def prereg_role(row: dict) -> str:
    """A budgets row's family in the pre-registered analysis (its Holm family is (set, role))."""
    if row["first"] == BEST_MI:
        return BEST_MI_FAMILY if row["second"] == "eb" else EXPLORATORY
    if row["first"] != REGISTERED_MI:
        return EXPLORATORY
    if row["second"] == "eb":
        return PRIMARY if row["divisor"] == PRIMARY_DIVISOR else OTHER_BUDGETS
    return AGAINST.get(row["second"], EXPLORATORY)


def antibody_role(row: dict) -> str:
    """:func:`prereg_role` on the ``pll`` rows; ``mi λ=1`` − EB in ``recovery`` is its own family."""
    if row["metric"] == RECOVERY:
        return RECOVERY_FAMILY if (row["first"], row["second"]) == (REGISTERED_MI, "eb") else EXPLORATORY
    return prereg_role(row) if row["metric"] == ANTIBODY_METRIC else EXPLORATORY


def registered(rows: list[dict], **classify_args) -> list[dict]:
    """``rows`` classified (:func:`mdm_mi.evaluation.verdicts.classify` with ``classify_args``: Holm
    inside each family), exploratory rows left out, in :data:`ORDER` then by budget."""
    out = [r for r in classify(rows, **classify_args) if r["role"] != EXPLORATORY]
    return sorted(out, key=lambda r: (ORDER.index(r["role"]), r["divisor"]))


def antibody_prereg_rows(rows: list[dict]) -> list[dict]:
    """The pre-registered rows of an ``antibody-compare`` CSV (read by
    :func:`mdm_mi.evaluation.budgets.read_csv`): Student TOST at ±:data:`ANTIBODY_MARGIN`."""
    return registered(rows, role_of=antibody_role,
                      equivalence_p=lambda r: tost_t(r["diff"], r["se"], r["df"], ANTIBODY_MARGIN))


def prereg_rows(runs: dict[str, dict], set_name: str) -> list[dict]:
    """The pre-registered rows of a Sudoku comparison's ``runs`` (with per-puzzle ``solved`` and
    ``passes``): paired cells' TOST at ±:data:`SUDOKU_MARGIN`."""
    return registered(budget_rows(runs, set_name), margin=SUDOKU_MARGIN, role_of=prereg_role)


def primary_row(rows: list[dict]) -> dict:
    """The primary row of :func:`prereg_rows`; ValueError naming what is missing when there is none."""
    found = [r for r in rows if r["role"] == PRIMARY]
    if len(found) != 1:
        raise ValueError(f"the comparison has no {REGISTERED_MI} − EB row at ÷{PRIMARY_DIVISOR}: run it with "
                         f"--mi-lambda 1 and divisor {PRIMARY_DIVISOR}")
    return found[0]


def answer_of(primary: dict) -> str:
    """The paper's question answered by the primary verdict: confirmed, refuted or not answered."""
    return ANSWERS[primary["verdict"]]
