"""Paired comparisons of two samplers on the same items (puzzles): exact McNemar test and its
generalisation to fractional outcomes (the paired sign-flip test), Newcombe's interval for the
difference of paired proportions, TOST equivalence, Holm's correction, the smallest difference a set
can resolve, and paired-bootstrap bands of accuracy-at-budget curves.

Two samplers that decode the *same* puzzles disagree only on the discordant ones, so the paired
tests below are far more powerful than comparing two unpaired Wilson intervals. Outcomes may be
fractional (a puzzle's solved probability under a mixture of two settings, :mod:`mdm_mi.evaluation.matched`).

    d = paired_difference(solved_mi, solved_eb)      # (P,) bools or numbers in [0, 1] each
    d.diff, d.lo, d.hi, d.p_value                    # MI − EB, 95% interval, sign-flip (McNemar) p
"""

from __future__ import annotations

import functools

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from mdm_mi.evaluation.stats import Z95, wilson_interval

Z80 = 0.8416212335729143  # one-sided normal quantile of 80% power
ALPHA = 0.05
N_FLIPS = 20000  # Monte Carlo sign flips of the fractional test: its smallest p is 1 / 20,001
FLIP_SEED = 0  # the flips are seeded, so a table's p-values are reproducible


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value of ``b`` vs ``c`` discordant pairs: under H0 each discordant
    pair goes either way with probability ½, so p = min(1, 2·P[Bin(b+c, ½) ≤ min(b, c)]); 1 if b+c = 0."""
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def newcombe_interval(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float]:
    """95% interval of p₁ − p₂ for paired binary outcomes (Newcombe 1998, method 10: hybrid score
    without continuity correction). Cells: a both succeed, b only the first, c only the second,
    d neither. Built from the two Wilson intervals and the correlation φ of the pairs."""
    n = a + b + c + d
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, z)
    l2, u2 = wilson_interval(a + c, n, z)
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(denom) if denom > 0 else 0.0
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    theta = p1 - p2
    return max(-1.0, theta - dl), min(1.0, theta + du)


def interval_agrees(lo: float, hi: float, p_value: float, alpha: float = ALPHA) -> bool:
    """Whether a row's ``1 − alpha`` interval and its p say the same: the interval excludes 0 exactly
    when ``p < alpha``. Newcombe's interval is approximate, so it and the paired p can disagree near
    the line: with few discordant items (b = 0, c = 4 of 50: [−16.1, −0.3] pp beside the exact
    p = 0.125), or for a mixture's fractional outcomes (the interval on expected cells, p from the
    sign-flip test). The verdicts follow p; the tables mark such rows (``budgets.DISAGREES``)."""
    return (lo > 0 or hi < 0) == (p_value < alpha)


def detectable_difference(n: int, discordant: float, z_alpha: float = Z95, z_power: float = Z80) -> float:
    """The paired difference that a two-sided 5% test detects with 80% power on ``n`` pairs whose
    discordance rate is ``discordant`` (normal approximation of McNemar: SE ≈ √(π_d / n))."""
    if n == 0:
        return float("nan")
    return (z_alpha + z_power) * math.sqrt(max(discordant, 1.0 / n) / n)


@dataclass(frozen=True)
class PairedDifference:
    """First minus second sampler on the same ``n`` items: accuracies, the difference with its 95%
    Newcombe interval, discordant counts (b: only first solved, c: only second), exact McNemar p and
    the difference this set can resolve (80% power at 5%)."""

    n: int
    acc_first: float
    acc_second: float
    diff: float
    lo: float
    hi: float
    b: float
    c: float
    p_value: float
    detectable: float

    def verdict(self, alpha: float = ALPHA) -> str:
        """``better`` / ``worse`` when p < alpha, else ``not resolved`` (no difference shown, and no
        equivalence either: that needs a TOST, :mod:`mdm_mi.evaluation.verdicts`)."""
        if self.p_value < alpha:
            return "better" if self.diff > 0 else "worse"
        return "not resolved"


def paired_cells(first, second) -> tuple[float, float, float, float]:
    """The paired 2×2 table (a both, b only first, c only second, d neither) of two ``(P,)`` outcome
    vectors in [0, 1]. Binary outcomes give the counts (ints); fractional ones the expected counts
    when each item's two outcomes are drawn independently with those probabilities."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    assert x.shape == y.shape and x.ndim == 1, (x.shape, y.shape)
    assert ((x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)).all(), "outcomes must lie in [0, 1]"
    cells = [float(np.sum(u * v)) for u, v in ((x, y), (x, 1 - y), (1 - x, y), (1 - x, 1 - y))]
    if _binary(x) and _binary(y):
        return tuple(int(round(v)) for v in cells)
    return tuple(cells)


