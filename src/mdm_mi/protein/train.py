"""Masked-diffusion training of a small ESM-C (the CPU-scale protein MDM of the default run).

Each step draws ``batch_size`` training sequences, crops each to a length drawn uniformly from
``[crop_min, crop_max]`` (whole sequence if shorter), encodes ``BOS + residues + EOS`` padded to the
batch's longest, masks each residue with probability t (t ~ U[t_min, t_max] per sequence; BOS, EOS
and pads are never masked) and minimises the cross-entropy of the 20 amino-acid logits at masked
positions — mean over masked residues (``loss_weight: none``) or weighted by 1/t (``elbo``, the
MDLM bound). ESM-C's own pretraining is the t-fixed special case of this objective.

Three options against over- and under-fitting a small family (all off by default, which is
the shipped Kunitz model's training):

* ``reweight_identity`` — sequences are drawn with probability ∝ their weight ``1 / #(training
  sequences within that identity)`` (:func:`~mdm_mi.protein.family.alignment.sequence_weights`), the
  family-model literature's down-weighting of near-duplicates; the weights come from the caller.
* ``dropout`` — dropout on the output of every block's attention and feed-forward branch before it
  joins the residual stream (GPT-2's residual dropout), training only. ESM-C has no dropout of its own;
  forward hooks add it without changing the model's parameters or its checkpoint.
* ``eval_every`` — every that many steps and after the last, the masked loss of the validation
  sequences at :data:`~mdm_mi.protein.masked_loss.MASK_RATES` (fixed masks, seeded by ``seed``), and
  the saved model is the step with the lowest mean of them
  (:class:`~mdm_mi.infra.train_loop.BestWeights`). Co-variation is not a criterion here: sequential samples
  of the model cost ~75 passes each and the corrected-MI r of a few dozen of them is noise; it is
  measured on the weight snapshots (``snapshot_every``) afterwards.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from mdm_mi.infra.train_loop import BestWeights, DiffusionTrainConfig, draw_probs, optimise
from mdm_mi.infra.train_state import TrainState
from mdm_mi.protein.esmc import ESMCBackbone
from mdm_mi.protein.masked_loss import MASK_RATES, masked_loss
from mdm_mi.protein.data import random_crop
from mdm_mi.protein.model import new_esmc
from mdm_mi.protein.tokens import ProteinTokens, protein_tokens


@dataclass(frozen=True, kw_only=True)
class ProteinTrainConfig(DiffusionTrainConfig):
    """Optimisation settings; defaults live in the config schema only."""

    crop_min: int
    crop_max: int
    reweight_identity: float
    dropout: float
    eval_every: int


def sample_batch(seqs: Sequence[str], tok: ProteinTokens, cfg: ProteinTrainConfig, rng: np.random.Generator,
                 probs: np.ndarray | None = None):
    """Crop, encode and mask one batch → ``tokens (B, N)``, ``target (B, N)`` (AA index 0..19,
    -100 where not masked) and ``t (B, 1)``. Sequences are drawn uniformly, or with ``probs`` ``(n,)``
    (summing to 1) when given."""
    if probs is None:
        picks = rng.integers(0, len(seqs), cfg.batch_size)
    else:
        picks = rng.choice(len(seqs), cfg.batch_size, p=probs)
    crops = [random_crop(seqs[int(i)], int(rng.integers(cfg.crop_min, cfg.crop_max + 1)), rng) for i in picks]
    clean = tok.encode_batch(crops)
    t = torch.from_numpy(rng.uniform(cfg.t_min, cfg.t_max, (cfg.batch_size, 1))).float()
    masked = (torch.from_numpy(rng.random(clean.shape)) < t) & tok.residues(clean)
    aa_index = torch.full((max(int(clean.max()), *tok.aa_ids) + 1,), -100, dtype=torch.long)  # a batch may lack an AA
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


def residual_dropout(model, p: float) -> list:
    """Dropout ``p`` on every ESM-C block's attention and feed-forward output (active in train mode
    only) → the hook handles (``handle.remove()`` takes it off again)."""
    def drop(module, inputs, output):
        return F.dropout(output, p, module.training)

    return [branch.register_forward_hook(drop) for block in model.transformer.blocks
            for branch in (block.attn, block.ffn)]


def _validation(backbone, val: Sequence[str] | None, cfg: ProteinTrainConfig) -> BestWeights | None:
    """Checkpoint selection on ``val``'s masked loss at each of MASK_RATES (None when ``eval_every`` is 0)."""
    if not cfg.eval_every:
        return None
    if not val:
        raise ValueError("eval_every > 0 needs validation sequences")

    def score() -> dict[str, float]:
        backbone.eval()
        try:
            return {f"val_t{t:g}": masked_loss(backbone, list(val), t, cfg.seed)[0] for t in MASK_RATES}
        finally:
            backbone.train()

    return BestWeights(cfg.eval_every, score)


def train_protein_mdm(seqs: Sequence[str], dims: dict, hidden_layer: int, cfg: ProteinTrainConfig,
                      device: str, log=print, resume_dir: Path | None = None,
                      snapshot: Callable[[int, torch.nn.Module], None] | None = None,
                      weights: np.ndarray | None = None, val: Sequence[str] | None = None):
    """Train a fresh small ESMC on ``seqs`` → (ESMCBackbone in eval mode, history, validation).
    ``resume_dir`` and ``snapshot`` as in :func:`mdm_mi.sudoku.train.train`; ``weights`` ``(n,)``: the
    sequences' drawing weights (None: uniform); ``val``: the validation sequences scored every
    ``cfg.eval_every`` steps. ``validation`` is None without them, else the
    :class:`~mdm_mi.infra.train_loop.BestWeights` whose weights the model ends with."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    tok = protein_tokens()
    backbone = ESMCBackbone(new_esmc(**dims), hidden_layer).to(device).train()
    if bool(cfg.reweight_identity) != (weights is not None):
        raise ValueError("sequence weights are given exactly when cfg.reweight_identity is set")
    hooks = residual_dropout(backbone.model, cfg.dropout) if cfg.dropout else []
    probs = draw_probs(weights, len(seqs))
    best = _validation(backbone, val, cfg)

    def batch_loss(step: int) -> torch.Tensor:
        tokens, target, t = (x.to(device) for x in sample_batch(seqs, tok, cfg, rng, probs))
        return diffusion_loss(backbone, tokens, target, t, cfg.loss_weight)

    state = None
    if resume_dir is not None:
        fingerprint = dims | {"hidden_layer": hidden_layer, "n_sequences": len(seqs),
                              "n_val": len(val or ())} | {
            k: v for k, v in asdict(cfg).items() if k not in ("save_every", "snapshot_every")}
        state = TrainState(resume_dir, cfg.save_every, rng, fingerprint)
    history = optimise(backbone.parameters(), batch_loss, cfg, log, state,
                       snapshot and (lambda step: snapshot(step, backbone.model)), best)
    if state is not None:
        state.clear()
    for hook in hooks:
        hook.remove()
    return backbone.eval(), history, best
