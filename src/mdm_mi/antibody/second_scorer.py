"""The AntiBERTy comparison's fills scored by a model that did not write them: the
CDR-H3 loop model of :mod:`mdm_mi.antibody.loop_model`, fitted on the train split's lineages, scores
every fill of every run; each rule's per-VH mean is set beside AntiBERTy's PLL, the rules are ranked
at each budget under both scorers, and Algorithm 1 − EB is taken raw and pass-adjusted
(:func:`mdm_mi.antibody.pass_adjust.pass_adjusted_rows`, docs/preregistration.md, amendment 4).

    loops = fill_loops(np.load("results/.../fills.npz"))     # run id → [(fill, context id, loop)]
    record = second_scorer_record(runs, loops, model, test_ids)
"""

from __future__ import annotations

import numpy as np
from scipy.stats import kendalltau

from mdm_mi.antibody.compare import paired_t
from mdm_mi.antibody.loop_model import LoopModel
from mdm_mi.antibody.pass_adjust import pass_adjusted_rows
from mdm_mi.evaluation.budgets import BEST_MI, by_budget, SEQUENTIAL

METRIC = "loop"  # the runs' per-VH field the loop model's scores go in


def fill_loops(arrays) -> dict[str, list[tuple[int, str, str]]]:
    """``write_fills``' arrays → run id → every fill's (fill index, context id, filled letters at the
    masked positions), fill ``k`` of context ``p`` at row ``k·P + p``."""
    letter = dict(zip(arrays["vocab_ids"].tolist(), arrays["alphabet"].tolist()))
    positions, ids = arrays["positions"], arrays["ids"].tolist()
    out = {}
    for key in (k for k in arrays.files if k.startswith("fill/")):
        tokens = arrays[key]
        rows = []
        for r, row in enumerate(tokens):
            p = r % len(ids)
            rows.append((r // len(ids), ids[p], "".join(letter[int(t)] for t in row[positions[p]])))
        out[key.removeprefix("fill/")] = rows
    return out


def context_scores(model: LoopModel, rows: list[tuple[int, str, str]], ids: list[str]) -> np.ndarray:
    """``(P,)`` per context of ``ids``: the mean over its fills of the model's score (nats/residue)."""
    total, count = dict.fromkeys(ids, 0.0), dict.fromkeys(ids, 0)
    for _, cid, loop in rows:
        total[cid] += model.score(loop)
        count[cid] += 1
    return np.array([total[c] / count[c] for c in ids])


def ranking(runs: dict[str, dict], metric: str) -> dict[str, list[str]]:
    """Per budget, the families best first by their mean ``metric`` (``mi*``, a copy of one λ, left out)."""
    return {str(d): sorted((f for f in fs if f != BEST_MI), key=lambda f: -float(np.mean(fs[f][metric])))
            for d, fs in by_budget(runs).items()}


def second_scorer_record(runs: dict[str, dict], loops: dict[str, list], model: LoopModel, ids: list[str],
                         first: str, second: str, primary: int, margin: float) -> dict:
    """Every run's mean PLL, mean loop score and mean passes; the families ranked at each budget under
    each scorer and Kendall's τ between the two rankings; ``first`` − ``second`` in the loop score raw
    (same budget) and pass-adjusted; sequential − each of the two at each budget (paired t, uncorrected);
    every run's per-VH loop scores."""
    scored = {k: dict(r, **{METRIC: context_scores(model, loops[k], ids).tolist()}) for k, r in runs.items()}
    table = {k: {"family": r["family"], "divisor": r["divisor"], "passes": r["mean_passes"],
                 "pll": float(np.mean(r["pll"])), METRIC: float(np.mean(r[METRIC]))} for k, r in scored.items()}
    ranks = {m: ranking({k: r for k, r in scored.items() if k != SEQUENTIAL}, m) for m in ("pll", METRIC)}
    tau = {d: float(kendalltau([ranks["pll"][d].index(f) for f in ranks["pll"][d]],
                               [ranks[METRIC][d].index(f) for f in ranks["pll"][d]]).statistic) for d in ranks["pll"]}
    raw, behind = {}, {}
    seq = np.asarray(scored[SEQUENTIAL][METRIC])
    for d, fs in by_budget(scored).items():
        raw[str(d)] = {"passes_first": fs[first]["mean_passes"], "passes_second": fs[second]["mean_passes"],
                       **paired_t(np.asarray(fs[first][METRIC]), np.asarray(fs[second][METRIC]))}
        behind[str(d)] = {f: paired_t(seq, np.asarray(fs[f][METRIC])) for f in (first, second)}
    adjusted = pass_adjusted_rows(scored, first, second, METRIC, primary, margin)
    return {"first": first, "second": second, "runs": table, "ranking": ranks, "kendall_tau": tau, "raw": raw, "sequential_minus": behind,
            "pass_adjusted": {str(r["divisor"]): r for r in adjusted},
            "per_context": {k: r[METRIC] for k, r in scored.items()}}
