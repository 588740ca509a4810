"""Pilots of the column-space family backbone (issue 31), on the validation split only.

For each pilot setting: train a ColumnMDM on the training split's match columns, then
- its held-out masked loss on the validation rows at t = 0.15 / 0.5 / 0.9 beside the column profile
  (same masks, 21 letters incl. gap, nats per masked column);
- ``--n`` sequential (entropy-order) samples, gaps dropped, scored by ``family_scores`` against the
  validation split (HMM pass, C_ij r, corrected-MI r, identity to train);
and ArDCA (fitted on the same split, same weights) scored the same way, beside them.

    python benchmarks/column_pilots.py --data-dir /tmp/fam/data --out docs/benchmarks/column_pilots.json \
        --pilot potts:0:0:1e-2 --pilot hybrid:64:2:1e-2 --steps 3000
A pilot is ``name:d_model:n_layers:lambda_j[:reweight[:mean_field]]`` (n_layers 0 = Potts term + column
fields only; reweight 0 = uniform draws, else the identity threshold of the 1/neighbours weights;
mean_field: iterations of the masked columns' mean-field term, 0 = off).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from mdm_mi.protein.family import ardca
from mdm_mi.protein.family.alignment import column_profile, encode_columns
from mdm_mi.protein.family.column_train import ColumnTrainConfig, column_losses, train_column_mdm
from mdm_mi.protein.family.columns import ColumnDims
from mdm_mi.protein.family.scores import family_scores, read_splits
from mdm_mi.protein.generate import generate
from mdm_mi.sampling.registry import build_sampler

KEYS = ("hmm_pass_rate", "c_ij_r", "corrected_mi_r", "f_i_r", "train_identity_median", "train_identity_max")


def config(steps: int, lambda_j: float, batch: int, lr: float, eval_every: int, loss_weight: str) -> ColumnTrainConfig:
    return ColumnTrainConfig(steps=steps, batch_size=batch, lr=lr, warmup=100, weight_decay=0.01, t_min=0.02,
                             t_max=1.0, loss_weight=loss_weight, grad_clip=1.0, seed=0, log_every=500, ema=0.0,
                             save_every=0, snapshot_every=0, lambda_j=lambda_j, eval_every=eval_every)


def score(seqs, splits, n_clusters=15) -> dict:
    train, val, _ = splits
    s = family_scores(seqs, train, val, val, clusters=n_clusters, seed=0)
    return {k: round(float(s[k]), 4) for k in KEYS}


def run_pilot(spec: str, args, codes, val_codes, weights_by, profile, splits) -> dict:
    name, d, layers, lam, *rest = spec.split(":")
    reweight = float(rest[0]) if rest else 0.8
    mean_field = int(rest[1]) if len(rest) > 1 else 0
    d, layers = int(d), int(layers)
    dims = ColumnDims(length=codes.shape[1], d_model=max(d, 8), n_heads=4 if d >= 32 else 1, n_layers=layers,
                      mean_field=mean_field)
    cfg = config(args.steps, float(lam), args.batch_size, args.lr, args.eval_every, args.loss_weight)
    weights = weights_by(reweight) if reweight else None
    start = time.perf_counter()
    backbone, history, best = train_column_mdm(codes, weights, dims, cfg, "cpu", log=lambda m: None,
                                               val_codes=val_codes if args.eval_every else None)
    train_s = time.perf_counter() - start
    losses = column_losses(backbone, val_codes, profile, seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        seqs, passes = generate(backbone, [backbone.fixed_length] * args.n, build_sampler("sequential", order="entropy"),
                                gen, batch_size=args.n)  # protein.generate's decoding: temperature 1
    row = {"pilot": spec, "train_seconds": round(train_s, 1), "best_step": best.step if best else args.steps,
           "final_train_loss": round(history[-1]["loss"], 4), "mean_passes": float(passes.mean()),
           **{f"val_t{t:g}": round(m, 4) for t, (m, _) in losses.items()},
           **{f"profile_t{t:g}": round(p, 4) for t, (_, p) in losses.items()}, **score(seqs, splits)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pilot", action="append", required=True)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--eval-every", type=int, default=0)
    parser.add_argument("--loss-weight", choices=("none", "elbo"), default="none")
    parser.add_argument("--n", type=int, default=630)
    parser.add_argument("--no-ardca", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: pilots run side by side)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train, val, ref, _ = read_splits(args.data_dir)
    splits = (train, val, ref)
    codes, val_codes = (encode_columns([r.columns for r in s]) for s in (train, val))
    profile = column_profile(train, pseudocount=0.5)
    cache: dict[float, np.ndarray] = {}
    weights_by = lambda r: cache.setdefault(r, ardca.identity_weights(codes, r))  # noqa: E731
    rows = []
    if not args.no_ardca:
        start = time.perf_counter()
        model = ardca.fit(codes, weights_by(0.8))
        records = ardca.sample(model, args.n, np.random.default_rng(0))
        rows.append({"pilot": "ardca", "train_seconds": round(time.perf_counter() - start, 1),
                     **score([r.sequence for r in records], splits)})
        print(json.dumps(rows[-1]), flush=True)
    rows += [run_pilot(spec, args, codes, val_codes, weights_by, profile, splits) for spec in args.pilot]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(), "steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
            "loss_weight": args.loss_weight,
            "n": args.n, "scored_against": "validation split", "n_val": len(val)}
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
