"""The optimisation loop shared by the Sudoku and protein MDM trainers.

    history = optimise(model.parameters(), lambda step: loss_of_batch(step), cfg, log=print)

``cfg`` is any config with ``steps, lr, warmup, weight_decay, grad_clip, log_every, ema``: AdamW
(β = 0.9, 0.98), linear warm-up then cosine decay to 10% of ``lr``, gradient-norm clipping, and one
history row ``{"step", "loss", "minutes"}`` (mean loss since the last row) every ``log_every`` steps.
With ``ema > 0`` the parameters end as the exponential moving average of their values after each
step (:class:`WeightAverage`) instead of the last step's values. With ``best`` (a :class:`BestWeights`)
the weights are scored on held-out data every ``best.every`` steps and after the last, and the run
ends with the best-scoring ones (checkpoint selection; the average's, when there is one).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import torch

from mdm_mi.infra.flags import SeededTrainRunFlags, h
from mdm_mi.infra.train_state import TrainState

RESUME = "resume"  # a pretraining verb's --out subfolder of the saved training state
SNAPSHOTS = "snapshots"  # … and of the kept weight snapshots (step-N)


@dataclass(frozen=True, kw_only=True)
class DiffusionTrainFlags(SeededTrainRunFlags):
    """The masked-diffusion training flags both pretraining verbs (``sudoku-pretrain``, ``protein-pretrain``)
    take, each with its domain's schema defaults (declared again there: :func:`mdm_mi.infra.flags.shared_from_schema`)."""

    steps: int = field(metadata=h("optimiser steps"))
    batch_size: int = field(metadata=h("training sequences per step"))
    lr: float = field(metadata=h("peak learning rate"))
    warmup: int = field(metadata=h("warm-up steps"))
    weight_decay: float = field(metadata=h("AdamW weight decay"))
    t_min: float = field(metadata=h("smallest mask rate"))
    t_max: float = field(metadata=h("largest mask rate"))
    loss_weight: str = field(metadata=h("none | elbo (1/t weighting)"))
    grad_clip: float = field(metadata=h("gradient norm clip"))
    log_every: int = field(metadata=h("steps between log lines"))
    ema: float = field(metadata=h("decay of an exponential moving average of the weights, saved instead "
                                  "of the last step's (0: off)"))
    save_every: int = field(metadata=h("steps between saves of the full training state in OUT/resume "
                                       "(a killed run continues from the last one; 0: off)"))
    snapshot_every: int = field(metadata=h("steps between weight snapshots kept in OUT/snapshots/step-N (0: none)"))


@dataclass(frozen=True, kw_only=True)
class DiffusionTrainConfig:
    """The masked-diffusion training settings both domains' trainers read (:class:`DiffusionTrainFlags`'
    values but where to run; :func:`optimise` reads the optimiser's); each domain's config adds its own.
    Defaults live in the config schema only."""

    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float
    t_min: float
    t_max: float
    loss_weight: str
    grad_clip: float
    seed: int
    log_every: int
    ema: float
    save_every: int
    snapshot_every: int


class WeightAverage:
    """Exponential moving average of parameters: ``avg ← ema · avg + (1 − ema) · p`` after every step."""

    def __init__(self, params: list[torch.nn.Parameter], ema: float):
        if not 0.0 < ema < 1.0:
            raise ValueError(f"ema must lie in (0, 1), got {ema}")
        self.params, self.ema = params, ema
        self.avg = [p.detach().clone() for p in params]

    @torch.no_grad()
    def update(self) -> None:
        torch._foreach_lerp_(self.avg, [p.detach() for p in self.params], 1.0 - self.ema)

    @torch.no_grad()
    def copy_to_params(self) -> None:
        for p, a in zip(self.params, self.avg):
            p.copy_(a)


class BestWeights:
    """Checkpoint selection on a validation score.

    Every ``every`` steps and after the last, ``score()`` (the model's held-out losses, ``{name:
    nats}``) gives one row ``{"step", "val_loss", **losses}`` of :attr:`history`, ``val_loss`` being
    the mean of the losses; the weights of the lowest ``val_loss`` so far (the earliest on a tie) are
    kept as a copy. ``score`` must not draw from the training generators (a scored run then trains
    exactly as an unscored one); it sets the model's train/eval mode itself."""

    def __init__(self, every: int, score: Callable[[], dict[str, float]]):
        if every < 1:
            raise ValueError(f"validation interval must be >= 1, got {every}")
        self.every, self.score = every, score
        self.step, self.loss, self.weights, self.history = 0, math.inf, None, []

    def due(self, step: int, steps: int) -> bool:
        """Whether the weights are scored after ``step`` of ``steps`` steps (1-based)."""
        return step % self.every == 0 or step == steps

    @torch.no_grad()
    def check(self, step: int, params: list[torch.Tensor]) -> dict:
        """Score the current ``params`` after ``step`` steps; keep them if they are the best so far."""
        losses = {k: float(v) for k, v in self.score().items()}
        row = {"step": step, "val_loss": sum(losses.values()) / len(losses), **losses}
        self.history.append(row)
        if row["val_loss"] < self.loss:  # a NaN score is never the best
            self.step, self.loss = step, row["val_loss"]
            self.weights = [p.detach().clone() for p in params]
        return row

    @torch.no_grad()
    def copy_to_params(self, params: list[torch.Tensor]) -> None:
        for p, w in zip(params, self.weights):
            p.copy_(w)


