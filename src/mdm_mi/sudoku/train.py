"""Masked-diffusion training of the Sudoku MDM.

Each step draws solution grids, applies random validity-preserving symmetries (digit relabelling,
row/column permutations within bands/stacks, band/stack permutations, transposition), masks each
cell with probability t (t drawn per grid) and minimises the cross-entropy on masked cells.
With ``loss_weight="elbo"`` each grid's loss is weighted by 1/t (the MDLM ELBO); with ``"none"``
it is the mean over masked cells.

    python -m mdm_mi pretrain --solutions results/sudoku/data/train.npy --out results/sudoku/model
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, SIDE
from mdm_mi.sudoku.model import ModelConfig, SudokuMDM


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings; their defaults live in the config schema only."""

    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float
    t_min: float
    t_max: float
    loss_weight: str
    augment: bool
    grad_clip: float
    seed: int
    log_every: int
    compile: bool


def _band_perm(gen: torch.Generator, b: int) -> torch.Tensor:
    """``(B, 9)`` random permutations of 0..8 that keep each band of three together."""
    bands = torch.rand(b, 3, generator=gen).argsort(1)  # which band goes where
    inner = torch.rand(b, 3, 3, generator=gen).argsort(2)  # order inside each band
    return (bands.unsqueeze(2) * 3 + inner).reshape(b, SIDE)


def augment(grids: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Apply random Sudoku symmetries to ``(B, 81)`` solution grids (each stays valid)."""
    b = grids.shape[0]
    g = grids.view(b, SIDE, SIDE)
    relabel = torch.rand(b, N_DIGITS, generator=gen).argsort(1)
    g = torch.gather(relabel, 1, g.reshape(b, -1)).view(b, SIDE, SIDE)
    rows = _band_perm(gen, b)
    g = torch.gather(g, 1, rows.unsqueeze(2).expand(b, SIDE, SIDE))
    cols = _band_perm(gen, b)
    g = torch.gather(g, 2, cols.unsqueeze(1).expand(b, SIDE, SIDE))
    flip = torch.rand(b, generator=gen) < 0.5
    g = torch.where(flip.view(b, 1, 1), g.transpose(1, 2), g)
    return g.reshape(b, N_CELLS)


def mask_batch(grids: torch.Tensor, cfg: TrainConfig, gen: torch.Generator):
    """Mask each cell w.p. t, t ~ U[t_min, t_max] per grid → (tokens, masked, t)."""
    b = grids.shape[0]
    t = cfg.t_min + (cfg.t_max - cfg.t_min) * torch.rand(b, 1, generator=gen)
    masked = torch.rand(b, N_CELLS, generator=gen) < t
    return grids.masked_fill(masked, MASK_ID), masked, t


def diffusion_loss(forward_all, grids, cfg: TrainConfig, gen, device) -> torch.Tensor:
    """Masked-diffusion loss on a ``(B, 81)`` batch of solutions (masked cells only);
    ``forward_all`` is :meth:`SudokuMDM.forward_all` (possibly compiled)."""
    tokens, masked, t = mask_batch(grids, cfg, gen)
    tokens, masked, t, grids = tokens.to(device), masked.to(device), t.to(device), grids.to(device)
    logits, _ = forward_all(tokens)
    ce = F.cross_entropy(logits.transpose(1, 2), grids, reduction="none")  # (B, 81)
    if cfg.loss_weight == "elbo":
        return (ce * masked / t).sum() / (grids.shape[0] * N_CELLS)
    return (ce * masked).sum() / masked.sum().clamp(min=1)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up then cosine decay to 10% of ``lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def train(solutions: np.ndarray, model_cfg: ModelConfig, cfg: TrainConfig, device: str, log=print):
    """Train a fresh :class:`SudokuMDM` on ``(S, 81)`` solutions; return (model, history)."""
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = SudokuMDM(model_cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    forward = torch.compile(model.forward_all) if cfg.compile else model.forward_all
    pool = torch.as_tensor(solutions, dtype=torch.long)
    history, start, running = [], time.time(), 0.0
    for step in range(cfg.steps):
        idx = torch.randint(len(pool), (cfg.batch_size,), generator=gen)
        grids = augment(pool[idx], gen) if cfg.augment else pool[idx]
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = diffusion_loss(forward, grids, cfg, gen, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        running += loss.item()
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            n = (step % cfg.log_every) + 1
            rec = {"step": step + 1, "loss": running / n, "minutes": (time.time() - start) / 60}
            history.append(rec)
            log(f"step {rec['step']} loss {rec['loss']:.4f} {rec['minutes']:.1f} min")
            running = 0.0
    return model.eval(), history
