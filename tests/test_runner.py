"""The one comparison runner (mdm_mi.evaluation.runner) on a toy task whose passes and outcomes are
known functions of the sampler's setting: calibration reaches every budget, matched runs spend the test
budget exactly, references come first, and a comparison split in parts makes the same runs."""

from __future__ import annotations

import numpy as np
import pytest

from mdm_mi.core.samplers import EntropyBounded, NaiveTopK
from mdm_mi.evaluation.calibrate import Family
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison

CALIB_TOKENS, TEST_TOKENS = 60.0, 48.0
FAMILIES = [Family("naive", "naive", "k", 1.0, 60.0, "linear", False, cls=NaiveTopK),
            Family("eb", "eb", "gamma", 1e-3, 50.0, "log", False, cls=EntropyBounded)]


def _passes(sampler, tokens: float) -> np.ndarray:
    """Per-item passes of a toy sampler on 8 items of ``tokens`` masks: a decreasing step function."""
    width = sampler.k if sampler.name == "naive" else 1.0 + 4.0 * sampler.gamma
    return np.ceil(tokens * (1.0 + 0.05 * np.arange(8)) / (1.0 + 8.0 * width) + 1.0)


class ToyTask(ComparisonTask):
    def __init__(self, matched: bool):
        self.matched, self.decodes = matched, []

    def calibration_passes(self) -> float:
        return CALIB_TOKENS

    def test_passes(self) -> float:
        return TEST_TOKENS

    def measure(self, sampler):
        return float(_passes(sampler, CALIB_TOKENS).mean()), {"calib_score": 0.5}

    def decode(self, family, sampler):
        self.decodes.append(family.label)
        passes = _passes(sampler, TEST_TOKENS)
        return (passes < 4).astype(float), passes

    def reference_runs(self):
        return {"sequential": {"family": "sequential", "divisor": 1, "passes": np.full(8, TEST_TOKENS)}}

    def test_run(self, budget: Budget) -> dict:
        if budget.mixed is None:
            return {"family": budget.family.label, "divisor": budget.divisor, "passes": _passes(budget.sampler, TEST_TOKENS),
                    "target": budget.target}
        return {"family": budget.family.label, "divisor": budget.divisor, "passes": budget.mixed["passes"],
                "solved": budget.mixed["solved"], "target": budget.target, "on_target": budget.mixed["on_budget"]}


def test_matched_runs_spend_the_test_budget_and_references_come_first():
    runs, seconds = run_comparison(ToyTask(matched=True), FAMILIES, (2, 4), log=lambda line: None)
    assert list(runs) == ["sequential", "naive@1/2", "naive@1/4", "eb@1/2", "eb@1/4"]
    assert set(seconds) == {"calibration_s", "test_s"}
    for run_id in list(runs)[1:]:
        run = runs[run_id]
        assert run["target"] == pytest.approx(TEST_TOKENS / run["divisor"])
        if run["on_target"]:
            assert abs(np.mean(run["passes"]) / run["target"] - 1) <= 0.03


def test_unmatched_runs_take_the_calibration_target_and_decode_nothing_for_the_runner():
    task = ToyTask(matched=False)
    runs, _ = run_comparison(task, FAMILIES, (3,), log=lambda line: None)
    assert task.decodes == []  # an unmatched task decodes the calibrated setting itself
    assert runs["eb@1/3"]["target"] == pytest.approx(CALIB_TOKENS / 3)


def test_parts_make_the_same_runs_as_one_comparison():
    whole, _ = run_comparison(ToyTask(matched=True), FAMILIES, (2, 3), log=lambda line: None)
    parts = run_comparison(ToyTask(matched=True), [], (2, 3), log=lambda line: None)[0]
    for fam in FAMILIES:
        parts |= run_comparison(ToyTask(matched=True), [fam], (2, 3), references=False, log=lambda line: None)[0]
    assert list(parts) == list(whole)
    for run_id, run in whole.items():
        assert np.array_equal(run["passes"], parts[run_id]["passes"]), run_id


def test_a_task_that_is_not_matched_refuses_the_matched_calls():
    class Plain(ToyTask):
        test_passes = ComparisonTask.test_passes
        decode = ComparisonTask.decode

    with pytest.raises(NotImplementedError, match="not a matched task"):
        Plain(matched=False).decode(FAMILIES[0], NaiveTopK(2))
