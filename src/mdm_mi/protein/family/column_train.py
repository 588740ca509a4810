"""Masked-diffusion training of a :class:`~mdm_mi.protein.family.columns.ColumnMDM` on a family's
aligned training split, and its held-out column loss beside the column profile.

    codes = encode_columns([r.columns for r in train])                 # (n, 53), gap = 20
    weights = identity_weights(codes, 0.8)                             # 1 / neighbours at 80% identity
    backbone, history, best = train_column_mdm(codes, weights, dims, cfg, "cpu", val_codes=val)
    losses = column_losses(backbone, val_codes, profile, seed=0)      # {t: (model, profile)} nats

Each step draws ``batch_size`` rows with probability ∝ their weight (the family-model literature's
down-weighting of near-duplicates, as ArDCA and plmDCA do; uniform draws when weights are None),
masks each column with probability t ~ U[t_min, t_max] (at least one column per row) and minimises
the cross-entropy of the masked columns' 21-letter logits (mean over masked columns, or weighted by
1/t with ``loss_weight: elbo``), plus plmDCA's L2 penalty on the couplings scaled per column:
``(lambda_j / L) Σ_{i≠j} ‖J_ij‖²``. The transformer's parameters get AdamW's weight decay.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from mdm_mi.infra.train_loop import BestWeights, DiffusionTrainConfig, draw_probs, optimise
from mdm_mi.infra.train_state import TrainState
from mdm_mi.protein.family.columns import MASK_ID, ColumnBackbone, ColumnDims, ColumnMDM
from mdm_mi.protein.masked_loss import MASK_RATES  # the held-out loss's mask rates, as for the sequence models

COLUMN_LOSS_BATCH = 256  # alignment rows per forward pass of masked_column_loss


@dataclass(frozen=True, kw_only=True)
class ColumnTrainConfig(DiffusionTrainConfig):
    """Optimisation settings of the column model; defaults live in the config schema only.
    ``lambda_j``: L2 strength on the couplings (per column, plmDCA's normalisation); ``eval_every``:
    steps between validation scorings that pick the saved weights (0: keep the last)."""

    lambda_j: float
    eval_every: int


def mask_rows(codes: torch.Tensor, t: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """``(B, L)`` bool: column masked with probability ``t (B, 1)``, at least one per row."""
    masked = torch.from_numpy(rng.random(tuple(codes.shape))) < t
    forced = torch.from_numpy(rng.integers(0, codes.shape[1], codes.shape[0]))
    masked[torch.arange(codes.shape[0]), forced] |= ~masked.any(1)
    return masked


def sample_batch(codes: np.ndarray, cfg: ColumnTrainConfig, rng: np.random.Generator, probs: np.ndarray | None):
    """One batch → ``x (B, L)`` (masked columns = MASK_ID), ``target (B, L)`` (-100 where visible), ``t (B, 1)``."""
    picks = rng.choice(len(codes), cfg.batch_size, p=probs) if probs is not None else rng.integers(0, len(codes), cfg.batch_size)
    clean = torch.from_numpy(codes[picks])
    t = torch.from_numpy(rng.uniform(cfg.t_min, cfg.t_max, (cfg.batch_size, 1))).float()
    masked = mask_rows(clean, t, rng)
    return clean.masked_fill(masked, MASK_ID), clean.masked_fill(~masked, -100), t


def batch_loss(model: ColumnMDM, x, target, t, cfg: ColumnTrainConfig) -> torch.Tensor:
    """Masked cross-entropy (mean over masked columns, or 1/t-weighted) + the coupling penalty."""
    logits, _ = model(x)
    ce = F.cross_entropy(logits.transpose(1, 2), target, reduction="none", ignore_index=-100)  # (B, L)
    masked = target >= 0
    if cfg.loss_weight == "elbo":
        fit = (ce / t).sum() / masked.numel()
    else:
        fit = ce.sum() / masked.sum().clamp(min=1)
    return fit + cfg.lambda_j / model.dims.length * model.coupling_l2()


def fixed_masks(n: int, length: int, t: float, seed: int) -> np.ndarray:
    """The held-out loss's masks ``(n, L)`` bool at rate ``t``, seeded by ``(seed, t)``."""
    rng = np.random.default_rng([seed, round(1000 * t)])
    masked = rng.random((n, length)) < t
    masked[np.arange(n), rng.integers(0, length, n)] |= ~masked.any(1)
    return masked


@torch.inference_mode()
def masked_column_loss(backbone: ColumnBackbone, codes: np.ndarray, masked: np.ndarray) -> float:
    """Mean cross-entropy (nats per masked column, 21 letters) of the model on rows ``codes (n, L)``
    with the columns of ``masked (n, L)`` hidden."""
    total = 0.0
    for start in range(0, len(codes), COLUMN_LOSS_BATCH):
        clean = torch.from_numpy(codes[start:start + COLUMN_LOSS_BATCH])
        m = torch.from_numpy(masked[start:start + COLUMN_LOSS_BATCH])
        logp = torch.log_softmax(backbone.model(clean.masked_fill(m, MASK_ID))[0], -1)
        total -= float(logp.gather(-1, clean[..., None])[..., 0][m].sum())
    return total / masked.sum()


def profile_column_loss(profile: np.ndarray, codes: np.ndarray, masked: np.ndarray) -> float:
    """The same for the site-independent column ``profile (L, 21)``: it ignores the context."""
    cols = np.broadcast_to(np.arange(codes.shape[1]), codes.shape)
    return float(-np.log(profile)[cols[masked], codes[masked]].mean())


def column_losses(backbone: ColumnBackbone, codes: np.ndarray, profile: np.ndarray, seed: int,
                  rates=MASK_RATES) -> dict[float, tuple[float, float]]:
    """Held-out loss of the model and of the column ``profile (L, 21)`` over the same seeded masks
    (:func:`fixed_masks`) → ``{t: (model, profile)}`` nats per masked column."""
    out = {}
    for t in rates:
        masked = fixed_masks(len(codes), codes.shape[1], t, seed)
        out[t] = (masked_column_loss(backbone, codes, masked), profile_column_loss(profile, codes, masked))
    return out


def _validation(backbone, val_codes, cfg: ColumnTrainConfig, seed: int) -> BestWeights | None:
    """Checkpoint selection on the validation rows' masked loss at :data:`MASK_RATES`."""
    if not cfg.eval_every:
        return None

    def score() -> dict[str, float]:
        backbone.eval()
        try:
            return {f"val_t{t:g}": masked_column_loss(backbone, val_codes, fixed_masks(*val_codes.shape, t, seed))
                    for t in MASK_RATES}
        finally:
            backbone.train()

    return BestWeights(cfg.eval_every, score)


def train_column_mdm(codes: np.ndarray, weights: np.ndarray | None, dims: ColumnDims, cfg: ColumnTrainConfig,
                     device: str, log=print, resume_dir: Path | None = None, val_codes: np.ndarray | None = None):
    """Train a fresh :class:`ColumnMDM` on ``codes (n, L)`` → ``(ColumnBackbone in eval mode, history,
    validation)``; ``validation`` is the :class:`~mdm_mi.infra.train_loop.BestWeights` whose weights the
    model ends with (None without ``cfg.eval_every``). ``resume_dir``: where the training state is
    saved every ``cfg.save_every`` steps and resumed from (a killed run continues there)."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    model = ColumnMDM(dims)
    backbone = ColumnBackbone(model).to(device).train()
    probs = draw_probs(weights, len(codes))
    best = _validation(backbone, val_codes, cfg, cfg.seed) if val_codes is not None else None

    def loss_at(step: int) -> torch.Tensor:
        x, target, t = sample_batch(codes, cfg, rng, probs)
        return batch_loss(model, x.to(device), target.to(device), t.to(device), cfg)

    state = None
    if resume_dir is not None:
        fingerprint = asdict(dims) | {"n_sequences": len(codes), "weighted": weights is not None} | {
            k: v for k, v in asdict(cfg).items() if k not in ("save_every", "snapshot_every")}
        state = TrainState(resume_dir, cfg.save_every, rng, fingerprint)
    history = optimise(model.parameters(), loss_at, cfg, log, state, None, best)
    if state is not None:
        state.clear()
    return backbone.eval(), history, best
