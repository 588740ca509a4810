"""Sudoku pretraining: seconds per optimisation step of several model shapes, measured in one
process, in alternating rounds so that every shape sees the same machine load (issue 13: width vs
depth at equal step time).

    python benchmarks/bench_train_step.py --shape 128x4 --shape 96x7 --threads 2

Each shape is ``d_model x n_layers`` (8 heads, ff ×4, the default's batch 128, flat loss,
augmentation, compiled like ``sudoku-pretrain --compile``). Prints parameters, the median seconds
per step over the rounds and the ratio to the first shape.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from mdm_mi.sudoku.model import ModelConfig, SudokuMDM, n_params
from mdm_mi.sudoku.train import TrainConfig, augment, diffusion_loss

DEFAULT_TRAIN = TrainConfig(steps=0, batch_size=128, lr=2e-3, warmup=0, weight_decay=0.01, t_min=0.05, t_max=1.0,
                            loss_weight="none", augment=True, grad_clip=1.0, seed=0, log_every=0, compile=True, ema=0.0, save_every=0, snapshot_every=0)


def make_step(shape: str, pool: torch.Tensor, cfg: TrainConfig):
    """``"128x4"`` → (parameter count, a function running one AdamW step)."""
    d, layers = (int(x) for x in shape.split("x"))
    model = SudokuMDM(ModelConfig(d_model=d, n_layers=layers, n_heads=8, ff_mult=4, dropout=0.0, hidden_layer=-1))
    forward = torch.compile(model.forward_all) if cfg.compile else model.forward_all
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(0)

    def step() -> None:
        idx = torch.randint(len(pool), (cfg.batch_size,), generator=gen)
        loss = diffusion_loss(forward, augment(pool[idx], gen), cfg, gen, "cpu")
        opt.zero_grad()
        loss.backward()
        opt.step()

    return n_params(model), step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solutions", default="results/cpu-default/sudoku/data/train_solutions.npy")
    ap.add_argument("--shape", action="append", required=True, help="d_model x n_layers, e.g. 128x4")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per shape per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pool = torch.as_tensor(np.load(args.solutions, allow_pickle=False), dtype=torch.long)
    steps = {s: make_step(s, pool, DEFAULT_TRAIN) for s in args.shape}
    for _, step in steps.values():  # compile and warm up
        for _ in range(3):
            step()
    times: dict[str, list[float]] = {s: [] for s in args.shape}
    for _ in range(args.rounds):
        for s, (_, step) in steps.items():
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step()
            times[s].append((time.perf_counter() - t0) / args.steps)
    base = statistics.median(times[args.shape[0]])
    print(f"{args.threads} threads, {args.rounds} rounds of {args.steps} steps per shape")
    for s in args.shape:
        med = statistics.median(times[s])
        print(f"{s:>8s}  {steps[s][0]:>9,d} params  {med * 1000:7.1f} ms/step  ×{med / base:.2f}")


if __name__ == "__main__":
    main()
