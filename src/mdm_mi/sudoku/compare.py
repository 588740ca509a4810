"""Sudoku samplers compared at calibrated budgets: disjoint calibration/test splits, the search
of every parallel sampler to sequential's passes ÷ 2…10 on the calibration split, and the decode of
the test split at those settings, matched to each budget's exact test passes by
:mod:`mdm_mi.evaluation.matched` (per-puzzle outcomes for the paired tests of :mod:`mdm_mi.evaluation.budgets`).

    splits = compare_splits(radcliffe, easy, ["hard"], SplitSpec(100, 1000, (), 0, seed=0, calib_seed=0))
    seq_passes, points, caches = calibrate_families(calib_decoder, calib, families, divisors)
    runs = decode_matched(test_decoder, test, calib_decoder, calib, families, points, caches, seq_passes)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.calibrate import Family, Point, calibrate_grid
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.matched import bracket_settings, mixture, settings_summary
from mdm_mi.infra.progress import Progress
from mdm_mi.mi.dapd import pairwise_source
from mdm_mi.sudoku.evaluate import decode_set, solved_mask
from mdm_mi.sudoku.grid import MASK_ID
from mdm_mi.sudoku.data import HARD_LEVELS, OTHER_LEVELS, PuzzleSet, graded

SEQUENTIAL = "sequential"
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
    TV head's T̂, ``tv_pairwise_fn``, for those whose table entry reads ``TV_HEAD``, and the model's
    own attention of the pass for those reading ``ATTENTION``: DAPD). With a ``store``, each chunk of
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

    def __call__(self, ps: PuzzleSet, sampler) -> tuple[np.ndarray, np.ndarray]:
        """→ solved ``(P,)`` bool, passes ``(P,)`` int."""
        if self.store is None:
            out = self._decode(ps, sampler, 0, len(ps))
        else:
            out = self.store.decode(ps.puzzles, sampler, lambda start, stop: self._decode(ps, sampler, start, stop))
        return out["solved"], out["passes"]

    def _decode(self, ps: PuzzleSet, sampler, start: int, stop: int) -> dict[str, np.ndarray]:
        """Puzzles ``start:stop`` of ``ps`` → {solved ``(stop − start,)`` bool, passes int}."""
        part = ps.subset(np.arange(start, stop))
        with pairwise_source(self.model, sampler, self.pairwise_fn, self.tv_pairwise_fn) as fn:
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


def calibration_measure(decoder: Decoder, calib: PuzzleSet):
    """sampler → (mean passes on ``calib``, {calib_accuracy}): what calibration measures."""
    def measure(sampler):
        solved, passes = decoder(calib, sampler)
        return float(passes.mean()), {"calib_accuracy": float(solved.mean())}

    return measure


def mean_blanks(ps: PuzzleSet) -> float:
    """Sequential's mean passes on ``ps`` (one per blank), known before any decode: the budgets are
    its fractions."""
    return float((ps.puzzles == MASK_ID).sum(1).mean())


def calibrate_families(decoder: Decoder, calib: PuzzleSet, families: list[Family], divisors,
                       log=print) -> tuple[float, list[Point], dict[str, dict]]:
    """Sequential's passes on ``calib`` (one per blank), every family's point at each
    ``sequential ÷ d`` (each carrying its calibration accuracy in ``extra``) and each family's
    decode cache (label → value → result), which :func:`decode_matched` extends."""
    seq_passes = mean_blanks(calib)
    caches: dict[str, dict] = {}
    points = calibrate_grid(families, seq_passes, divisors, calibration_measure(decoder, calib), log, caches)
    return seq_passes, points, caches


def decode_matched(decoder: Decoder, test: PuzzleSet, calib_decoder: Decoder, calib: PuzzleSet,
                   families: list[Family], points: list[Point], caches: dict[str, dict], seq_calib: float,
                   log=print, sequential: bool = True) -> dict[str, dict]:
    """Decode ``test`` with sequential (when ``sequential``) and every calibrated point, each matched to
    its budget — sequential's mean test passes (:func:`mean_blanks`) ÷ d — by
    :func:`mdm_mi.evaluation.matched.bracket_settings` (a second setting calibrated on ``calib`` when
    needed) → run id → {family, divisor, params (the calibrated setting's), target (the test budget),
    settings, on_target (within 3% of it in test passes), solved (P,) and passes (P,) of the mixture,
    setting_solved / setting_passes (2, P)}; run ids are ``<family>@1/<d>``. No run depends on
    another family's: the parts of :func:`compare_runs` merge into the whole."""
    by_label = {f.label: f for f in families}
    seq_test = mean_blanks(test)
    runs = {SEQUENTIAL: sequential_outcomes(decoder, test)} if sequential else {}
    measure = calibration_measure(calib_decoder, calib)
    line = Progress("test decodes", len(points))  # how far, and the time left
    for n, point in enumerate(points, 1):
        fam, d = by_label[point.family], point.extra["divisor"]
        budget = seq_test / d
        settings = bracket_settings(fam, point, budget, lambda sampler: decoder(test, sampler), measure,
                                    caches.setdefault(fam.label, {}), seq_calib)
        mixed = mixture(settings, budget)
        runs[f"{fam.label}@1/{d}"] = {
            "family": fam.label, "divisor": d, "params": fam.build(point.value).params(),
            "calib_target": point.target, "calib_passes": point.passes,
            "calib_accuracy": point.extra["calib_accuracy"], "calib_score": point.extra["calib_accuracy"],
            "target": budget, "on_target": mixed["on_budget"], "settings": settings_summary(settings, mixed["weights"]),
            "solved": mixed["solved"], "passes": mixed["passes"],
            "setting_solved": np.stack([s.solved for s in settings] * (3 - len(settings)))[:2],
            "setting_passes": np.stack([s.passes for s in settings] * (3 - len(settings)))[:2]}
        log(f"matched {fam.label} 1/{d}: " + ", ".join(f"{s['test_passes']:.2f} passes × {s['weight']:.2f}"
                                                       for s in runs[f"{fam.label}@1/{d}"]["settings"])
            + f" → {np.mean(mixed['passes']):.2f} (budget {budget:.2f}); {line(n)}")
    return runs


def sequential_outcomes(decoder: Decoder, test: PuzzleSet) -> dict:
    """Sequential (entropy order) on ``test``: the run every budget divides (its passes, one per blank,
    are :func:`mean_blanks`)."""
    seq = Sequential("entropy")
    solved, passes = decoder(test, seq)
    return {"family": SEQUENTIAL, "divisor": 1, "params": seq.params(), "solved": solved, "passes": passes}


def compare_runs(decoder: Decoder, test: PuzzleSet, calib_decoder: Decoder, calib: PuzzleSet,
                 families: list[Family], divisors, sequential: bool = True, log=print) -> tuple[dict[str, dict], dict]:
    """``families`` calibrated on ``calib`` (:func:`calibrate_families`) and decoded on ``test`` at each
    budget (:func:`decode_matched`), sequential too when ``sequential`` → (run id → run, seconds
    {calibration_s, test_s}). One call with every family, or one per family and one with none but
    sequential (the workflow's parts), make the same runs."""
    t0 = time.time()
    seq_calib, points, caches = calibrate_families(calib_decoder, calib, families, divisors, log)
    t1 = time.time()
    runs = decode_matched(decoder, test, calib_decoder, calib, families, points, caches, seq_calib, log, sequential)
    return runs, {"calibration_s": t1 - t0, "test_s": time.time() - t1}
