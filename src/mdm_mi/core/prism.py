"""PRISM-style decoding with a learned quality head (Kim et al. 2025, "Fine-Tuning Masked Diffusion for
Provable Self-Correction", arXiv 2510.01384): a small head on the frozen backbone's hidden states says,
for every position of the current sequence, how likely its token is right; a pass commits the masked
positions the head trusts and sends back to the mask the written tokens it no longer trusts.

The head (:mod:`mdm_mi.quality.head`) reads the same pass's output as the sampler, so it costs no extra
pass and no check rows: ``view.quality (B, N)`` is P(right) of each masked position's most likely token
and of each written token as it stands, in the context of everything written so far.

- :class:`Prism` unmasks every masked position with quality ≥ ``tau`` (calibrated; at least the most
  trusted one) and sends back every token this decode wrote whose quality fell below ``tau_out``.
- :class:`EBPrism` admits by EB-Sampler's entropy budget γ (calibrated) and sends back by the same test:
  the combination of the strongest head-free admission with the head's remasking.

Fewer tokens go back than a pass draws (the least trusted first), so a decode still ends within N passes.

Where the paper leaves a choice, the reading taken here: PRISM fine-tunes the backbone with the head
(LoRA) and decodes on a fixed step schedule; here the backbone stays frozen (the MI head's setting), the
head is trained by the binary cross-entropy of its logit against "the token is right" on states that
decoding itself reaches (:mod:`mdm_mi.quality.states`), and the budget comes from the calibrated
threshold, as for every other rule. Clue and prompt positions are never written, so never sent back.

    sampler = Prism(tau=0.9, tau_out=0.2)
    sampler = EBPrism(gamma=0.3, tau_out=0.2)
"""

from __future__ import annotations

import torch

from mdm_mi.core.remask import Check, cap_remask
from mdm_mi.core.sampler_spec import QUALITY, SamplerSpec, Setting, Style, gamma_calibration, tau_calibration
from mdm_mi.core.samplers import EntropyBounded, Sampler, StepView

TINY = 1e-12  # floor of the quality before its log (the send-back order)


def quality_of(view: StepView, name: str) -> torch.Tensor:
    """``(B, N)`` the view's quality, or a one-line error naming the sampler that needs it."""
    if view.quality is None:
        raise ValueError(f"sampler {name!r} needs view.quality (B, N): decode it with a quality head")
    return view.quality


def send_back(check: Check, name: str, tau_out: float) -> torch.Tensor:
    """``(B, N)`` bool: the written tokens whose quality is below ``tau_out``, fewer in each row than the
    pass draws (the least trusted first)."""
    quality = quality_of(check.view, name)
    below = check.written & (quality < tau_out)
    return cap_remask(below, quality.double().clamp_min(TINY).log(), check.drafted)


class QualitySendBack:
    """What both quality rules share: ``tau_out`` (checked), no check rows (the head judges every written
    token at every pass), and :func:`send_back` below ``tau_out``."""

    name: str
    tau_out: float

    def _set_tau_out(self, tau_out: float) -> None:
        if not 0 <= tau_out <= 1:
            raise ValueError(f"{self.name} tau_out must lie in [0, 1], got {tau_out}")
        self.tau_out = float(tau_out)

    def suspects(self, view: StepView, drafted: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(drafted)

    def remask(self, check: Check) -> torch.Tensor:
        return send_back(check, self.name, self.tau_out)


class Prism(QualitySendBack, Sampler):
    """Commit every masked position with quality ≥ ``tau`` (calibrated; at least the most trusted one);
    send back every written token with quality < ``tau_out``."""

    name = "prism"
    uses_pairwise = True
    remasks = True
    spec = SamplerSpec(("tau", "tau_out"), QUALITY, user=False, style=Style("PRISM-style quality head", "tab:brown"),
                       calibration=tau_calibration(each=Setting("tau_out", "prism_tau_out", "to", "τout",
                                                                "prism: send-back thresholds of the quality head, "
                                                                "each calibrated; none: no prism")))

    def __init__(self, tau: float, tau_out: float):
        if not 0 <= tau <= 1:
            raise ValueError(f"prism tau must lie in [0, 1], got {tau}")
        self.tau = float(tau)
        self._set_tau_out(tau_out)

    def select(self, view: StepView) -> torch.Tensor:
        quality = quality_of(view, self.name).masked_fill(~view.masked, -1.0)
        best = torch.zeros_like(view.masked).scatter_(1, quality.argmax(1, keepdim=True), True)
        return ((quality >= self.tau) | best) & view.masked

    def params(self) -> dict:
        return {"tau": self.tau, "tau_out": self.tau_out}


class EBPrism(QualitySendBack, EntropyBounded):
    """EB-Sampler's entropy budget ``gamma`` (calibrated) admits; a written token with quality below
    ``tau_out`` goes back."""

    name = "eb-prism"
    uses_pairwise = True
    remasks = True
    spec = SamplerSpec(("gamma", "tau_out"), QUALITY, user=False, style=Style("EB + quality head", "tab:brown"),
                       calibration=gamma_calibration(each=Setting("tau_out", "eb_prism_tau_out", "to", "τout",
                                                                  "eb-prism: send-back thresholds of the quality "
                                                                  "head, each calibrated; none: no eb-prism")))

    def __init__(self, gamma: float, tau_out: float):
        super().__init__(gamma)
        self._set_tau_out(tau_out)

    def params(self) -> dict:
        return {"gamma": self.gamma, "tau_out": self.tau_out}
