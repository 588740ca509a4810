"""The ``column-pretrain`` verb: a masked diffusion model over a family's alignment columns.

    python -m mdm_mi column-pretrain --alignment results/x/protein/data/train.a2m \
        --val results/x/protein/data/val.a2m --out results/x/protein/model --d-model 64 --n-heads 4 \
        --n-layers 2 --lambda-j 0.01 --reweight-identity 0.8 --steps 3000 ...

The model is :class:`~mdm_mi.protein.family.columns.ColumnMDM` (Potts term + small transformer);
training is :func:`~mdm_mi.protein.family.column_train.train_column_mdm`. A killed run resumes from
``OUT/resume`` (``--save-every``). The folder is a protein model (``meta.json`` kind ``columns``) that
every protein verb loads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h as _h
from mdm_mi.infra.train_loop import DiffusionTrainFlags


@dataclass(frozen=True)
class ColumnPretrainArgs(DiffusionTrainFlags):
    alignment: Path = field(metadata=_h("the training split aligned (train.a2m from prepare-family)"))
    out: Path = field(metadata=_h("output model folder"))
    d_model: int = field(metadata=_h("transformer width (also the column embeddings' with 0 blocks)"))
    n_heads: int = field(metadata=_h("attention heads"))
    n_layers: int = field(metadata=_h("transformer blocks (0: the Potts term and mask-rate-aware column fields only)"))
    mean_field: int = field(metadata=_h("mean-field iterations: masked columns couple through their predicted "
                                        "marginals (0: only visible columns couple)"))
    lambda_j: float = field(metadata=_h("L2 strength on the Potts couplings (per column, plmDCA's scaling)"))
    reweight_identity: float = field(metadata=_h(
        "draw each row with weight 1 / (training rows at >= this identity, itself included); 0: uniform"))
    eval_every: int = field(metadata=_h(
        "steps between masked losses of --val at t = 0.15, 0.5, 0.9; the model saved is the step with the "
        "lowest mean (0: off, the last step)"))
    val: Path | None = field(default=None, metadata=_h("validation alignment of --eval-every (val.a2m)"))


def _codes(path: Path) -> np.ndarray:
    from mdm_mi.protein.family.alignment import encode_columns, parse_a2m

    codes = encode_columns([r.columns for r in parse_a2m(path)])
    if not len(codes):
        raise InputError(f"alignment has no rows: {path}")
    return codes


def _check(args: ColumnPretrainArgs) -> None:
    if args.loss_weight not in ("none", "elbo"):
        raise InputError(f"--loss-weight must be none or elbo, got {args.loss_weight!r}")
    if not (0 <= args.reweight_identity <= 1 and args.lambda_j >= 0 and min(args.eval_every, args.n_layers, args.mean_field) >= 0):
        raise InputError(f"need 0 <= --reweight-identity <= 1 and --lambda-j, --eval-every, --n-layers, --mean-field >= 0; "
                         f"got {args.reweight_identity}, {args.lambda_j}, {args.eval_every}, {args.n_layers}, {args.mean_field}")
    if args.d_model < 1 or args.n_heads < 1 or args.d_model % args.n_heads:
        raise InputError(f"--d-model ({args.d_model}) must be a positive multiple of --n-heads ({args.n_heads})")
    if args.eval_every and args.val is None:
        raise InputError("--eval-every needs --val (the validation alignment, val.a2m)")


def column_pretrain(args: ColumnPretrainArgs, tracker) -> None:
    from mdm_mi.infra.runtime import resolve_device, setup
    from mdm_mi.infra.train_loop import RESUME
    from mdm_mi.protein.family.ardca import identity_weights
    from mdm_mi.protein.family.column_train import ColumnTrainConfig, train_column_mdm
    from mdm_mi.protein.family.columns import ColumnDims, n_params, save_column_model

    _check(args)
    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    codes = _codes(args.alignment)
    val = _codes(args.val) if args.eval_every else None
    if val is not None and val.shape[1] != codes.shape[1]:
        raise InputError(f"{args.val} has {val.shape[1]} match columns, {args.alignment} has {codes.shape[1]}")
    weights = identity_weights(codes, args.reweight_identity) if args.reweight_identity else None
    dims = ColumnDims(length=codes.shape[1], d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
                      mean_field=args.mean_field)
    cfg = ColumnTrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ColumnTrainConfig)})
    tracker.log_params(dataclasses.asdict(args))
    backbone, history, best = train_column_mdm(codes, weights, dims, cfg, device, log=lambda m: print(m, flush=True),
                                               resume_dir=Path(args.out) / RESUME, val_codes=val)
    metrics = {"final_loss": history[-1]["loss"], "train_minutes": history[-1]["minutes"],
               "n_params": n_params(backbone.model), "n_train": len(codes), "device": device}
    extra = {}
    if weights is not None:
        metrics["n_effective"] = float(weights.sum())
    if best is not None:
        metrics |= {"best_step": best.step, "best_val_loss": best.loss}
        extra["val_history"] = best.history
    save_column_model(backbone.model.cpu(), args.out, -1,
                      {"train": dataclasses.asdict(cfg), "metrics": metrics, "history": history} | extra)
    for rec in history:
        tracker.log_metrics({"loss": rec["loss"]}, step=rec["step"])
    tracker.log_metrics({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
    tracker.log_artifact(Path(args.out) / "meta.json")
