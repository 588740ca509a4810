"""What a decoding policy sees at one pass: :class:`StepView` (the masked positions, their entropies,
margins and confidences, and a pairwise matrix of the same pass). :func:`mdm_mi.core.samplers.decode`
builds one per pass; samplers and the remasking check (:mod:`mdm_mi.core.remask`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

INF = float("inf")


@dataclass(frozen=True)
class StepView:
    """What a policy sees at one pass, for the B still-incomplete sequences.

    masked:   ``(B, N)`` bool, positions still masked (the only ones a policy may choose).
    entropy:  ``(B, N)`` nats of each position's marginal; +inf where not masked.
    margin:   ``(B, N)`` top-1 minus top-2 probability; -inf where not masked.
    confidence: ``(B, N)`` top-1 probability; -inf where not masked (None if not computed).
    step:     0-based index of this pass within the decode (the same for every row: rows start
              together and leave when done).
    pairwise: ``(B, N, N)`` symmetric matrix (e.g. the MI head's Î), or an object whose
              ``among(idx (B, k))`` returns it among the positions asked for
              (:class:`mdm_mi.mi.guided.HeadPairs`), or None.
    drift:    ``(B, N)`` KL(p_t ‖ p_{t−1}) of each masked position's marginal from the previous pass's
              (:func:`drift`), +inf where there is none (the first pass) or not masked; computed only
              for a sampler that reads it (``needs_history``), else None.
    quality:  ``(B, N)`` the quality head's probability that each position's token is right (a masked
              position's most likely token, a written one's own token; :mod:`mdm_mi.quality.head`), for a
              sampler whose matrix source is the quality head (:data:`~mdm_mi.core.sampler_spec.QUALITY`),
              else None.
    """

    masked: torch.Tensor
    entropy: torch.Tensor
    margin: torch.Tensor
    pairwise: object | None = None  # a tensor or a row source (see above)
    confidence: torch.Tensor | None = None
    step: int = 0
    drift: torch.Tensor | None = None
    quality: torch.Tensor | None = None

    @staticmethod
    def from_logits(logits: torch.Tensor, masked: torch.Tensor, pairwise=None, step: int = 0,
                    drift: torch.Tensor | None = None, quality: torch.Tensor | None = None) -> "StepView":
        """Build the view from ``(B, N, V)`` logits and the ``(B, N)`` mask at pass ``step``."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        p = logp.exp()
        ent = -(p * logp).sum(-1)
        top2 = p.topk(2, dim=-1).values
        margin = top2[..., 0] - top2[..., 1]
        return StepView(
            masked=masked,
            entropy=ent.masked_fill(~masked, INF),
            margin=margin.masked_fill(~masked, -INF),
            pairwise=pairwise,
            confidence=top2[..., 0].masked_fill(~masked, -INF),
            step=step,
            drift=drift,
            quality=quality,
        )


def drift(logits: torch.Tensor, previous: torch.Tensor | None, masked: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` KL(p_t ‖ p_{t−1}) in nats between this pass's marginals ``logits (B, N, V)`` and the
    previous pass's ``previous (B, N, V)`` logits of the same rows (None: the first pass, all +inf); +inf
    where not ``masked``. The stability signal of KLASS (:mod:`mdm_mi.core.klass`)."""
    if previous is None:
        return torch.full(masked.shape, INF, device=masked.device)
    now, before = torch.log_softmax(logits.float(), -1), torch.log_softmax(previous.float(), -1)
    kl = (now.exp() * (now - before)).sum(-1).clamp_min(0.0)
    return kl.masked_fill(~masked, INF)


class History:
    """Each row's logits at its previous pass, kept for a sampler that reads the drift (``needs_history``):
    ``decode`` and the testbed's replay keep one per call, so both hand the sampler the same drift."""

    def __init__(self, n_rows: int):
        self.n_rows, self.last = n_rows, None  # (n_rows, N, V) once the first pass is seen

    def drift(self, logits: torch.Tensor, active: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
        """:func:`drift` of the ``active`` rows' ``logits (B, N, V)`` from their previous pass's, then
        remember these as theirs."""
        moved = drift(logits, None if self.last is None else self.last[active], masked)
        if self.last is None:
            self.last = logits.new_zeros((self.n_rows, *logits.shape[1:]))
        self.last[active] = logits
        return moved
