"""The rules that send tokens back, and the other newer rules, on chains small enough to enumerate: every
rule's exact output distribution at equal expected passes, against EB.

A remasking rule reaches one sequence by many paths (a token drawn, sent back, drawn again), so the
one-path replay of :mod:`mdm_mi.testbed.study` cannot give its q(x). Here every regime is cut to
:data:`SITES` sites and each prompt's q is enumerated over all paths
(:func:`mdm_mi.testbed.exact_kl.enumerate_paths`): KL(p‖q), KL(q‖p) and the expected passes E_q[passes]
are exact per prompt, with no sampling noise at all. The comparison is the project's one runner
(:func:`mdm_mi.evaluation.runner.run_comparison`, matched): each rule calibrated on the calibration
prompts to N ÷ d expected passes, then matched on the test prompts to N ÷ d exactly by two settings
(their per-prompt KL mixed with the weights that spend the budget: the expected KL of the randomised
rule that runs one setting per prompt, as in the main testbed).

Rules: EB-Sampler (γ), the Fast-dLLM threshold (τ) and its WINO-style remasking version at two
verification thresholds (τout 0.5 and 0.9; :mod:`mdm_mi.core.wino`), KLASS-style stability sampling
(:mod:`mdm_mi.core.klass`, KL ≤ 0.01 nats), Algorithm 1 on the exact MI (λ = 1), PUNT-style independence
testing (:mod:`mdm_mi.mi.punt`) and MI-aware remasking (:mod:`mdm_mi.mi.remask`), both on the exact MI
at κ = 0.01 nats, and the quality head's rules (:mod:`mdm_mi.core.prism`) on the chain's exact stand-in of a
quality head (:func:`mdm_mi.testbed.chain.exact_quality_fn`: a written token's leave-one-out probability),
sending back below 0.5.

    result = run_remask_study([REGIMES["strong-uniform"]], RemaskSettings(n_calibration=4, n_test=8))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded, Sampler, Sequential
from mdm_mi.core.klass import Klass
from mdm_mi.core.prism import EBPrism, Prism
from mdm_mi.core.sampler_spec import QUALITY
from mdm_mi.core.wino import Wino
from mdm_mi.evaluation.calibrate import Family, entry_family
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison
from mdm_mi.evaluation.stats import Z95
from mdm_mi.mi.guided import OracleMI
from mdm_mi.mi.pairwise import reads
from mdm_mi.mi.punt import Punt
from mdm_mi.mi.remask import LAMBDA, MIRemask
from mdm_mi.testbed.chain import ChainBackbone, exact_pairwise_fn, exact_quality_fn
from mdm_mi.testbed.exact_kl import enumerate_kl, mean_se
from mdm_mi.testbed.regimes import Regime, build_chain
from mdm_mi.testbed.study import MI_CHARGE_FIRST, MI_ON_REJECT, ChainBudgets, derived_seed, rounded

SITES = 6  # sites per chain: 4^6 = 4,096 sequences, every path of a rule enumerated in seconds
SMALL_PAIR_EVERY = 2  # sparse-pairs at 6 sites: the bonds (0, 1), (2, 3), (4, 5) coupled
KAPPA = 0.01  # nats: the dependence threshold of PUNT and MI-aware remasking (on the exact MI)
KLASS_KL = 0.01  # nats: KLASS draws tokens whose marginal moved at most this since the last pass
TAU_OUT = (0.5, 0.9)  # WINO-style verification thresholds
QUALITY_OUT = 0.5  # the quality rules send back a written token whose exact leave-one-out probability is below this
BASELINE = "eb"
KL_OUTCOMES = ("kl_pq", "kl_qp")  # the columns of a run's per-prompt outcomes
STATE_LIMIT = 1_000_000  # decoding states per pass: a remasking rule's paths keep their draft log-probabilities


@dataclass(frozen=True)
class RemaskSettings:
    """The study's sizes and seed (the verb's flags)."""

    divisors: tuple[int, ...] = (2, 3)
    n_calibration: int = 6
    n_test: int = 16
    seed: int = 0


def small(regime: Regime) -> Regime:
    """``regime`` cut to :data:`SITES` sites (sparse pairs: a coupled bond every :data:`SMALL_PAIR_EVERY`)."""
    return dataclasses.replace(regime, n_sites=SITES, pair_every=SMALL_PAIR_EVERY)


def remask_families() -> list[Family]:
    """The compared rules, searched as the sampler table's entries say."""
    mi = {"lam": LAMBDA, "on_reject": MI_ON_REJECT, "charge_first": MI_CHARGE_FIRST}
    remask = {"kappa": KAPPA, "on_reject": MI_ON_REJECT, "charge_first": MI_CHARGE_FIRST}
    return [entry_family("eb", "eb", {}, EntropyBounded), entry_family("threshold", "threshold", {}, ConfidenceThreshold),
            *[entry_family(f"wino τout={t:g}", "wino", {"tau_out": t}, Wino) for t in TAU_OUT],
            entry_family(f"klass KL={KLASS_KL:g}", "klass", {"kl": KLASS_KL}, Klass),
            entry_family("mi-exact", "mi", mi, OracleMI), entry_family(f"punt κ={KAPPA:g}", "punt", {"kappa": KAPPA}, Punt),
            entry_family(f"mi-remask κ={KAPPA:g}", "mi-remask", remask, MIRemask),
            *[entry_family(f"{name} τout={QUALITY_OUT:g}", name, {"tau_out": QUALITY_OUT}, cls)
              for name, cls in (("prism", Prism), ("eb-prism", EBPrism))]]


