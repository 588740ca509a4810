"""bf16 autocast against fp32 for Sudoku decoding, measured in one run on the same puzzles: puzzles
per second of each, the speed-up, and whether the answers change (paired accuracy difference, exact
McNemar p, share of puzzles whose solved/unsolved outcome differs).

    python benchmarks/bench_bf16.py --model results/cpu-default/sudoku/model \
        --puzzles results/cpu-default/sudoku/budgets/hard/test.csv --n 300 --threads 1
"""

from __future__ import annotations

import argparse
import time

import torch

from mdm_mi.backbone import Bf16Backbone
from mdm_mi.domain import load_backbone
from mdm_mi.paired import mcnemar_exact
from mdm_mi.samplers import EntropyBounded, Sequential
from mdm_mi.sudoku.compare import Decoder
from mdm_mi.sudoku.data import load_puzzle_csv

SAMPLERS = [("sequential", Sequential("entropy")), ("eb γ=0.05", EntropyBounded(0.05)), ("eb γ=1", EntropyBounded(1.0))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--puzzles", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ps = load_puzzle_csv(args.puzzles)
    ps = ps.subset(range(min(args.n, len(ps))))
    model, _ = load_backbone(args.model, "cpu", domain="sudoku")
    fp32, bf16 = Decoder(model, None, 500, 0), Decoder(Bf16Backbone(model), None, 500, 0)
    print(f"{len(ps)} puzzles, {args.threads} thread(s)")
    for name, sampler in SAMPLERS:
        t0 = time.time()
        a, pa = fp32(ps, sampler)
        t1 = time.time()
        b, pb = bf16(ps, sampler)
        t2 = time.time()
        flips_up, flips_down = int((b & ~a).sum()), int((~b & a).sum())
        print(f"{name:12s} fp32 {len(ps) / (t1 - t0):6.1f} puzzles/s, bf16 {len(ps) / (t2 - t1):6.1f} puzzles/s "
              f"(×{(t1 - t0) / (t2 - t1):.2f}); acc fp32 {a.mean():.3f} bf16 {b.mean():.3f} "
              f"(diff {100 * (b.mean() - a.mean()):+.1f} pp, McNemar p={mcnemar_exact(flips_up, flips_down):.2f}, "
              f"{100 * (a != b).mean():.1f}% of outcomes differ); passes {pa.mean():.2f} vs {pb.mean():.2f}")


if __name__ == "__main__":
    main()
