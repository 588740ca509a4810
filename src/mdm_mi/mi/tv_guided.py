"""Algorithm 1 fed DEMASK's target: the paper's MI-guided walk (:class:`mdm_mi.mi.guided.MIGuided`)
reading the TV head's T̂ (the symmetrised expected total-variation influence, in [0, 1]) in place of
the MI head's Î (nats), so that a comparison can tell the target from the rule (docs/record/rivals.md).

    cost_i = h_i + λ Σ_{j∈U} T̂_ij  ≤  the budget γ left   (paper Algorithm 1, T̂ for Î)

λ converts T̂ to nats and is calibrated per value like Algorithm 1's.

    sampler = TVGuided(gamma=0.4, lam=1.0, on_reject="skip", charge_first=False)
    result = decode(model, puzzles, sampler, pairwise_fn=head_pairwise_fn(tv_head))
"""

from __future__ import annotations

from mdm_mi.core.sampler_spec import TV_HEAD, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.mi.guided import MI_FLAGS, MI_SHARED, MIGuided


class TVGuided(MIGuided):
    """Algorithm 1 on the TV head's T̂: :class:`MIGuided`'s rule, another matrix."""

    name = "mi-tv"
    spec = SamplerSpec(MI_FLAGS, TV_HEAD, user=False, style=Style("Algorithm 1, TV head", "tab:gray"), shared=MI_SHARED,
                       calibration=gamma_calibration(each=Setting("lam", "mi_tv_lambda", "l", "λ",
                                                                  "mi-tv: λ values, each calibrated; none: no mi-tv")))
