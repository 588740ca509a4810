"""The quality head's training states: what parallel decoding itself reaches on the training items.

PRISM (arXiv 2510.01384) trains its head on sequences whose masked positions were partly filled by the
model's own samples. Here the states come from decoding: each training item is decoded greedily, ``k``
lowest-entropy masked positions per pass (naive top-k, ``k`` drawn per item by the caller), and every pass's
state is kept with its labels. The errors the head learns to see are then the ones parallel decoding
makes, beside the earlier errors they build on, at the rates of the budgets compared (``k`` from 2 to 16
covers sequential's passes ÷ 2 to ÷ 16 on Sudoku). Labels read each item's target (a puzzle's solution),
so only items outside every calibration and test set may be used (the Sudoku script draws them from the
project's own puzzle maker, with its own seed).

    states = decode_states(backbone, starts, targets, per_pass, batch_size=250)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mdm_mi.core.backbone import Backbone, forward_chunked
from mdm_mi.quality.head import token_features

STORE = torch.float16  # features are kept at half precision: a state is N × (D + 4) numbers


@dataclass(frozen=True)
class QualityStates:
    """S decoding states: ``features (S, N, F)`` (:func:`~mdm_mi.quality.head.token_features`, half
    precision), ``right (S, N)`` bool (a masked position's most likely token, or a written position's
    token, equals the target), ``judged (S, N)`` bool, the positions the loss and the scores count: every
    written token, and the masked positions of a state with no wrong token yet (once one is wrong the
    target is no longer the only completion, so "the most likely token is the target's" stops meaning
    "it is right"); never a prompt or clue position."""

    features: torch.Tensor
    right: torch.Tensor
    judged: torch.Tensor

    def __len__(self) -> int:
        return len(self.features)

    def subset(self, idx: torch.Tensor) -> "QualityStates":
        return QualityStates(self.features[idx], self.right[idx], self.judged[idx])


def _lowest_entropy(logits: torch.Tensor, masked: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` bool: each row's ``k[b]`` lowest-entropy masked positions."""
    logp = torch.log_softmax(logits.float(), -1)
    entropy = (-(logp.exp() * logp).sum(-1)).masked_fill(~masked, float("inf"))
    rank = entropy.argsort(dim=1, stable=True).argsort(dim=1, stable=True)
    return (rank < k[:, None]) & masked


@torch.inference_mode()
def decode_states(backbone: Backbone, starts: torch.Tensor, targets: torch.Tensor, per_pass: torch.Tensor,
                  batch_size: int) -> QualityStates:
    """Every pass's state of greedy naive top-k decodes: ``starts (P, N)`` token ids (masks to fill),
    ``targets (P, N)`` the right token ids, ``per_pass (P,)`` long k of each item, ``batch_size`` items per
    backbone call."""
    assert starts.shape == targets.shape and per_pass.shape == starts.shape[:1], (starts.shape, per_pass.shape)
    vocab = torch.as_tensor(backbone.vocab_token_ids).to(starts.device)
    feats, right, judged = [], [], []
    for lo in range(0, len(starts), batch_size):
        tokens, target = starts[lo:lo + batch_size].clone(), targets[lo:lo + batch_size]
        k, free = per_pass[lo:lo + batch_size], tokens == backbone.mask_id
        while True:
            masked = tokens == backbone.mask_id
            live = masked.any(1)
            if not live.any():
                break
            out = forward_chunked(backbone, tokens[live])
            best = vocab[out.logits.argmax(-1)]  # (b, N) most likely token of every position
            sub_tokens, sub_masked = tokens[live], masked[live]
            feats.append(token_features(backbone, out, sub_tokens).to(STORE))
            sub_target = target[live]
            right.append(torch.where(sub_masked, best, sub_tokens) == sub_target)
            clean = ((sub_tokens == sub_target) | sub_masked).all(1, keepdim=True)  # (b, 1) no wrong token yet
            judged.append(free[live] & (~sub_masked | clean))
            pick = _lowest_entropy(out.logits, sub_masked, k[live])
            tokens[live] = torch.where(pick, best, sub_tokens)
    return QualityStates(torch.cat(feats), torch.cat(right), torch.cat(judged))
