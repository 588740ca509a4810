"""Calibrated budgets: the parameter of each parallel sampler that reaches a target mean number of
forward passes, found by bisection on a calibration split (never on the test items).

Only passes are comparable across samplers; their parameters (naive k, EB γ, MI-guided γ, the
threshold τ) are not. So every sampler is set to the same pass budgets — sequential's passes divided
by 2, 3, 4, 5, 6, 8 and 10 — and compared there.

    fam = Family("eb", "eb", "gamma", lo=1e-3, hi=50.0, scale="log", increasing=False)
    point = calibrate(fam, target=11.4, measure=lambda s: mean_passes_on_calibration_split(s))
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from mdm_mi.sampler_table import build_sampler
from mdm_mi.samplers import Sampler

SCALES = ("linear", "log", "log1m")  # bisect on p, log p, or −log(1 − p) (for τ near 1)
DEFAULT_ITERS = 14
DEFAULT_RTOL = 0.02  # stop once the mean passes lie within 2% of the target
ON_TARGET_RTOL = 0.05  # a calibrated point is reported "on target" within ±5%
DIVISORS = (2, 3, 4, 5, 6, 8, 10)
GAMMA_RANGE = (1e-9, 1e3)  # nats: from one token per pass (near-deterministic cells sit below 1e-3) to all at once
TAU_RANGE = (0.0, 1 - 1e-6)


@dataclass(frozen=True)
class Family:
    """A sampler with one free parameter to calibrate.

    label:      the row name in tables (e.g. ``mi λ=1``).
    sampler:    the registered sampler name.
    param:      the calibrated keyword (``k``, ``gamma``, ``tau``, ...).
    lo, hi:     the search interval of the parameter.
    scale:      how to bisect (``linear``, ``log`` or ``log1m``).
    increasing: whether mean passes rise with the parameter (τ) or fall (k, γ).
    fixed:      the other keywords of the sampler (λ, on_reject, ...).
    """

    label: str
    sampler: str
    param: str
    lo: float
    hi: float
    scale: str
    increasing: bool
    fixed: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if not self.lo < self.hi:
            raise ValueError(f"{self.label}: need lo < hi, got {self.lo}, {self.hi}")

    def build(self, value: float) -> Sampler:
        """The sampler at parameter ``value``."""
        return build_sampler(self.sampler, **self.fixed, **{self.param: value})

    def to_u(self, value: float) -> float:
        """The bisection coordinate, increasing with ``value``."""
        if self.scale == "log":
            return math.log(value)
        return -math.log1p(-value) if self.scale == "log1m" else value

    def from_u(self, u: float) -> float:
        if self.scale == "log":
            return math.exp(u)
        return -math.expm1(-u) if self.scale == "log1m" else u


@dataclass(frozen=True)
class Point:
    """A calibrated setting: the parameter, the mean passes it gave on the calibration split, how
    many decodes the search took and any extra measurement (e.g. calibration accuracy)."""

    family: str
    target: float
    value: float
    passes: float
    decodes: int
    extra: dict = field(default_factory=dict)

    @property
    def on_target(self) -> bool:
        return abs(self.passes / self.target - 1) <= ON_TARGET_RTOL


Measure = Callable[[Sampler], tuple[float, dict]]  # sampler → (mean passes, extra measurements)


def calibrate(family: Family, target: float, measure: Measure, iters: int = DEFAULT_ITERS,
              rtol: float = DEFAULT_RTOL, cache: dict | None = None) -> Point:
    """Search ``family``'s parameter so that ``measure(sampler)[0]`` (mean passes on the calibration
    split) reaches ``target``; the closest point seen is returned (passes are a step function of the
    parameter, so an exact hit is not always possible). ``cache`` (value → result) may be shared
    between the targets of one family to reuse decodes: the search starts from the tightest bracket
    the cache already holds and steps by :func:`next_u` (interpolation, safeguarded by bisection)."""
    cache = {} if cache is None else cache
    lo, hi = family.to_u(family.lo), family.to_u(family.hi)
    p_lo = p_hi = None  # passes at the bracket's ends, once measured
    best: tuple[float, float, float, dict] | None = None  # (error, value, passes, extra)
    decodes = 0

    def seen(value: float) -> float:
        nonlocal best
        passes, extra = cache[value]
        err = abs(passes / target - 1)
        if best is None or err < best[0]:
            best = (err, value, passes, extra)
        return passes

    for value in sorted(cache):  # the cache's points: the best so far and a tighter bracket
        if not family.lo <= value <= family.hi:
            continue
        u, passes = family.to_u(value), seen(value)
        if (passes > target) != family.increasing and u > lo:  # lies on the low-u side of the target
            lo, p_lo = u, passes
        elif (passes > target) == family.increasing and u < hi:
            hi, p_hi = u, passes
    if lo >= hi:  # the cached passes are not monotone in the parameter: search the whole range
        (lo, hi), p_lo, p_hi = (family.to_u(family.lo), family.to_u(family.hi)), None, None
    for step in range(iters):
        if (best is not None and best[0] <= rtol) or hi - lo < U_TOL:
            break
        u = next_u(lo, hi, p_lo, p_hi, target, bisect=step % BISECT_EVERY == BISECT_EVERY - 1)
        value = family.from_u(u)
        if value not in cache:
            cache[value] = measure(family.build(value))
            decodes += 1
        passes = seen(value)
        if (passes > target) != family.increasing:
            lo, p_lo = u, passes
        else:
            hi, p_hi = u, passes
    _, value, passes, extra = best
    return Point(family=family.label, target=target, value=value, passes=passes, decodes=decodes, extra=extra)


U_TOL = 1e-3  # stop once the bracket is this narrow in the search coordinate (passes are a step function)
BISECT_EVERY = 3  # every third step bisects, so a flat stretch of the curve cannot stall the search
INTERP_MARGIN = 0.05  # an interpolated step stays this fraction of the bracket away from its ends


def next_u(lo: float, hi: float, p_lo: float | None, p_hi: float | None, target: float, bisect: bool) -> float:
    """The next search coordinate in ``[lo, hi]``: where log passes, linear between the measured ends
    ``(lo, p_lo)`` and ``(hi, p_hi)``, reach ``target`` (regula falsi, kept ``INTERP_MARGIN`` inside
    the bracket), or the midpoint when an end is unmeasured, the ends tie or ``bisect`` is set."""
    mid = (lo + hi) / 2
    if bisect or p_lo is None or p_hi is None or p_lo <= 0 or p_hi <= 0 or p_lo == p_hi:
        return mid
    frac = (math.log(target) - math.log(p_lo)) / (math.log(p_hi) - math.log(p_lo))
    frac = min(max(frac, INTERP_MARGIN), 1 - INTERP_MARGIN)
    return lo + frac * (hi - lo)


def targets(sequential_passes: float, divisors=DIVISORS) -> dict[int, float]:
    """Target mean passes: sequential's divided by each divisor."""
    return {d: sequential_passes / d for d in divisors}


