"""Samplers compared at identical test passes: each calibrated setting is paired with a second one
on the other side of the budget, and every test item's outcome is the mixture of the two whose
expected passes equal the budget exactly.

Calibration (:mod:`mdm_mi.evaluation.calibrate`) sets a sampler's parameter on calibration items, and its
passes on the test items then miss the budget by a few percent (by up to 1.3 passes on Sudoku).
A sampler given more passes solves more, so such a miss biases the comparison. Here the calibrated
setting is decoded on the test items; when its mean passes P₀ miss the budget B, a second setting is
calibrated (on the calibration items) to land on the other side of B, and decoded on the test items
too. With P_c < B < P_d the test passes of the cheaper and the dearer setting, the randomised
sampler that runs the cheaper one with probability q = (P_d − B) / (P_d − P_c) spends exactly B
passes in expectation; each item's outcome is that expectation, q·solved_c + (1 − q)·solved_d, a
number in [0, 1] (:func:`mdm_mi.evaluation.paired.paired_difference` tests such outcomes). The weight is chosen
from passes, the cost, never from outcomes, so it cannot favour a sampler.

    settings = bracket_settings(family, point, budget, decode_test, measure_calib, cache, ceiling)
    run = mixture(settings, budget)    # solved (P,) in [0, 1], passes (P,), weights, on_budget
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from mdm_mi.evaluation.calibrate import Family, Measure, Point, calibrate

if TYPE_CHECKING:
    from mdm_mi.core.samplers import Sampler

BUDGET_RTOL = 0.03  # a point whose (mixed) mean test passes are more than 3% off its budget is marked †
BRACKET_STEP = 0.03  # the second setting aims this fraction of the budget beyond it, on the other side
BRACKET_TRIES = 3  # aims at 3%, 6% and 12% beyond the budget before giving up on a bracket
OFF_BUDGET = "†"
OFF_BUDGET_NOTE = (f"{OFF_BUDGET} mean test passes more than {BUDGET_RTOL:.0%} off the budget: no pair of settings "
                   "brackets it (the sampler cannot reach it)")

Decode = Callable[["Sampler"], tuple[np.ndarray, np.ndarray]]  # sampler → solved (P,), passes (P,) on the test items


@dataclass(frozen=True)
class DecodedSetting:
    """One decoded setting: the parameter, the sampler's params, its mean passes on the calibration
    items and its per-item outcomes and passes on the test items."""

    value: float
    params: dict
    calib_passes: float
    solved: np.ndarray
    passes: np.ndarray

    @property
    def test_passes(self) -> float:
        return float(np.mean(self.passes))


def mixing_weight(cheap: float, dear: float, budget: float) -> float:
    """The probability q of the cheaper setting (mean passes ``cheap``) against the dearer one
    (``dear``) that makes q·cheap + (1 − q)·dear equal ``budget``; clipped to [0, 1]."""
    if dear <= cheap:
        return 1.0 if abs(cheap - budget) <= abs(dear - budget) else 0.0
    return float(min(max((dear - budget) / (dear - cheap), 0.0), 1.0))


def bracket_settings(family: Family, point: Point, budget: float, decode: Decode, measure: Measure, cache: dict,
                     ceiling: float | None = None) -> list[DecodedSetting]:
    """The calibrated setting ``point`` decoded on the test items, and, when its test passes miss
    ``budget``, a second setting on the other side of it: one, or two with test passes bracketing it.

    The second setting is calibrated on the calibration items (``measure``, sharing the family's
    decode ``cache``) to the passes that should land ``BRACKET_STEP`` × ``budget`` beyond the budget
    on the test items, predicted with the ratio of test to calibration passes of the first setting.
    If its test passes fall on the same side, the aim doubles, up to ``BRACKET_TRIES`` times; without
    a bracket the setting closest to the budget is returned alone."""
    first = _decode(family, point.value, point.passes, decode)
    if first.test_passes == budget:
        return [first]
    side = 1.0 if first.test_passes > budget else -1.0  # +1: the first setting is too dear
    ratio = first.test_passes / point.passes if point.passes > 0 else 1.0
    tried = {point.value: first}
    for k in range(BRACKET_TRIES):
        aim = budget * (1 - side * BRACKET_STEP * 2 ** k) / ratio
        second = calibrate(family, aim, measure, cache=cache, ceiling=ceiling)
        if second.value not in tried:
            tried[second.value] = _decode(family, second.value, second.passes, decode)
        found = tried[second.value]
        if side * (found.test_passes - budget) <= 0:
            return sorted([first, found], key=lambda s: s.test_passes)
    return [min(tried.values(), key=lambda s: abs(s.test_passes - budget))]


def _decode(family: Family, value: float, calib_passes: float, decode: Decode) -> DecodedSetting:
    sampler = family.build(value)
    solved, passes = decode(sampler)
    return DecodedSetting(value, sampler.params(), calib_passes, np.asarray(solved), np.asarray(passes))


def mixture(settings: list[DecodedSetting], budget: float) -> dict:
    """The run of one or two settings (sorted by test passes) at ``budget``: per-item solved
    probability and expected passes ``(P,)`` of the randomised sampler, each setting's weight, and
    whether its mean test passes lie within ``BUDGET_RTOL`` of the budget."""
    weights = [1.0] if len(settings) == 1 else [
        q := mixing_weight(settings[0].test_passes, settings[1].test_passes, budget), 1.0 - q]
    solved = sum(w * s.solved.astype(float) for w, s in zip(weights, settings))
    passes = sum(w * s.passes.astype(float) for w, s in zip(weights, settings))
    return {"solved": solved, "passes": passes, "weights": weights,
            "on_budget": bool(abs(float(np.mean(passes)) / budget - 1) <= BUDGET_RTOL)}


def settings_summary(settings: list[DecodedSetting], weights: list[float]) -> list[dict]:
    """What ``runs.json`` keeps of each setting: params, weight, calibration and test passes, test accuracy."""
    return [{"params": s.params, "weight": w, "calib_passes": s.calib_passes, "test_passes": s.test_passes,
             "test_accuracy": float(np.mean(s.solved))} for s, w in zip(settings, weights)]
