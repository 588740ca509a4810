"""The learned MI head: pairwise mutual information Î ``(B, N, N)`` from one layer's hidden states.

The backbone is frozen, so a small network reading its hidden states ``h (B, N, D)`` can stand in for
the ``1 + |M| V`` probing passes of :mod:`mdm_mi.mi.probe` at a fraction of one pass. The head is a
per-position MLP ``h_i → (z_i, u_i)`` (RMS norm, Linear, GELU, Linear) with ``z_i ∈ R^{H×r}``
followed by a symmetric bilinear form

    Î_ij = softplus( Σ_h w_h ⟨z_i^h, z_j^h⟩ / √r + u_i + u_j + b + d_min(|i−j|, K−1) ),

where the optional learned table ``d`` (``distance_buckets`` K > 0; off for Sudoku, whose hidden
states carry absolute row/column embeddings) lets a backbone without absolute positions in its
residual stream (ESM-C: rotary attention only) express sequence-local dependence. It is
symmetric by construction (bit for bit, too: Î = a + aᵀ with a = softplus(score)/2, so float
round-off cannot break it), non-negative, with the diagonal and every pair involving a non-masked
position exactly zero. The scores, unary terms, bias and exclusions are one batched matmul of
per-position factors, and the MLP runs on masked positions only, so the whole matrix costs the MLP
on |M| rows plus an ``(N, N)`` matmul, softplus and symmetrisation per sequence; the MI-guided
sampler needs Î only among the k positions its walk visits (:meth:`MIHead.among`: k rows, ``(k, k)``). The head is trained by
regression on the probing labels: the MSE over masked pairs ``i != j``, normalised by their number.

    from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, train_head
    feats = backbone_features(model, contexts, batch_size=256)                # (C, N, D)
    head, history = train_head(feats, shard["label"], shard["masked"],
                               HeadTrainConfig(steps=2000, batch_size=64, lr=3e-3,
                                               weight_decay=0.01, seed=0),
                               HeadConfig(hidden=32, heads=4, rank=8, unary=True))
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

from mdm_mi.core.backbone import Backbone, check_backbone, check_output, forward_chunked
from mdm_mi.infra.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.progress import Progress

DOMAIN = "mi_head"
RESERVED_META = ("domain", "in_dim", "head")  # keys save_head writes itself
LOG_POINTS = 10  # train_head logs this many times over a run (plus the last step)
GRAD_CLIP = 1.0  # max global gradient norm per step
MIN_INIT_MI = 1e-4  # nats: floor of the mean label used to initialise the output bias
EVAL_BATCH = 512  # contexts per chunk when evaluating the validation loss
EXCLUDE = 1e30  # score offset of excluded pairs: softplus(-EXCLUDE) == 0 exactly; finite in float32
NORM_EPS = 1e-5  # added to the mean square in the RMS normalisation of the hidden states
COMPACT_FRACTION = 0.7  # pack masked positions when max_b |M_b|² ≤ this × N² (measured CPU crossover)
HALF = 0.5  # the factors give half-scores, so the symmetrisation (a + aᵀ) needs no extra multiply


@dataclass(frozen=True)
class HeadConfig:
    """Width of the head; defaults live in the config schema only.

    hidden: width of the per-position MLP's hidden layer.
    heads:  number H of bilinear heads (each with its own learnable sign/scale ``w_h``).
    rank:   dimension r of each head's embedding ``z_i^h``.
    unary:  add the per-position term ``u_i + u_j`` (one extra MLP output, O(N²) adds).
    distance_buckets: K > 0 adds a learned score per sequence separation ``min(|i−j|, K−1)``
        (0 = none; 0 is also what heads saved before this option load as).
    """

    hidden: int
    heads: int
    rank: int
    unary: bool
    distance_buckets: int = 0

    def __post_init__(self):
        for name in ("hidden", "heads", "rank"):
            _at_least(name, getattr(self, name), 1)
        _at_least("distance_buckets", self.distance_buckets, 0)


class RMSLinear(nn.Linear):
    """``Linear(x / rms(x))`` computed as ``(x Wᵀ) / rms(x) + b``: an RMS norm folded into the layer, so
    the normalised ``(T, D)`` input is never materialised (a norm's affine is redundant before it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(T, D) → (T, out)``."""
        rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
        return torch.addcmul(self.bias, F.linear(x, self.weight), (rms.square() + NORM_EPS).rsqrt())


class MIHead(nn.Module):
    """Î from hidden states: ``forward(h (B, N, D), masked (B, N) bool | None) → (B, N, N)`` float32."""

    def __init__(self, in_dim: int, cfg: HeadConfig):
        super().__init__()
        if min(in_dim, cfg.hidden, cfg.heads, cfg.rank) < 1:
            raise ValueError(f"head sizes must be >= 1, got in_dim={in_dim}, {cfg}")
        self.in_dim, self.cfg = in_dim, cfg
        self.mlp = nn.Sequential(  # per-position features (z_i, u_i)
            RMSLinear(in_dim, cfg.hidden),
            nn.GELU(),
            nn.Linear(cfg.hidden, cfg.heads * cfg.rank + int(cfg.unary)),
        )
        # alternating signs: the form starts indefinite, so it can push pairs both up and down
        self.head_weight = nn.Parameter(torch.tensor([(-1.0) ** h for h in range(cfg.heads)]))
        self.bias = nn.Parameter(torch.zeros(()))
        if cfg.distance_buckets < 0:
            raise ValueError(f"distance_buckets must be >= 0, got {cfg.distance_buckets}")
        self.distance = nn.Parameter(torch.zeros(cfg.distance_buckets)) if cfg.distance_buckets else None

    def factors(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """MLP outputs ``rows (T, H·r [+1]) = (z, u)`` → ``left, right (T, H·r + 2)`` whose dot product
        is half the score: ``left_i · right_j = (Σ_h w_h⟨z_i^h, z_j^h⟩/√r + u_i + u_j + b) / 2``.

        ``left_i = [w ⊙ z_i / (2√r), (u_i + b)/2, 1/2]``, ``right_j = [z_j, 1, u_j]``: one matmul gives
        the bilinear form, the unary terms and the bias (halved: see :meth:`pairs`).
        """
        heads, rank = self.cfg.heads, self.cfg.rank
        z = rows[:, : heads * rank]
        u = rows[:, heads * rank] if self.cfg.unary else rows.new_zeros(len(rows))
        scale = (self.head_weight * (HALF / math.sqrt(rank))).repeat_interleave(rank)  # (H·r,)
        ones = torch.ones_like(u)[:, None]
        left = torch.cat([z * scale, ((u + self.bias) * HALF)[:, None], ones * HALF], 1)
        return left, torch.cat([z, ones, u[:, None]], 1)

    def excluded_rows(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Factor rows ``(H·r + 2,)`` of a non-masked position: ``[0, -EXCLUDE, 1/2]`` and
        ``[0, 1, -EXCLUDE]``, so every pair touching it has half-score ≤ -EXCLUDE/2."""
        hr = self.cfg.heads * self.cfg.rank
        left, right = like.new_zeros(2, hr + 2).unbind(0)
        left[hr:] = like.new_tensor([-EXCLUDE, HALF])
        right[hr:] = like.new_tensor([1.0, -EXCLUDE])
        return left, right

    def distance_scores(self, pos: torch.Tensor) -> torch.Tensor | None:
        """Half of the separation term for positions ``pos (B, M)`` → ``(B, M, M)`` (None if off)."""
        if self.distance is None:
            return None
        sep = (pos[:, :, None] - pos[:, None, :]).abs().clamp_max(len(self.distance) - 1)
        return self.distance[sep] * HALF

    def pairs(self, left: torch.Tensor, right: torch.Tensor, pos: torch.Tensor | None = None) -> torch.Tensor:
        """``left, right (B, N, K)`` from :meth:`factors` (and :meth:`excluded_rows`) → Î ``(B, N, N)``:
        exactly symmetric, exactly 0 on the diagonal and on excluded pairs (half-score ≤ -EXCLUDE/2).
        ``pos (B, N)``: the sequence positions of the rows (default ``0..N-1``), for the separation term."""
        s = torch.bmm(left, right.transpose(1, 2))  # half-scores
        if self.distance is not None:
            b, n = left.shape[:2]
            pos = pos if pos is not None else torch.arange(n, device=left.device).expand(b, n)
            s = s + self.distance_scores(pos)
        s.diagonal(dim1=1, dim2=2).fill_(-EXCLUDE)  # bmm saves its inputs, not its output: autograd-safe
        half = F.softplus(s, beta=2.0)  # log1p(exp(2 s)) / 2 = softplus(score) / 2
        # the form is symmetric but round-off (summation order, SIMD vs scalar softplus) is not:
        # Î = (half + halfᵀ) is then exactly symmetric
        if half.requires_grad:
            return half + half.transpose(1, 2)
        return torch.add(half, half.transpose(1, 2), out=s)  # inference: reuse s's memory

    def forward(self, hidden: torch.Tensor, masked: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden (B, N, D)``, ``masked (B, N)`` bool or None → Î ``(B, N, N)`` in nats, ≥ 0,
        symmetric, zero diagonal, zero for pairs touching a non-masked position.

        The MLP runs on the masked rows only. When few positions are masked (``M² ≤``
        :data:`COMPACT_FRACTION` ``N²``, ``M = max_b |M_b|``), each row's masked positions are packed
        into M slots and the pair stage runs on ``(B, M, M)``; so the cost per step falls as
        decoding proceeds.
        """
        assert hidden.ndim == 3 and hidden.shape[-1] == self.in_dim, hidden.shape
        b, n, d = hidden.shape
        flat_hidden = hidden.reshape(b * n, d).to(self.bias.dtype)
        if masked is None or bool(masked.all()):
            left, right = self.factors(self.mlp(flat_hidden))
            return self.pairs(left.view(b, n, left.shape[-1]), right.view(b, n, right.shape[-1]))
        assert masked.shape == (b, n), (masked.shape, hidden.shape)
        flat = masked.reshape(-1).nonzero().squeeze(1)  # (T,) masked rows of the (B·N) rows
        lrows, rrows = self.factors(self.mlp(flat_hidden.index_select(0, flat)))
        counts = masked.sum(1)
        m = int(counts.max())
        if m * m > COMPACT_FRACTION * n * n:  # all N slots; non-masked ones excluded
            return self.pairs(*self._place(lrows, rrows, flat, b, n))
        filled = torch.arange(m, device=masked.device) < counts[:, None]  # (B, M) slots holding a position
        slots = filled.reshape(-1).nonzero().squeeze(1)
        pos = torch.argsort((~masked).to(torch.uint8), dim=1, stable=True)[:, :m]  # slot → position
        small = self.pairs(*self._place(lrows, rrows, slots, b, m), pos)  # (B, M, M)
        index = (pos[:, :, None] * n + pos[:, None, :]).view(b, m * m)  # distinct within a row
        return small.new_zeros(b, n * n).scatter_(1, index, small.view(b, m * m)).view(b, n, n)

    def among(self, hidden: torch.Tensor, masked: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Î restricted to the positions ``idx (B, k)``: ``Î[b, idx[b, a], idx[b, c]]`` → ``(B, k, k)``.

        hidden ``(B, N, D)``, masked ``(B, N)`` bool, idx distinct positions per row. The MLP runs on
        those ``B k`` rows only and the pair stage on ``(B, k, k)``: the same formula as
        :meth:`forward` (a non-masked position gets :meth:`excluded_rows`, so its pairs are 0), at a
        cost that falls with k — the MI-guided walk only visits positions with ``h_i ≤ γ``.
        """
        b, k = idx.shape
        n = hidden.shape[1]
        flat = (idx + torch.arange(b, device=idx.device)[:, None] * n).reshape(b * k)  # rows of (B·N, D)
        picked = hidden.reshape(b * n, -1).index_select(0, flat)  # a gather of rows: cheaper than hidden[rows, idx]
        left, right = self.factors(self.mlp(picked.to(self.bias.dtype)))
        keep = masked.gather(1, idx).reshape(b * k, 1)
        pad_left, pad_right = self.excluded_rows(left)
        left, right = torch.where(keep, left, pad_left), torch.where(keep, right, pad_right)
        return self.pairs(left.view(b, k, -1), right.view(b, k, -1), idx)

    def _place(self, lrows, rrows, slots: torch.Tensor, b: int, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Factor rows ``(T, K)`` into ``(B, m, K)`` at the flat ``slots (T,)``; the other slots get
        :meth:`excluded_rows`. Rows and slots are both in row-major (sequence, position) order."""
        pad_left, pad_right = self.excluded_rows(lrows)
        left = pad_left.expand(b * m, -1).clone().index_copy_(0, slots, lrows)
        right = pad_right.expand(b * m, -1).clone().index_copy_(0, slots, rrows)
        return left.view(b, m, left.shape[-1]), right.view(b, m, right.shape[-1])


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
    """Closed-form parameter count of :class:`MIHead` (two Linears, w, b, the separation table)."""
    width = cfg.heads * cfg.rank + int(cfg.unary)
    return (in_dim + 1) * cfg.hidden + (cfg.hidden + 1) * width + cfg.heads + 1 + cfg.distance_buckets


def head_flops(in_dim: int, cfg: HeadConfig, n: int) -> int:
    """Approximate FLOPs (2 per multiply-add) for one sequence of ``n`` positions, all masked: the
    per-position MLP plus the ``(n, n)`` matmul of the factors (element-wise work not counted)."""
    width = cfg.heads * cfg.rank + int(cfg.unary)
    return 2 * n * (in_dim * cfg.hidden + cfg.hidden * width) + 2 * n * n * (cfg.heads * cfg.rank + 2)


def save_head(head: MIHead, directory: str | Path, meta: dict) -> None:
    """Write ``directory/model.safetensors`` + ``meta.json`` (domain ``mi_head``, no pickle).

    ``meta`` is stored as given, plus ``domain``, ``in_dim`` and ``head`` (the :class:`HeadConfig`).
    """
    clash = [k for k in RESERVED_META if k in meta]
    if clash:
        raise ValueError(f"meta keys {clash} are written by save_head itself")
    full = {**meta, "domain": DOMAIN, "in_dim": head.in_dim, "head": asdict(head.cfg)}
    save_checkpoint(head, directory, full)


def load_head(directory: str | Path, device: str | torch.device = "cpu", meta: dict | None = None) -> tuple[MIHead, dict]:
    """Load a head saved by :func:`save_head` → ``(head in eval mode, meta)``. Verbs reach it through
    :func:`mdm_mi.models.loading.load_mi_head`, which checks the head against its backbone."""
    state, meta = load_checkpoint(directory, domain=DOMAIN, meta=meta)
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
    check_backbone(backbone)
    feats = []
    for chunk in contexts.split(batch_size):
        out = forward_chunked(backbone, chunk)
        if not feats:
            check_output(backbone, out, chunk)
        feats.append(out.hidden.float())
    return torch.cat(feats)


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

    def __post_init__(self):  # steps 0 is the initial head (train-head refuses it: an untrained head)
        _at_least("steps", self.steps, 0)
        _at_least("batch_size", self.batch_size, 1)
        if not self.lr > 0:
            raise InputError(f"lr must be > 0 (train-head --lr), got {self.lr}")
        _at_least("weight_decay", self.weight_decay, 0)


def _at_least(name: str, value, least) -> None:
    """One-line :class:`InputError` naming the setting (and its train-head flag) unless ``value >= least``."""
    if not value >= least:
        raise InputError(f"{name} must be >= {least} (train-head --{name.replace('_', '-')}), got {value}")


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
def _mean_label(labels: torch.Tensor, masked: torch.Tensor, batch_size: int = EVAL_BATCH) -> float:
    """Mean of ``labels (C, N, N)`` over masked pairs ``i != j`` (0 if none), in chunks of contexts."""
    total, count = 0.0, 0
    for lab, mask in zip(labels.split(batch_size), masked.split(batch_size)):
        keep = pair_mask(mask, mask.shape[1], len(mask), mask.device)
        total += float((lab.double() * keep).sum())
        count += int(keep.sum())
    return total / max(count, 1)


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
    masked ``(C, N)`` bool; ``val`` = (features, labels, masked) of validation contexts. Training runs on
    the features' device; init and batch order depend on ``cfg.seed`` only. Returns the head in eval
    mode and a history of ``{"step", "train_mse", "val_mse"?}`` rows (train_mse: mean of the batch
    losses since the previous row).
    """
    assert features.ndim == 3 and labels.shape == features.shape[:2] + features.shape[1:2], labels.shape
    device = features.device
    labels, masked = labels.to(device), masked.to(device)
    head = _init_head(features.shape[-1], head_cfg, cfg.seed, _mean_label(labels, masked), device).train()
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    every = max(1, cfg.steps // LOG_POINTS)
    history, running = [], []
    progress = Progress("head training: step", cfg.steps)
    for step in range(1, cfg.steps + 1):
        idx = torch.randint(len(features), (min(cfg.batch_size, len(features)),), generator=gen).to(device)
        loss = masked_pair_mse(head(features[idx], masked[idx]), labels[idx], masked[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(head.parameters(), GRAD_CLIP)
        opt.step()
        running.append(loss.detach())
        if step % every == 0 or step == cfg.steps:
            history.append(_log_row(head, step, running, val, log, progress))
            running = []
    return head.eval(), history


def _log_row(head: MIHead, step: int, running: list, val, log, progress=None) -> dict:
    """One history row (and log line, with ``progress(step)``'s how far and how long left when
    given) at ``step``; evaluates ``val`` in eval mode when given."""
    row = {"step": step, "train_mse": float(torch.stack(running).mean())}
    if val is not None:
        head.eval()
        row["val_mse"] = evaluate_mse(head, *(t.to(head.bias.device) for t in val))
        head.train()
    text = " | ".join(f"{k} {v:.4e}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
    log(text + (f" | {progress(step)}" if progress is not None else ""))
    return row
