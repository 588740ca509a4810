"""Sampler throughput on real hard puzzles, measured in one run: puzzles per second, mean passes
and accuracy for each sampler, and each one's speed-up over sequential decoding.

    python benchmarks/bench_samplers.py --checkpoint results/cpu-default/sudoku/model \
        --head results/cpu-default/sudoku/head --puzzles results/cpu-default/sudoku/data/hard.csv --n 200
"""

from __future__ import annotations

import argparse
import time

import torch

from mdm_mi.models.loading import load_mi_head
from mdm_mi.models.loading import load_model

from mdm_mi.mi.guided import head_pairwise_fn
from mdm_mi.sampling.registry import build_sampler
from mdm_mi.sudoku.evaluate import decode_set, score
from mdm_mi.sudoku.data import load_puzzle_csv

SETTINGS = [  # (sampler, params)
    ("sequential", {"order": "entropy"}),
    ("naive", {"k": 4}),
    ("eb", {"gamma": 0.3}),
    ("mi", {"gamma": 0.3, "lam": 1.0, "on_reject": "skip", "charge_first": False}),
]


def _sync(device: str) -> None:
    """Wait for queued GPU work, so that wall time covers it."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--puzzles", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu | cuda")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, _ = load_model(args.checkpoint, device=args.device)
    head = load_mi_head(args.head, args.device)
    ps = load_puzzle_csv(args.puzzles)
    ps = ps.subset(range(min(args.n, len(ps))))
    base = None
    print(f"{'sampler':<12}{'params':<44}{'puzzles/s':>10}{'passes':>8}{'acc %':>7}{'speed-up':>9}")
    for name, params in SETTINGS:
        pairwise = head_pairwise_fn(head) if name == "mi" else None
        _sync(args.device)
        start = time.perf_counter()
        grids, passes = decode_set(model, ps, build_sampler(name, **params), args.batch, 0, pairwise)
        _sync(args.device)
        rate = len(ps) / (time.perf_counter() - start)
        base = base or rate
        acc = 100 * sum(r["solved"] for r in score(ps, grids, passes)) / len(ps)
        print(f"{name:<12}{str(params):<44}{rate:>10.2f}{passes.float().mean():>8.1f}{acc:>7.1f}{rate / base:>9.2f}")


if __name__ == "__main__":
    main()
