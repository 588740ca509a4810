"""Sudoku pretraining throughput (issue 26): one optimisation step at a shape under several settings,
timed in alternating rounds in one process, beside a pure-matmul lower bound of the same shape.

    python benchmarks/bench_train_throughput.py --shape 128x4 --threads 2

Variants (each a full AdamW step on the default's batch: flat loss, augmentation, 8 heads, ff ×4):

- ``eager``: no compilation (fp32);
- ``compile``: ``torch.compile`` default mode (what ``sudoku-pretrain --compile`` does);
- ``compile-bf16``: the same under CPU bf16 autocast (weights and optimiser stay fp32);
- ``compile-maxat``: ``torch.compile(mode="max-autotune-no-cudagraphs")``;
- ``compile-prefetch``: ``compile`` with the batch (sampling + augmentation + masking) drawn
  beforehand, i.e. the cost if data preparation were entirely off the critical path.

Also printed: the data preparation alone, and the matmul lower bound — the step's dense matmuls
(QKV, output projection, both feed-forward layers, the read-out; forward and the two backward
products each) run back to back at the same shapes with nothing else, fp32 and bf16. Every time is
the median over rounds; ratios are to ``compile``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from mdm_mi.sudoku.grid import N_CELLS, N_DIGITS
from mdm_mi.sudoku.model import ModelConfig, SudokuMDM, n_params
from mdm_mi.sudoku.train import TrainConfig, augment, diffusion_loss, mask_batch

CFG = TrainConfig(steps=0, batch_size=128, lr=2e-3, warmup=0, weight_decay=0.01, t_min=0.05, t_max=1.0,
                  loss_weight="none", augment=True, grad_clip=1.0, seed=0, log_every=0, compile=True, ema=0.0, save_every=0, snapshot_every=0)
VARIANTS = ("eager", "compile", "compile-bf16", "compile-maxat", "compile-prefetch")


def make_step(variant: str, d: int, layers: int, pool: torch.Tensor, batch: int):
    """A closure running one AdamW step of ``variant``."""
    torch.manual_seed(0)
    model = SudokuMDM(ModelConfig(d_model=d, n_layers=layers, n_heads=8, ff_mult=4, dropout=0.0, hidden_layer=-1))
    if variant == "eager":
        forward = model.forward_all
    elif variant == "compile-maxat":
        forward = torch.compile(model.forward_all, mode="max-autotune-no-cudagraphs")
    else:
        forward = torch.compile(model.forward_all)
    opt = torch.optim.AdamW(model.parameters(), lr=CFG.lr, weight_decay=CFG.weight_decay)
    gen = torch.Generator().manual_seed(0)
    bf16 = variant == "compile-bf16"
    ready = [augment(pool[torch.randint(len(pool), (batch,), generator=gen)], gen) for _ in range(4)]
    count = [0]

    def step() -> None:
        if variant == "compile-prefetch":
            grids = ready[count[0] % len(ready)]
            count[0] += 1
        else:
            grids = augment(pool[torch.randint(len(pool), (batch,), generator=gen)], gen)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = diffusion_loss(forward, grids, CFG, gen, "cpu")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CFG.grad_clip)
        opt.step()

    return n_params(model), step


def data_step(pool: torch.Tensor, batch: int):
    """Sampling, augmentation and masking of one batch, nothing else."""
    gen = torch.Generator().manual_seed(1)

    def step() -> None:
        grids = augment(pool[torch.randint(len(pool), (batch,), generator=gen)], gen)
        mask_batch(grids, CFG, gen)

    return step


def matmul_bound(d: int, layers: int, tokens: int, dtype: torch.dtype):
    """The step's dense matmuls (forward, grad-input, grad-weight) at the model's shapes."""
    shapes = [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)] * layers + [(d, N_DIGITS)]
    xs = [torch.randn(tokens, i, dtype=dtype) for i, _ in shapes]
    ws = [torch.randn(i, o, dtype=dtype) for i, o in shapes]
    gs = [torch.randn(tokens, o, dtype=dtype) for _, o in shapes]

    def step() -> None:
        for x, w, g in zip(xs, ws, gs):
            x @ w
            g @ w.T
            x.T @ g

    flops = sum(6 * tokens * i * o for i, o in shapes)
    return flops, step


def timed(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solutions", default="results/cpu-default/sudoku/data/train_solutions.npy")
    ap.add_argument("--shape", default="128x4", help="d_model x n_layers")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--variant", action="append", choices=VARIANTS, help="default: all")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per variant per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d, layers = (int(x) for x in args.shape.split("x"))
    pool = torch.as_tensor(np.load(args.solutions, allow_pickle=False), dtype=torch.long)
    variants = args.variant or list(VARIANTS)
    steps = {}
    for v in variants:
        t0 = time.perf_counter()
        steps[v] = make_step(v, d, layers, pool, args.batch)
        for _ in range(3):  # compile and warm up
            steps[v][1]()
        print(f"{v}: built and warmed up in {time.perf_counter() - t0:.0f} s", flush=True)
    tokens = args.batch * N_CELLS
    extra = {"data only": data_step(pool, args.batch)}
    bounds = {f"matmul bound {n}": matmul_bound(d, layers, tokens, dt) for n, dt in
              (("fp32", torch.float32), ("bf16", torch.bfloat16))}
    extra |= {k: f for k, (_, f) in bounds.items()}
    for f in extra.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in [*steps, *extra]}
    for _ in range(args.rounds):
        for k, (_, f) in steps.items():
            times[k].append(timed(f, args.steps))
        for k, f in extra.items():
            times[k].append(timed(f, args.steps))
    base = statistics.median(times["compile"]) if "compile" in times else None
    print(f"shape {args.shape}, batch {args.batch} ({tokens:,} tokens), {args.threads} threads, "
          f"{args.rounds} rounds of {args.steps} steps; {n_params(SudokuMDM(ModelConfig(d, layers, 8, 4, 0.0, -1))):,} params")
    for k, ts in times.items():
        med = statistics.median(ts)
        ratio = f"×{med / base:.2f} of compile" if base else ""
        flops = f"  {bounds[k][0] / med / 1e9:6.1f} GFLOP/s" if k in bounds else ""
        print(f"{k:>20s}  {med * 1000:8.1f} ms/step  {tokens / med:9,.0f} tokens/s  {ratio}{flops}")


if __name__ == "__main__":
    main()
