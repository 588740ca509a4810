"""Small statistics helpers for result tables."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95% normal confidence interval."""
    values = list(values)
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n == 1:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    return m, Z95 * math.sqrt(var / n)


# ---- bootstrap summaries (used by the protein JSD) -------------------------------------------------------

CI_LEVEL = 0.95


def basic_bootstrap_interval(estimate: float, replicates, level: float = CI_LEVEL,
                             lower_bound: float | None = None) -> tuple[float, float]:
    """Basic (reverse-percentile) bootstrap interval ``(2·θ̂ − q_hi, 2·θ̂ − q_lo)``.

    ``replicates`` ``(B,)`` are the statistic recomputed on resamples; ``q_lo, q_hi`` are their
    ``(1 ± level)/2`` quantiles. Unlike the percentile interval it reflects the replicates' offset
    from ``θ̂`` back onto ``θ̂``, so a bias the bootstrap reproduces is removed. ``lower_bound`` (e.g.
    0 for a divergence) clips both ends from below."""
    import numpy as np

    q_lo, q_hi = np.quantile(np.asarray(replicates, dtype=np.float64), [(1 - level) / 2, (1 + level) / 2])
    lo, hi = 2 * estimate - q_hi, 2 * estimate - q_lo
    if lower_bound is not None:
        lo, hi = max(lower_bound, lo), max(lower_bound, hi)
    return float(lo), float(hi)


def bootstrap_bias_corrected(estimate: float, replicates, lower_bound: float | None = None) -> float:
    """Bias-corrected point estimate ``2·θ̂ − mean(replicates)`` (``replicates`` ``(B,)``), clipped below
    at ``lower_bound`` when given."""
    import numpy as np

    value = 2 * estimate - float(np.mean(replicates))
    return float(value if lower_bound is None else max(lower_bound, value))


def bootstrap_p_value(estimate: float, replicates) -> float:
    """Two-sided bootstrap p-value of ``θ = 0``: the fraction of ``replicates`` ``(B,)`` on the other
    side of zero from ``estimate`` (zero included), doubled and bounded to ``[1/B, 1]``."""
    import numpy as np

    reps = np.asarray(replicates, dtype=np.float64)
    if estimate == 0:
        return 1.0
    other = np.mean(reps <= 0) if estimate > 0 else np.mean(reps >= 0)
    return float(min(1.0, max(1.0 / len(reps), 2 * other)))
