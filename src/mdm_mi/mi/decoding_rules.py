"""Decoding rules beyond Algorithm 1 that separate confidence from dependence.

Algorithm 1 charges one budget with ``h_i + λ Σ_{j∈U} Î_ij``: a confidence term (is token i itself
likely right?) and a dependence term (will it conflict with the tokens chosen this pass?). The rules
here keep EB-Sampler's entropy budget for confidence — admit candidates in increasing entropy while
the entropies already admitted sum to ≤ γ, i.e. ``Σ_{U∪i} h − max h ≤ γ`` — and treat dependence as
a separate constraint, so a dependent candidate is *skipped* (a later, independent one may still go)
instead of using up the confidence budget:

* :class:`IndependentSet` (``mi-indep``): no admitted pair with ``Î_ij > cap`` — a greedy maximum-weight
  independent set (weight: low entropy) on the graph whose edges are ``Î_ij > cap``.
* :class:`TwoBudget` (``mi-2b``): the admitted set's total pairwise dependence
  ``Σ_{i<j∈U} Î_ij ≤ δ``, a pairwise proxy for its total correlation (the KL between the joint of U
  and the product of its marginals, i.e. the error of sampling U independently).

Both use only the pass's marginals and the head's Î among the positions they visit (no extra
backbone pass), and both reduce to EB-Sampler when ``cap`` or δ is infinite.

    sampler = IndependentSet(gamma=0.3, cap=0.05)
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from mdm_mi.core.sampler_spec import HEAD, Flag, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.core.samplers import Sampler, StepView
from mdm_mi.mi.guided import pairs_of


def _check(name: str, **values) -> None:
    for key, value in values.items():
        if not value >= 0:
            raise ValueError(f"{name} {key} must be >= 0, got {value}")


def eb_walk(entropy: torch.Tensor, masked: torch.Tensor, pairwise, gamma: float, *, pair_cap: float = math.inf,
            dependence_budget: float = math.inf, candidate_cap: float = math.inf) -> torch.Tensor:
    """Entropy-ordered walk with EB's confidence budget and a dependence constraint.

    entropy ``(B, N)`` nats, masked ``(B, N)`` bool, pairwise ``(B, N, N)`` Î ≥ 0 or an object with
    ``among(idx (B, k)) → (B, k, k)`` (:class:`~mdm_mi.mi.guided.HeadPairs`). Walking masked positions
    by increasing entropy (stable), candidate ``i`` is admitted when the entropies already admitted
    sum to ≤ γ (so ``Σ_{U∪i} h − max h ≤ γ``, as in EB), ``max_{j∈U} Î_ij ≤ pair_cap`` and
    ``D(U) + Σ_{j∈U} Î_ij ≤ dependence_budget`` with ``D(U) = Σ_{j<k∈U} Î_jk`` and
    ``Σ_{j∈U} Î_ij ≤ candidate_cap`` (with a 0/1 adjacency for Î: at most that many admitted
    neighbours, :mod:`mdm_mi.sudoku.unit_disjoint`); a candidate failing a
    dependence test is skipped, and the walk ends once the entropy budget is spent. The first
    candidate is always admitted. Returns ``(B, N)`` bool U.
    """
    source = pairs_of(pairwise)
    b, n = masked.shape
    h = entropy.double().masked_fill(~masked, math.inf)
    order = h.argsort(dim=1, stable=True)
    n_masked = masked.sum(1)
    # skipped candidates spend nothing, so any masked position may be reached: Î is formed among all
    # of them (the whole matrix's cost, ~1-3% of a backbone pass for the Sudoku head)
    steps = int(n_masked.max()) if b else 0
    sub = source.among(order[:, :steps]).double() if steps > 1 else None
    rows = torch.arange(b, device=masked.device)
    took = torch.zeros(b, steps, dtype=torch.bool, device=masked.device)
    spent = torch.zeros(b, dtype=torch.float64, device=masked.device)
    dependence = torch.zeros_like(spent)
    chosen = torch.zeros_like(masked)
    for r in range(steps):
        live = r < n_masked
        if r > 0 and not (live & (spent <= gamma)).any():
            break  # every row has spent its entropy budget
        if r == 0:
            ok = live
            added = torch.zeros_like(spent)
        else:
            pairs = sub[:, r, :r] * took[:, :r]
            added = pairs.sum(1)
            ok = (live & (spent <= gamma) & (pairs.max(1).values <= pair_cap) & (dependence + added <= dependence_budget)
                  & (added <= candidate_cap))
        pos = order[:, r]
        chosen[rows[ok], pos[ok]] = True
        took[:, r] = ok
        spent = torch.where(ok, spent + h[rows, pos].masked_fill(~live, 0.0), spent)
        dependence = torch.where(ok, dependence + added, dependence)
    return chosen


def _pairwise(view: StepView, name: str):
    if view.pairwise is None:
        raise ValueError(f"sampler {name!r} needs view.pairwise (B, N, N)")
    return view.pairwise


class _EntropyBudgetRule(Sampler):
    """EB's entropy budget γ and one constraint on the head's Î among the admitted positions:
    :func:`eb_walk`'s keyword ``walk_arg`` set to the subclass's own parameter ``param`` (nats)."""

    uses_pairwise = True
    param: ClassVar[str]  # the constructor keyword and table column
    walk_arg: ClassVar[str]

    def _set(self, gamma: float, value: float) -> None:
        _check(self.name, **{"gamma": gamma, self.param: value})
        self.gamma, self.value = float(gamma), float(value)

    def select(self, view: StepView) -> torch.Tensor:
        return eb_walk(view.entropy, view.masked, _pairwise(view, self.name), self.gamma, **{self.walk_arg: self.value})

    def params(self) -> dict:
        return {"gamma": self.gamma, self.param: self.value}


class IndependentSet(_EntropyBudgetRule):
    """EB's entropy budget γ, never two admitted positions with ``Î_ij > cap`` (nats)."""

    name, param, walk_arg = "mi-indep", "cap", "pair_cap"
    spec = SamplerSpec(("gamma", "cap"), HEAD, style=Style("mi-indep", "tab:brown"),
        own_flags={"cap": Flag("float | None", "never unmask together two tokens with MI above this cap (nats); default: the comparisons' cap")},
        calibration=gamma_calibration(each=Setting("cap", "indep_cap", "cap", "cap",
                                                   "mi-indep: cap values (nats), each calibrated; none: no mi-indep")))

    def __init__(self, gamma: float, cap: float):
        self._set(gamma, cap)


class TwoBudget(_EntropyBudgetRule):
    """EB's entropy budget γ and a dependence budget δ on ``Σ_{i<j∈U} Î_ij`` (nats)."""

    name, param, walk_arg = "mi-2b", "delta", "dependence_budget"
    spec = SamplerSpec(("gamma", "delta"), HEAD, style=Style("mi-2b", "tab:brown"),
        own_flags={"delta": Flag("float | None", "budget δ on the summed pairwise MI of one pass (nats); default: the comparisons' δ")},
        calibration=gamma_calibration(each=Setting("delta", "two_budget_delta", "d", "δ",
                                                   "mi-2b: delta values (nats), each calibrated; none: no mi-2b")))

    def __init__(self, gamma: float, delta: float):
        self._set(gamma, delta)
