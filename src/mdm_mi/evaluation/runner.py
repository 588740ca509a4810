"""One comparison runner for every domain: the calibrated families, the test runs at each budget, and
sequential (and any other uncalibrated reference) beside them.

A domain gives the runner a :class:`ComparisonTask`: its calibration measure (a sampler → mean passes on
the calibration items and whatever else it measures there), its reference runs, and how it turns one
calibrated setting into a test run. The runner owns what every comparison shares:

1. every family's point at every budget, sequential's calibration passes ÷ d, by
   :func:`mdm_mi.evaluation.calibrate.calibrate_grid` (one decode cache per family);
2. for a *matched* task (Sudoku, the testbed), each point decoded on the test items and, when its test
   passes miss the budget (the task's test passes ÷ d), bracketed by a second setting and mixed to the
   budget exactly (:mod:`mdm_mi.evaluation.matched`); for an unmatched task (protein, antibody), the
   point's own setting, decoded by the task;
3. the run ids, the order of the runs (references first, then family-major, budgets increasing) and the
   seconds each phase took.

    task = SudokuTask(decoder, test, calib_decoder, calib)          # a domain's ComparisonTask
    runs, seconds = run_comparison(task, families, divisors=(2, 4, 8))

What a run records (accuracies, JSD, PLL, …) is the task's; the statistics over runs are
:mod:`mdm_mi.evaluation.budgets`'. No run depends on another family's, so a comparison run in parts (one
call per family, one with only the references: :mod:`mdm_mi.evaluation.parts`) makes the same runs.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from mdm_mi.evaluation.calibrate import Family, Point, calibrate_grid
from mdm_mi.evaluation.matched import DecodedSetting, bracket_settings, mixture
from mdm_mi.infra.progress import Progress

if TYPE_CHECKING:
    from mdm_mi.core.samplers import Sampler


@dataclass(frozen=True)
class Budget:
    """One family at one budget, as the runner hands it to :meth:`ComparisonTask.test_run`.

    point:    the calibrated setting (its ``extra``: the task's calibration measurements and ``divisor``).
    target:   the test budget in passes: the task's test passes ÷ ``divisor`` when matched, else the
              calibration target.
    settings: matched tasks: the one or two settings decoded on the test items (sorted by test passes).
    mixed:    matched tasks: :func:`mdm_mi.evaluation.matched.mixture` of ``settings`` at ``target``.
    """

    family: Family
    divisor: int
    point: Point
    target: float
    settings: tuple[DecodedSetting, ...] = ()
    mixed: dict | None = None

    @property
    def sampler(self) -> Sampler:
        """The calibrated setting's sampler."""
        return self.family.build(self.point.value)


class ComparisonTask(ABC):
    """What one domain's comparison gives :func:`run_comparison`.

    A matched task also implements :meth:`test_passes` and :meth:`decode`: the runner then matches each
    budget's test passes exactly. An unmatched task decodes the calibrated setting itself in
    :meth:`test_run`.
    """

    matched: bool = False

    @abstractmethod
    def calibration_passes(self) -> float:
        """Sequential's mean passes on the calibration items: the budgets are its fractions, and no
        sampler exceeds it (the search's ceiling)."""

    @abstractmethod
    def measure(self, sampler: Sampler) -> tuple[float, dict]:
        """``sampler`` on the calibration items → (mean passes, other measurements kept in the point)."""

    @abstractmethod
    def reference_runs(self) -> dict[str, dict]:
        """The uncalibrated runs (sequential first): run id → run."""

    @abstractmethod
    def test_run(self, budget: Budget) -> dict:
        """The record of one calibrated family at one budget on the test items."""

    def run_id(self, family: Family, divisor: int) -> str:
        """A calibrated run's id (``eb@1/4``)."""
        return f"{family.label}@1/{divisor}"

    def test_passes(self) -> float:
        """Matched tasks: sequential's mean passes on the test items (the budgets are its fractions)."""
        raise NotImplementedError(f"{type(self).__name__} is not a matched task")

    def decode(self, family: Family, sampler: Sampler) -> tuple[np.ndarray, np.ndarray]:
        """Matched tasks: ``sampler`` on the test items → (outcomes ``(P, ...)``, passes ``(P,)``); the
        mixture of two settings averages both with the same weight."""
        raise NotImplementedError(f"{type(self).__name__} is not a matched task")


def run_comparison(task: ComparisonTask, families: list[Family], divisors, references: bool = True,
                   log: Callable[[str], None] = print) -> tuple[dict[str, dict], dict]:
    """Every family calibrated at every budget and run on the test items, the task's references first
    (when ``references``) → (run id → run, seconds {calibration_s, test_s})."""
    t0 = time.time()
    ceiling, caches = task.calibration_passes(), {}
    points = calibrate_grid(families, ceiling, divisors, task.measure, log, caches)
    t1 = time.time()
    runs = task.reference_runs() if references else {}
    by_label = {f.label: f for f in families}
    line = Progress("test runs", len(points))  # how far, and the time left
    for n, point in enumerate(points, 1):
        fam, d = by_label[point.family], point.extra["divisor"]
        budget = (_matched(task, fam, d, point, caches.setdefault(fam.label, {}), ceiling) if task.matched
                  else Budget(fam, d, point, point.target))
        runs[task.run_id(fam, d)] = task.test_run(budget)
        log(f"{fam.label} 1/{d}: {_settings_text(budget)}; {line(n)}")
    return runs, {"calibration_s": t1 - t0, "test_s": time.time() - t1}


def _matched(task: ComparisonTask, family: Family, divisor: int, point: Point, cache: dict, ceiling: float) -> Budget:
    """``point`` decoded on the test items and matched to the budget, the test passes ÷ ``divisor``, by a
    second setting calibrated on the calibration items when needed (``cache``: the family's decodes)."""
    target = task.test_passes() / divisor
    settings = bracket_settings(family, point, target, lambda sampler: task.decode(family, sampler), task.measure,
                                cache, ceiling)
    return Budget(family, divisor, point, target, tuple(settings), mixture(settings, target))


def _settings_text(budget: Budget) -> str:
    """The log line's account of a budget: its settings' test passes and weights, or the calibration's."""
    if budget.mixed is None:
        return f"{budget.family.param}={budget.point.value:.4g}, calibration {budget.point.passes:.2f} passes " \
               f"(target {budget.point.target:.2f})"
    mixed = ", ".join(f"{s.test_passes:.2f} passes × {w:.2f}" for s, w in zip(budget.settings, budget.mixed["weights"]))
    return f"{mixed} → {np.mean(budget.mixed['passes']):.2f} (budget {budget.target:.2f})"
