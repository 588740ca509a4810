"""Masked-diffusion training of the Sudoku MDM.

Each step draws solution grids, applies random validity-preserving symmetries (digit relabelling,
row/column permutations within bands/stacks, band/stack permutations, transposition), masks each
cell with probability t (t drawn per grid) and minimises the cross-entropy on masked cells.
With ``loss_weight="elbo"`` each grid's loss is weighted by 1/t (the MDLM ELBO); with ``"none"``
it is the mean over masked cells.

    python -m mdm_mi sudoku-pretrain --solutions results/sudoku/data/train.npy --out results/sudoku/model
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from mdm_mi.infra.train_loop import DiffusionTrainConfig, optimise
from mdm_mi.infra.train_state import TrainState
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, SIDE
from mdm_mi.sudoku.model import ModelConfig, SudokuMDM

UNFINGERPRINTED = ("save_every", "snapshot_every")  # how often to save: may change on resume


@dataclass(frozen=True, kw_only=True)
class TrainConfig(DiffusionTrainConfig):
    """Optimisation settings; their defaults live in the config schema only."""

    augment: bool
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


def train(solutions: np.ndarray, model_cfg: ModelConfig, cfg: TrainConfig, device: str, log=print,
          resume_dir: Path | None = None, snapshot: Callable[[int, SudokuMDM], None] | None = None,
          init_state: dict[str, torch.Tensor] | None = None):
    """Train a :class:`SudokuMDM` on ``(S, 81)`` solutions; return (model, history).

    The model starts from random weights, or from ``init_state`` (a state dict of the same shape: a
    warm restart, with a fresh optimiser and a fresh warm-up and cosine schedule).

    With ``resume_dir`` the full training state is saved there every ``cfg.save_every`` steps and a
    run started again continues from it (:class:`~mdm_mi.infra.train_state.TrainState`);
    ``snapshot(step, model)`` is called every ``cfg.snapshot_every`` steps."""
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = SudokuMDM(model_cfg)
    if init_state is not None:
        model.load_state_dict(init_state)
    model = model.to(device)
    forward = torch.compile(model.forward_all) if cfg.compile else model.forward_all
    pool = torch.as_tensor(solutions, dtype=torch.long)

    def batch_loss(step: int) -> torch.Tensor:
        idx = torch.randint(len(pool), (cfg.batch_size,), generator=gen)
        grids = augment(pool[idx], gen) if cfg.augment else pool[idx]
        return diffusion_loss(forward, grids, cfg, gen, device)

    state = None
    if resume_dir is not None:
        fingerprint = asdict(model_cfg) | {k: v for k, v in asdict(cfg).items() if k not in UNFINGERPRINTED}
        state = TrainState(resume_dir, cfg.save_every, gen, fingerprint)
    history = optimise(model.parameters(), batch_loss, cfg, log, state,
                       snapshot and (lambda step: snapshot(step, model)))
    if state is not None:
        state.clear()
    return model.eval(), history
