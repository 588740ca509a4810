"""The testbed's sweep: every rule at the same pass budgets on every regime, scored by exact log-ratios.

For each regime (:mod:`mdm_mi.testbed.regimes`) a family of chain instances is the model
(:class:`ChainBackbone`, one instance per prompt, as a benchmark has one puzzle per row). Each parallel
rule is set to sequential's N passes ÷ d for every divisor d: naive top-k exactly (k = d), EB-Sampler and
Algorithm 1 (the paper's MI-guided rule, :class:`~mdm_mi.mi.guided.MIGuided`, λ = 1) by the project's own
search (:func:`mdm_mi.evaluation.calibrate.calibrate`) on the mean passes over the ``n_calibration``
calibration prompts. Algorithm 1 runs twice, on the exact MI (:class:`~mdm_mi.mi.guided.OracleMI`) and
on the noisy MI of :mod:`mdm_mi.testbed.noise` (Pearson :data:`~mdm_mi.testbed.noise.HEAD_PEARSON` with the exact MI). Then,
on ``n_test`` fresh prompts:

- one exact draw x ~ p per prompt, shared by every rule: KL(p‖q) = mean of log p(x) − log q(x), each
  term exact (:func:`~mdm_mi.testbed.exact_kl.replay`), so rules are compared paired on the same x;
- one draw per prompt from each rule by the project's ``decode``: its mean passes and
  KL(q‖p) = mean of log q(x) − log p(x) (and, in the hard regime, the share that breaks a constraint).

    result = run_study([REGIMES["sparse-pairs"]], StudySettings())
    result.map  # one row per regime × budget × MI rule: Algorithm 1 − EB, with its interval and verdict
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import torch

from mdm_mi.core.samplers import EntropyBounded, NaiveTopK, PairwiseFn, Sampler, Sequential
from mdm_mi.evaluation.budgets import SEQUENTIAL
from mdm_mi.evaluation.calibrate import Family, entry_family
from mdm_mi.evaluation.matched import DecodedSetting, mixture
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison
from mdm_mi.evaluation.stats import CI_LEVEL, Z95
from mdm_mi.mi.guided import MIGuided, OracleMI
from mdm_mi.mi.remask import LAMBDA  # Algorithm 1's registered λ = 1 (the issue's comparison)
from mdm_mi.testbed.chain import ChainBackbone, PottsChain, exact_pairwise_fn, site_entropy
from mdm_mi.testbed.exact_kl import draw_decodes, mean_se, replay
from mdm_mi.testbed.noise import calibrate_sigma, noisy_pairwise_fn, random_contexts
from mdm_mi.testbed.regimes import Regime, build_chain, valid_mass

MI_ON_REJECT, MI_CHARGE_FIRST = "skip", False  # the workflow's Algorithm 1 settings (mi_on_reject, mi_charge_first)
EB, MI_EXACT, MI_NOISY, NAIVE = "eb", "mi-exact", "mi-noisy", "naive"  # the rules' names, with SEQUENTIAL
CONTENDERS = (MI_EXACT, MI_NOISY)  # set against EB in the map
PARAMS = {SEQUENTIAL: "", NAIVE: "k", EB: "gamma", MI_EXACT: "gamma", MI_NOISY: "gamma"}  # each rule's parameter
INDEPENDENT_MI = 0.01  # nats: a site whose largest MI with any other site is below this is "near-independent"
DIGITS = 4  # significant digits of the numbers written to the tables


@dataclass(frozen=True)
class StudySettings:
    """The sweep's sizes and seeds (the CLI's flags)."""

    divisors: tuple[int, ...] = (2, 4, 8)
    n_calibration: int = 200
    n_test: int = 500
    n_noise_contexts: int = 200
    n_bootstrap: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class StudyResult:
    """The three tables as lists of rows (dicts of strings and numbers): ``regimes``, ``runs``, ``map``."""

    regimes: list[dict]
    runs: list[dict]
    map: list[dict]


def derived_seed(seed: int, *parts: str) -> int:
    """A seed for one purpose of one regime, stable across runs and machines."""
    return zlib.crc32("/".join([str(seed), *parts]).encode())


RULE_OF = {"eb": EB, "mi-oracle": MI_EXACT, "mi": MI_NOISY}  # a calibrated sampler's name → its rule


def families() -> dict[str, Family]:
    """EB-Sampler's γ and Algorithm 1's γ (λ = 1, exact and noisy MI), searched as the sampler table's
    entries say (:func:`mdm_mi.evaluation.calibrate.entry_family`)."""
    mi_fixed = {"lam": LAMBDA, "on_reject": MI_ON_REJECT, "charge_first": MI_CHARGE_FIRST}
    return {EB: entry_family(EB, "eb", {}, EntropyBounded), MI_EXACT: entry_family(MI_EXACT, "mi", mi_fixed, OracleMI),
            MI_NOISY: entry_family(MI_NOISY, "mi", mi_fixed, MIGuided)}


def mean_passes_measure(model: ChainBackbone, prompts: torch.Tensor, seed: int, pairwise_fn: PairwiseFn | None) -> Callable:
    """The calibration's measure: a sampler → (mean passes of one draw per row of ``prompts``, {}), the
    same seed every call."""

    def measure(sampler: Sampler) -> tuple[float, dict]:
        result = draw_decodes(model, prompts, sampler, torch.Generator().manual_seed(seed), pairwise_fn)
        return float(result.passes.double().mean()), {}

    return measure


def broken(regime: Regime, x: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` sequences → ``(B,)`` bool: breaks a hard constraint (equal neighbours); False elsewhere."""
    if regime.kind != "hard":
        return torch.zeros(len(x), dtype=torch.bool)
    return (x[:, 1:] == x[:, :-1]).any(1)


