"""MI-aware remasking (this project's rule): Algorithm 1 admits, the MI head says which tokens drawn
together depended on each other, and only those are checked at the next pass; a checked token whose
support fell once it could see its partners goes back to the mask.

Admission is Algorithm 1's (:class:`~mdm_mi.mi.guided.MIGuided`: γ, λ = 1). Of the tokens one pass draws,
those with a co-drawn partner j at Î_ij > ``kappa`` (the same pass's head matrix) are *suspects*: they
were drawn from their marginals while a dependent token was drawn beside them. At the next pass each
suspect x_i is checked against every other token (its leave-one-out row in the same backbone call,
:mod:`mdm_mi.core.remask`) and goes back to the mask when log p(x_i | the rest) < log p(x_i) at its draft:
the tokens drawn beside it made it less likely. Fewer go back than the pass draws, the least supported
first. Tokens drawn with no dependent partner are never checked, so the check rows cost less than
WINO's, and with ``kappa`` = ∞ the rule is Algorithm 1.

    sampler = MIRemask(gamma=0.3, kappa=0.05, on_reject="skip", charge_first=False)
"""

from __future__ import annotations

import torch

from mdm_mi.core.remask import Check, cap_remask
from mdm_mi.core.sampler_spec import HEAD, Flag, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.core.samplers import StepView
from mdm_mi.mi.guided import MI_SHARED, MIGuided, pairs_of

LAMBDA = 1.0  # Algorithm 1's λ in the admission (the pre-registered primary's)


class MIRemask(MIGuided):
    """Algorithm 1 at λ = :data:`LAMBDA`, then a check of the co-drawn dependent tokens (Î > ``kappa``)
    at the next pass."""

    name = "mi-remask"
    remasks = True
    spec = SamplerSpec(("gamma", "kappa", "on_reject", "charge_first"), HEAD, shared=MI_SHARED,
                       style=Style("MI-aware remasking (ours)", "tab:cyan"),
                       own_flags={"kappa": Flag("float | None", "mi-remask: check at the next pass the tokens drawn "
                                                "beside a partner with MI above this (nats)")},
                       calibration=gamma_calibration(each=Setting("kappa", "mi_remask_kappa", "k", "κ",
                                                                  "mi-remask: dependence thresholds κ (nats), each "
                                                                  "calibrated; none: no mi-remask")))

    def __init__(self, gamma: float, kappa: float, on_reject: str, charge_first: bool):
        super().__init__(gamma, LAMBDA, on_reject, charge_first)
        if not kappa >= 0:
            raise ValueError(f"mi-remask kappa must be >= 0, got {kappa}")
        self.kappa = float(kappa)

    def suspects(self, view: StepView, drafted: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` bool: the drafted positions with a co-drafted partner at Î > ``kappa``."""
        k = int(drafted.sum(1).max())
        if k < 2:
            return torch.zeros_like(drafted)
        idx = drafted.double().argsort(dim=1, descending=True, stable=True)[:, :k]  # (B, k) drafted first
        live = drafted.gather(1, idx)
        source = pairs_of(view.pairwise)
        pairs = source.among(idx).double() * (live[:, :, None] & live[:, None, :])
        pairs = pairs * (1 - torch.eye(k, dtype=pairs.dtype, device=pairs.device))
        dependent = (pairs.amax(2) > self.kappa) & live
        return torch.zeros_like(drafted).scatter(1, idx, dependent)

    def remask(self, check: Check) -> torch.Tensor:
        """``(B, N)`` bool: the pending tokens less likely given the rest than at their draft."""
        return cap_remask(check.pending & (check.logp < check.prior), check.logp, check.drafted)

    def params(self) -> dict:
        return {"gamma": self.gamma, "kappa": self.kappa, "on_reject": self.on_reject, "charge_first": self.charge_first}
