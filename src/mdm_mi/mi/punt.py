"""PUNT-style parallel unmasking with an independence test (arXiv 2510.21961, read as "keeps, from
each dependent group, only the most confident token"), the closest rival of
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
from mdm_mi.core.samplers import ConfidenceThreshold, StepView
from mdm_mi.mi.guided import pairs_of


class Punt(ConfidenceThreshold):
    """Confident candidates (top-1 > ``tau``), the most confident of each dependent group (Î > ``kappa``)."""

    name = "punt"
    uses_pairwise = True
    spec = SamplerSpec(("tau", "kappa"), HEAD, style=Style("PUNT (independence test)", "tab:pink"),
                       calibration=tau_calibration(each=Setting("kappa", "punt_kappa", "k", "κ",
                                                                "punt: dependence thresholds κ (nats), each "
                                                                "calibrated; none: no punt")))

    def __init__(self, tau: float, kappa: float):
        super().__init__(tau)
        if not kappa >= 0:
            raise ValueError(f"punt kappa must be >= 0, got {kappa}")
        self.kappa = float(kappa)

    def select(self, view: StepView) -> torch.Tensor:
        """``(B, N)`` bool: walking the confident candidates by decreasing confidence, each one not
        dependent (Î > ``kappa``) on a candidate already taken."""
        if view.pairwise is None:
            raise ValueError(f"sampler {self.name!r} needs view.pairwise (B, N, N)")
        candidate = super().select(view)  # the threshold's: above τ, and the most confident always
        k = int(candidate.sum(1).max())
        conf = view.confidence.double()
        order = torch.where(candidate, conf, -torch.inf).argsort(dim=1, descending=True, stable=True)[:, :k]
        live = candidate.gather(1, order)  # (B, k)
        source = pairs_of(view.pairwise)
        dependent = source.among(order).double() > self.kappa if k > 1 else torch.zeros(len(order), 1, 1, dtype=torch.bool)
        took = torch.zeros_like(live)
        for r in range(k):
            clash = (dependent[:, r, :r] & took[:, :r]).any(1) if r else torch.zeros_like(live[:, 0])
            took[:, r] = live[:, r] & ~clash
        return torch.zeros_like(view.masked).scatter(1, order, took) & view.masked

    def params(self) -> dict:
        return {"tau": self.tau, "kappa": self.kappa}
