"""KLASS-style stability sampling (Kim et al. 2025, "KL-Adaptive Stability Sampling", arXiv 2511.05664):
unmask the masked positions whose prediction is both confident and stable, i.e. has stopped moving
between passes.

A masked position i is drawn when its top-1 probability exceeds ``tau`` and KL(p_t(i) ‖ p_{t−1}(i)),
the change of its marginal since the previous pass (:func:`mdm_mi.core.view.drift`), is at most ``kl``;
when none qualifies, the single most confident position is drawn, so every pass makes progress. The first
pass has no previous one, so it draws only that fallback.

Where the paper leaves a choice, the reading taken here: the KL is taken over one pass of history (the
paper's ``history_length`` 1) and the fallback is one token (the paper's top-k fallback at k = 1); ``tau``
is the setting the comparisons calibrate, ``kl`` a swept setting.

    sampler = Klass(tau=0.9, kl=0.01)
"""

from __future__ import annotations

import torch

from mdm_mi.core.sampler_spec import Flag, SamplerSpec, Setting, Style, tau_calibration
from mdm_mi.core.samplers import ConfidenceThreshold, StepView


class Klass(ConfidenceThreshold):
    """Draw every masked position with top-1 probability above ``tau`` whose marginal moved at most
    ``kl`` nats since the last pass (at least the most confident one)."""

    name = "klass"
    needs_history = True
    spec = SamplerSpec(("tau", "kl"), style=Style("KLASS (stable tokens)", "tab:gray"),
                       own_flags={"kl": Flag("float | None", "klass: draw only tokens whose marginal moved at most this "
                                             "KL (nats) since the last pass")},
                       calibration=tau_calibration(each=Setting("kl", "klass_kl", "kl", "KL",
                                                                "klass: stability thresholds (nats), each calibrated; "
                                                                "none: no klass")))

    def __init__(self, tau: float, kl: float):
        super().__init__(tau)
        if not kl >= 0:
            raise ValueError(f"klass kl must be >= 0, got {kl}")
        self.kl = float(kl)

    def select(self, view: StepView) -> torch.Tensor:
        """``(B, N)`` bool: the confident and stable masked positions, or the most confident one."""
        if view.drift is None or view.confidence is None:
            raise ValueError(f"sampler {self.name!r} needs view.drift and view.confidence (B, N)")
        best = torch.zeros_like(view.masked).scatter_(1, view.confidence.argmax(dim=1, keepdim=True), True)
        stable = (view.confidence > self.tau) & (view.drift <= self.kl)
        return (stable | best) & view.masked

    def params(self) -> dict:
        return {"tau": self.tau, "kl": self.kl}
