"""Masked-diffusion training of a small ESM-C (the CPU-scale protein MDM of the default run).

Each step draws ``batch_size`` training sequences, crops each to a length drawn uniformly from
``[crop_min, crop_max]`` (whole sequence if shorter), encodes ``BOS + residues + EOS`` padded to the
batch's longest, masks each residue with probability t (t ~ U[t_min, t_max] per sequence; BOS, EOS
and pads are never masked) and minimises the cross-entropy of the 20 amino-acid logits at masked
positions — mean over masked residues (``loss_weight: none``) or weighted by 1/t (``elbo``, the
MDLM bound). ESM-C's own pretraining is the t-fixed special case of this objective.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from mdm_mi.protein.data import random_crop
from mdm_mi.protein.tokens import ProteinTokens
from mdm_mi.train_loop import optimise
from mdm_mi.train_state import TrainState


@dataclass(frozen=True)
class ProteinTrainConfig:
    """Optimisation settings; defaults live in the config schema only."""

    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float
    t_min: float
    t_max: float
    loss_weight: str
    crop_min: int
    crop_max: int
    grad_clip: float
    seed: int
    log_every: int
    ema: float
    save_every: int
    snapshot_every: int


def sample_batch(seqs: Sequence[str], tok: ProteinTokens, cfg: ProteinTrainConfig, rng: np.random.Generator):
    """Crop, encode and mask one batch → ``tokens (B, N)``, ``target (B, N)`` (AA index 0..19,
    -100 where not masked) and ``t (B, 1)``."""
    picks = rng.integers(0, len(seqs), cfg.batch_size)
    crops = [random_crop(seqs[int(i)], int(rng.integers(cfg.crop_min, cfg.crop_max + 1)), rng) for i in picks]
    clean = tok.encode_batch(crops)
    t = torch.from_numpy(rng.uniform(cfg.t_min, cfg.t_max, (cfg.batch_size, 1))).float()
    masked = (torch.from_numpy(rng.random(clean.shape)) < t) & tok.residues(clean)
    aa_index = torch.full((int(clean.max()) + 1,), -100, dtype=torch.long)
    aa_index[list(tok.aa_ids)] = torch.arange(len(tok.aa_ids))
    target = torch.where(masked, aa_index[clean], torch.full_like(clean, -100))
    return clean.masked_fill(masked, tok.mask), target, t


def diffusion_loss(backbone, tokens, target, t, weight: str) -> torch.Tensor:
    """Masked-diffusion loss of ``backbone`` (an ESMCBackbone in train mode) on one batch."""
    logits = backbone(tokens).logits  # (B, N, 20)
    ce = F.cross_entropy(logits.transpose(1, 2), target, reduction="none", ignore_index=-100)  # (B, N)
    masked = target >= 0
    if weight == "elbo":
        return (ce / t).sum() / masked.shape[0] / max(1, masked.shape[1])
    return ce.sum() / masked.sum().clamp(min=1)


def train_protein_mdm(seqs: Sequence[str], dims: dict, hidden_layer: int, cfg: ProteinTrainConfig,
                      device: str, log=print, resume_dir: Path | None = None,
                      snapshot: Callable[[int, torch.nn.Module], None] | None = None):
    """Train a fresh small ESMC on ``seqs`` → (ESMCBackbone in eval mode, history). ``resume_dir``
    and ``snapshot`` as in :func:`mdm_mi.sudoku.train.train`."""
    from mdm_mi.protein.esmc import ESMCBackbone
    from mdm_mi.protein.model import new_esmc
    from mdm_mi.protein.tokens import protein_tokens

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    tok = protein_tokens()
    backbone = ESMCBackbone(new_esmc(**dims), hidden_layer).to(device).train()

    def batch_loss(step: int) -> torch.Tensor:
        tokens, target, t = (x.to(device) for x in sample_batch(seqs, tok, cfg, rng))
        return diffusion_loss(backbone, tokens, target, t, cfg.loss_weight)

    state = None
    if resume_dir is not None:
        fingerprint = dims | {"hidden_layer": hidden_layer, "n_sequences": len(seqs)} | {
            k: v for k, v in asdict(cfg).items() if k not in ("save_every", "snapshot_every")}
        state = TrainState(resume_dir, cfg.save_every, rng, fingerprint)
    history = optimise(backbone.parameters(), batch_loss, cfg, log, state,
                       snapshot and (lambda step: snapshot(step, backbone.model)))
    if state is not None:
        state.clear()
    return backbone.eval(), history