@torch.no_grad()
def _score(best: BestWeights, step: int, params: list[torch.Tensor], average: WeightAverage | None) -> dict:
    """``best.check`` on the weights the run would save now: the average's, if any (then put back)."""
    if average is None:
        return best.check(step, params)
    current = [p.detach().clone() for p in params]
    average.copy_to_params()
    try:
        return best.check(step, params)
    finally:
        for p, c in zip(params, current):
            p.copy_(c)


def lr_at(step: int, cfg) -> float:
    """Linear warm-up then cosine decay to 10% of ``lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def optimise(params: Iterable[torch.nn.Parameter], batch_loss: Callable[[int], torch.Tensor], cfg: DiffusionTrainConfig,
             log: Callable[[str], None] = print, state: TrainState | None = None,
             snapshot: Callable[[int], None] | None = None, best: BestWeights | None = None) -> list[dict]:
    """Run ``cfg.steps`` AdamW steps on ``batch_loss(step)`` (a scalar tensor) → the loss history.

    On a GPU the loss runs under bf16 autocast (weights, gradients and optimiser state stay fp32);
    on the CPU everything is fp32. With ``state`` the run first restores the last saved state (if
    any) and saves it every ``state.every`` steps; ``snapshot(step)`` is called after every
    ``cfg.snapshot_every``-th step (the caller saves the weights). With ``best`` the parameters end as
    ``best.weights`` (its scores in ``best.history``, saved and restored with ``state``).
    """
    params = list(params)
    on_gpu = params[0].is_cuda
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    average = WeightAverage(params, cfg.ema) if cfg.ema else None
    first, history, minutes, running = state.load(params, opt, average, best) if state else (0, [], 0.0, 0.0)
    if first:
        log(f"resumed from {state.path} after step {first}")
    start = time.time() - 60 * minutes
    for step in range(first, cfg.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=on_gpu):
            loss = batch_loss(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        if average is not None:
            average.update()
        running += loss.item()
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            n = (step % cfg.log_every) + 1
            rec = {"step": step + 1, "loss": running / n, "minutes": (time.time() - start) / 60}
            history.append(rec)
            log(f"step {rec['step']} loss {rec['loss']:.4f} {rec['minutes']:.1f} min")
            running = 0.0
        if best is not None and best.due(step + 1, cfg.steps):
            row = _score(best, step + 1, params, average)
            log(f"step {step + 1} val loss {row['val_loss']:.4f} (best {best.loss:.4f} at step {best.step})")
        if state is not None and state.due(step + 1) and step + 1 < cfg.steps:
            state.save(step + 1, params, opt, average, history, (time.time() - start) / 60, running, best)
        if snapshot is not None and cfg.snapshot_every and (step + 1) % cfg.snapshot_every == 0:
            snapshot(step + 1)
    if average is not None:
        average.copy_to_params()
    if best is not None and best.weights is not None:
        best.copy_to_params(params)
    return history


def draw_probs(weights, n: int):
    """Sequence weights ``(n,)`` → drawing probabilities summing to 1 (None: uniform draws); both family
    trainers draw their batches with them. ValueError for the wrong shape, negative, non-finite or all-zero weights."""
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (n,) or not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError(f"need {n} finite non-negative sequence weights, not all zero; got shape {weights.shape}")
    return weights / weights.sum()


def run_metrics(history: list[dict], best: BestWeights | None, weights, **fields) -> tuple[dict, dict]:
    """What a pretraining verb records of a finished run → ``(metrics, extra)``: the last loss and
    minutes, ``fields``, the effective number of sequences (the weights' sum, when drawn by weight), the
    best step and its validation loss (with ``extra["val_history"]``, every validation score)."""
    metrics = {"final_loss": history[-1]["loss"], "train_minutes": history[-1]["minutes"], **fields}
    extra = {}
    if weights is not None:
        metrics["n_effective"] = float(weights.sum())
    if best is not None:
        metrics |= {"best_step": best.step, "best_val_loss": best.loss}
        extra["val_history"] = best.history
    return metrics, extra
