"""Sudoku samplers compared at calibrated budgets: disjoint calibration/test splits, the search
of every parallel sampler to sequential's passes ÷ 2…10 on the calibration split, and the decode of
the test split at those settings (per-puzzle outcomes for the paired tests of
:mod:`mdm_mi.budgets`).

    splits = compare_splits(radcliffe, easy, ["hard"], calib_n=200, test_max=1800, ...)
    result = compare_set(model, *splits["hard"], families, divisors, head_fn, batch_size=500, seed=0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from mdm_mi.calibrate import Family, Point, calibrate_grid
from mdm_mi.samplers import Sequential
from mdm_mi.sudoku.data import HARD_LEVELS, OTHER_LEVELS, PuzzleSet, graded
from mdm_mi.sudoku.evaluate import decode_set, solved_mask
from mdm_mi.sudoku.grid import MASK_ID

SEQUENTIAL = "sequential"
SETS = ("hard", "graded", "levels", "easy")


@dataclass(frozen=True)
class SplitSpec:
    """How the comparison sets are drawn: calibration puzzles per set, the test cap per set, the
    graded set's givens and puzzles per level (test), and the seed."""

    calib_n: int
    test_max: int
    graded_givens: tuple[int, ...]
    graded_per_level: int
    seed: int


def _split_pool(pool: PuzzleSet, calib_n: int, test_max: int, rng) -> tuple[PuzzleSet, PuzzleSet]:
    """A seeded permutation of ``pool``: the first ``calib_n`` calibrate, the next ≤ ``test_max`` test."""
    perm = rng.permutation(len(pool))
    if len(pool) <= calib_n:
        raise ValueError(f"a pool of {len(pool)} puzzles cannot give {calib_n} calibration puzzles and a test set")
    return pool.subset(np.sort(perm[:calib_n])), pool.subset(np.sort(perm[calib_n:calib_n + test_max]))


def compare_splits(radcliffe: PuzzleSet, easy: PuzzleSet, sets, spec: SplitSpec) -> dict[str, tuple[PuzzleSet, PuzzleSet]]:
    """set → (calibration, test), disjoint by underlying puzzle: ``hard`` from Radcliffe Hard+Expert,
    ``graded`` revealed from the same calibration/test halves of that pool (so no puzzle feeds both),
    ``levels`` from Beginner/Easy/Medium, ``easy`` from the HKUNLP file."""
    rng = np.random.default_rng([spec.seed, 3])
    levels = np.array(radcliffe.levels)
    hard_pool = radcliffe.subset(np.flatnonzero(np.isin(levels, HARD_LEVELS)))
    hard = _split_pool(hard_pool, spec.calib_n, len(hard_pool), rng)
    out = {}
    for name in sets:
        if name == "hard":
            out[name] = hard[0], hard[1].subset(np.arange(min(spec.test_max, len(hard[1]))))
        elif name == "graded":
            per_calib = math.ceil(spec.calib_n / len(spec.graded_givens))
            out[name] = (graded(hard[0], spec.graded_givens, per_calib, rng),
                         graded(hard[1], spec.graded_givens, spec.graded_per_level, rng))
        elif name == "levels":
            out[name] = _split_pool(radcliffe.subset(np.flatnonzero(np.isin(levels, OTHER_LEVELS))),
                                    spec.calib_n, spec.test_max, rng)
        elif name == "easy":
            out[name] = _split_pool(easy, spec.calib_n, spec.test_max, rng)
        else:
            raise ValueError(f"unknown comparison set {name!r}; known: {', '.join(SETS)}")
    return out


@dataclass
class Decoder:
    """Decodes a puzzle set with a sampler on one model (the MI head's Î for samplers that use it)."""

    model: torch.nn.Module
    pairwise_fn: Callable | None
    batch_size: int
    seed: int

    def __call__(self, ps: PuzzleSet, sampler) -> tuple[np.ndarray, np.ndarray]:
        """→ solved ``(P,)`` bool, passes ``(P,)`` int."""
        fn = self.pairwise_fn if sampler.uses_pairwise else None
        grids, passes = decode_set(self.model, ps, sampler, self.batch_size, self.seed, fn)
        return solved_mask(ps, grids).numpy(), passes.numpy()


def calibrate_families(decoder: Decoder, calib: PuzzleSet, families: list[Family], divisors,
                       log=print) -> tuple[float, list[Point]]:
    """Sequential's passes on ``calib`` (one per blank) and every family's point at each
    ``sequential ÷ d``; each point carries its calibration accuracy in ``extra``."""
    seq_passes = float((calib.puzzles == MASK_ID).sum(1).mean())

    def measure(sampler):
        solved, passes = decoder(calib, sampler)
        return float(passes.mean()), {"calib_accuracy": float(solved.mean())}

    return seq_passes, calibrate_grid(families, seq_passes, divisors, measure, log)


def decode_test(decoder: Decoder, test: PuzzleSet, families: list[Family], points: list[Point]) -> dict[str, dict]:
    """Decode ``test`` with sequential and every calibrated point → run id → {family, divisor,
    params, solved (P,), passes (P,)}; run ids are ``<family>@1/<d>``."""
    by_label = {f.label: f for f in families}
    seq = Sequential("entropy")
    solved, passes = decoder(test, seq)
    runs = {SEQUENTIAL: {"family": SEQUENTIAL, "divisor": 1, "params": seq.params(), "solved": solved,
                         "passes": passes}}
    for point in points:
        fam, d = by_label[point.family], point.extra["divisor"]
        sampler = fam.build(point.value)
        solved, passes = decoder(test, sampler)
        runs[f"{fam.label}@1/{d}"] = {"family": fam.label, "divisor": d, "params": sampler.params(),
                                      "calib_passes": point.passes, "calib_accuracy": point.extra["calib_accuracy"],
                                      "calib_score": point.extra["calib_accuracy"],
                                      "target": point.target, "on_target": point.on_target,
                                      "solved": solved, "passes": passes}
    return runs
