"""The one dispatcher from a sampler to the pairwise matrix it reads (its table entry's ``pairwise``): the
MI head's Î, the TV head's T̂, the exact-MI oracle in the head's place, or the backbone's own attention of
each pass (:func:`mdm_mi.mi.dapd.attention_source`). Every verb and comparison goes through it.

    with pairwise_source(model, sampler, head_fn) as fn:
        result = decode(model, tokens, sampler, pairwise_fn=fn)
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Mapping

from mdm_mi.core.sampler_table import ATTENTION, HEAD, ORACLE, SAMPLERS, TV_HEAD
from mdm_mi.core.samplers import Sampler
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.dapd import attention_source

Loader = Callable[[], Callable | None]  # → a pairwise_fn, made when a sampler reads its source (a head is loaded then)


def reads(sampler: Sampler | str) -> str | None:
    """The pairwise matrix a sampler (or a table entry's name) reads: its entry's ``pairwise``; a sampler
    outside the table reads the MI head if it uses a matrix at all."""
    spec = SAMPLERS.get(sampler if isinstance(sampler, str) else sampler.name)
    if spec is not None:
        return spec.pairwise
    return HEAD if getattr(sampler, "uses_pairwise", False) else None


@contextmanager
def pairwise_source(backbone, sampler: Sampler | str, head_fn=None, tv_fn=None, *, loaders: Mapping[str, Loader] = {}):
    """THE dispatcher from a sampler to the ``pairwise_fn`` it reads (:func:`reads`), for one decoding call
    (every verb and comparison goes through it): the backbone's attention of each pass (captured only while
    this is open, so scoring passes between decodes are not captured), else ``loaders[source]()`` when the
    caller makes that source on demand (a user verb loads the head only for a sampler that reads it), else
    the matrix the caller holds: the MI head's (``head_fn``; for ``mi-oracle``, the probing oracle's a
    caller passes there), the TV head's (``tv_fn``), or ``None`` for a sampler that reads no matrix.
    One-line :class:`InputError` when the caller has no source for it (no TV head, a backbone without
    attention).

        with pairwise_source(model, sampler, head_fn) as fn:
            result = decode(model, tokens, sampler, pairwise_fn=fn)
    """
    source = reads(sampler)
    if source == ATTENTION:
        with attention_source(backbone) as fn:
            yield fn
        return
    if source in loaders:
        fn = loaders[source]()
    else:  # the oracle's MI comes in head_fn's place: the oracle ceilings build their decoder with
        # oracle_pairwise_fn as its MI source
        fn = {None: None, HEAD: head_fn, ORACLE: head_fn, TV_HEAD: tv_fn}.get(source)
    if source is not None and fn is None:
        name = sampler if isinstance(sampler, str) else sampler.name
        raise InputError(f"sampler {name!r} reads the {source}, which this run was not given")
    yield fn
