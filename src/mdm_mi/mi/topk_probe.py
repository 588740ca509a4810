"""Top-k probing for large vocabularies: probe only the k most probable values of each masked position.

Exact probing (:func:`mdm_mi.mi.probe.exact_mi`) costs ``1 + |M| V`` passes: fine for Sudoku's 9 or a
protein's 20 tokens, impossible for a text model (V ≈ 10⁵). :func:`topk_mi` costs ``1 + |M| k`` passes
and returns, with the label, a *proven* bound on its error against the exact labeller; the bound is
small exactly when each position's top k values hold almost all of its probability. Memory is
``O(batch_size m V)`` (``m = |M|``; the probes stream, :meth:`mdm_mi.mi.probe._Context.measure`).

    result = topk_mi(backbone, tokens, k=8)                    # ProbeResult, passes = 1 + |M| k
    assert ((result.label - exact_mi(backbone, tokens).label).abs() <= result.bound).all()

Measured against the exact probe on the shipped protein model: ``benchmarks/bench_topk.py``,
docs/your_model.md.
"""

from __future__ import annotations

import torch

from mdm_mi.core.backbone import Backbone
from mdm_mi.mi.probe import DEFAULT_BATCH_SIZE, ProbeResult, started_context


@torch.inference_mode()
def topk_mi(backbone: Backbone, tokens: torch.Tensor, k: int, batch_size: int = DEFAULT_BATCH_SIZE) -> ProbeResult:
    """MI by probing only the ``k`` most probable values of each masked position: ``tokens (N,)`` →
    :class:`ProbeResult` with ``passes = 1 + |M| min(k, V)`` and ``|label - exact label| <= bound``.

    Proof. Fix ``i != j`` in M, write ``p(v) = p_i(v)``, ``c_v = c_iv,j`` and ``q = sum_v p(v) c_v``; the
    exact joint-form MI is ``I = sum_v p(v) KL(c_v || q)`` (:mod:`mdm_mi.mi.probe`). Let K be the k
    probed values (the k largest p(v)), S the rest, ``eps = p(S)`` and ``q0 = sum_K p(v) c_v / (1-eps)``,
    the only mixture the probes reveal; report ``L = sum_K p(v) KL(c_v || q0)``. Split
    ``I = sum_K p(v) KL(c_v || q) + sum_S p(v) KL(c_v || q)``.

    (a) Lower bound. For any distribution r, ``sum_K p(v) KL(c_v || r) = L + (1-eps) KL(q0 || r)``
        (expand the logarithms: the cross terms collect into q0). With r = q both KL terms are
        ``>= 0``, so ``I >= L``.
    (b) The probed part's excess. ``q = (1-eps) q0 + eps q1`` with ``q1 >= 0``, so ``q >= (1-eps) q0``
        pointwise and ``KL(c_v || q) <= KL(c_v || q0) + log(1/(1-eps))``; summed over K with weights
        p(v): ``sum_K p(v) KL(c_v || q) <= L - (1-eps) log(1-eps)``.
    (c) The unprobed part. ``q >= p(v) c_v`` pointwise for every v, so ``KL(c_v || q) <= log(1/p(v))``
        and ``sum_S p(v) KL(c_v || q) <= -sum_S p(v) log p(v)``.

    Hence ``I`` lies in ``[L, L + A]`` with ``A = -sum_S p log p - (1-eps) log(1-eps)``: the chain
    width of :func:`mdm_mi.mi.probe.certified_mi` (which proves the same interval through the chain rule
    on ``1[X_i in S]``), computed from the one marginal pass; its water-filling bound B applies
    unchanged, so the width is ``min(A, B)``. The label takes midpoints and averages both directions,
    so ``|label - exact| <= (min(A,B)_ij + min(A,B)_ji) / 4 + ROUND_OFF = bound``. Since
    ``-(1-eps) log(1-eps) <= eps`` and ``-sum_S p log p <= eps log(|S| / eps)``,
    ``A <= eps (1 + log((V - k) / eps))``: the bound is small when the top k hold all but a sliver
    eps of each marginal, whatever V is (it grows only with log V).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ctx, empty = started_context(backbone, tokens, batch_size)
    if empty is not None:
        return empty
    top = ctx.logp.topk(min(k, ctx.logp.shape[1]), dim=-1).indices  # (m, k)
    keep = torch.zeros_like(ctx.probed).scatter(1, top, True)
    lower, width, gap = ctx.measure(keep)  # the certified probe's intervals, K = the top k
    return ctx.result(keep, lower, width, gap, certified=True)
