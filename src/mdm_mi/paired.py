"""Paired comparisons of two samplers on the same items (puzzles): exact McNemar test, Newcombe's
interval for the difference of paired proportions, the smallest difference a set can resolve, and
paired-bootstrap bands of accuracy-at-budget curves.

Two samplers that decode the *same* puzzles disagree only on the discordant ones, so the paired
tests below are far more powerful than comparing two unpaired Wilson intervals.

    d = paired_difference(solved_mi, solved_eb)      # (P,) bools each
    d.diff, d.lo, d.hi, d.p_value                    # MI − EB, 95% interval, exact McNemar p
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mdm_mi.stats import Z95, wilson_interval

Z80 = 0.8416212335729143  # one-sided normal quantile of 80% power
ALPHA = 0.05


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
    b: int
    c: int
    p_value: float
    detectable: float

    def verdict(self, alpha: float = ALPHA) -> str:
        """``better`` / ``worse`` when p < alpha, else ``equal`` (no detectable difference)."""
        if self.p_value < alpha:
            return "better" if self.diff > 0 else "worse"
        return "equal"


def paired_difference(first, second) -> PairedDifference:
    """Compare two ``(P,)`` boolean outcome vectors on the same items (first − second)."""
    x, y = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    assert x.shape == y.shape and x.ndim == 1, (x.shape, y.shape)
    n = len(x)
    a, b = int((x & y).sum()), int((x & ~y).sum())
    c, d = int((~x & y).sum()), int((~x & ~y).sum())
    lo, hi = newcombe_interval(a, b, c, d)
    acc1, acc2 = (a + b) / max(n, 1), (a + c) / max(n, 1)
    return PairedDifference(n=n, acc_first=acc1, acc_second=acc2, diff=acc1 - acc2, lo=lo, hi=hi, b=b, c=c,
                            p_value=mcnemar_exact(b, c), detectable=detectable_difference(n, (b + c) / max(n, 1)))


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
        out[name] = {"acc": interpolate_curve(passes[name], s.mean(1), grid), "boot": boot,
                     "lo": np.nanpercentile(boot, 2.5, axis=0) if np.isfinite(boot).any() else boot[0],
                     "hi": np.nanpercentile(boot, 97.5, axis=0) if np.isfinite(boot).any() else boot[0]}
    return out
