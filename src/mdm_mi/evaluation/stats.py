"""Small statistics helpers for result tables."""

from __future__ import annotations

import math

import numpy as np

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
    q_lo, q_hi = np.quantile(np.asarray(replicates, dtype=np.float64), [(1 - level) / 2, (1 + level) / 2])
    lo, hi = 2 * estimate - q_hi, 2 * estimate - q_lo
    if lower_bound is not None:
        lo, hi = max(lower_bound, lo), max(lower_bound, hi)
    return float(lo), float(hi)


def bootstrap_bias_corrected(estimate: float, replicates, lower_bound: float | None = None) -> float:
    """Bias-corrected point estimate ``2·θ̂ − mean(replicates)`` (``replicates`` ``(B,)``), clipped below
    at ``lower_bound`` when given."""
    value = 2 * estimate - float(np.mean(replicates))
    return float(value if lower_bound is None else max(lower_bound, value))


def bootstrap_p_value(estimate: float, replicates) -> float:
    """Two-sided bootstrap p-value of ``θ = 0`` that inverts :func:`basic_bootstrap_interval`: the
    smallest ``1 − level`` at which the basic interval of ``estimate`` from ``replicates`` ``(B,)``
    excludes 0, so ``p < 1 − level`` exactly when that interval excludes 0.

    The basic interval excludes 0 when ``2·θ̂`` lies outside the replicates' central quantiles
    ``[q((1−level)/2), q((1+level)/2)]`` (``numpy.quantile``'s linear interpolation), so
    ``p = min(1, 2·a⁺, 2·(1 − a⁻))`` with ``a⁺ = sup{a: q(a) ≤ 2θ̂}`` and ``a⁻ = inf{a: q(a) ≥ 2θ̂}``.
    It is 0 when ``2·θ̂`` lies beyond every replicate (the B replicates resolve no smaller p).

    (The fraction of replicates on the other side of 0 is the *percentile* test: where the replicates
    are biased, as plug-in JSDs are, it contradicts the basic interval, e.g. an interval excluding 0
    beside p = 0.68.)"""
    x = np.sort(np.asarray(replicates, dtype=np.float64))
    v = 2.0 * float(estimate)
    return float(min(1.0, 2 * _quantile_level(x, v, upper=True), 2 * (1 - _quantile_level(x, v, upper=False))))


def _quantile_level(x: np.ndarray, v: float, upper: bool) -> float:
    """For sorted ``x`` ``(B,)`` and ``numpy.quantile``'s linear ``q(a) = x[h] + (h − ⌊h⌋)(x[h+1] − x[h])``,
    ``h = a(B − 1)``: ``sup{a: q(a) ≤ v}`` (``upper``) or ``inf{a: q(a) ≥ v}``, in ``[0, 1]``."""
    if v < x[0] or (not upper and v == x[0]):
        return 0.0
    if v > x[-1] or (upper and v == x[-1]):
        return 1.0
    if upper:  # x[i] <= v < x[i + 1]
        i = int(np.searchsorted(x, v, side="right")) - 1
        return (i + (v - x[i]) / (x[i + 1] - x[i])) / (len(x) - 1)
    j = int(np.searchsorted(x, v, side="left"))  # x[j - 1] < v <= x[j]
    return (j - 1 + (v - x[j - 1]) / (x[j] - x[j - 1])) / (len(x) - 1)


# ---- Student t and the grouped jackknife (the protein co-variation differences, the oracle's means) ------


def t_quantile(df: float, level: float = CI_LEVEL) -> float:
    """Two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (2.365 for df = 7)."""
    from scipy.stats import t  # lazy: scipy adds ~1 s to every CLI start

    return float(t.ppf((1 + level) / 2, df))


def mean_t_ci(values, level: float = CI_LEVEL) -> tuple[float, float]:
    """Mean and the half-width of its ``level`` t interval (n − 1 degrees of freedom): right for the
    handful of values where :func:`mean_ci`'s normal quantile is too narrow (8 values: ×1.21).
    Half-width NaN for one value."""
    values = [float(v) for v in values]
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n == 1:
        return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, t_quantile(n - 1, level) * sd / math.sqrt(n)


