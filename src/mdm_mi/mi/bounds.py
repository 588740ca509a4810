"""How few probes can any certified labeller run? A lower bound computed from the exact probes.

A certified labeller (like :func:`mdm_mi.mi.probe.certified_mi`) returns labels within ``tol`` of the
exact probing labels for *every* backbone that agrees with the outputs it has seen: it may not
assume the model is self-consistent, so an unseen probe ``(i, v)`` — the conditionals
``c_iv,j = p(X_j | X_i = v, C)`` for all ``j`` at once — can be anything. This module finds the
probes whose outputs no certificate can do without, given the true outputs of all the others.

Theorem (one skipped probe). Fix a context, ``i != j`` in M, and every probe output except
``c_iv,j``. Write ``p = p_i(v)``, ``Z = 1[X_i = v]`` and ``r = sum_{u != v} p_i(u) c_iu,j``, the
known part of the Y-marginal (mass ``1 - p``). Z is a function of ``X_i``, so under the joint of the
label's joint form ``I_joint[i, j] = I(X_i; X_j) = I(Z; X_j) + (1 - p) I(X_i; X_j | Z = 0)``: the
second term does not involve ``c_iv,j``; the first is convex in ``c_iv,j`` (mutual information is
convex in the channel), is 0 at ``c_iv,j = r / (1 - p)`` and is largest at a vertex ``δ_w``:

    I(Z; X_j) = ψ(r_w) − ψ(r_w + p) − ψ(1 − p),   ψ(x) = x log x,

which decreases in ``r_w``, so the maximum is at ``w = argmin_w r_w``:

    W_ivj = ψ(r_min) − ψ(r_min + p) − ψ(1 − p)     (= h(p) when some r_w = 0).

As ``c_iv,j`` moves along the segment between those two points, ``I_joint[i, j]`` takes every value
in an interval of length ``W_ivj``; ``I_joint[j, i]`` uses the probes of ``j`` only, so the label
``(I_joint + I_joint.T) / 2`` takes every value in an interval of length ``W_ivj / 2``. Any estimate
then errs by at least ``W_ivj / 4`` for some backbone consistent with everything else. Hence a
labeller certified to ``tol`` must run probe ``(i, v)`` whenever ``max_j W_ivj > 4 tol``, and its
passes are at least ``1 + #{necessary probes}`` (skipping more probes only widens the intervals).

Example::

    lb = probe_lower_bound(model, context, tol=1e-3)
    lb.passes <= certified_mi(model, context, tol=1e-3).passes   # for every certified labeller
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mdm_mi.core.backbone import Backbone
from mdm_mi.mi.probe import DEFAULT_BATCH_SIZE, DEFAULT_TOL, _Context


def _psi(x: torch.Tensor) -> torch.Tensor:
    """``x log x`` with ``0 log 0 = 0``."""
    return torch.special.xlogy(x, x)


def skip_width(p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Width ``W`` of the interval of ``I_joint[i, j]`` over an unseen conditional (module theorem).

    p ``(...)``: ``p_i(v)``; r ``(..., V)``: the known part ``sum_{u != v} p_i(u) c_iu,j`` of the
    Y-marginal → ``(...)`` nats.
    """
    r_min = r.min(-1).values.clamp_min(0)
    return (_psi(r_min) - _psi(r_min + p) - _psi(1 - p)).clamp_min(0)


def skip_widths(p: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
    """All widths of one context: p ``(m, V)`` marginals, cond ``(m, V, m, V)`` conditionals
    ``c[i, v, j, w]`` → ``W (m, V, m)``, with ``W[i, :, i] = 0`` (the diagonal is not a label)."""
    pv = p[:, :, None, None]
    mix = (pv * cond).sum(1, keepdim=True)  # (m, 1, m, V): the exact Y-marginal of each row i
    widths = skip_width(p[:, :, None], mix - pv * cond)
    eye = torch.eye(p.shape[0], dtype=torch.bool, device=p.device)
    return widths.masked_fill(eye[:, None, :], 0.0)


@dataclass(frozen=True)
class LowerBound:
    """Necessary probes of one context: ``necessary (N, V)`` bool (row i, value v: probe ``X_i = v``;
    False off M), ``passes = 1 + necessary.sum()`` (0 when ``|M| < 2``: no pair, nothing to label) and
    ``exact_passes = 1 + |M| V``."""

    necessary: torch.Tensor
    passes: int
    exact_passes: int


def probe_lower_bound(
    backbone: Backbone, tokens: torch.Tensor, tol: float = DEFAULT_TOL, batch_size: int = DEFAULT_BATCH_SIZE
) -> LowerBound:
    """The fewest passes any labeller certified to ``tol`` can spend on ``tokens (N,)``.

    Runs every probe (``1 + |M| V`` passes, like :func:`mdm_mi.mi.probe.exact_mi`) to learn each
    probe's widths, then counts the probes with ``max_j W_ivj > 4 tol`` (module theorem).
    """
    ctx = _Context(backbone, tokens, batch_size)
    m, v = ctx.probed.shape
    necessary = torch.zeros(len(tokens), v, dtype=torch.bool, device=tokens.device)
    if m < 2:
        return LowerBound(necessary, 0, 1 + m * v)
    ctx.run_marginals()
    rows = torch.arange(m, device=tokens.device).repeat_interleave(v)
    values = torch.arange(v, device=tokens.device).repeat(m)
    cond = ctx._probe(rows, values).exp().view(m, v, m, v)
    necessary[ctx.cols] = skip_widths(ctx.logp.exp(), cond).amax(-1) > 4 * tol
    return LowerBound(necessary, 1 + int(necessary.sum()), 1 + m * v)
