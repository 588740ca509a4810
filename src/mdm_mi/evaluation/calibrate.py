"""Calibrated budgets: the parameter of each parallel sampler that reaches a target mean number of
forward passes, found by a search on a calibration split (never on the test items).

Only passes are comparable across samplers; their parameters (naive k, EB γ, MI-guided γ, the
threshold τ) are not. So every sampler is set to the same pass budgets — sequential's passes divided
by 2, 3, 4, 5, 6, 8 and 10 — and compared there.

    fam = Family("eb", "eb", "gamma", lo=1e-3, hi=50.0, scale="log", increasing=False, cls=EntropyBounded)
    point = calibrate(fam, target=11.4, measure=lambda s: mean_passes_on_calibration_split(s))
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from mdm_mi.core.sampler_table import SAMPLERS, TOKENS, calibrated_variants, comparison_settings, slug
from mdm_mi.infra.progress import Progress

if TYPE_CHECKING:  # annotations only: the search itself needs no torch
    from mdm_mi.core.samplers import Sampler

SCALES = ("linear", "log", "log1m")  # search on p, log p, or −log(1 − p) (for τ near 1)
DEFAULT_RTOL = 0.02  # stop once the mean passes lie within 2% of the target
DEFAULT_ITERS = 10  # search steps per target at most (a step function may have no value within rtol)
U_TOL = 1e-2  # a bracket this narrow in the search coordinate (1% of k or γ) straddles a step of the passes: stop
BISECT_EVERY = 3  # every third step bisects, so a flat stretch of the curve cannot stall the search
INTERP_MARGIN = 0.05  # an interpolated step stays this fraction of the bracket away from its ends
FIRST_STRIDE = 1 / 8  # from the cheap end, the first step toward the target: this fraction of the range
CEILING_GAP = 1e-6  # passes within this fraction of the ceiling count as at the ceiling
MAX_EXPANSION = 2.0  # an extrapolated step is at most this multiple of the distance between its two points
ON_TARGET_RTOL = 0.05  # a calibrated point is reported "on target" within ±5%
DIVISORS = (2, 3, 4, 5, 6, 8, 10)


@dataclass(frozen=True)
class Family:
    """A sampler with one free parameter to calibrate.

    label:      the row name in tables (e.g. ``mi λ=1``).
    sampler:    the registered sampler name.
    param:      the calibrated keyword (``k``, ``gamma``, ``tau``, ...).
    lo, hi:     the search interval of the parameter.
    scale:      the search coordinate (``linear``, ``log`` or ``log1m``).
    increasing: whether mean passes rise with the parameter (τ) or fall (k, γ).
    fixed:      the other keywords of the sampler (λ, on_reject, ...).
    cls:        the sampler's class (:data:`mdm_mi.sampling.registry.SAMPLER_CLASSES` holds each entry's).
    """

    label: str
    sampler: str
    param: str
    lo: float
    hi: float
    scale: str
    increasing: bool
    fixed: dict = field(default_factory=dict)
    cls: type[Sampler] = field(kw_only=True)

    def __post_init__(self):
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if not self.lo < self.hi:
            raise ValueError(f"{self.label}: need lo < hi, got {self.lo}, {self.hi}")

    @property
    def slug(self) -> str:
        """The label as a file and job name (``mi λ=1`` → ``mi-l1``, ``mi-indep cap=0.05`` → ``mi-indep-cap0.05``)."""
        return slug(self.label)

    def build(self, value: float) -> Sampler:
        """The sampler at parameter ``value``."""
        return self.cls(**self.fixed, **{self.param: value})

    def to_u(self, value: float) -> float:
        """The search coordinate, increasing with ``value``."""
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


Measure = Callable[["Sampler"], tuple[float, dict]]  # sampler → (mean passes, extra measurements)


def calibrate(family: Family, target: float, measure: Measure, iters: int = DEFAULT_ITERS,
              rtol: float = DEFAULT_RTOL, cache: dict | None = None, ceiling: float | None = None) -> Point:
    """Search ``family``'s parameter so that ``measure(sampler)[0]`` (mean passes on the calibration
    split) reaches ``target``; the closest point seen is returned (passes are a step function of the
    parameter, so an exact hit is not always possible). ``ceiling`` (sequential's passes, which no
    sampler exceeds) lets the search model passes near it (:func:`next_guess`).

    The search is a function of ``(family, target, measure)`` alone: ``cache`` (value → result, may
    be shared between the targets of one family) only memoises decodes, it never steers the search.
    So a budget's calibrated setting is the same whichever other budgets or samplers a run holds
    (a warm cache that moved the search once made a head-free baseline drift between two runs).
    ``decodes`` counts the decodes this search ran (memoised ones are free).

    Every decode costs about its passes, so the search never starts in the middle of the range (a
    setting near sequential's, the most expensive decode there is): :func:`next_guess` measures the
    cheap end of the range first, extrapolates from the cheap side until the target is bracketed and
    then interpolates. It stops within ``rtol`` of the target, after ``iters`` steps, or when the
    range cannot reach the target (e.g. a rule whose fastest setting still needs more passes).
    """
    cache = {} if cache is None else cache
    seen: dict[float, float] = {}  # this search's own measurements: value → mean passes
    best: tuple[float, float, float, dict] | None = None  # (error, value, passes, extra)
    decodes = 0
    for step in range(iters):
        if best is not None and best[0] <= rtol:
            break
        value = next_guess(family, target, seen, step % BISECT_EVERY == BISECT_EVERY - 1, ceiling)
        if value is None:
            break
        if value not in cache:
            cache[value] = measure(family.build(value))
            decodes += 1
        passes, extra = cache[value]
        seen[value] = passes
        if best is None or abs(passes / target - 1) < best[0]:
            best = (abs(passes / target - 1), value, passes, extra)
    _, value, passes, extra = best
    return Point(family=family.label, target=target, value=value, passes=passes, decodes=decodes, extra=extra)


def next_guess(family: Family, target: float, seen: dict[float, float], bisect: bool = False,
               ceiling: float | None = None) -> float | None:
    """The next parameter to decode given ``seen`` (value → mean passes), or None when the target
    is out of reach or bracketed more narrowly than ``U_TOL``.

    In the coordinate ``w`` (``±`` the search coordinate, so that passes fall as ``w`` grows):
    with no measurement at or below the target, decode the cheap end of the range (if that is
    measured and still above the target, no setting reaches it). With measurements only at or below
    the target, step from the lowest-``w`` one toward the expensive end (:func:`_extrapolated_step`;
    an overshoot toward the expensive end costs more than a short step). Once both sides are
    measured, :func:`next_u` interpolates inside the bracket. Secants and interpolation are linear
    in log passes, or, given the ``ceiling`` S, in log(p / (S − p)): passes level off toward S at
    the expensive end, where a line in log passes would creep toward it in short steps.
    """
    sign = -1.0 if family.increasing else 1.0
    seen = {v: _odds(p, ceiling) for v, p in seen.items()}
    target = _odds(target, ceiling)
    w_min, w_max = sorted((sign * family.to_u(family.lo), sign * family.to_u(family.hi)))
    pts = sorted((sign * family.to_u(v), p) for v, p in seen.items() if family.lo <= v <= family.hi)
    above = [(w, p) for w, p in pts if p > target]
    a = max(above) if above else None  # the cheapest measurement still above the target
    below = [(w, p) for w, p in pts if p <= target and (a is None or w > a[0])]
    if not below:
        if a is not None and a[0] >= w_max:
            return None  # the cheapest setting of the range is above the target
        return _from_w(family, sign, w_max)
    if a is None:
        if below[0][0] <= w_min:
            return None  # the most expensive setting of the range is below the target
        step = _extrapolated_step(below, target, FIRST_STRIDE * (w_max - w_min))
        return _from_w(family, sign, max(below[0][0] - step, w_min))
    b = below[0]
    if b[0] - a[0] < U_TOL:
        return None
    return _from_w(family, sign, next_u(a[0], b[0], a[1], b[1], target, bisect))


def _extrapolated_step(below: list[tuple[float, float]], target: float, stride: float) -> float:
    """How far below the lowest ``w`` of ``below`` ((w, passes) at or under ``target``, sorted) to
    decode next: the secant through the two lowest points reaches ``target`` there, capped at
    ``MAX_EXPANSION`` × their distance or ``stride``, whichever is larger; ``stride`` itself with one
    point or a flat secant. At least ``U_TOL``."""
    if len(below) < 2:
        return stride
    (w1, p1), (w2, p2) = below[0], below[1]
    slope = (math.log(p1) - math.log(p2)) / (w2 - w1) if p1 > 0 and p2 > 0 else 0.0
    if slope <= 0:
        return stride
    return max(min((math.log(target) - math.log(p1)) / slope, max(MAX_EXPANSION * (w2 - w1), stride)), U_TOL)


def _odds(passes: float, ceiling: float | None) -> float:
    """``passes`` on the scale the search interpolates in log: itself, or ``p / (S − p)`` under a
    ceiling S (monotone in p, so brackets and the target keep their order)."""
    if ceiling is None:
        return passes
    return passes / max(ceiling - passes, ceiling * CEILING_GAP)


def _from_w(family: Family, sign: float, w: float) -> float:
    """The parameter at search coordinate ``w`` (clamped into the family's range)."""
    return min(max(family.from_u(sign * w), family.lo), family.hi)


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
                   log=print, caches: dict | None = None) -> list[Point]:
    """Every family's point at every budget ``sequential_passes / d`` (family-major, divisors in
    increasing order), each with its divisor in ``extra``. One decode cache per family is shared by
    its budgets: a decode one budget's search already ran costs nothing again, and no budget's
    setting depends on the others (:func:`calibrate`). ``caches`` (label → cache), when given,
    receives those caches for later searches (:mod:`mdm_mi.evaluation.matched`)."""
    points, budgets = [], sorted(targets(sequential_passes, divisors).items(), reverse=True)
    line = Progress("calibration", len(families) * len(budgets))  # how far the whole grid is, and time left
    for fam in families:
        cache: dict = {} if caches is None else caches.setdefault(fam.label, {})
        found = {}
        for d, target in budgets:
            t0 = time.time()
            point = calibrate(fam, target, measure, cache=cache, ceiling=sequential_passes)
            found[d] = dataclasses.replace(point, extra={**point.extra, "divisor": d})
            log(f"calibrated {fam.label} 1/{d}: {fam.param}={point.value:.6g} → {point.passes:.2f} passes "
                f"(target {target:.2f}, {point.decodes} decodes, {time.time() - t0:.1f} s); "
                f"{line(len(points) + len(found))}")
        points += [found[d] for d in sorted(found)]
    return points


def calibrated_families(max_tokens: int, settings: Mapping, classes: Mapping[str, type[Sampler]]) -> list[Family]:
    """The family of every calibrated sampler of :data:`mdm_mi.core.sampler_table.SAMPLERS`, in table
    order (:func:`mdm_mi.core.sampler_table.calibrated_variants` of ``settings``, a comparison's arguments
    by config key): its entry's ``calibration`` gives the parameter, range, scale and direction (a range
    up to ``TOKENS`` ends at ``max_tokens``), ``classes`` (the caller's
    :data:`mdm_mi.sampling.registry.SAMPLER_CLASSES`) its class. Contenders (samplers reading MI) are
    compared with the others by :mod:`mdm_mi.evaluation.budgets`."""
    return [entry_family(label, name, fixed, classes[name], max_tokens)
            for label, name, fixed in calibrated_variants(settings)]


def entry_family(label: str, entry: str, fixed: dict, cls: type[Sampler], max_tokens: int | None = None) -> Family:
    """The family of sampler class ``cls`` (its ``fixed`` keywords, row name ``label``) searched as the
    table entry ``entry``'s ``calibration`` says: parameter, range (one up to ``TOKENS`` ends at
    ``max_tokens``), scale and direction. ``entry`` is the class's own, or the rule it stands in for
    (the exact-MI oracle is searched as Algorithm 1 is)."""
    cal = SAMPLERS[entry].calibration
    hi = float(max_tokens) if cal.hi is TOKENS else cal.hi
    return Family(label, cls.name, cal.param, cal.lo, hi, cal.scale, cal.increasing, fixed, cls=cls)


def comparison_families(max_tokens: int, args, classes: Mapping[str, type[Sampler]]) -> list[Family]:
    """:func:`calibrated_families` of a comparison verb's arguments (``sudoku-compare``,
    ``protein-compare``: :func:`mdm_mi.core.sampler_table.comparison_settings`): naive top-k (fractional k
    ≤ ``max_tokens``), EB-Sampler, the Fast-dLLM confidence threshold, MI-guided (Algorithm 1) at each
    λ and every other entry with a calibration at each value of its swept setting."""
    return calibrated_families(max_tokens, comparison_settings(args), classes)
