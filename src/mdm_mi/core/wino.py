"""WINO-style draft-and-verify decoding (Hong et al. 2025, "Wide-In, Narrow-Out", arXiv 2507.18578):
draft wide by a confidence threshold, then send back every drafted token that the check of the next pass
does not confirm.

Wide in: every masked position whose top-1 probability exceeds ``tau`` is drawn (at least the most
confident one), as :class:`~mdm_mi.core.samplers.ConfidenceThreshold` does. Narrow out: at the next pass
each drafted token x_j is checked against every other token (its leave-one-out row in the same backbone
call, :mod:`mdm_mi.core.remask`) and goes back to the mask when p(x_j | the rest) < ``tau_out``; fewer
tokens go back than the pass draws (the least supported first), so every pass makes progress.

Where the paper leaves a choice, the reading taken here: WINO's shadow block re-checks every token of the
block at every step; here each drafted token is checked once, at the pass after its draft (the first pass
that sees it beside the tokens drawn with it), and a token drawn again after a remask is checked again.
WINO counts a step with its verification as one forward pass, and so does the project (the check rows
ride in the pass's call); the comparisons report wall-clock time beside passes for this reason.

    sampler = Wino(tau=0.9, tau_out=0.5)
    sampler = EBVerify(gamma=0.5, tau_out=0.5)   # EB's admission with the same check

:class:`EBVerify` is the combination of the two ideas the project measures apart: EB-Sampler's entropy
budget admits (the strongest admission rule at ÷ 8 on Sudoku), the narrow-out check sends back what the
next pass does not confirm.
"""

from __future__ import annotations

import math

import torch

from mdm_mi.core.remask import Check, cap_remask
from mdm_mi.core.sampler_spec import Flag, SamplerSpec, Setting, Style, gamma_calibration, tau_calibration
from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded


def narrow_out(check: Check, tau_out: float) -> torch.Tensor:
    """``(B, N)`` bool: the pending tokens whose checked probability is below ``tau_out``, fewer in each
    row than the pass draws (the least supported first)."""
    below = check.pending & (check.logp < math.log(tau_out)) if tau_out > 0 else torch.zeros_like(check.pending)
    return cap_remask(below, check.logp, check.drafted)


class Wino(ConfidenceThreshold):
    """Draft every token above ``tau`` (calibrated); send back a checked token below ``tau_out``."""

    name = "wino"
    remasks = True
    spec = SamplerSpec(("tau", "tau_out"), style=Style("WINO (draft, verify)", "tab:olive"),
                       own_flags={"tau_out": Flag("float | None", "wino: send back a drafted token whose checked "
                                                  "probability given every other token is below this")},
                       calibration=tau_calibration(each=Setting("tau_out", "wino_tau_out", "to", "τout",
                                                                "wino: verification thresholds, each calibrated; none: no wino")))

    def __init__(self, tau: float, tau_out: float):
        super().__init__(tau)
        if not 0 <= tau_out <= 1:
            raise ValueError(f"wino tau_out must lie in [0, 1], got {tau_out}")
        self.tau_out = float(tau_out)

    def remask(self, check: Check) -> torch.Tensor:
        return narrow_out(check, self.tau_out)

    def params(self) -> dict:
        return {"tau": self.tau, "tau_out": self.tau_out}


class EBVerify(EntropyBounded):
    """EB-Sampler's entropy budget ``gamma`` (calibrated) admits; a checked token below ``tau_out`` goes back."""

    name = "eb-verify"
    remasks = True
    spec = SamplerSpec(("gamma", "tau_out"), style=Style("EB + verify", "tab:olive"),
                       calibration=gamma_calibration(each=Setting("tau_out", "eb_verify_tau_out", "to", "τout",
                                                                  "eb-verify: verification thresholds, each "
                                                                  "calibrated; none: no eb-verify")))

    def __init__(self, gamma: float, tau_out: float):
        super().__init__(gamma)
        if not 0 <= tau_out <= 1:
            raise ValueError(f"eb-verify tau_out must lie in [0, 1], got {tau_out}")
        self.tau_out = float(tau_out)

    def remask(self, check: Check) -> torch.Tensor:
        return narrow_out(check, self.tau_out)

    def params(self) -> dict:
        return {"gamma": self.gamma, "tau_out": self.tau_out}
