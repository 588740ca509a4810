"""Remasking in the decode loop: a sampler may send positions that the decoder itself wrote back to the
mask, after checking them against every other token.

A token drawn at pass t was drawn from its marginal given the context of pass t, beside the other tokens
drawn in the same pass, which it never saw. A remasking sampler marks some of the tokens it draws as
*pending* (:meth:`mdm_mi.core.samplers.Sampler.suspects`). At pass t + 1 the decoder checks each pending
token j: in the same backbone call as the pass's own row, one more row per pending token, the current
tokens with j alone masked, gives log p(x_j | every other token) (the leave-one-out check that WINO's
shadow block makes, arXiv 2507.18578). The sampler's :meth:`~mdm_mi.core.samplers.Sampler.remask` then
sends some pending tokens back to the mask; the next pass predicts them again, now seeing the tokens they
were drawn beside. Prompt and clue positions are never pending, so never touched.

Passes: the check rows ride in the pass's own backbone call, so a sequence is still charged one pass per
call it takes part in (as WINO counts its verification); they cost compute, which the comparisons report
as wall-clock time beside the passes. Progress: a pass must leave fewer masks than it found, so a
sampler sends back fewer tokens than it draws in that pass (:func:`cap_remask`), and a decode ends within
N passes as before.

    check = Check(pending, logp, prior, drafted, view, written)  # what decode hands a remasking sampler
    back = cap_remask(pending & (logp < math.log(0.5)), logp, drafted)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mdm_mi.core.backbone import Backbone, BackboneOutput, forward_chunked, logit_index
from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.view import StepView


@dataclass(frozen=True)
class Check:
    """What a remasking sampler sees at one pass, for the B rows still decoding.

    pending: ``(B, N)`` bool, the tokens it marked at the previous pass (still written).
    logp:    ``(B, N)`` float64, log p(x_j | every other token) of each pending token (its leave-one-out
             row of this pass's call); NaN where not pending.
    prior:   ``(B, N)`` float64, log p of each pending token when it was drawn (given the context of its
             own pass); NaN where not pending.
    drafted: ``(B, N)`` bool, the positions this pass draws (its ``select``).
    view:    this pass's :class:`~mdm_mi.core.view.StepView`.
    written: ``(B, N)`` bool, every token this decode wrote at an earlier pass and still holds (⊇
             ``pending``): what a rule that judges tokens without check rows (the quality head's,
             :mod:`mdm_mi.core.prism`) may send back. Never a prompt or clue position.
    """

    pending: torch.Tensor
    logp: torch.Tensor
    prior: torch.Tensor
    drafted: torch.Tensor
    view: StepView
    written: torch.Tensor


def check_rows(tokens: torch.Tensor, pending: torch.Tensor, mask_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``tokens (B, N)`` and ``pending (B, N)`` → (rows ``(K, N)``: one copy of its row per pending token
    with that token masked, where ``(K, 2)``: each copy's row and position), K = pending.sum()."""
    where = pending.nonzero()
    rows = tokens[where[:, 0]].clone()
    rows[torch.arange(len(where), device=tokens.device), where[:, 1]] = mask_id
    return rows, where


def pending_logp(logits: torch.Tensor, where: torch.Tensor, target: torch.Tensor, shape) -> torch.Tensor:
    """The check rows' ``logits (K, N, V)``, their ``where (K, 2)`` and each pending token's logit index
    ``target (K,)`` → ``(B, N)`` float64 log p(x_j | every other token), NaN off the pending positions."""
    out = torch.full(shape, float("nan"), dtype=torch.float64, device=logits.device)
    if len(where):
        k = torch.arange(len(where), device=logits.device)
        logp = torch.log_softmax(logits[k, where[:, 1]].double(), dim=-1)[k, target]
        out[where[:, 0], where[:, 1]] = logp
    return out


def cap_remask(back: torch.Tensor, logp: torch.Tensor, drafted: torch.Tensor) -> torch.Tensor:
    """``back (B, N)`` bool cut to fewer positions than ``drafted`` holds in each row, keeping the ones
    with the lowest ``logp`` (the least supported tokens go back first), so every pass makes progress."""
    room = (drafted.sum(1) - 1).clamp_min(0)  # (B,)
    score = torch.where(back, logp.nan_to_num(nan=0.0), torch.inf)
    rank = score.argsort(dim=1, stable=True).argsort(dim=1, stable=True)
    return back & (rank < room[:, None])


def progress_violations(back: torch.Tensor, drafted: torch.Tensor) -> torch.Tensor:
    """``(B,)`` bool: rows where a pass sends back as many tokens as it draws (no progress)."""
    return back.any(1) & (back.sum(1) >= drafted.sum(1))


def forward_with_checks(backbone: Backbone, sub: torch.Tensor, pending: torch.Tensor, cache: ForwardCache | None,
                        hidden: bool = True) -> tuple[BackboneOutput, torch.Tensor | None]:
    """One pass of the rows ``sub (B, N)`` and, when ``pending (B, N)`` holds tokens to check, their
    leave-one-out rows in the same call → (the output of ``sub``'s rows, ``(B, N)`` log p(x_j | every
    other token) of the pending tokens, NaN elsewhere; None when none is pending). ``cache``: rows seen
    before handed back (:class:`~mdm_mi.core.forward_cache.ForwardCache`; ``hidden`` False: logits only)."""
    if not pending.any():
        return (forward_chunked(backbone, sub) if cache is None else cache.forward(backbone, sub, hidden)), None
    rows, where = check_rows(sub, pending, backbone.mask_id)
    both = torch.cat([sub, rows])
    out = forward_chunked(backbone, both) if cache is None else cache.forward(backbone, both, hidden)
    b = len(sub)
    logp = pending_logp(out.logits[b:], where, logit_index(backbone.vocab_token_ids, sub[where[:, 0], where[:, 1]]), sub.shape)
    return BackboneOutput(logits=out.logits[:b], hidden=out.hidden[:b]), logp
