"""Filling the masked positions of templates with any sampler, at a fixed setting or at a calibrated
budget (a fraction of sequential decoding's passes): what ``mdm-mi infill`` and the antibody
comparison share.

Sequential decoding unmasks one position per pass, so on templates with ``|M|`` masked positions its
passes are exactly ``|M|``; a budget ``1/d`` asks a parallel sampler for ``mean |M| / d`` passes on
the same templates, found by :func:`mdm_mi.evaluation.calibrate.calibrate` (its parameter searched on
the calibration templates given).

    d = parse_budget("1/4")                                            # 4
    fam = family_of("eb", max_masked=16, settings={}, classes=SAMPLER_CLASSES)  # EB's γ, on a log scale
    point = calibrate_to(backbone, calib_tokens, fam, d, seed=0)       # γ giving mean |M| / 4 passes
    filled = fill(backbone, tokens, fam.build(point.value), n=2, seed=0)  # tokens (2B, N), passes (2B,)
    kept = Filler(backbone, seed=0, store=ChunkStore(folder, identity, 64))    # the same fills, kept on disk
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.sampler_table import SAMPLERS, swept_settings
from mdm_mi.core.samplers import decode
from mdm_mi.core.streams import RowStreams, row_keys
from mdm_mi.evaluation.calibrate import Family, calibrate, calibrated_families
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import Decoding

DEFAULT_BATCH = 64  # templates per decode call


def parse_budget(text: str) -> int:
    """``1/4`` (or ``4``) → the divisor 4 of sequential's passes; one-line error otherwise."""
    raw = text.strip()
    num, sep, den = raw.partition("/")
    try:
        divisor = int(den) if sep else int(num)
    except ValueError:
        raise InputError(f"--budget must look like 1/4 (a fraction of sequential's passes), got {text!r}") from None
    if (sep and num.strip() != "1") or divisor < 2:
        raise InputError(f"--budget must be 1/d with d >= 2 (1/2, 1/3, 1/4, ...), got {text!r}")
    return divisor


def family_of(sampler: str, max_masked: int, settings: dict, classes: Mapping[str, type]) -> Family:
    """The calibration family of ``sampler`` (its :data:`SAMPLERS` entry's search; a range up to the
    number of tokens, naive k's, ends at ``max_masked``, the most masks a template has), its swept setting
    (MI-guided's λ, ...) and shared flags from ``settings`` (config key → value); one-line error for a
    sampler without a calibration (sequential is the budget's reference). ``classes``: the caller's
    :data:`mdm_mi.sampling.registry.SAMPLER_CLASSES`."""
    spec = SAMPLERS.get(sampler)
    if spec is None or spec.calibration is None:
        calibrated = ", ".join(n for n, s in SAMPLERS.items() if s.calibration and s.user)
        raise InputError(f"--budget needs a calibrated sampler ({calibrated}), not {sampler!r}")
    swept = {s.key for s in swept_settings()}
    own = {s.key for s in spec.calibration.each and (spec.calibration.each,) or ()}
    # only this sampler's swept setting gets a value: the other entries then have no family to build
    lists = {k: ((v,) if k in swept else v) for k, v in settings.items() if k not in swept or k in own}
    families = [f for f in calibrated_families(max(2, max_masked), lists, classes) if f.sampler == sampler]
    if not families:
        raise InputError(f"--budget with {sampler!r} needs its setting {spec.calibration.each.key}")
    return families[0]


@dataclass(frozen=True)
class Filled:
    """tokens ``(n·B, N)``: fill ``k`` of template ``b`` at row ``k·B + b``; passes ``(n·B,)``."""

    tokens: torch.Tensor
    passes: torch.Tensor

    def arrays(self) -> dict[str, np.ndarray]:
        """{tokens, passes} as numpy arrays (what a chunk keeps)."""
        return {"tokens": self.tokens.cpu().numpy(), "passes": self.passes.cpu().numpy()}