def _u_centre(matrix):
    """U-centring of a symmetric ``(G, G)`` matrix whose diagonal is ignored: what is left after
    removing every additive part ``x_g + x_h`` (Székely & Rizzo's U-centred distance matrices)."""
    groups = len(matrix)
    off = ~np.eye(groups, dtype=bool)
    m = np.where(off, matrix, 0.0)
    rows, total = m.sum(1), m.sum()
    return np.where(off, m - (rows[:, None] + rows[None]) / (groups - 2) + total / ((groups - 1) * (groups - 2)), 0.0)


def second_order_share(groups: int) -> float:
    """κ(G): the share of ``Σ_{g<h} Ĩ_gh²`` (U-centred delete-2 interactions) by which the grouped
    jackknife overstates the variance of a statistic with a degenerate second-order part,
    ``[4(G − 2)/(G(G − 1)²) − 2(G − 1)/G³] · (G − 2)⁴ / (2G(G − 3))`` (0.87 at G = 30): the
    jackknife counts that part twice (Efron & Stein 1981), and its delete-2 interactions measure it."""
    g = groups
    return (4 * (g - 2) / (g * (g - 1) ** 2) - 2 * (g - 1) / g**3) * (g - 2) ** 4 / (2 * g * (g - 3))


def jackknife_t(estimate: float, replicates, pairs=None, level: float = CI_LEVEL) -> dict:
    """Grouped-jackknife interval and two-sided p of ``θ = 0`` from the estimate, its ``G``
    leave-one-group-out ``replicates`` ``(G,)`` and, optionally, its leave-two-groups-out ``pairs``
    ``(G, G)`` (diagonal ignored).

    The jackknife variance is v_J = (G − 1)/G · Σ (θ₍g₎ − θ̄)². For a nonlinear statistic it counts
    the second-order (degenerate, quadratic) part of the variance twice (Efron & Stein 1981), so
    with ``pairs`` that part is measured by the U-centred interactions Ĩ of
    I_gh = θ₍gh₎ − θ₍g₎ − θ₍h₎ + θ and removed: v = v_J − κ(G)·Σ_{g<h} Ĩ_gh²
    (:func:`second_order_share`), at least v_J/2 (the most the double count can add), with
    (G − 1)·(v/v_J)² degrees of freedom (Satterthwaite, the correction taken as fixed). The interval
    is ``estimate ± t·√v`` and p is Student's. A zero variance gives the zero-width interval and
    p = 1 at an estimate of 0, else 0."""
    from scipy.stats import t  # lazy: scipy adds ~1 s to every CLI start

    reps = np.asarray(replicates, dtype=np.float64)
    groups = len(reps)
    assert groups >= 2, groups
    v_jack = (groups - 1) / groups * float(np.sum((reps - reps.mean()) ** 2))
    var, df = v_jack, groups - 1.0
    if pairs is not None and groups >= 4 and v_jack > 0:
        interactions = np.asarray(pairs, dtype=np.float64) - reps[:, None] - reps[None] + estimate
        excess = second_order_share(groups) * float(np.sum(np.triu(_u_centre(interactions), 1) ** 2))
        var = max(v_jack - excess, v_jack / 2)
        df = (groups - 1) * (var / v_jack) ** 2
    se = float(np.sqrt(var))
    if se == 0:
        p = 1.0 if estimate == 0 else 0.0
    else:
        p = float(2 * t.sf(abs(estimate) / se, df))
    half = t_quantile(df, level) * se
    return {"lo": estimate - half, "hi": estimate + half, "p_value": p, "se": se, "df": df}


def tost_t(estimate: float, se: float, df: float, margin: float) -> float:
    """p of the two one-sided Student tests (TOST) that θ lies inside ±``margin``, from an estimate,
    its standard error and degrees of freedom: the larger of P(T > (margin − d)/se) and
    P(T > (d + margin)/se). Equivalence at level α ⇔ the (1 − 2α) t-interval lies inside ±margin."""
    from scipy.stats import t  # lazy: scipy adds ~1 s to every CLI start

    if se == 0:
        return 0.0 if abs(estimate) < margin else 1.0
    return float(max(t.sf((margin - estimate) / se, df), t.sf((estimate + margin) / se, df)))


def jsd_bits(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon divergence of two histograms (normalised here), in bits, in [0, 1]."""
    p = np.asarray(p, dtype=np.float64) / np.sum(p)
    q = np.asarray(q, dtype=np.float64) / np.sum(q)
    m = (p + q) / 2

    def kl(a):
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return max(0.0, (kl(p) + kl(q)) / 2)