@dataclass
class ExactTask(ChainBudgets, ComparisonTask):
    """One small regime for the runner: prompts of instances ``calibration`` calibrate (mean E_q[passes]),
    prompts of ``test`` are scored, each by enumerating every path. A run: {family, divisor, passes,
    outcomes (T, 2): exact KL(p‖q), KL(q‖p) per test prompt of the matched mixture, settings}."""

    model: ChainBackbone
    calibration: torch.Tensor
    test: torch.Tensor

    def measure(self, sampler: Sampler) -> tuple[float, dict]:
        return float(self._exact(sampler, self.calibration)[1].mean()), {}

    def decode(self, family: Family, sampler: Sampler) -> tuple[np.ndarray, np.ndarray]:
        return self._exact(sampler, self.test)

    def _exact(self, sampler: Sampler, instances: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """``instances (P,)`` → (exact (KL(p‖q), KL(q‖p)) ``(P, 2)``, E_q[passes] ``(P,)``)."""
        exact = exact_quality_fn if reads(sampler) == QUALITY else exact_pairwise_fn
        fn = exact(self.model) if sampler.uses_pairwise else None
        rows = [enumerate_kl(self.model, prompt, sampler, fn, STATE_LIMIT) for prompt in self.model.prompts(instances)]
        return np.array([[r.kl_pq, r.kl_qp] for r in rows]), np.array([r.passes for r in rows])

    def reference_runs(self) -> dict[str, dict]:
        outcomes, passes = self._exact(Sequential(), self.test)  # a perfect model one site per pass: q = p
        return {"sequential": {"family": "sequential", "divisor": 1, "passes": passes, "outcomes": outcomes,
                               "settings": ""}}

    def test_run(self, budget: Budget) -> dict:
        cal = budget.family
        settings = " + ".join(f"{cal.param}={s.value:.4g}×{w:.2f}" for s, w in zip(budget.settings, budget.mixed["weights"]))
        return {"family": cal.label, "divisor": budget.divisor, "passes": budget.mixed["passes"],
                "outcomes": budget.mixed["solved"], "settings": settings, "on_budget": budget.mixed["on_budget"]}


def run_small_regime(regime: Regime, settings: RemaskSettings, log: Callable = print) -> tuple[list[dict], list[dict]]:
    """One regime cut small → (a row per rule and budget, a row per rule and budget against EB)."""
    cut = small(regime)
    count = settings.n_calibration + settings.n_test
    model = ChainBackbone(build_chain(cut, count, derived_seed(settings.seed, regime.name, "remask")))
    task = ExactTask(model, torch.arange(settings.n_calibration), torch.arange(settings.n_calibration, count))
    runs, _ = run_comparison(task, remask_families(), settings.divisors, log=log)
    rows = [_row(regime, r) for r in runs.values()]
    return rows, [_against(regime, runs, r) for r in runs.values() if r["family"] not in ("sequential", BASELINE)]


def _row(regime: Regime, run: dict) -> dict:
    (pq, pq_se), (qp, qp_se) = mean_se(run["outcomes"][:, 0]), mean_se(run["outcomes"][:, 1])
    return {"regime": regime.name, "rule": run["family"], "divisor": run["divisor"],
            "target": SITES / run["divisor"], "passes": float(np.mean(run["passes"])), "setting": run["settings"],
            "kl_pq": pq, "kl_pq_se": pq_se, "kl_qp": qp, "kl_qp_se": qp_se, "on_budget": run.get("on_budget", True)}


def _against(regime: Regime, runs: dict, run: dict) -> dict:
    """A rule minus EB at its budget, paired over the test prompts (normal 95% interval), both KLs."""
    base = runs[f"{BASELINE}@1/{run['divisor']}"]
    out = {"regime": regime.name, "rule": run["family"], "divisor": run["divisor"]}
    for k, name in enumerate(KL_OUTCOMES):
        d, se = mean_se(run["outcomes"][:, k] - base["outcomes"][:, k])
        out |= {f"{name}_diff": d, f"{name}_lo": d - Z95 * se, f"{name}_hi": d + Z95 * se,
                f"{name}_verdict": "lower" if d + Z95 * se < 0 else "higher" if d - Z95 * se > 0 else "tie"}
    return out


def run_remask_study(regimes: list[Regime], settings: RemaskSettings, log: Callable = print) -> dict[str, list[dict]]:
    """Every regime in turn → {"runs": rows, "against_eb": rows}, numbers at 4 significant digits."""
    tables: dict[str, list[dict]] = {"runs": [], "against_eb": []}
    for regime in regimes:
        rows, against = run_small_regime(regime, settings, log)
        tables["runs"] += rows
        tables["against_eb"] += against
        for r in rows:
            log(f"{regime.name} {r['rule']} ÷{r['divisor']}: passes {r['passes']:.2f}, KL(p‖q) {r['kl_pq']:.4f}, "
                f"KL(q‖p) {r['kl_qp']:.4f}")
    return {k: [rounded(r) for r in v] for k, v in tables.items()}