@dataclass(frozen=True)
class Scored:
    """One rule at one budget: its table row and the per-prompt log p − log q on the shared x ~ p."""

    row: dict
    log_ratio: np.ndarray


@dataclass(frozen=True)
class TestSet:
    """The test instances' prompts ``(n_test, 1 + N)`` and one exact draw x ~ p_k per prompt (same shape)."""

    prompts: torch.Tensor
    x: torch.Tensor


OUTCOMES = ("log p − log q on x ~ p", "log q − log p on x ~ q", "x ~ q breaks a constraint")  # columns of outcomes


def outcomes(regime: Regime, model: ChainBackbone, sampler: Sampler, pairwise_fn: PairwiseFn | None,
             test: TestSet, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One setting on the test prompts → (outcomes ``(n_test, 3)``, the :data:`OUTCOMES` per prompt,
    passes ``(n_test,)`` of one draw of the rule per prompt by the project's ``decode``)."""
    lr_p = model.log_prob(test.x) - replay(model, test.prompts, test.x, sampler, pairwise_fn).log_q
    drawn = draw_decodes(model, test.prompts, sampler, torch.Generator().manual_seed(seed), pairwise_fn)
    rep = replay(model, test.prompts, drawn.tokens, sampler, pairwise_fn)
    if not torch.equal(rep.passes, drawn.passes):
        raise RuntimeError(f"{sampler.name}: replaying its draws took other paths than decode ({sampler.params()})")
    lr_q = rep.log_q - model.log_prob(drawn.tokens)
    bad = broken(regime, drawn.tokens[:, 1:]).double()
    return torch.stack([lr_p, lr_q, bad], 1).numpy(), drawn.passes.numpy()


def setting_text(weights: list[float], settings: list) -> str:
    """The parameter of a matched run: ``1.326``, or ``0.300×0.8287 + 0.700×0.6981`` for a mixture of two
    settings (weight × value); '' for sequential."""
    if len(settings) == 1:
        return "" if math.isnan(settings[0].value) else f"{settings[0].value:.4g}"
    return " + ".join(f"{w:.3f}×{s.value:.4g}" for w, s in zip(weights, settings))


def scored(regime: Regime, label: str, divisor: int, run: dict, settings: list) -> Scored:
    """A matched mixture (:func:`mdm_mi.evaluation.matched.mixture` of one or two settings) as a row."""
    out = run["solved"]
    (kl_pq, kl_pq_se), (kl_qp, kl_qp_se) = mean_se(out[:, 0]), mean_se(out[:, 1])
    passes, passes_se = mean_se(run["passes"])
    row = {"regime": regime.name, "rule": label, "divisor": divisor, "target": regime.n_sites / divisor,
           "param": PARAMS[label], "setting": setting_text(run["weights"], settings), "passes": passes, "passes_se": passes_se,
           "kl_pq": kl_pq, "kl_pq_se": kl_pq_se, "kl_qp": kl_qp, "kl_qp_se": kl_qp_se,
           "broken_share": float(out[:, 2].mean()), "on_budget": run["on_budget"]}
    return Scored(row=row, log_ratio=out[:, 0])


def pairwise_sources(model: ChainBackbone, sigma: float, seed: int) -> dict[str, PairwiseFn | None]:
    """Each rule's pairwise matrix: none, the exact MI or the noisy MI."""
    return {NAIVE: None, EB: None, SEQUENTIAL: None, MI_EXACT: exact_pairwise_fn(model),
            MI_NOISY: noisy_pairwise_fn(model, sigma, seed)}


def regime_row(regime: Regime, chain: PottsChain, instance: torch.Tensor, sigma: float, r: float) -> dict:
    """What the regime is, measured exactly on the all-masked chains of ``instance (B,)`` and averaged:
    site entropy, total correlation Σ H_i − H(X), the largest pairwise MI, the share of near-independent
    sites, p's mass on valid sequences; and the noise level."""
    empty = chain.masked(len(instance))
    h_sites = site_entropy(chain.marginals(empty, instance))  # (B, N)
    mi = chain.pair_mi(empty, instance)  # (B, N, N)
    return {"regime": regime.name, "description": regime.description, "sites": chain.n_sites,
            "states": chain.n_states, "coupling": regime.coupling, "site_entropy": float(h_sites.mean()),
            "total_correlation": float((h_sites.sum(1) - chain.entropy(instance)).mean()),
            "max_mi": float(mi.amax((1, 2)).mean()),
            "independent_share": float((mi.amax(2) < INDEPENDENT_MI).double().mean()),
            "valid_mass": float(valid_mass(regime, chain, instance).mean()), "noise_sigma": sigma, "noise_pearson": r}


def regime_model(regime: Regime, settings: StudySettings) -> tuple[ChainBackbone, torch.Tensor]:
    """A regime's chain as a backbone (n_calibration + n_test instances) and the random contexts
    ``(n_noise_contexts, 1 + N)`` of its first calibration instances, which set the noise level (and
    on which :mod:`mdm_mi.testbed.placement` measures the regime)."""
    seed = settings.seed
    chain = build_chain(regime, settings.n_calibration + settings.n_test, derived_seed(seed, regime.name, "fields"))
    model = ChainBackbone(chain)
    contexts = random_contexts(model, torch.arange(settings.n_calibration)[: settings.n_noise_contexts],
                               torch.Generator().manual_seed(derived_seed(seed, regime.name, "contexts")))
    return model, contexts


def run_regime(regime: Regime, settings: StudySettings, log: Callable = print) -> tuple[dict, list[dict], list[dict]]:
    """One regime: its row, its runs rows and its map rows. Instances 0..n_calibration−1 calibrate (the
    budgets and the noise), the next n_test are the test."""
    seed = settings.seed
    model, contexts = regime_model(regime, settings)
    chain = model.chain
    calibration = torch.arange(settings.n_calibration)
    test_instances = torch.arange(settings.n_calibration, chain.n_instances)
    noise_seed = derived_seed(seed, regime.name, "noise")
    sigma, r = calibrate_sigma(model, contexts, noise_seed)
    x = chain.sample(test_instances, torch.Generator().manual_seed(derived_seed(seed, regime.name, "test")))
    test = TestSet(prompts=model.prompts(test_instances), x=model.rows(test_instances, x))
    task = RegimeTask(regime, model, model.prompts(calibration), test, pairwise_sources(model, sigma, noise_seed), settings)
    runs, _ = run_comparison(task, list(families().values()), settings.divisors, log=lambda line: None)
    order = [SEQUENTIAL] + [f"{NAIVE}@1/{d}" for d in settings.divisors]
    order += [f"{label}@1/{d}" for label in families() for d in sorted(settings.divisors, reverse=True)]
    results = {}
    for run in (runs[k] for k in order):
        label, divisor = run["family"], run["divisor"]
        results[label, divisor] = s = scored(regime, label, divisor, run["mixed"], run["settings"])
        log(f"{regime.name} {label} ÷{divisor}: {s.row['setting']} → passes {s.row['passes']:.2f}, "
            f"KL(p‖q) {s.row['kl_pq']:.4f}")
    maps = [compare(regime, results, label, d, settings) for d in settings.divisors for label in CONTENDERS]
    return regime_row(regime, chain, calibration[: settings.n_noise_contexts], sigma, r), [s.row for s in results.values()], maps


class ChainBudgets:
    """What every chain comparison shares (a mixin of a :class:`ComparisonTask` with a ``model``): matched,
    and sequential takes one pass per site on every prompt, calibration and test alike."""

    matched: ClassVar[bool] = True

    def calibration_passes(self) -> float:
        return float(self.model.chain.n_sites)

    def test_passes(self) -> float:
        return float(self.model.chain.n_sites)


@dataclass
class RegimeTask(ChainBudgets, ComparisonTask):
    """One regime's comparison for :func:`mdm_mi.evaluation.runner.run_comparison`: sequential and naive
    top-k at k = d (exactly N ÷ d passes) as references; EB and Algorithm 1 calibrated on the calibration
    ``prompts`` (one draw per row, the same seed every call) and matched on the test prompts to the
    budget N ÷ d exactly. A run: {family (the rule), divisor, mixed (the matched mixture), settings}."""

    regime: Regime
    model: ChainBackbone
    prompts: torch.Tensor
    test: TestSet
    sources: dict
    settings: StudySettings

    def measure(self, sampler: Sampler) -> tuple[float, dict]:
        seed = derived_seed(self.settings.seed, self.regime.name, "calibration")
        return mean_passes_measure(self.model, self.prompts, seed, self.sources[RULE_OF[sampler.name]])(sampler)

    def decode(self, family: Family, sampler: Sampler) -> tuple[np.ndarray, np.ndarray]:
        return self._decode(family.label, sampler)

    def _decode(self, label: str, sampler: Sampler) -> tuple[np.ndarray, np.ndarray]:
        seed = derived_seed(self.settings.seed, self.regime.name, label, json.dumps(sampler.params()))
        return outcomes(self.regime, self.model, sampler, self.sources[label], self.test, seed)

    def reference_runs(self) -> dict[str, dict]:
        n = self.model.chain.n_sites
        runs = {SEQUENTIAL: self._exact(SEQUENTIAL, 1, Sequential(), float(n), math.nan)}
        for d in self.settings.divisors:
            runs[f"{NAIVE}@1/{d}"] = self._exact(NAIVE, d, NaiveTopK(d), n / d, float(d))
        return runs

    def _exact(self, label: str, divisor: int, sampler: Sampler, passes: float, value: float) -> dict:
        """An uncalibrated rule's run: one setting, its budget ``passes``."""
        runs = [DecodedSetting(value, sampler.params(), passes, *self._decode(label, sampler))]
        return {"family": label, "divisor": divisor, "mixed": mixture(runs, passes), "settings": runs}

    def test_run(self, budget: Budget) -> dict:
        return {"family": budget.family.label, "divisor": budget.divisor, "mixed": budget.mixed,
                "settings": list(budget.settings)}


def compare(regime: Regime, scored: dict, label: str, divisor: int, settings: StudySettings) -> dict:
    """Algorithm 1 (``label``) against EB at one budget: KL(p‖q) difference (paired on the shared x ~ p,
    normal 95% interval), ratio (paired bootstrap percentile interval), KL(q‖p) difference (unpaired)."""
    mi, eb = scored[label, divisor], scored[EB, divisor]
    diff = mi.log_ratio - eb.log_ratio
    d, d_se = mean_se(diff)
    lo, hi = ratio_interval(mi.log_ratio, eb.log_ratio, settings)
    qp = mi.row["kl_qp"] - eb.row["kl_qp"]
    qp_se = math.hypot(mi.row["kl_qp_se"], eb.row["kl_qp_se"])
    return {"regime": regime.name, "rule": label, "divisor": divisor, "target": regime.n_sites / divisor,
            "passes_eb": eb.row["passes"], "passes_mi": mi.row["passes"],
            "kl_eb": eb.row["kl_pq"], "kl_mi": mi.row["kl_pq"],
            "diff": d, "diff_lo": d - Z95 * d_se, "diff_hi": d + Z95 * d_se,
            "ratio": mi.row["kl_pq"] / eb.row["kl_pq"], "ratio_lo": lo, "ratio_hi": hi,
            "verdict": map_verdict(d - Z95 * d_se, d + Z95 * d_se),
            "diff_qp": qp, "diff_qp_lo": qp - Z95 * qp_se, "diff_qp_hi": qp + Z95 * qp_se}


def ratio_interval(mi: np.ndarray, eb: np.ndarray, settings: StudySettings) -> tuple[float, float]:
    """The 95% (:data:`CI_LEVEL`) percentile interval of mean(mi) / mean(eb) over paired bootstrap resamples
    of the test prompts."""
    rng = np.random.default_rng(derived_seed(settings.seed, "bootstrap"))
    idx = rng.integers(0, len(mi), size=(settings.n_bootstrap, len(mi)))
    ratios = mi[idx].mean(1) / eb[idx].mean(1)
    lo, hi = np.quantile(ratios, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return float(lo), float(hi)


def map_verdict(lo: float, hi: float) -> str:
    """``beats`` when the whole interval of KL(Algorithm 1) − KL(EB) is below 0, ``loses`` above, else ``ties``."""
    return "beats" if hi < 0 else "loses" if lo > 0 else "ties"


def run_study(regimes: list[Regime], settings: StudySettings, log: Callable = print) -> StudyResult:
    """Every regime in turn → the three tables, numbers rounded to :data:`DIGITS` significant digits."""
    rows: dict[str, list[dict]] = {"regimes": [], "runs": [], "map": []}
    for regime in regimes:
        reg, runs, maps = run_regime(regime, settings, log)
        rows["regimes"].append(reg)
        rows["runs"] += runs
        rows["map"] += maps
    return StudyResult(**{k: [rounded(r) for r in v] for k, v in rows.items()})


def rounded(row: dict) -> dict:
    """``row`` with every float at :data:`DIGITS` significant digits (the tables quote these values)."""
    return {k: float(f"{v:.{DIGITS}g}") if isinstance(v, float) else v for k, v in row.items()}
