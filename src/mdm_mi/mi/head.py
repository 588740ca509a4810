"""The learned MI head: pairwise mutual information Î ``(B, N, N)`` from one layer's hidden states.

The backbone is frozen, so a small network reading its hidden states ``h (B, N, D)`` can stand in for
the ``1 + |M| V`` probing passes of :mod:`mdm_mi.mi.probe` at a fraction of one pass. The head is a
per-position MLP ``h_i → (z_i, u_i)`` with ``z_i ∈ R^{H×r}`` followed by a symmetric bilinear form

    Î_ij = softplus( Σ_h w_h ⟨z_i^h, z_j^h⟩ / √r + u_i + u_j + b ),

which is symmetric by construction (exactly: the score matrix is averaged with its transpose so that
float round-off cannot break it), non-negative (softplus), with the diagonal and every pair involving a
non-masked position set to zero. It is trained by regression on the probing labels (the paper's MSE
over masked pairs ``i != j``, normalised by their number).

    from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, train_head
    feats = backbone_features(model, contexts, batch_size=256)                # (C, N, D)
    head, history = train_head(feats, shard["label"], shard["masked"],
                               HeadTrainConfig(steps=2000, batch_size=64, lr=3e-3,
                                               weight_decay=0.01, seed=0),
                               HeadConfig(hidden=64, heads=4, rank=8, unary=True))
    mi_hat = head(model(tokens).hidden, tokens == model.mask_id)              # (B, N, N)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from mdm_mi.backbone import Backbone
from mdm_mi.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

DOMAIN = "mi_head"
RESERVED_META = ("domain", "in_dim", "head")  # keys save_head writes itself
LOG_POINTS = 10  # train_head logs this many times over a run (plus the last step)
GRAD_CLIP = 1.0  # max global gradient norm per step
MIN_INIT_MI = 1e-4  # nats: floor of the mean label used to initialise the output bias
EVAL_BATCH = 512  # contexts per chunk when evaluating the validation loss


@dataclass(frozen=True)
class HeadConfig:
    """Width of the head; defaults live in the config schema only.

    hidden: width of the per-position MLP's hidden layer.
    heads:  number H of bilinear heads (each with its own learnable sign/scale ``w_h``).
    rank:   dimension r of each head's embedding ``z_i^h``.
    unary:  add the per-position term ``u_i + u_j`` (one extra MLP output, O(N²) adds).
    """

    hidden: int
    heads: int
    rank: int
    unary: bool


class MIHead(nn.Module):
    """Î from hidden states: ``forward(h (B, N, D), masked (B, N) bool | None) → (B, N, N)`` float32."""

    def __init__(self, in_dim: int, cfg: HeadConfig):
        super().__init__()
        if min(in_dim, cfg.hidden, cfg.heads, cfg.rank) < 1:
            raise ValueError(f"head sizes must be >= 1, got in_dim={in_dim}, {cfg}")
        self.in_dim, self.cfg = in_dim, cfg
        width = cfg.heads * cfg.rank + int(cfg.unary)
        self.mlp = nn.Sequential(
            nn.LayerNorm(in_dim), nn.Linear(in_dim, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, width)
        )
        # alternating signs: the form starts indefinite, so it can push pairs both up and down
        signs = torch.tensor([(-1.0) ** h for h in range(cfg.heads)])
        self.head_weight = nn.Parameter(signs)
        self.bias = nn.Parameter(torch.zeros(()))

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """Pre-softplus symmetric scores ``(B, N, N)`` from ``hidden (B, N, D)``."""
        assert hidden.ndim == 3 and hidden.shape[-1] == self.in_dim, hidden.shape
        hr = self.cfg.heads * self.cfg.rank
        out = self.mlp(hidden.to(self.bias.dtype))
        z = out[..., :hr]
        zw = (z.unflatten(-1, (self.cfg.heads, self.cfg.rank)) * self.head_weight[:, None]).flatten(-2)
        s = torch.bmm(zw, z.transpose(1, 2)) / math.sqrt(self.cfg.rank)
        s = (s + s.transpose(1, 2)) * 0.5  # exact symmetry despite float round-off
        if self.cfg.unary:
            u = out[..., hr]
            s = s + u[:, :, None] + u[:, None, :]
        return s + self.bias

    def forward(self, hidden: torch.Tensor, masked: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden (B, N, D)``, ``masked (B, N)`` bool or None → Î ``(B, N, N)`` in nats, ≥ 0,
        symmetric, zero diagonal, zero for pairs touching a non-masked position."""
        mi = F.softplus(self.scores(hidden))
        return mi * pair_mask(masked, hidden.shape[1], hidden.shape[0], hidden.device)


