"""PUNT-style parallel unmasking with an independence test (arXiv 2510.21961, as the project's issue 63
describes it: "keeps, from each dependent group, only the most confident token"), the closest rival of
Algorithm 1.

Candidates are the masked positions whose top-1 probability exceeds ``tau``. Walking them by decreasing
confidence, a candidate is drawn unless the MI head says it depends on one already drawn this pass
(Î_ij > ``kappa``): of each group of mutually dependent candidates only the most confident goes, and the
others wait for a pass that sees it. The most confident masked position is always drawn.

Where the paper leaves a choice (this session could not read the paper itself; the reading follows the
issue's one-line description): the dependence test is the MI head's Î against a threshold, the groups are
formed greedily in confidence order, and ``tau`` is the setting the comparisons calibrate, ``kappa`` a swept
setting. Compared with ``mi-indep`` (:mod:`mdm_mi.mi.decoding_rules`), the admission is a confidence
threshold, not EB's entropy budget.

    sampler = Punt(tau=0.8, kappa=0.05)
"""

from __future__ import annotations

import torch

from mdm_mi.core.sampler_spec import HEAD, SamplerSpec, Setting, Style, tau_calibration
from mdm_mi.core.samplers import Sampler, StepView
from mdm_mi.mi.guided import DensePairs


class Punt(Sampler):
    """Confident candidates (top-1 > ``tau``), the most confident of each dependent group (Î > ``kappa``)."""

    name = "punt"
    uses_pairwise = True
    spec = SamplerSpec(("tau", "kappa"), HEAD, style=Style("PUNT (independence test)", "tab:pink"),
                       calibration=tau_calibration(each=Setting("kappa", "punt_kappa", "k", "κ",
                                                                "punt: dependence thresholds κ (nats), each "
                                                                "calibrated; none: no punt")))

    def __init__(self, tau: float, kappa: float):
        if not 0 <= tau <= 1:
            raise ValueError(f"punt tau must lie in [0, 1], got {tau}")
        if not kappa >= 0:
            raise ValueError(f"punt kappa must be >= 0, got {kappa}")
        self.tau, self.kappa = float(tau), float(kappa)

    def select(self, view: StepView) -> torch.Tensor:
        """``(B, N)`` bool: walking the confident candidates by decreasing confidence, each one not
        dependent (Î > ``kappa``) on a candidate already taken."""
        if view.pairwise is None or view.confidence is None:
            raise ValueError(f"sampler {self.name!r} needs view.pairwise (B, N, N) and view.confidence")
        conf = view.confidence.double().masked_fill(~view.masked, -torch.inf)
        candidate = (conf > self.tau) & view.masked
        candidate.scatter_(1, conf.argmax(dim=1, keepdim=True), True)  # the most confident always goes
        k = int(candidate.sum(1).max())
        order = torch.where(candidate, conf, -torch.inf).argsort(dim=1, descending=True, stable=True)[:, :k]
        live = candidate.gather(1, order)  # (B, k)
        source = view.pairwise if hasattr(view.pairwise, "among") else DensePairs(view.pairwise)
        dependent = source.among(order).double() > self.kappa if k > 1 else torch.zeros(len(order), 1, 1, dtype=torch.bool)
        took = torch.zeros_like(live)
        for r in range(k):
            clash = (dependent[:, r, :r] & took[:, :r]).any(1) if r else torch.zeros_like(live[:, 0])
            took[:, r] = live[:, r] & ~clash
        return torch.zeros_like(view.masked).scatter(1, order, took) & view.masked

    def params(self) -> dict:
        return {"tau": self.tau, "kappa": self.kappa}
