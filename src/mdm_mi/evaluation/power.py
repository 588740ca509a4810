"""Sample sizes for the pre-registered comparisons (docs/preregistration.md).

Two designs, both paired by item:

* **binary outcomes** (Sudoku: solved or not), tested by exact McNemar: the pairs needed to detect
  a difference ``delta`` of accuracies with the given power, given the share ``discordant`` of pairs
  on which the two samplers disagree (Connor 1987's normal approximation);
* **continuous outcomes** (AntiBERTy: pseudo-log-likelihood per residue), summarised by the mean of
  the paired differences: the pairs needed for a 95% interval of half-width ``half_width`` given the
  standard deviation ``sd`` of one pair's difference, and for a two-sided test of ``delta``.

    n = mcnemar_pairs(delta=0.026, discordant=0.12)        # 1,391 puzzles at 80% power
    n = mean_pairs_for_half_width(sd=0.34, half_width=0.05)  # 178 items
"""

from __future__ import annotations

import math
from statistics import NormalDist

from mdm_mi.evaluation.paired import ALPHA  # two-sided

POWER = 0.80


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def mcnemar_pairs(delta: float, discordant: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Pairs for a two-sided McNemar test at ``alpha`` to detect an accuracy difference ``delta``
    with ``power``, when a share ``discordant`` (ψ = P(first ≠ second)) of pairs disagree:
    n = (z_{1−α/2} √ψ + z_{power} √(ψ − δ²))² / δ² (Connor 1987)."""
    if not 0 < abs(delta) <= discordant <= 1:
        raise ValueError(f"need 0 < |delta| <= discordant <= 1, got {delta}, {discordant}")
    za, zb = _z(1 - alpha / 2), _z(power)
    return math.ceil((za * math.sqrt(discordant) + zb * math.sqrt(discordant - delta ** 2)) ** 2 / delta ** 2)


def mcnemar_power(n: int, delta: float, discordant: float, alpha: float = ALPHA) -> float:
    """The power of the same test on ``n`` pairs (the inverse of :func:`mcnemar_pairs`)."""
    za = _z(1 - alpha / 2)
    z = (abs(delta) * math.sqrt(n) - za * math.sqrt(discordant)) / math.sqrt(discordant - delta ** 2)
    return NormalDist().cdf(z)


def mean_pairs_for_half_width(sd: float, half_width: float, level: float = 1 - ALPHA) -> int:
    """Pairs whose mean difference has a ``level`` normal interval of half-width ``half_width``,
    when one pair's difference has standard deviation ``sd``: n = (z · sd / half_width)²."""
    if sd <= 0 or half_width <= 0:
        raise ValueError(f"sd and half_width must be > 0, got {sd}, {half_width}")
    return math.ceil((_z(0.5 + level / 2) * sd / half_width) ** 2)


def mean_pairs_for_power(delta: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Pairs for a two-sided test at ``alpha`` of a mean paired difference ``delta`` with ``power``."""
    return math.ceil(((_z(1 - alpha / 2) + _z(power)) * sd / abs(delta)) ** 2)
