"""Decoding rules at calibrated budgets on one comparison set, paired against sequential decoding, in
one run: the study behind docs/record/rules.md (issue: a rule that keeps sequential accuracy at 1/5 of its
passes). It reuses the comparison's own calibration/test split (the ``calib.csv``/``test.csv`` that
``sudoku-compare`` wrote) and bisection, so its numbers line up with the budgets tables.

Two prototype rules live here (not in the sampler table: neither helped):

* ``mi-err`` — an *error* budget instead of an entropy budget: walk masked cells by confidence (top
  probability, descending), charge ``(1 − p_i) + λ Σ_{j∈U} Î_ij`` (a union bound on the chance that
  an admitted greedy token is wrong, plus Algorithm 1's dependence term), the first cell free.
* ``eb-sched`` — EB-Sampler with a budget that follows the decode, ``γ_t = γ · (masked fraction)^a``.

And the frontier of "certain cells only": the Fast-dLLM threshold and EB at tiny budgets, which only
unmask near-certain cells, show how few passes keep sequential accuracy with no rule at all.

    python benchmarks/rule_study.py --budgets results/cpu-default/sudoku/budgets/graded \
        --model results/cpu-default/sudoku/model --head results/cpu-default/sudoku/head
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from mdm_mi.core.sampler_table import GAMMA_RANGE, HEAD, SAMPLERS, SamplerSpec
from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded, Sampler, Sequential, StepView
from mdm_mi.evaluation.calibrate import Family
from mdm_mi.evaluation.paired import mcnemar_exact
from mdm_mi.models.loading import load_model
from mdm_mi.models.loading import load_mi_head
from mdm_mi.mi.guided import DensePairs, MIGuided, head_pairwise_fn
from mdm_mi.sudoku.compare import Decoder, compare_runs
from mdm_mi.sudoku.data import load_puzzle_csv

ERR_RANGE = (1e-6, 100.0)
FRONTIER = [("sequential margin", Sequential("margin"))] + \
    [(f"threshold τ={t}", ConfidenceThreshold(t)) for t in (0.9999, 0.999, 0.99, 0.95, 0.9)] + \
    [(f"eb γ={g}", EntropyBounded(g)) for g in (0.001, 0.01, 0.05)]


class ErrorBudget(Sampler):
    """Confidence-ordered walk; cost ``(1 − p_i) + λ Σ_{j∈U} Î_ij``; admit while spent ≤ γ; first free."""

    name = "mi-err"
    uses_pairwise = True

    def __init__(self, gamma: float, lam: float):
        self.gamma, self.lam = float(gamma), float(lam)

    def params(self) -> dict:
        return {"gamma": self.gamma, "lam": self.lam}

    def select(self, view: StepView) -> torch.Tensor:
        src = view.pairwise if hasattr(view.pairwise, "among") else DensePairs(view.pairwise)
        b = view.masked.shape[0]
        err = (1 - view.confidence.double()).masked_fill(~view.masked, math.inf)
        order, n_masked = err.argsort(dim=1, stable=True), view.masked.sum(1)
        steps = int(n_masked.max())
        sub = src.among(order[:, :steps]).double() if steps > 1 else None
        rows, took = torch.arange(b), torch.zeros(b, steps, dtype=torch.bool)
        spent, chosen = torch.zeros(b, dtype=torch.float64), torch.zeros_like(view.masked)
        for r in range(steps):
            live, pos = r < n_masked, order[:, r]
            if r == 0:
                ok, cost = live, torch.zeros(b, dtype=torch.float64)
            else:
                cost = err[rows, pos].masked_fill(~live, 0) + self.lam * (sub[:, r, :r] * took[:, :r]).sum(1)
                ok = live & (spent + cost <= self.gamma)
            chosen[rows[ok], pos[ok]] = True
            took[:, r] = ok
            spent = torch.where(ok, spent + cost, spent)
        return chosen


class ScheduledEB(Sampler):
    """EB-Sampler with ``γ_t = γ · (masked fraction)^a`` (a > 0: stricter as the grid fills)."""

    name = "eb-sched"

    def __init__(self, gamma: float, a: float):
        self.gamma, self.a = float(gamma), float(a)

    def params(self) -> dict:
        return {"gamma": self.gamma, "a": self.a}

    def select(self, view: StepView) -> torch.Tensor:
        budget = self.gamma * view.masked.double().mean(1).clamp_min(1e-3) ** self.a
        ent = view.entropy.double().masked_fill(~view.masked, math.inf)
        order = ent.argsort(dim=1, stable=True)
        live = view.masked.gather(1, order)
        before = torch.cumsum(ent.gather(1, order).masked_fill(~live, 0), 1) - ent.gather(1, order).masked_fill(~live, 0)
        take = (before <= budget[:, None]) & live
        take[:, 0] = live[:, 0]
        return torch.zeros_like(view.masked).scatter_(1, order, take)


def families() -> list[Family]:
    mi = {"on_reject": "skip", "charge_first": False}
    return [Family("eb", "eb", "gamma", *GAMMA_RANGE, "log", increasing=False, cls=EntropyBounded)] + \
        [Family(f"mi λ={lam:g}", "mi", "gamma", *GAMMA_RANGE, "log", increasing=False, fixed={"lam": lam} | mi,
                cls=MIGuided) for lam in (1.0, 4.0, 16.0)] + \
        [Family(f"mi-err λ={lam:g}", "mi-err", "gamma", *ERR_RANGE, "log", increasing=False, fixed={"lam": lam},
                cls=ErrorBudget) for lam in (0.0, 1.0, 4.0)] + \
        [Family(f"eb-sched a={a:g}", "eb-sched", "gamma", *GAMMA_RANGE, "log", increasing=False, fixed={"a": a},
                cls=ScheduledEB) for a in (1.0, -1.0)]


def paired(name: str, solved, passes, seq, seq_passes) -> str:
    b, c = int((solved & ~seq).sum()), int((~solved & seq).sum())
    return (f"{name:22s} passes {passes.mean():6.2f} (1/{seq_passes.mean() / passes.mean():.1f}) acc {solved.mean():.3f} "
            f"diff {100 * (solved.mean() - seq.mean()):+5.1f} pp  McNemar p={mcnemar_exact(b, c):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budgets", required=True, help="a sudoku-compare output folder (calib.csv, test.csv)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--divisors", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    SAMPLERS["mi-err"] = SamplerSpec(("gamma", "lam"), HEAD)  # study-only entries
    SAMPLERS["eb-sched"] = SamplerSpec(("gamma", "a"))
    calib, test = load_puzzle_csv(f"{args.budgets}/calib.csv"), load_puzzle_csv(f"{args.budgets}/test.csv")
    model, _ = load_model(args.model, "cpu", "sudoku")
    decoder = Decoder(model, head_pairwise_fn(load_mi_head(args.head, "cpu")), 500, 0)
    t0 = time.time()
    fams = families()
    runs, _ = compare_runs(decoder, test, decoder, calib, fams, args.divisors, log=lambda m: None)
    seq, seq_passes = runs["sequential"]["solved"], runs["sequential"]["passes"]
    print(f"n={len(seq)} test puzzles; sequential {seq.mean():.3f} at {seq_passes.mean():.1f} passes")
    for name, r in runs.items():
        if name != "sequential":
            print(paired(name, r["solved"], r["passes"], seq, seq_passes) + f"  (calib acc {r['calib_score']:.3f})")
    print("certain cells only:")
    for name, sampler in FRONTIER:
        print(paired(name, *decoder(test, sampler), seq, seq_passes))
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
