"""DEMASK's greedy selection rule (Ali, Ringel & Romano 2026, "Dependency-guided parallel decoding in
discrete diffusion language models", arXiv 2604.02560), fed any pairwise dependence matrix.

DEMASK's head predicts, from the frozen model's last hidden states, a pairwise dependence between
masked positions (the expected total-variation influence of revealing one on the other's marginal,
:func:`mdm_mi.mi.probe.exact_mi`'s ``tv``), and a greedy rule unmasks a set whose summed dependence
stays under a bound; under a sub-additivity assumption that sum bounds the total variation between
sampling the set in parallel and sampling it from the model's joint. The reading used here (the
paper's method section could not be read; ``docs/record/rivals.md`` records the choice):

* candidates are the masked positions whose top-1 probability exceeds τ, walked by decreasing
  top-1 probability (ties by position); the most confident masked position is always admitted, so
  every pass unmasks at least one (as :class:`mdm_mi.core.samplers.ConfidenceThreshold`);
* a later candidate ``i`` is admitted when the admitted set's cumulative dependence stays within ε,

      D(U ∪ {i}) = D(U) + Σ_{j∈U} T̂_ij ≤ ε,   D(U) = Σ_{j<k∈U} T̂_jk,

  and skipped otherwise (a later, less dependent candidate may still fit);
* ``T̂`` is symmetric (the heads here are): for a directed target the pair's cost is its symmetric
  part ``(T_ij + T_ji) / 2``, the mean of the two one-directional influences.

With ε = ∞ the rule is Fast-dLLM's confidence threshold; with τ ≥ 1 it is sequential by confidence.
:func:`demask_select` is the rule for one sequence as plain Python; :func:`demask_walk` the batched
walk, tested against it. :class:`DemaskMI` runs the rule on the MI head's Î (the rule without
DEMASK's target, so that the target and the rule can be told apart).

    sampler = DemaskMI(tau=0.9, eps=0.1)
    result = decode(model, puzzles, sampler, pairwise_fn=head_pairwise_fn(head))
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from mdm_mi.core.sampler_spec import HEAD, TV_HEAD, Flag, SamplerSpec, Setting, Style, tau_calibration
from mdm_mi.core.samplers import Sampler, StepView
from mdm_mi.mi.decoding_rules import eb_walk


def demask_select(confidence: Sequence[float], masked: Sequence[bool], dependence: Sequence[Sequence[float]],
                  tau: float, eps: float) -> list[int]:
    """DEMASK's rule (this project's reading, module docstring) for one sequence at one pass, as plain
    Python: confidence ``(N,)`` top-1 probabilities, masked ``(N,)``, dependence ``(N, N)`` symmetric
    ``T̂ ≥ 0``; returns the sorted positions U to unmask now."""
    walk = sorted((-confidence[i], i) for i in range(len(confidence)) if masked[i])
    admitted: list[int] = []
    total = 0.0
    for neg_conf, i in walk:
        if admitted and -neg_conf <= tau:
            break  # candidates are a prefix: the rest are less confident still
        added = sum(dependence[i][j] for j in admitted)
        if not admitted or total + added <= eps:
            admitted.append(i)
            total += added
    return sorted(admitted)


def demask_walk(confidence: torch.Tensor, masked: torch.Tensor, pairwise, tau: float, eps: float) -> torch.Tensor:
    """:func:`demask_select` batched: confidence ``(B, N)`` (any value off ``masked``), masked ``(B, N)``
    bool, pairwise ``(B, N, N)`` T̂ ≥ 0 or an object with ``among(idx (B, k)) → (B, k, k)``
    (:class:`~mdm_mi.mi.guided.HeadPairs`). → ``(B, N)`` bool U. It is :func:`mdm_mi.mi.decoding_rules.eb_walk`
    with no entropy budget and the dependence budget ε, walking the candidates (confidence > τ, or the
    most confident masked position) by decreasing confidence."""
    conf = confidence.masked_fill(~masked, -math.inf)
    top = torch.zeros_like(masked).scatter_(1, conf.argmax(1, keepdim=True), True)
    candidates = masked & ((conf > tau) | top)
    return eb_walk(-conf, candidates, pairwise, math.inf, dependence_budget=eps)


class DemaskMI(Sampler):
    """DEMASK's greedy rule (:func:`demask_walk`) on the MI head's Î: confidence threshold τ ∈ [0, 1],
    cumulative dependence budget ε ≥ 0 (nats)."""

    name = "demask-mi"
    uses_pairwise = True
    spec = SamplerSpec(("tau", "eps"), HEAD, style=Style("DEMASK rule, MI head", "tab:olive"),
                       calibration=tau_calibration(each=Setting("eps", "demask_mi_eps", "e", "ε",
                                                                "demask-mi: dependence budgets ε (nats), each calibrated; none: no demask-mi")))

    def __init__(self, tau: float, eps: float):
        if not 0 <= tau <= 1:
            raise ValueError(f"{self.name} tau must lie in [0, 1], got {tau}")
        if not eps >= 0:
            raise ValueError(f"{self.name} eps must be >= 0, got {eps}")
        self.tau, self.eps = float(tau), float(eps)

    def select(self, view: StepView) -> torch.Tensor:
        if view.pairwise is None:
            raise ValueError(f"sampler {self.name!r} needs view.pairwise (B, N, N)")
        if view.confidence is None:
            raise ValueError(f"sampler {self.name!r} needs view.confidence (B, N)")
        return demask_walk(view.confidence, view.masked, view.pairwise, self.tau, self.eps)

    def params(self) -> dict:
        return {"tau": self.tau, "eps": self.eps}


class Demask(DemaskMI):
    """DEMASK as published: its greedy rule on the TV head's T̂ (a head of the MI head's architecture
    trained on the TV target, ``train-head --target tv``). The rule is :class:`DemaskMI`'s; only the
    matrix the caller feeds differs (the table entry's ``pairwise``)."""

    name = "demask"
    spec = SamplerSpec(  # the TV head is trained beside the MI head on the same label shards
        ("tau", "eps"), TV_HEAD, user=False, style=Style("DEMASK", "tab:pink"),
        own_flags={"eps": Flag("float | None", "DEMASK's budget ε on the summed pairwise dependence of one pass (TV, or nats "
                                               "for demask-mi); default: the comparisons' ε")},
        calibration=tau_calibration(each=Setting("eps", "demask_eps", "e", "ε", "demask: TV budgets ε, each calibrated; none: no demask")))
