"""Calibrated budgets: the decodes the parameter search spends, cheap-end-first search
(``mdm_mi.evaluation.calibrate``, 2026-12-02) against the search it replaced (bisection from the middle of the
range, budgets in increasing divisor order, 14 decodes per budget at most, naive k on a linear scale),
both run here on the same calibration split, one after the other.

    python benchmarks/bench_calibration.py --domain protein --model results/cpu-default/protein/model \
        --head results/cpu-default/protein/head --reference results/cpu-default/protein/data/reference.fasta
    python benchmarks/bench_calibration.py --domain sudoku --model results/cpu-default/sudoku/model \
        --head results/cpu-default/sudoku/head --puzzles results/cpu-default/sudoku/budgets/hard/calib.csv

Prints, per search: decodes, the passes they decoded (Σ of each decode's mean passes: the cost in
units of one pass over the split), seconds, and how far the points landed from their targets. The
protein measure here generates only (the job also embeds each set for its calibration JSD, ~3% of a
decode).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from mdm_mi.evaluation import calibrate as cal
from mdm_mi.evaluation.calibrate import Family, Point, calibrate_grid, calibrated_families
from mdm_mi.infra.config import load_config
from mdm_mi.infra.flags import Decoding
from mdm_mi.sampling.registry import SAMPLER_CLASSES

LEGACY_ITERS = 14


def legacy_calibrate(family: Family, target: float, measure, cache: dict) -> Point:
    """The search before 2026-12-02: bracket from the cache, else the whole range; regula falsi
    between measured ends, bisection otherwise (so the first step of an empty cache decodes the
    middle of the range) and every third step."""
    lo, hi = family.to_u(family.lo), family.to_u(family.hi)
    p_lo = p_hi = None
    best, decodes = None, 0

    def seen(value):
        nonlocal best
        passes = cache[value][0]
        if best is None or abs(passes / target - 1) < best[0]:
            best = (abs(passes / target - 1), value, passes, cache[value][1])
        return passes

    for value in sorted(cache):
        u, passes = family.to_u(value), seen(value)
        if (passes > target) != family.increasing and u > lo:
            lo, p_lo = u, passes
        elif (passes > target) == family.increasing and u < hi:
            hi, p_hi = u, passes
    if lo >= hi:
        (lo, hi), p_lo, p_hi = (family.to_u(family.lo), family.to_u(family.hi)), None, None
    for step in range(LEGACY_ITERS):
        if (best is not None and best[0] <= cal.DEFAULT_RTOL) or hi - lo < cal.U_TOL:
            break
        u = cal.next_u(lo, hi, p_lo, p_hi, target, bisect=step % cal.BISECT_EVERY == cal.BISECT_EVERY - 1)
        value = family.from_u(u)
        if value not in cache:
            cache[value] = measure(family.build(value))
            decodes += 1
        if (seen(value) > target) != family.increasing:
            lo, p_lo = u, cache[value][0]
        else:
            hi, p_hi = u, cache[value][0]
    _, value, passes, extra = best
    return Point(family.label, target, value, passes, decodes, extra)


def legacy_grid(families, seq_passes, divisors, measure) -> list[Point]:
    points = []
    for fam in families:
        if fam.label == "naive":
            fam = dataclasses.replace(fam, scale="linear")
        cache: dict = {}
        for d, target in sorted(cal.targets(seq_passes, divisors).items()):
            point = legacy_calibrate(fam, target, measure, cache)
            points.append(dataclasses.replace(point, extra={**point.extra, "divisor": d}))
    return points


def setup_domain(args):
    """→ (measure(sampler) → (mean passes, {}), sequential's mean passes, families), with the
    families, batch sizes and calibration size of the comparison job under ``args.config``."""
    from mdm_mi.models.loading import load_model
    from mdm_mi.models.loading import load_mi_head
    from mdm_mi.mi.guided import head_pairwise_fn

    backbone, _ = load_model(args.model, torch.device("cpu"), domain=args.domain)
    pairwise = head_pairwise_fn(load_mi_head(args.head, torch.device("cpu"), backbone))
    cfg = load_config(args.config)[args.domain]
    compare = cfg["compare"]
    if args.domain == "sudoku":
        from mdm_mi.sudoku.grid import MASK_ID
        from mdm_mi.sudoku.compare import Decoder
        from mdm_mi.sudoku.compare_jobs import SUDOKU_CELLS
        from mdm_mi.sudoku.data import load_puzzle_csv

        calib = load_puzzle_csv(args.puzzles)
        decoder = Decoder(backbone, pairwise, compare["batch_size"], seed=0)
        seq = float((calib.puzzles == MASK_ID).sum(1).mean())
        max_tokens = SUDOKU_CELLS

        def measure(sampler):
            return float(decoder(calib, sampler)[1].mean()), {}
    else:
        from mdm_mi.infra.fasta import read_fasta
        from mdm_mi.protein.generate import draw_lengths, generate
        from mdm_mi.protein.compare_jobs import MAX_PROTEIN_TOKENS

        gen_cfg = cfg["generate"]
        lengths = draw_lengths([len(s) for _, s in read_fasta(args.reference)], compare["calib_n"],
                               np.random.default_rng([0, 5]))
        seq, max_tokens = float(np.mean(lengths)), MAX_PROTEIN_TOKENS

        def measure(sampler):
            _, passes = generate(backbone, lengths, sampler, torch.Generator().manual_seed(0),
                                 decoding=Decoding(temperature=gen_cfg["temperature"]), batch_size=gen_cfg["batch_size"],
                                 pairwise_fn=pairwise if sampler.uses_pairwise else None)
            return float(passes.mean()), {}

    families = calibrated_families(max_tokens, compare | cfg["samplers"], SAMPLER_CLASSES)  # settings by config key
    return measure, seq, families


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domain", choices=("sudoku", "protein"), required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--puzzles", help="sudoku: the calibration puzzles (a comparison's calib.csv)")
    ap.add_argument("--reference", help="protein: reference FASTA (calibration lengths drawn from it)")
    ap.add_argument("--config", default="config/config.yaml", help="the samplers' settings (compare, samplers)")
    ap.add_argument("--families", nargs="*", help="labels to run (default: all)")
    ap.add_argument("--searches", nargs="+", default=["legacy", "cheap-first"], choices=("legacy", "cheap-first"),
                    help="which searches to run (the ratio line needs both)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    measure, seq, families = setup_domain(args)
    if args.families:
        families = [f for f in families if f.label in args.families]
    totals = {}
    searches = {"legacy": lambda m: legacy_grid(families, seq, cal.DIVISORS, m),
                "cheap-first": lambda m: calibrate_grid(families, seq, cal.DIVISORS, m, log=lambda _: None)}
    for name in args.searches:
        search = searches[name]
        cost = []

        def counted(sampler):
            out = measure(sampler)
            cost.append(out[0])
            return out

        t0 = time.time()
        points = search(counted)
        totals[name] = (len(cost), sum(cost), time.time() - t0)
        errors = [abs(p.passes / p.target - 1) for p in points]
        print(f"{name:12s} decodes {len(cost):4d}  passes decoded {sum(cost):8.1f}  {totals[name][2]:7.1f} s  "
              f"|passes/target - 1|: mean {np.mean(errors):.3f} max {max(errors):.3f}  "
              f"off target (> {cal.ON_TARGET_RTOL:.0%}) {sum(not p.on_target for p in points)}/{len(points)}", flush=True)
        for p in points:
            print(f"  {p.family:16s} 1/{p.extra['divisor']:<3d} {p.passes:7.2f} / {p.target:7.2f}  {p.decodes:2d} decodes")
    print(f"sequential passes {seq:.2f}; targets ÷ {cal.DIVISORS}; rtol {cal.DEFAULT_RTOL}; "
          f"Σ targets {sum(cal.targets(seq, cal.DIVISORS).values()) * len(families):.1f} (one decode per budget)")
    if len(totals) < 2:
        return
    (d0, c0, s0), (d1, c1, s1) = totals["legacy"], totals["cheap-first"]
    print(f"legacy / cheap-first: decodes {d0 / d1:.2f}x, passes decoded {c0 / c1:.2f}x, seconds {s0 / s1:.2f}x")

if __name__ == "__main__":
    main()
