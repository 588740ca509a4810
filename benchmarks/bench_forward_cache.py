"""The backbone-row cache (:mod:`mdm_mi.core.forward_cache`) on one part of the Sudoku comparison:
the part's calibration and matched test decodes run with the cache and without it, alternating,
``--rounds`` times each, in this process with the part's own code (``sudoku-compare-part``'s
arguments). Prints per run the CPU and wall seconds and the rows the backbone computed; then the
ratio cached / plain of each, and whether every run's per-puzzle outcomes and passes are the same.

    python benchmarks/bench_forward_cache.py --part eb --calib-puzzles 50 --test-puzzles 200
    python benchmarks/bench_forward_cache.py --part mi-l1 --model results/cpu-default/sudoku/model \
        --head results/cpu-default/sudoku/head
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import tempfile
import time

import numpy as np
import torch

from mdm_mi.cli import VERBS, build_parser
from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.evaluation.calibrate import comparison_families
from mdm_mi.sampling.registry import SAMPLER_CLASSES
from mdm_mi.sudoku.compare import compare_runs
from mdm_mi.sudoku.compare_jobs import SUDOKU_CELLS, _decoders, _splits

DATA = "resources/data/sudoku"


def cpu_model() -> str:
    for line in open("/proc/cpuinfo") if platform.system() == "Linux" else ():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def part_args(ns: argparse.Namespace, out_dir: str):
    """``sudoku-compare-part``'s dataclass for this benchmark's flags (the CLI's parser and defaults)."""
    argv = ["sudoku-compare-part", "--part", ns.part, "--model", ns.model, "--set", "hard", "--out-dir", out_dir,
            "--radcliffe", f"{DATA}/radcliffe_curated_5000.csv", "--easy", f"{DATA}/hkunlp_easy_1k.csv",
            "--calib-puzzles", str(ns.calib_puzzles), "--test-puzzles", str(ns.test_puzzles),
            "--divisors", *map(str, ns.divisors), "--batch-size", "1000", "--threads", "1", "--mi-lambda", "1.0",
            "--indep-cap", "--two-budget-delta", "--unit-disjoint-peers", "--demask-eps", "--demask-mi-eps",
            "--mi-tv-lambda", "--dapd-theta", "--wino-tau-out", "--mi-remask-kappa", "--klass-kl", "--punt-kappa", "--eb-verify-tau-out", "--on-reject", "skip", "--no-charge-first", "--bootstrap", "1000"]
    if ns.head:
        argv += ["--head", ns.head]
    parsed = build_parser().parse_args(argv)
    verb = VERBS["sudoku-compare-part"]
    return verb.args(**{f.name: getattr(parsed, f.name) for f in dataclasses.fields(verb.args)})


def one_run(args, families, splits, cached: bool) -> tuple[dict, float, float, int]:
    """The part's runs with a fresh cache or none → (runs, CPU s, wall s, rows computed)."""
    calib, test = splits
    decoder, calib_decoder, _ = _decoders(args, families)
    cache = ForwardCache() if cached else None
    decoder.cache = calib_decoder.cache = cache
    rows = [0]
    model = decoder.model
    forward = model.forward

    def counting(tokens, *a, **k):
        rows[0] += tokens.shape[0]
        return forward(tokens, *a, **k)

    model.forward = counting
    cpu, wall = time.process_time(), time.perf_counter()
    runs, _ = compare_runs(decoder, test, calib_decoder, calib, families, args.divisors,
                           sequential=args.part == "sequential", log=lambda *a, **k: None)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    model.forward = forward
    return runs, cpu, wall, rows[0]


def same_runs(a: dict, b: dict) -> bool:
    keys = ("solved", "passes", "setting_solved", "setting_passes")
    return a.keys() == b.keys() and all(
        np.array_equal(np.asarray(a[r][k]), np.asarray(b[r][k])) for r in a for k in keys if k in a[r])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="eb", help="the comparison part: sequential, eb, naive, threshold, mi-l1, ...")
    ap.add_argument("--model", default="resources/pretrained/sudoku")
    ap.add_argument("--head", default=None, help="the MI head (for the mi-l* parts)")
    ap.add_argument("--calib-puzzles", type=int, default=50)
    ap.add_argument("--test-puzzles", type=int, default=200)
    ap.add_argument("--divisors", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8, 10])
    ap.add_argument("--rounds", type=int, default=1)
    ns = ap.parse_args()
    torch.set_num_threads(1)  # as the workflow's parts run
    with tempfile.TemporaryDirectory() as tmp:
        args = part_args(ns, tmp)
        families = [f for f in comparison_families(SUDOKU_CELLS, args, SAMPLER_CLASSES) if f.slug == ns.part]
        splits = _splits(args)
        print(f"part {ns.part}: {ns.model}, {len(splits[0])} calibration and {len(splits[1])} test puzzles, "
              f"divisors {ns.divisors}; one thread; {cpu_model()}")
        results = {True: [], False: []}
        for r in range(ns.rounds):
            for cached in (True, False):  # alternating: the machine's drift hits both alike
                runs, cpu, wall, rows = one_run(args, families, splits, cached)
                results[cached].append((runs, cpu, wall, rows))
                print(f"round {r + 1} {'cached' if cached else 'plain '}: {cpu:7.1f} CPU s {wall:7.1f} s wall, "
                      f"{rows:,} rows computed", flush=True)
    ref = results[False][0][0]
    same = all(same_runs(ref, runs) for kept in results.values() for runs, *_ in kept)
    cpu = {c: statistics.median(x[1] for x in v) for c, v in results.items()}
    wall = {c: statistics.median(x[2] for x in v) for c, v in results.items()}
    rows = {c: statistics.median(x[3] for x in v) for c, v in results.items()}
    print(f"cached / plain: CPU {cpu[True] / cpu[False]:.3f}, wall {wall[True] / wall[False]:.3f}, "
          f"rows computed {rows[True] / rows[False]:.3f}; same outcomes and passes: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
