"""Sudoku backbone variants at the same training budget, paired on the same puzzles (issue: the
strongest backbone the CPU budget allows). Each variant is a checkpoint made by the project's own
``sudoku-pretrain`` verb with the CPU default's settings plus the flags that define the variant
(e.g. ``--ema 0.998`` or ``--loss-weight elbo``); this script decodes the baseline and each variant
sequentially (entropy order, greedy) on the same test puzzles and prints accuracy, training minutes
and the paired difference to the baseline (95% Newcombe interval, exact McNemar p).

    python -m mdm_mi sudoku-pretrain ... --ema 0.998 --out /tmp/variants/ema   # the default's flags + one change
    python benchmarks/backbone_strength.py --puzzles results/cpu-default/sudoku/budgets/hard/test.csv \
        --baseline resources/pretrained/sudoku --variant ema=/tmp/variants/ema
"""

from __future__ import annotations

import argparse

import torch

from mdm_mi.evaluation.paired import paired_difference
from mdm_mi.models.loading import load_model
from mdm_mi.sudoku.compare import sequential_solved
from mdm_mi.sudoku.data import load_puzzle_csv


def decode(model_dir: str, puzzles, batch_size: int) -> tuple:
    """Sequential greedy decoding of ``puzzles`` → (solved (P,) bool, training minutes, decode s)."""
    model, meta = load_model(model_dir, "cpu", "sudoku")
    solved, secs = sequential_solved(model, puzzles, batch_size)
    return solved, meta.get("metrics", {}).get("train_minutes", float("nan")), secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--puzzles", required=True, help="puzzle CSV with solutions (e.g. a comparison's test.csv)")
    ap.add_argument("--baseline", required=True, help="checkpoint folder of the baseline backbone")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FOLDER", help="a variant checkpoint")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=1000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    puzzles = load_puzzle_csv(args.puzzles)
    base, base_minutes, secs = decode(args.baseline, puzzles, args.batch_size)
    print(f"{len(puzzles)} puzzles from {args.puzzles}; sequential greedy decoding")
    print("| backbone | train minutes | solved | − baseline [95%] | McNemar p |")
    print("|---|---|---|---|---|")
    print(f"| baseline ({args.baseline}) | {base_minutes:.1f} | {base.mean():.1%} | | |")
    for spec in args.variant:
        name, _, folder = spec.partition("=")
        solved, minutes, secs = decode(folder, puzzles, args.batch_size)
        pd = paired_difference(solved, base)
        print(f"| {name} ({folder}) | {minutes:.1f} | {solved.mean():.1%} | {100 * pd.diff:+.1f} "
              f"[{100 * pd.lo:+.1f}, {100 * pd.hi:+.1f}] pp | {pd.p_value:.2g} |")


if __name__ == "__main__":
    main()