def pair_mask(masked: torch.Tensor | None, n: int, b: int, device) -> torch.Tensor:
    """``(B, N, N)`` bool: ``i != j`` and both masked (all off-diagonal pairs when ``masked`` is None)."""
    off = ~torch.eye(n, dtype=torch.bool, device=device)
    if masked is None:
        return off.expand(b, n, n)
    assert masked.shape == (b, n), (masked.shape, b, n)
    return masked[:, :, None] & masked[:, None, :] & off


def count_params(module: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def expected_params(in_dim: int, cfg: HeadConfig) -> int:
    """Closed-form parameter count of :class:`MIHead` (LayerNorm, two Linears, w, b)."""
    width = cfg.heads * cfg.rank + int(cfg.unary)
    return 2 * in_dim + (in_dim + 1) * cfg.hidden + (cfg.hidden + 1) * width + cfg.heads + 1


def head_flops(in_dim: int, cfg: HeadConfig, n: int) -> int:
    """Approximate multiply-add FLOPs (×2) of one sequence of length ``n``: MLP + bilinear form."""
    width = cfg.heads * cfg.rank + int(cfg.unary)
    return 2 * n * (in_dim * cfg.hidden + cfg.hidden * width) + 2 * n * n * cfg.heads * cfg.rank


def save_head(head: MIHead, directory: str | Path, meta: dict) -> None:
    """Write ``directory/model.safetensors`` + ``meta.json`` (domain ``mi_head``, no pickle).

    ``meta`` is stored as given, plus ``domain``, ``in_dim`` and ``head`` (the :class:`HeadConfig`).
    """
    clash = [k for k in RESERVED_META if k in meta]
    if clash:
        raise ValueError(f"meta keys {clash} are written by save_head itself")
    full = {**meta, "domain": DOMAIN, "in_dim": head.in_dim, "head": asdict(head.cfg)}
    save_checkpoint(head, directory, full)


def load_head(directory: str | Path, device: str | torch.device = "cpu") -> tuple[MIHead, dict]:
    """Load a head saved by :func:`save_head` → ``(head in eval mode, meta)``."""
    state, meta = load_checkpoint(directory, domain=DOMAIN)
    try:
        head = MIHead(int(meta["in_dim"]), HeadConfig(**meta["head"]))
        head.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"checkpoint {directory} does not match the MI head: {exc}") from None
    return head.to(device).eval(), meta


