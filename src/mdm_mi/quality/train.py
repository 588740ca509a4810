"""Training the quality head: AdamW on the binary cross-entropy of its logit against "the token is right",
over the judged positions of :class:`~mdm_mi.quality.states.QualityStates`, with held-out scores.

    head, history = train_quality_head(train, QualityTrainConfig(3000, 128, 2e-3, 0.01, 0),
                                       QualityConfig(64, 4, 1), val=held_out)
    scores(head, held_out)   # {"bce", "accuracy", "auc_masked", "auc_written", ...}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.progress import Progress
from mdm_mi.quality.head import N_TOKEN_FEATURES, QualityConfig, QualityHead
from mdm_mi.quality.states import QualityStates

LOG_POINTS = 10  # history rows over a run (plus the last step)
GRAD_CLIP = 1.0
EVAL_BATCH = 512
MASKED_FEATURE = -N_TOKEN_FEATURES  # the features' column that says "masked"


@dataclass(frozen=True)
class QualityTrainConfig:
    """AdamW steps, states per step, learning rate, weight decay and the seed of init and batch order."""

    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    seed: int

    def __post_init__(self):
        if self.steps < 1 or self.batch_size < 1 or not self.lr > 0 or self.weight_decay < 0:
            raise InputError(f"quality head training: steps {self.steps} and batch_size {self.batch_size} must be "
                             f">= 1, lr {self.lr} > 0, weight_decay {self.weight_decay} >= 0")


def judged_bce(logits: torch.Tensor, right: torch.Tensor, judged: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy over the ``judged (B, N)`` positions of ``logits (B, N)`` against
    ``right (B, N)`` (0 when none is judged)."""
    loss = F.binary_cross_entropy_with_logits(logits, right.float(), reduction="none")
    return (loss * judged).sum() / judged.sum().clamp_min(1)


def train_quality_head(train: QualityStates, cfg: QualityTrainConfig, head_cfg: QualityConfig,
                       val: QualityStates | None = None, log: Callable[[str], None] = print) -> tuple[QualityHead, list[dict]]:
    """Fit a :class:`QualityHead` by minibatch AdamW on :func:`judged_bce`; init and batch order depend on
    ``cfg.seed`` only. With ``val``, the weights kept are those of the logged step with the lowest held-out
    BCE (the head overfits a few thousand states quickly). Returns the head in eval mode and
    ``{"step", "train_bce", "val_bce"?}`` rows."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        head = QualityHead(train.features.shape[-1], head_cfg).train()
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    every, history, running, best = max(1, cfg.steps // LOG_POINTS), [], [], None
    progress = Progress("quality head training: step", cfg.steps)
    for step in range(1, cfg.steps + 1):
        batch = train.subset(torch.randint(len(train), (min(cfg.batch_size, len(train)),), generator=gen))
        loss = judged_bce(head(batch.features.float()), batch.right, batch.judged)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(head.parameters(), GRAD_CLIP)
        opt.step()
        running.append(loss.item())
        if step % every == 0 or step == cfg.steps:
            row = {"step": step, "train_bce": sum(running) / len(running)}
            if val is not None:
                row["val_bce"] = scores(head.eval(), val)["bce"]
                head.train()
                if best is None or row["val_bce"] < best[0]:
                    best = (row["val_bce"], {k: v.clone() for k, v in head.state_dict().items()})
            log(" | ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
                + f" | {progress(step)}")
            history.append(row)
            running = []
    if best is not None:
        head.load_state_dict(best[1])
    return head.eval(), history


def auc(score: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve of ``score (M,)`` for ``positive (M,)`` bool (Mann–Whitney, ties half);
    NaN when one class is empty."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    sorted_score, order = score.double().sort()
    _, inverse, counts = torch.unique_consecutive(sorted_score, return_inverse=True, return_counts=True)
    first = counts.cumsum(0) - counts + 1  # each tie group's first rank; its members share the mid-rank
    ranks = torch.empty_like(sorted_score)
    ranks[order] = (first + (counts - 1) / 2.0).double()[inverse]
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@torch.no_grad()
def scores(head: QualityHead, states: QualityStates) -> dict:
    """Held-out scores over the judged positions: ``bce``, ``accuracy`` (q > ½ against right), and apart
    for masked and written positions the share that is wrong and the AUC of q for "right"."""
    logits = torch.cat([head(states.features[i:i + EVAL_BATCH].float()) for i in range(0, len(states), EVAL_BATCH)])
    judged, right = states.judged, states.right
    masked = states.features[..., MASKED_FEATURE] > 0.5
    out = {"bce": float(judged_bce(logits, right, judged)),
           "accuracy": float(((logits > 0) == right)[judged].float().mean()), "positions": int(judged.sum())}
    for name, where in (("masked", judged & masked), ("written", judged & ~masked)):
        out[f"wrong_{name}"] = float((~right[where]).float().mean()) if where.any() else float("nan")
        out[f"auc_{name}"] = auc(logits[where], right[where])
    return out