def _binary(x: np.ndarray) -> bool:
    return bool(np.all((x == 0) | (x == 1)))


def sign_flip_p(diffs, n_flips: int = N_FLIPS, seed: int = FLIP_SEED) -> float:
    """Two-sided p of the paired sign-flip (randomisation) test of Σ dᵢ = 0: under H0 each item's two
    outcomes are exchangeable, so each difference dᵢ ``(P,)`` is as likely to have the opposite sign.
    For differences in {−1, 0, 1} (binary outcomes) its exact distribution is binomial and p is the
    exact McNemar p; otherwise p = (1 + #{|Σ ±dᵢ| ≥ |Σ dᵢ|}) / (1 + ``n_flips``) over seeded random
    signs, an exact-level Monte Carlo test."""
    d = np.asarray(diffs, dtype=float)
    d = d[d != 0]
    if _binary(np.abs(d)):
        return mcnemar_exact(int((d > 0).sum()), int((d < 0).sum()))
    observed = abs(d.sum()) * (1 - 1e-12)  # ties within round-off count as "as extreme"
    mags, counts = np.unique(np.abs(d), return_counts=True)
    return _flip_p(tuple(mags.tolist()), tuple(counts.tolist()), observed, n_flips, seed)


@functools.lru_cache(maxsize=4096)
def _flip_p(mags: tuple[float, ...], counts: tuple[int, ...], observed: float, n_flips: int, seed: int) -> float:
    """The Monte Carlo p of :func:`sign_flip_p` from its sufficient statistics (each magnitude and how
    many differences have it): seeded, so the same comparison is drawn once per process (the docs'
    check renders the same runs many times)."""
    # the nᵢ differences of one magnitude mᵢ flip together as mᵢ·(2·Bin(nᵢ, ½) − nᵢ): a mixture's
    # outcomes take a few values, so this draws a few binomials per flip instead of one sign per item
    mags_a, counts_a = np.asarray(mags), np.asarray(counts)
    rng = np.random.default_rng(seed)
    extreme, done = 0, 0
    while done < n_flips:  # in chunks: n_flips × magnitudes need not fit in memory at once
        m = min(n_flips - done, max(1, 2_000_000 // len(mags_a)))
        flips = (2 * _half_binomials(counts_a, m, rng) - counts_a) @ mags_a
        extreme += int((np.abs(flips) >= observed).sum())
        done += m
    return (1 + extreme) / (1 + n_flips)


def _half_binomials(counts: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, K)`` draws of Bin(countsₖ, ½): the number of set bits among countsₖ random bits (six
    times faster than ``rng.binomial`` here)."""
    words = (counts + 63) // 64
    bits = rng.integers(0, 2**64, size=(m, int(words.sum())), dtype=np.uint64, endpoint=False)
    spare = words * 64 - counts  # unused high bits of each count's last word
    masks = np.full(int(words.sum()), np.iinfo(np.uint64).max, dtype=np.uint64)
    last = np.cumsum(words) - 1
    masks[last] >>= spare.astype(np.uint64)
    starts = np.concatenate([[0], last[:-1] + 1])
    return np.add.reduceat(np.bitwise_count(bits & masks).astype(np.int64), starts, axis=1)


def paired_difference(first, second, n_flips: int = N_FLIPS) -> PairedDifference:
    """Compare two ``(P,)`` outcome vectors on the same items (first − second): booleans, or numbers
    in [0, 1] (a mixture's solved probability). The interval is Newcombe's on the (expected) cells,
    p the paired sign-flip test (:func:`sign_flip_p`: exact McNemar for binary outcomes)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    a, b, c, d = paired_cells(x, y)
    n = len(x)
    lo, hi = newcombe_interval(a, b, c, d)
    acc1, acc2 = (a + b) / max(n, 1), (a + c) / max(n, 1)
    return PairedDifference(n=n, acc_first=acc1, acc_second=acc2, diff=acc1 - acc2, lo=lo, hi=hi, b=b, c=c,
                            p_value=sign_flip_p(x - y, n_flips), detectable=detectable_difference(n, (b + c) / max(n, 1)))


def tost_p(a: float, b: float, c: float, d: float, margin: float) -> float:
    """p of the two one-sided tests (TOST) that the paired difference lies inside ±``margin``: the
    smallest α at which the Newcombe interval at level 1 − 2α lies inside (−margin, +margin), found
    by bisection on its z (the interval narrows as z falls). 1 when the estimate itself is outside."""
    def inside(z: float) -> bool:
        lo, hi = newcombe_interval(a, b, c, d, z)
        return -margin < lo and hi < margin

    if not inside(1e-9):
        return 1.0
    z_lo, z_hi = 1e-9, 40.0
    if inside(z_hi):
        return 0.0
    for _ in range(60):
        mid = (z_lo + z_hi) / 2
        z_lo, z_hi = (mid, z_hi) if inside(mid) else (z_lo, mid)
    return 1 - NormalDist().cdf(z_lo)  # one-sided normal tail at the widest interval inside


def below_p(a: float, b: float, c: float, d: float, bound: float) -> float:
    """p of the one-sided test that the paired difference lies below ``bound`` (TOST's upper test, at a
    bound of one's choosing): the smallest α at which the Newcombe interval at level 1 − 2α ends below
    ``bound``, by bisection on its z as in :func:`tost_p`. 1 when the estimate itself is not below."""
    def below(z: float) -> bool:
        return newcombe_interval(a, b, c, d, z)[1] < bound

    z_lo, z_hi = 1e-9, 40.0
    if not below(z_lo):
        return 1.0
    if below(z_hi):
        return 0.0
    for _ in range(60):
        mid = (z_lo + z_hi) / 2
        z_lo, z_hi = (mid, z_hi) if below(mid) else (z_lo, mid)
    return 1 - NormalDist().cdf(z_lo)


def holm(p_values) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the k-th smallest of m is multiplied
    by m − k + 1, made non-decreasing and capped at 1. Rejecting where adjusted p < α controls the
    family-wise error at α."""
    p = [float(v) for v in p_values]
    order = sorted(range(len(p)), key=p.__getitem__)
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def interpolate_curve(passes: np.ndarray, acc: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Accuracy at the budgets ``grid`` by linear interpolation in log passes between a sampler's
    calibrated points ``passes (K,)``/``acc (..., K)``; NaN outside the points' range."""
    order = np.argsort(passes)
    x, y = np.log(np.asarray(passes, dtype=float)[order]), np.asarray(acc, dtype=float)[..., order]
    g = np.log(grid)
    out = np.full((*y.shape[:-1], len(grid)), np.nan)
    inside = (g >= x[0]) & (g <= x[-1])
    flat = y.reshape(-1, y.shape[-1])
    res = np.stack([np.interp(g[inside], x, row) for row in flat])
    out[..., inside] = res.reshape(*y.shape[:-1], int(inside.sum()))
    return out


def bootstrap_curves(solved: dict[str, np.ndarray], passes: dict[str, np.ndarray], grid: np.ndarray,
                     n_boot: int, seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Accuracy-at-budget curves with paired-bootstrap 95% bands.

    solved[name] ``(K, P)`` bool and passes[name] ``(K,)`` mean passes of a sampler's K calibrated
    points on the same P items. Each replicate resamples the items once for every sampler, so the
    bands of differences between curves are paired. Returns name → {"acc", "lo", "hi"} each
    ``(len(grid),)``, and the replicates under "boot" ``(n_boot, len(grid))``.
    """
    rng = np.random.default_rng(seed)
    n_items = next(iter(solved.values())).shape[1]
    idx = rng.integers(n_items, size=(n_boot, n_items))
    out = {}
    for name, s in solved.items():
        s = np.asarray(s, dtype=float)
        boot_acc = s[:, idx].mean(-1).T  # (n_boot, K)
        boot = interpolate_curve(passes[name], boot_acc, grid)
        finite = np.isfinite(boot).any()
        with warnings.catch_warnings():  # grid points outside this curve's passes are NaN on purpose
            warnings.simplefilter("ignore", RuntimeWarning)
            band = {q: np.nanpercentile(boot, pct, axis=0) if finite else boot[0] for q, pct in (("lo", 2.5), ("hi", 97.5))}
        out[name] = {"acc": interpolate_curve(passes[name], s.mean(1), grid), "boot": boot, **band}
    return out