@torch.inference_mode()
def backbone_features(backbone: Backbone, contexts: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Hidden states of the frozen backbone, computed once: ``contexts (C, N)`` → ``(C, N, D)`` float32
    on the contexts' device. The result is an inference tensor: index it (``feats[idx]``) to train."""
    assert contexts.ndim == 2, contexts.shape
    if len(contexts) == 0:
        return torch.zeros(0, contexts.shape[1], backbone.hidden_dim, device=contexts.device)
    return torch.cat([backbone(chunk).hidden.float() for chunk in contexts.split(batch_size)])


def masked_pair_mse(pred: torch.Tensor, label: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Training loss: ``Σ_{c, i≠j ∈ M_c} (Î_ij − I_ij)² / #{(c, i, j)}`` (0 when there is no pair).

    pred, label ``(B, N, N)``; masked ``(B, N)`` bool.
    """
    keep = pair_mask(masked, pred.shape[1], pred.shape[0], pred.device)
    err = (pred - label.to(pred.dtype)).square() * keep
    return err.sum() / keep.sum().clamp_min(1)


@dataclass(frozen=True)
class HeadTrainConfig:
    """Optimisation of the head (AdamW on the masked-pair MSE); defaults live in the config schema."""

    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    seed: int


def _init_head(in_dim: int, cfg: HeadConfig, seed: int, mean_label: float, device) -> MIHead:
    """A seeded head (built on CPU, so identical on every device) whose output starts at the mean label."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = MIHead(in_dim, cfg)
    with torch.no_grad():  # inverse softplus: softplus(b) = mean label
        y = max(mean_label, MIN_INIT_MI)
        head.bias.fill_(y + math.log(-math.expm1(-y)))
    return head.to(device)


@torch.no_grad()
def evaluate_mse(head: MIHead, features, labels, masked, batch_size: int = EVAL_BATCH) -> float:
    """Masked-pair MSE of ``head`` over a whole set (pairs pooled across contexts)."""
    total, count = 0.0, 0
    for idx in torch.arange(len(features), device=features.device).split(batch_size):
        pred = head(features[idx], masked[idx])
        keep = pair_mask(masked[idx], pred.shape[1], len(idx), pred.device)
        total += float(((pred - labels[idx].to(pred.dtype)).square() * keep).sum())
        count += int(keep.sum())
    return total / max(count, 1)


def train_head(
    features: torch.Tensor,
    labels: torch.Tensor,
    masked: torch.Tensor,
    cfg: HeadTrainConfig,
    head_cfg: HeadConfig,
    val: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    log: Callable[[str], None] = print,
) -> tuple[MIHead, list[dict]]:
    """Fit an :class:`MIHead` to probing labels by minibatch AdamW on :func:`masked_pair_mse`.

    features ``(C, N, D)`` float (from :func:`backbone_features`), labels ``(C, N, N)`` nats,
    masked ``(C, N)`` bool; ``val`` = (features, labels, masked) of held-out contexts. Training runs on
    the features' device; init and batch order depend on ``cfg.seed`` only. Returns the head in eval
    mode and a history of ``{"step", "train_mse", "val_mse"?}`` rows (train_mse: mean of the batch
    losses since the previous row).
    """
    assert features.ndim == 3 and labels.shape == features.shape[:2] + features.shape[1:2], labels.shape
    device = features.device
    labels, masked = labels.to(device), masked.to(device)
    keep_all = pair_mask(masked, masked.shape[1], masked.shape[0], device)
    mean_label = float(labels[keep_all].float().mean()) if keep_all.any() else 0.0
    head = _init_head(features.shape[-1], head_cfg, cfg.seed, mean_label, device).train()
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    every = max(1, cfg.steps // LOG_POINTS)
    history, running = [], []
    for step in range(1, cfg.steps + 1):
        idx = torch.randint(len(features), (min(cfg.batch_size, len(features)),), generator=gen).to(device)
        loss = masked_pair_mse(head(features[idx], masked[idx]), labels[idx], masked[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(head.parameters(), GRAD_CLIP)
        opt.step()
        running.append(loss.detach())
        if step % every == 0 or step == cfg.steps:
            history.append(_log_row(head, step, running, val, log))
            running = []
    return head.eval(), history


def _log_row(head: MIHead, step: int, running: list, val, log) -> dict:
    """One history row (and log line) at ``step``; evaluates ``val`` in eval mode when given."""
    row = {"step": step, "train_mse": float(torch.stack(running).mean())}
    if val is not None:
        head.eval()
        row["val_mse"] = evaluate_mse(head, *(t.to(head.bias.device) for t in val))
        head.train()
    log(" | ".join(f"{k} {v:.4e}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    return row