def calibrate_grid(families: list[Family], sequential_passes: float, divisors, measure: Measure,
                   log=print) -> list[Point]:
    """Every family's point at every budget ``sequential_passes / d`` (family-major order), each with
    its divisor in ``extra``; one decode cache per family is shared by its budgets."""
    points = []
    for fam in families:
        cache: dict = {}
        for d, target in sorted(targets(sequential_passes, divisors).items()):
            t0 = time.time()
            point = calibrate(fam, target, measure, cache=cache)
            points.append(dataclasses.replace(point, extra={**point.extra, "divisor": d}))
            log(f"calibrated {fam.label} 1/{d}: {fam.param}={point.value:.6g} → {point.passes:.2f} passes "
                f"(target {target:.2f}, {point.decodes} decodes, {time.time() - t0:.1f} s)")
    return points


def standard_families(max_tokens: int, mi_lambda, on_reject: str, charge_first: bool, indep_tau=(),
                      two_budget_delta=()) -> list[Family]:
    """The calibrated samplers of both domains: naive top-k (fractional k ≤ ``max_tokens``),
    EB-Sampler, the Fast-dLLM confidence threshold, MI-guided (Algorithm 1) at each λ, and the rules of
    :mod:`mdm_mi.mi.rules` at each pair cap τ / dependence budget δ (their entropy budget γ is the
    calibrated parameter). Labels starting with ``mi`` are the contenders of :mod:`mdm_mi.budgets`."""
    fams = [
        Family("naive", "naive", "k", 1.0, float(max_tokens), "linear", increasing=False),
        Family("eb", "eb", "gamma", *GAMMA_RANGE, "log", increasing=False),
        Family("threshold", "threshold", "tau", *TAU_RANGE, "log1m", increasing=True),
    ]
    mi = {"on_reject": on_reject, "charge_first": charge_first}
    fams += [Family(f"mi λ={lam:g}", "mi", "gamma", *GAMMA_RANGE, "log", increasing=False, fixed={"lam": lam} | mi)
             for lam in mi_lambda]
    fams += [Family(f"mi-indep τ={tau:g}", "mi-indep", "gamma", *GAMMA_RANGE, "log", increasing=False,
                    fixed={"cap": tau}) for tau in indep_tau]
    fams += [Family(f"mi-2b δ={delta:g}", "mi-2b", "gamma", *GAMMA_RANGE, "log", increasing=False,
                    fixed={"delta": delta}) for delta in two_budget_delta]
    return fams
