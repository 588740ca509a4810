"""Issue 63's development screen on the paper-shape Sudoku backbone: which rule, at which setting, comes
closest to sequential's accuracy at its passes ÷ 4, ÷ 8 and ÷ 12, on puzzles the registered test set never
sees (the project's own puzzle maker), so that the rule a confirmatory run tests is chosen here and only
here.

Every rule goes through the one comparison runner (``SudokuTask`` in :mod:`mdm_mi.sudoku.compare`:
calibrated on the calibration split, matched to the budget on the dev-test split), decoded greedily as
the comparisons are; each chunk of 100 puzzles is kept in ``--chunks`` so a stopped screen resumes. Beside
passes and accuracy it records each rule's wall-clock seconds per puzzle at the matched settings, at
batch 1 (``--timing-puzzles`` puzzles one by one) and at the screen's batch size.

    python benchmarks/dev_screen.py --model resources/pretrained/sudoku-paper --out docs/data/dev-screen \
        --chunks resources/resume/dev-screen --puzzles 600 --calib 100 --divisors 4 8 12
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.calibrate import calibrated_families
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.paired import paired_difference
from mdm_mi.evaluation.runner import run_comparison
from mdm_mi.infra.checkpoint import read_meta
from mdm_mi.infra.io import write_json
from mdm_mi.infra.runtime import cpu_model
from mdm_mi.core.sampler_spec import QUALITY
from mdm_mi.models.loading import compute_fingerprint, load_model, model_fingerprint, weights_identity
from mdm_mi.quality.head import load_quality_head, quality_fn
from mdm_mi.sampling.registry import SAMPLER_CLASSES
from mdm_mi.sudoku.compare import Decoder, SudokuTask
from mdm_mi.sudoku.report import screen_figure
from mdm_mi.sudoku.data import PuzzleSet
from mdm_mi.sudoku.puzzle_maker import make_puzzles, search_nodes

HARD_NODES = 140  # the solver's nodes: the lower quartile of Radcliffe's Hard puzzles (Expert's: 190)
SETTINGS = {"wino_tau_out": [0.5, 0.9], "eb_verify_tau_out": [0.5, 0.9], "klass_kl": [0.01, 0.05], "mi_lambda": [],
            "mi_on_reject": "skip", "mi_charge_first": False}  # the head-free rules: the swept settings screened
QUALITY_SETTINGS = {"prism_tau_out": [0.0, 0.5], "eb_prism_tau_out": [0.2, 0.5]}  # with --quality-head


def dev_puzzles(n: int, seed: int, min_nodes: int = HARD_NODES) -> PuzzleSet:
    """``n`` unique-solution puzzles from the project's own maker, seeded apart from every data file of
    the project, kept only when the solver needs at least ``min_nodes`` search nodes
    (:func:`mdm_mi.sudoku.puzzle_maker.search_nodes`, a model-free difficulty): the maker's own puzzles
    are mostly easy, and the screen must look like the registered Hard+Expert test set."""
    rng = np.random.default_rng([seed, 63])
    kept_p, kept_s = [], []
    while sum(map(len, kept_p)) < n:
        puzzles, solutions = make_puzzles(500, rng)
        hard = np.array([search_nodes(p) >= min_nodes for p in puzzles])
        kept_p.append(puzzles[hard])
        kept_s.append(solutions[hard])
    puzzles, solutions = np.concatenate(kept_p)[:n], np.concatenate(kept_s)[:n]
    return PuzzleSet(puzzles.astype(np.int64), solutions.astype(np.int64), ["maker-hard"] * n)


def quality_sources(folder, model_dir, model) -> dict:
    """A Sudoku ``Decoder``'s ``sources`` with the quality head in ``folder`` (refused unless trained on the
    model in ``model_dir``): its fn on ``model``, and its weights' fingerprint keying its rules' chunks."""
    head = load_quality_head(folder, model_fingerprint(model_dir))
    return {QUALITY: (quality_fn(head, model), compute_fingerprint(folder, read_meta(folder)))}


def timing(model, puzzles: PuzzleSet, sampler, batch: int, sources=None) -> float:
    """Wall-clock seconds per puzzle of one greedy decode of ``puzzles`` at ``batch`` puzzles per call
    (``sources``: the decoder's further side sources, e.g. the quality head's)."""
    t0 = time.perf_counter()
    Decoder(model, None, batch, 0, sources=sources or {})(puzzles, sampler)
    return (time.perf_counter() - t0) / len(puzzles)


def add_contrasts(summary: dict, solved: dict[str, np.ndarray]) -> None:
    """Each run of ``summary`` (run id → record) paired on the same puzzles against sequential and against
    EB at its budget (``solved``: run id → ``(P,)`` outcomes): ``vs_sequential`` and ``vs_eb`` {diff, lo,
    hi, p} (Newcombe interval, exact McNemar p for one setting, sign-flip for a mixture)."""
    for run_id, record in summary.items():
        eb = f"eb@1/{record['divisor']}"
        for name, other in (("vs_sequential", "sequential"), ("vs_eb", eb)):
            if other in solved and other != run_id:
                pd = paired_difference(solved[run_id], solved[other])
                record[name] = {"diff": pd.diff, "lo": pd.lo, "hi": pd.hi, "p": pd.p_value}


def contrasts_only(out: Path) -> None:
    """Add the paired contrasts to an existing ``screen.json`` from its ``outcomes.npz`` (no decoding)."""
    screen = json.loads((out / "screen.json").read_text())
    with np.load(out / "outcomes.npz") as saved:
        solved = dict(zip(saved["names"].tolist(), saved["solved"]))
    add_contrasts(screen["runs"], solved)
    write_json(out / "screen.json", screen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--chunks", type=Path)
    ap.add_argument("--puzzles", type=int, default=600)
    ap.add_argument("--calib", type=int, default=100)
    ap.add_argument("--divisors", type=int, nargs="+", default=[4, 8, 12])
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--timing-puzzles", type=int, default=5, help="puzzles decoded one by one for the batch-1 time")
    ap.add_argument("--timing-batch", type=int, default=100, help="puzzles decoded in one batch for the batched time")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--contrasts-only", action="store_true", help="add the paired contrasts to --out's screen.json")
    ap.add_argument("--quality-head", help="a quality head of --model (benchmarks/quality_head.py): screen its rules too")
    ap.add_argument("--families", nargs="+", help="screen only these family labels (default: every one)")
    ap.add_argument("--figure", type=Path, help="draw accuracy against passes of --out's screen and --also's to this file")
    ap.add_argument("--also", type=Path, nargs="*", default=[], help="further screen.json files for --figure")
    ap.add_argument("--figure-only", action="store_true", help="draw --figure from the existing screens (no decoding)")
    args = ap.parse_args()
    if args.contrasts_only:
        return contrasts_only(args.out)
    if args.figure_only:
        return screen_figure([args.out / "screen.json", *args.also], args.figure)
    torch.set_num_threads(args.threads)
    model, _ = load_model(args.model, "cpu", "sudoku")
    every = dev_puzzles(args.puzzles, args.seed)
    calib, test = every.subset(np.arange(args.calib)), every.subset(np.arange(args.calib, args.puzzles))
    store = None if args.chunks is None else ChunkStore(args.chunks, weights_identity(args.model, (), torch.device("cpu")))
    cache = ForwardCache()
    sources, settings = {}, dict(SETTINGS)
    if args.quality_head:
        sources = quality_sources(args.quality_head, args.model, model)
        settings |= QUALITY_SETTINGS
    decoder = Decoder(model, None, args.batch_size, args.seed, None, store, cache, sources)
    calib_decoder = Decoder(model, None, args.batch_size, args.seed + 1, None, store, cache, sources)
    families = calibrated_families(81, settings, SAMPLER_CLASSES)
    if args.families:
        unknown = set(args.families) - {f.label for f in families}
        if unknown:
            raise SystemExit(f"--families: no family {sorted(unknown)}; known: {[f.label for f in families]}")
        families = [f for f in families if f.label in args.families]
    t0 = time.time()
    runs, seconds = run_comparison(SudokuTask(decoder, test, calib_decoder, calib), families, args.divisors)
    summary = {}
    for run_id, run in runs.items():
        summary[run_id] = {"family": run["family"], "divisor": run["divisor"], "accuracy": float(np.mean(run["solved"])),
                           "passes": float(np.mean(run["passes"])), "on_target": run.get("on_target", True),
                           "settings": run.get("settings", [])}
    add_contrasts(summary, {k: r["solved"] for k, r in runs.items()})
    one, many = (test.subset(np.arange(min(n, len(test)))) for n in (args.timing_puzzles, args.timing_batch))
    by_label = {f.label: f for f in families}
    for run_id, run in runs.items():  # each rule at its first matched setting, timed at batch 1 and batched
        sampler = (Sequential("entropy") if run_id == "sequential"
                   else by_label[run["family"]].cls(**run["settings"][0]["params"]))
        summary[run_id] |= {"seconds_per_puzzle_batch1": timing(model, one, sampler, 1, sources),
                            "seconds_per_puzzle_batched": timing(model, many, sampler, args.timing_batch, sources)}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "screen.json", {"runs": summary, "seconds": seconds, "wall_seconds": time.time() - t0,
                                          "cpu": cpu_model(), "threads": args.threads, "n_calib": len(calib),
                                          "n_test": len(test), "divisors": args.divisors, "settings": settings,
                                          "quality_head": args.quality_head,
                                          "timing": {"batch1_puzzles": len(one), "batched_puzzles": len(many)},
                                          "chunks": None if store is None else store.record()})
    np.savez(args.out / "outcomes.npz", names=np.array(list(runs)),
             solved=np.stack([np.asarray(r["solved"], dtype=float) for r in runs.values()]),
             passes=np.stack([np.asarray(r["passes"], dtype=float) for r in runs.values()]))
    for run_id, r in summary.items():
        print(f"{run_id}: {100 * r['accuracy']:.1f}% @ {r['passes']:.2f} passes")
    if args.figure:
        screen_figure([args.out / "screen.json", *args.also], args.figure)


if __name__ == "__main__":
    main()
