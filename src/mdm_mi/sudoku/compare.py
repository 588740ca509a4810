"""Sudoku samplers compared at calibrated budgets: disjoint calibration/test splits, the search
of every parallel sampler to sequential's passes ÷ 2…10 on the calibration split, and the decode of
the test split at those settings, matched to each budget's exact test passes by
:mod:`mdm_mi.evaluation.matched` (per-puzzle outcomes for the paired tests of :mod:`mdm_mi.evaluation.budgets`).

    splits = compare_splits(radcliffe, easy, ["hard"], SplitSpec(100, 1000, (), 0, seed=0, calib_seed=0))
    runs, seconds = compare_runs(test_decoder, test, calib_decoder, calib, families, divisors)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Mapping

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.budgets import SEQUENTIAL
from mdm_mi.evaluation.calibrate import Family
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.matched import settings_summary
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison
from mdm_mi.mi.pairwise import pairwise_source, reads
from mdm_mi.sudoku.evaluate import decode_set, solved_mask
from mdm_mi.sudoku.grid import MASK_ID
from mdm_mi.sudoku.data import HARD_LEVELS, OTHER_LEVELS, PuzzleSet, graded

SETS = ("hard", "graded", "levels", "easy")
POOLS = {"hard": 0, "levels": 1, "easy": 2}  # each pool's own random streams


@dataclass(frozen=True)
class SplitSpec:
    """How the comparison sets are drawn: calibration puzzles per set, the test cap per set (graded:
    of the hard test split it is revealed from), the graded set's givens and puzzles per level
    (test), the seed of the test split and the seed of the calibration draw."""

    calib_n: int
    test_max: int
    graded_givens: tuple[int, ...]
    graded_per_level: int
    seed: int
    calib_seed: int = 0


def _split_pool(pool: PuzzleSet, spec: SplitSpec, pool_id: int) -> tuple[PuzzleSet, PuzzleSet]:
    """(calibration, test) of ``pool``: a permutation seeded by ``spec.seed`` gives the test split
    (its first ≤ ``test_max``, leaving ``calib_n``), and ``calib_n`` of the rest, drawn with
    ``spec.calib_seed``, calibrate. So the test puzzles do not depend on the calibration seed."""
    if len(pool) <= spec.calib_n:
        raise ValueError(f"a pool of {len(pool)} puzzles cannot give {spec.calib_n} calibration puzzles and a test set")
    perm = np.random.default_rng([spec.seed, 3, pool_id]).permutation(len(pool))
    n_test = min(spec.test_max or len(pool), len(pool) - spec.calib_n)
    rest = perm[n_test:]
    calib = np.random.default_rng([spec.calib_seed, 5, pool_id]).choice(rest, spec.calib_n, replace=False)
    return pool.subset(np.sort(calib)), pool.subset(np.sort(perm[:n_test]))


def compare_splits(radcliffe: PuzzleSet, easy: PuzzleSet, sets, spec: SplitSpec) -> dict[str, tuple[PuzzleSet, PuzzleSet]]:
    """set → (calibration, test), disjoint by underlying puzzle: ``hard`` from Radcliffe Hard+Expert,
    ``graded`` revealed from hard's calibration and test puzzles (so no puzzle feeds both),
    ``levels`` from Beginner/Easy/Medium, ``easy`` from the HKUNLP file. The test puzzles depend on
    ``spec.seed`` only; ``spec.calib_seed`` draws the calibration puzzles from the rest of each pool."""
    levels = np.array(radcliffe.levels)
    pools = {"hard": radcliffe.subset(np.flatnonzero(np.isin(levels, HARD_LEVELS))),
             "levels": radcliffe.subset(np.flatnonzero(np.isin(levels, OTHER_LEVELS))), "easy": easy}
    out = {}
    for name in sets:
        if name in POOLS:
            out[name] = _split_pool(pools[name], spec, POOLS[name])
        elif name == "graded":
            calib, test = _split_pool(pools["hard"], spec, POOLS["hard"])
            per_calib = math.ceil(spec.calib_n / len(spec.graded_givens))
            out[name] = (graded(calib, spec.graded_givens, per_calib, np.random.default_rng([spec.calib_seed, 6])),
                         graded(test, spec.graded_givens, spec.graded_per_level, np.random.default_rng([spec.seed, 6])))
        else:
            raise ValueError(f"unknown comparison set {name!r}; known: {', '.join(SETS)}")
    return out


@dataclass
class Decoder:
    """Decodes a puzzle set with a sampler on one model (the MI head's Î for samplers that use it, the
    TV head's T̂, ``tv_pairwise_fn``, for those whose table entry reads ``TV_HEAD``, the model's
    own attention of the pass for those reading ``ATTENTION``: DAPD, and any further source's fn in
    ``sources`` (source → (fn, identity): the quality head's for those reading ``QUALITY``, its weights'
    fingerprint keying their chunks). With a ``store``, each chunk of
    a set is decoded once and kept on disk (:mod:`mdm_mi.evaluation.chunks`: a stopped run resumes).
    With a ``cache``, backbone rows reached by an earlier decode are not computed again
    (:mod:`mdm_mi.core.forward_cache`: the settings of a calibration reach many of the same states)."""

    model: torch.nn.Module
    pairwise_fn: Callable | None
    batch_size: int
    seed: int
    tv_pairwise_fn: Callable | None = None
    store: ChunkStore | None = None
    cache: ForwardCache | None = None
    sources: Mapping[str, tuple[Callable, str]] = field(default_factory=dict)  # further source → (fn, identity)

    def __call__(self, ps: PuzzleSet, sampler) -> tuple[np.ndarray, np.ndarray]:
        """→ solved ``(P,)`` bool, passes ``(P,)`` int."""
        if self.store is None:
            out = self._decode(ps, sampler, 0, len(ps))
        else:
            part = self.sources.get(reads(sampler), (None, ""))[1]  # a source's identity keys its samplers' chunks
            out = self.store.decode(ps.puzzles, sampler, lambda start, stop: self._decode(ps, sampler, start, stop), part)
        return out["solved"], out["passes"]

    def _decode(self, ps: PuzzleSet, sampler, start: int, stop: int) -> dict[str, np.ndarray]:
        """Puzzles ``start:stop`` of ``ps`` → {solved ``(stop − start,)`` bool, passes int}."""
        part = ps.subset(np.arange(start, stop))
        loaders = {source: (lambda fn=fn: fn) for source, (fn, _) in self.sources.items()}
        with pairwise_source(self.model, sampler, self.pairwise_fn, self.tv_pairwise_fn, loaders=loaders) as fn:
            grids, passes = decode_set(self.model, part, sampler, self.batch_size, self.seed, fn, first_item=start,
                                       cache=self.cache)
        return {"solved": solved_mask(part, grids).numpy(), "passes": passes.numpy()}


def sequential_solved(model, puzzles: PuzzleSet, batch_size: int) -> tuple[np.ndarray, float]:
    """Greedy sequential decoding (entropy order, seed 0) of ``puzzles`` with the Sudoku backbone
    ``model`` (loaded by :func:`mdm_mi.models.loading.load_model`): the backbone-strength measure of the
    benchmarks → (solved ``(P,)`` bool, decode seconds)."""
    t0 = time.time()
    solved, _ = Decoder(model, None, batch_size, seed=0)(puzzles, Sequential("entropy"))
    return solved, time.time() - t0


def mean_blanks(ps: PuzzleSet) -> float:
    """Sequential's mean passes on ``ps`` (one per blank), known before any decode: the budgets are
    its fractions."""
    return float((ps.puzzles == MASK_ID).sum(1).mean())


def sequential_outcomes(decoder: Decoder, test: PuzzleSet) -> dict:
    """Sequential (entropy order) on ``test``: the run every budget divides (its passes, one per blank,
    are :func:`mean_blanks`)."""
    seq = Sequential("entropy")
    solved, passes = decoder(test, seq)
    return {"family": SEQUENTIAL, "divisor": 1, "params": seq.params(), "solved": solved, "passes": passes}


@dataclass
class SudokuTask(ComparisonTask):
    """The Sudoku comparison for :func:`mdm_mi.evaluation.runner.run_comparison`: calibrated on
    ``calib`` (accuracy kept as the calibration score: mi* picks λ by it), decoded on ``test`` and
    matched to sequential's test passes ÷ d exactly. A run: {family, divisor, params (the calibrated
    setting's), calib_target, calib_passes, calib_accuracy, calib_score, target (the test budget),
    on_target (within 3% of it in test passes), settings, solved (P,) and passes (P,) of the mixture,
    setting_solved / setting_passes (2, P)}."""

    decoder: Decoder
    test: PuzzleSet
    calib_decoder: Decoder
    calib: PuzzleSet
    matched: ClassVar[bool] = True

    def calibration_passes(self) -> float:
        return mean_blanks(self.calib)

    def test_passes(self) -> float:
        return mean_blanks(self.test)

    def measure(self, sampler) -> tuple[float, dict]:
        solved, passes = self.calib_decoder(self.calib, sampler)
        return float(passes.mean()), {"calib_accuracy": float(solved.mean())}

    def decode(self, family: Family, sampler) -> tuple[np.ndarray, np.ndarray]:
        return self.decoder(self.test, sampler)

    def reference_runs(self) -> dict[str, dict]:
        return {SEQUENTIAL: sequential_outcomes(self.decoder, self.test)}

    def test_run(self, budget: Budget) -> dict:
        point, mixed, settings = budget.point, budget.mixed, budget.settings
        return {"family": budget.family.label, "divisor": budget.divisor, "params": budget.sampler.params(),
                "calib_target": point.target, "calib_passes": point.passes,
                "calib_accuracy": point.extra["calib_accuracy"], "calib_score": point.extra["calib_accuracy"],
                "target": budget.target, "on_target": mixed["on_budget"],
                "settings": settings_summary(list(settings), mixed["weights"]),
                "solved": mixed["solved"], "passes": mixed["passes"],
                "setting_solved": np.stack([s.solved for s in settings] * (3 - len(settings)))[:2],
                "setting_passes": np.stack([s.passes for s in settings] * (3 - len(settings)))[:2]}


def compare_runs(decoder: Decoder, test: PuzzleSet, calib_decoder: Decoder, calib: PuzzleSet,
                 families: list[Family], divisors, sequential: bool = True, log=print) -> tuple[dict[str, dict], dict]:
    """``families`` calibrated on ``calib`` and decoded on ``test`` at each budget, matched to it
    (:class:`SudokuTask` through :func:`mdm_mi.evaluation.runner.run_comparison`), sequential too when
    ``sequential`` → (run id → run, seconds {calibration_s, test_s}). One call with every family, or one
    per family and one with none but sequential (the workflow's parts), make the same runs."""
    return run_comparison(SudokuTask(decoder, test, calib_decoder, calib), families, divisors, sequential, log)