@dataclass(frozen=True)
class Filler:
    """How a run fills templates: on ``backbone``, each fill from its keyed stream (``seed``), at
    ``temperature``, ``batch_size`` templates per decode call. With a ``store``
    (:class:`mdm_mi.evaluation.chunks.ChunkStore`), each fill ``k`` of each chunk of templates is decoded
    once and kept on disk, under the part ``"<label> fill k"``: ``label`` names what else fixes the
    fills besides the store's identity and the sampler's setting (the oracle's tolerance, ...). A
    store's ``chunk_items`` that is a multiple of ``batch_size`` decodes the very batches a run without
    a store decodes. With a ``cache`` (:class:`mdm_mi.core.forward_cache.ForwardCache`), the backbone
    rows its decodes reach again (a template's first pass, the same for every fill and setting) are not
    computed again."""

    backbone: Any
    seed: int
    temperature: float = 1.0
    batch_size: int = DEFAULT_BATCH
    store: ChunkStore | None = None
    label: str = ""
    cache: ForwardCache | None = None

    def __call__(self, tokens: torch.Tensor, sampler, n: int, pairwise_fn: Callable | None = None) -> Filled:
        """``n`` fills of every template ``tokens (B, N)`` → :class:`Filled` ``(n·B, N)``, ``(n·B,)``."""
        assert tokens.ndim == 2, tokens.shape
        fills = [self.one(tokens, sampler, k, pairwise_fn) for k in range(n)]
        return Filled(torch.cat([f.tokens for f in fills]), torch.cat([f.passes for f in fills]))

    def part(self, k: int, what: str = "fill") -> str:
        """The store's part name of fill ``k`` (``what="score fill"``: of its scores)."""
        return f"{self.label} {what} {k}".strip()

    def one(self, tokens: torch.Tensor, sampler, k: int, pairwise_fn: Callable | None = None) -> Filled:
        """Fill ``k`` of every template ``tokens (B, N)`` → tokens ``(B, N)``, passes ``(B,)``."""
        if self.store is None:
            return self.rows(tokens, sampler, k, pairwise_fn, 0, len(tokens))
        kept = self.store.decode(tokens.cpu().numpy(), sampler, lambda start, stop: self.rows(
            tokens, sampler, k, pairwise_fn, start, stop).arrays(), part=self.part(k))
        return Filled(*(torch.from_numpy(kept[name]).to(tokens.device) for name in ("tokens", "passes")))

    def rows(self, tokens: torch.Tensor, sampler, k: int, pairwise_fn: Callable | None, start: int,
             stop: int) -> Filled:
        """Fill ``k`` of templates ``start:stop`` of ``tokens (B, N)`` in batches from ``start``: template
        ``b`` draws from the stream of (``seed``, ``b``, ``k``, the sampler and its setting:
        :func:`mdm_mi.core.streams.row_keys`) → tokens ``(stop − start, N)``, passes ``(stop − start,)``."""
        decoding, tag = Decoding(temperature=self.temperature), sampler.stream_tag()
        out, passes = [], []
        for first in range(start, stop, self.batch_size):
            batch = tokens[first : min(first + self.batch_size, stop)]
            streams = RowStreams(row_keys(self.seed, torch.arange(first, first + len(batch)), k, tag))
            res = decode(self.backbone, batch, sampler, streams, decoding=decoding, pairwise_fn=pairwise_fn,
                         cache=self.cache)
            out.append(res.tokens)
            passes.append(res.passes)
        return Filled(torch.cat(out), torch.cat(passes))


def fill(backbone, tokens: torch.Tensor, sampler, n: int, seed: int, temperature: float = 1.0,
         pairwise_fn: Callable | None = None, batch_size: int = DEFAULT_BATCH) -> Filled:
    """``n`` fills of every template ``tokens (B, N)`` (masks at ``backbone.mask_id``) with ``sampler``;
    non-mask positions are never written (:func:`mdm_mi.core.samplers.decode`). Fill ``k`` of template
    ``b`` draws from its own keyed stream (``seed``, ``b``, ``k``, the sampler and its setting:
    :func:`mdm_mi.core.streams.row_keys`), so it is the same whatever other templates, samplers,
    budgets or batch size the run holds, and a prefix of the templates keeps its fills (:class:`Filler`
    with no store)."""
    return Filler(backbone, seed, temperature, batch_size)(tokens, sampler, n, pairwise_fn)


def max_masked(backbone, tokens: torch.Tensor) -> int:
    """The most masked positions any template of ``tokens (B, N)`` has."""
    return int((tokens == backbone.mask_id).sum(1).max())


def sequential_passes(backbone, tokens: torch.Tensor) -> float:
    """Mean passes of sequential decoding on ``tokens (B, N)``: the mean number of masked positions."""
    return float((tokens == backbone.mask_id).sum(1).float().mean())


def calibrate_to(backbone, tokens: torch.Tensor, family: Family, divisor: int, seed: int,
                 temperature: float = 1.0, pairwise_fn: Callable | None = None, cache: dict | None = None,
                 log: Callable[[str], None] = lambda s: None, batch_size: int = DEFAULT_BATCH,
                 filler: Filler | None = None):
    """``family``'s parameter whose fills of ``tokens`` take sequential's passes ÷ ``divisor`` on
    average → a :class:`mdm_mi.evaluation.calibrate.Point`. ``cache`` (value → result) may be shared
    between the budgets of one family. A ``filler`` (one with a store: the search's fills kept on disk)
    replaces ``seed``, ``temperature`` and ``batch_size``."""
    ceiling = sequential_passes(backbone, tokens)
    filler = filler or Filler(backbone, seed, temperature, batch_size)

    def measure(sampler):
        res = filler(tokens, sampler, 1, pairwise_fn)
        mean = float(res.passes.float().mean())
        log(f"  {family.label} {sampler.params()}: {mean:.2f} passes")
        return mean, {}

    return calibrate(family, ceiling / divisor, measure, cache=cache, ceiling=ceiling)
