"""The pass-adjusted contrast of an infilling comparison (docs/preregistration.md, amendment 4): when
the first rule spends fewer test passes than the second at a budget, the second rule's per-context
score is read off its own curve at the first rule's passes, by linear interpolation in mean passes
between its two runs that bracket them, and the paired contrast is taken against that.

With the second rule's runs at mean passes P₁ < P₂ around the first rule's P, w = (P − P₁)/(P₂ − P₁)
is one constant for every context, and context c's adjusted score is (1 − w)·s₁[c] + w·s₂[c]. Where no
two runs bracket P, the two nearest in passes are extrapolated (the row says so). w is treated as
known: the paired t interval does not carry the uncertainty of the mean passes.

    rows = pass_adjusted_rows(runs, "mi λ=1", "eb", "pll", primary=4, margin=0.10)   # runs.json's runs
    rows[0]["diff"], rows[0]["weight"], rows[0]["between"]
"""

from __future__ import annotations

import numpy as np

from mdm_mi.antibody.compare import paired_t
from mdm_mi.evaluation.prereg import OTHER_BUDGETS, PRIMARY
from mdm_mi.evaluation.stats import tost_t
from mdm_mi.evaluation.verdicts import classify


def bracket(passes: dict[str, float], target: float) -> tuple[str, str, float, bool]:
    """The two runs of ``passes`` (name → mean passes, at least two) adjacent in passes whose passes
    bracket ``target``, else the two nearest (the cheapest two below, the dearest two above): their
    names (cheaper first), the weight w of the dearer one, and whether ``target`` lies outside them."""
    assert len(passes) >= 2, passes
    order = sorted(passes, key=passes.get)
    pairs = list(zip(order, order[1:]))
    inside = [(a, b) for a, b in pairs if passes[a] <= target <= passes[b]]
    a, b = inside[0] if inside else (pairs[0] if target < passes[order[0]] else pairs[-1])
    gap = passes[b] - passes[a]
    assert gap > 0, f"runs {a} and {b} spent the same passes: nothing to interpolate"
    return a, b, (target - passes[a]) / gap, not inside


def adjusted_scores(runs: dict[str, dict], target: float, metric: str) -> tuple[np.ndarray, dict]:
    """``runs`` (name → run with ``mean_passes`` and per-context ``metric``) read at ``target`` mean
    passes: ``(P,)`` per-context scores and how (the two runs, w, extrapolated)."""
    a, b, w, outside = bracket({k: r["mean_passes"] for k, r in runs.items()}, target)
    scores = (1 - w) * np.asarray(runs[a][metric], float) + w * np.asarray(runs[b][metric], float)
    return scores, {"between": [a, b], "weight": w, "extrapolated": outside}


def pass_adjusted_rows(runs: dict[str, dict], first: str, second: str, metric: str, primary: int,
                       margin: float, set_name: str = "cdr3") -> list[dict]:
    """For every budget of ``first`` (a family of ``runs``, runs.json's ``family@divisor`` runs):
    ``first`` − ``second`` read at ``first``'s mean passes (:func:`adjusted_scores` over every run of
    family ``second``), paired t over contexts, Student's TOST at ±``margin``; ÷``primary`` alone in
    its family, the other budgets one Holm family; verdict words as the registered analysis's."""
    ours = {r["divisor"]: r for r in runs.values() if r["family"] == first}
    theirs = {k: r for k, r in runs.items() if r["family"] == second}
    rows = []
    for d in sorted(ours, key=lambda d: (d != primary, d)):
        run = ours[d]
        reference, how = adjusted_scores(theirs, run["mean_passes"], metric)
        same = [r for r in theirs.values() if r["divisor"] == d]
        rows.append({"set": set_name, "divisor": d, "metric": metric, "first": first, "second": second,
                     "n": len(reference), "passes_first": run["mean_passes"],
                     "passes_second_same_budget": same[0]["mean_passes"] if same else None, **how,
                     "value_first": float(np.mean(run[metric])), "value_second": float(reference.mean()),
                     **paired_t(np.asarray(run[metric], float), reference)})
    return classify(rows, role_of=lambda r: PRIMARY if r["divisor"] == primary else OTHER_BUDGETS,
                    equivalence_p=lambda r: tost_t(r["diff"], r["se"], r["df"], margin))
