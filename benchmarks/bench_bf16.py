"""bf16 autocast against fp32 for decoding, measured in one run on the same inputs.

Sudoku: puzzles per second of each, the speed-up, and whether the answers change (paired accuracy
difference, exact McNemar p, share of puzzles whose solved/unsolved outcome differs).

    python benchmarks/bench_bf16.py --model results/cpu-default/sudoku/model \
        --puzzles results/cpu-default/sudoku/budgets/hard/test.csv --n 300 --threads 1

Proteins (``--data-dir``: prepare-family's folder): sequential decoding of the same reference lengths
with the same generator seed in fp32 and in bf16, the speed-up, and the family scores of both sets
(HMM pass rate, f_i r, C_ij r, corrected-MI r against the reference; :func:`family_scores`), so that
the protein comparison's bf16 decoding is checked against fp32 rather than assumed equal.

    python benchmarks/bench_bf16.py --model resources/pretrained/protein-kunitz \
        --data-dir results/cpu-default/protein/data --n 630 --threads 1
"""

from __future__ import annotations

import argparse
import time

import torch

from mdm_mi.core.backbone import Bf16Backbone
from mdm_mi.core.samplers import EntropyBounded, Sequential
from mdm_mi.evaluation.paired import mcnemar_exact
from mdm_mi.infra.flags import Decoding
from mdm_mi.models.loading import load_model
from mdm_mi.sudoku.compare import Decoder
from mdm_mi.sudoku.data import load_puzzle_csv

SAMPLERS = [("sequential", Sequential("entropy")), ("eb γ=0.05", EntropyBounded(0.05)), ("eb γ=1", EntropyBounded(1.0))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--puzzles", help="Sudoku: puzzle CSV")
    ap.add_argument("--data-dir", help="proteins: prepare-family's folder (splits and reference)")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.data_dir:
        return proteins(args)
    if not args.puzzles:
        ap.error("give --puzzles (Sudoku) or --data-dir (proteins)")
    ps = load_puzzle_csv(args.puzzles)
    ps = ps.subset(range(min(args.n, len(ps))))
    model, _ = load_model(args.model, "cpu", "sudoku")
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


PROTEIN_SCORES = ("hmm_pass_rate", "f_i_r", "c_ij_r", "corrected_mi_r", "mean_pairwise_identity")


def proteins(args) -> None:
    """Sequential decoding of ``--n`` reference lengths in fp32 and bf16 (same seed), timed and scored."""
    import numpy as np

    from mdm_mi.core.backbone import for_decoding
    from mdm_mi.protein.family.jobs import family_scores, read_splits
    from mdm_mi.protein.generate import draw_lengths, generate

    train, val, reference, _ = read_splits(args.data_dir)
    lengths = draw_lengths([len(r.sequence) for r in reference], args.n, np.random.default_rng([0, 6]))
    model, _ = load_model(args.model, "cpu", "protein")
    print(f"{args.n} proteins (reference lengths), sequential, {args.threads} thread(s)")
    sets, seconds = {}, {}
    for name, bf16 in (("fp32", False), ("bf16", True)):
        t0 = time.time()
        sets[name], _ = generate(for_decoding(model, bf16), lengths, Sequential("entropy"), torch.Generator().manual_seed(1),
                                 decoding=Decoding(temperature=1.0))
        seconds[name] = time.time() - t0
    same = np.mean([a == b for a, b in zip(sets["fp32"], sets["bf16"])])
    print(f"fp32 {seconds['fp32']:.0f} s, bf16 {seconds['bf16']:.0f} s (×{seconds['fp32'] / seconds['bf16']:.2f}); "
          f"{100 * same:.0f}% of sequences identical")
    for name, seqs in sets.items():
        scores = family_scores(seqs, train, val, reference, 15, 0)
        print(f"{name}: " + ", ".join(f"{k} {scores[k]:.3f}" for k in PROTEIN_SCORES))


if __name__ == "__main__":
    main()
