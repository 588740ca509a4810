"""How far two rules' test passes sit apart in a comparison, and what that gap is worth at the
second rule's own rate (e.g. AntiBERTy's Algorithm 1 spent fewer passes than EB at each budget).

The rate is the second rule's score gained per pass between its two dearest budgets (a secant of its
own curve, no model), and a budget's handicap is the pass gap times that rate: a rough size, not a test.

    gap = pass_gap(read_csv("docs/data/decisive-antibody/antibody/cdr3/budgets.csv"), "mi λ=1", "eb", "pll")
    gap["budgets"]["4"]["share"]       # (first − second) / second passes at ÷4
"""

from __future__ import annotations


def pass_gap(rows: list[dict], first: str, second: str, metric: str) -> dict:
    """Per budget of the ``first`` − ``second`` rows in ``metric`` (long-format comparison rows, as
    :func:`mdm_mi.evaluation.budgets.read_csv` reads them): both rules' mean test passes and the gap's
    share of the second's, the second's score per pass between its two dearest budgets, and each
    budget's handicap (pass gap × that rate)."""
    picked = sorted((r for r in rows if (r["first"], r["second"], r["metric"]) == (first, second, metric)),
                    key=lambda r: r["passes_second"])
    assert len(picked) >= 2, f"{first} − {second} in {metric}: need two budgets, found {len(picked)}"
    lo, hi = picked[-2], picked[-1]
    rate = (hi["value_second"] - lo["value_second"]) / (hi["passes_second"] - lo["passes_second"])
    budgets = {str(r["divisor"]): {"passes_first": r["passes_first"], "passes_second": r["passes_second"],
                                   "share": r["passes_first"] / r["passes_second"] - 1,
                                   "handicap": (r["passes_second"] - r["passes_first"]) * rate} for r in picked}
    return {"first": first, "second": second, "metric": metric, "rate_per_pass": rate,
            "rate_between": [str(lo["divisor"]), str(hi["divisor"])], "budgets": budgets}
