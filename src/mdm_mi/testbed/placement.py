"""Where a real backbone sits on the exact testbed's map: one statistic, measured
the same way on the testbed's chains and on a backbone's labelled contexts.

Algorithm 1 and EB-Sampler can only admit different sets in a pass where the pairwise MI among what
EB admits is a sizeable part of what it admits. For one context (masked positions M, their entropies
H_i from the model's marginals, the exact pairwise MI I_ij) and EB's setting γ at a budget, with U
EB's admitted set (:func:`mdm_mi.core.samplers.eb_prefix`):

    dependence share   s = Σ_{i<j∈U} I_ij / Σ_{i∈U} H_i          (contexts where |U| ≥ 2)

s is 0 when the admitted positions are independent. Where it is near 0 the two rules see the same
thing; where it is large, Algorithm 1's MI term changes the set. Two further columns describe the
context's dependence without γ: the strongest masked pair's MI over the mean masked entropy, and the
share of masked positions whose largest MI with another masked one is below
:data:`mdm_mi.testbed.study.INDEPENDENT_MI`.

The contexts are the labelling draw's on both sides: a data sequence with each position masked with
its row's probability t ~ U(0, 1) (:func:`mdm_mi.testbed.noise.random_contexts` on a chain; the test
label shards of a backbone, whose labels are certified or exact MI).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from mdm_mi.core.backbone import forward_chunked
from mdm_mi.core.samplers import StepView, eb_prefix
from mdm_mi.evaluation.stats import Z95
from mdm_mi.testbed.exact_kl import mean_se
from mdm_mi.testbed.regimes import Regime
from mdm_mi.testbed.study import INDEPENDENT_MI, StudySettings, regime_model

MIN_ADMITTED = 2  # a pass that admits one position has no pair to weigh


def masked_entropy(backbone, contexts: torch.Tensor) -> torch.Tensor:
    """``contexts (C, N)`` → ``(C, N)`` nats of each position's marginal under ``backbone``; +inf where
    the position is not masked (as :class:`~mdm_mi.core.samplers.StepView` holds it)."""
    with torch.inference_mode():
        logits = forward_chunked(backbone, contexts).logits
    return StepView.from_logits(logits, contexts == backbone.mask_id).entropy


def context_profile(entropy: torch.Tensor, mi: torch.Tensor, masked: torch.Tensor, gamma: float) -> dict:
    """One context: ``entropy (N,)`` (+inf where not masked), ``mi (N, N)`` exact MI, ``masked (N,)``
    → {admitted: |U|, share: s, pair_mi: Σ_{i<j∈U} I_ij and entropy: Σ_{i∈U} H_i in nats (the three nan if
    |U| < 2), max_ratio: max masked-pair MI / mean masked entropy
    (nan if fewer than two masked), independent: share of masked positions with no masked partner of
    MI ≥ INDEPENDENT_MI (nan if fewer than two masked)}."""
    h, i_mat, m = entropy.double(), mi.double(), masked.bool()
    u = eb_prefix(h.tolist(), m.tolist(), gamma)
    out = {"admitted": len(u), "share": math.nan, "pair_mi": math.nan, "entropy": math.nan, "max_ratio": math.nan,
           "independent": math.nan}
    if len(u) >= MIN_ADMITTED:
        idx = torch.tensor(u)
        pairs, total = float(i_mat[idx][:, idx].triu(1).sum()), float(h[idx].sum())
        out |= {"pair_mi": pairs, "entropy": total, "share": pairs / total if total > 0 else math.nan}
    pos = m.nonzero().flatten()
    if len(pos) >= 2:
        sub = i_mat[pos][:, pos].clone()
        sub.fill_diagonal_(0.0)
        mean_h = float(h[pos].mean())
        out["max_ratio"] = float(sub.max()) / mean_h if mean_h > 0 else math.nan
        out["independent"] = float((sub.amax(1) < INDEPENDENT_MI).double().mean())
    return out


def profile(entropy: torch.Tensor, mi: torch.Tensor, masked: torch.Tensor, gamma: float) -> dict:
    """Contexts ``entropy (C, N)``, ``mi (C, N, N)``, ``masked (C, N)`` at EB's ``gamma`` → the means of
    :func:`context_profile`'s columns over the contexts where each is defined, with the share's 95%
    normal interval (``share_lo``, ``share_hi``), the number of contexts and of those with |U| ≥ 2."""
    rows = [context_profile(entropy[c], mi[c], masked[c], gamma) for c in range(len(entropy))]
    share = np.array([r["share"] for r in rows if not math.isnan(r["share"])])
    mean, se = mean_se(share) if len(share) > 1 else (float(share.mean()) if len(share) else math.nan, math.nan)
    half = Z95 * se

    def avg(key):
        vals = [r[key] for r in rows if not math.isnan(r[key])]
        return float(np.mean(vals)) if vals else math.nan

    return {"gamma": gamma, "contexts": len(rows), "pass_contexts": int(len(share)), "admitted": avg("admitted"),
            "share": mean, "share_lo": mean - half, "share_hi": mean + half, "pair_mi": avg("pair_mi"),
            "entropy": avg("entropy"), "max_ratio": avg("max_ratio"),
            "independent": avg("independent")}


def weighted_setting(settings: list[dict], key: str) -> float:
    """A matched run's settings (``runs.json``: each with ``params`` and ``weight``) → the weighted mean
    of parameter ``key``: the setting the mixture spends its budget at, as one number."""
    total = sum(s["weight"] for s in settings)
    return float(sum(s["weight"] * s["params"][key] for s in settings) / total)


def parse_setting_text(text: str) -> float:
    """The testbed's runs.csv ``setting`` (``"0.538×3.785 + 0.462×3.709"`` or ``"4.649"``) → the weighted
    mean value."""
    parts = [p.strip() for p in text.split("+")]
    if len(parts) == 1 and "×" not in parts[0]:
        return float(parts[0])
    pairs = [tuple(float(x) for x in p.split("×")) for p in parts]
    return sum(w * v for w, v in pairs) / sum(w for w, _ in pairs)


def regime_profile(regime: Regime, settings: StudySettings, gamma: float) -> dict:
    """A testbed regime's :func:`profile` on the contexts that set its noise level (the study's
    calibration instances, one random context each: :func:`mdm_mi.testbed.study.regime_model`), exact
    entropies and MI, at EB's ``gamma``."""
    model, contexts = regime_model(regime, settings)
    return profile(masked_entropy(model, contexts), model.pair_mi(contexts), contexts == model.mask_id, gamma)
