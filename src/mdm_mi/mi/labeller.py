"""Labelling a shard of contexts: each context probed by one of :data:`METHODS` (exact, certified or
top-k, each with its proven bound), stacked into safetensors-ready tensors.

    shard = label_contexts(model, contexts, method="certified", tol=1e-3)   # dict of (C, ...) tensors
    shard = label_contexts(model, contexts, method="topk", k=512)           # large V: 1 + |M| k passes
    assert (shard["bound"] >= 0).all()                                       # the proven error, per pair
    shard["tv"]                                # DEMASK's TV target from the same probes, (C, N, N), directed
"""

from __future__ import annotations

from typing import Callable

import torch

from mdm_mi.core.backbone import Backbone
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.probe import (DEFAULT_BATCH_SIZE, DEFAULT_TOL, MIN_TOL, ProbeResult, certified_mi, content_width,
                             exact_mi, padded_result)
from mdm_mi.mi.topk_probe import topk_mi

METHODS = ("exact", "certified", "topk")  # exact: 1 + |M| V passes; certified: fewer, bound <= tol; topk: 1 + |M| k


def _round_up_f32(x: torch.Tensor) -> torch.Tensor:
    """float64 → float32 rounded towards +inf, so a stored bound never shrinks."""
    y = x.float()
    return torch.where(y.double() < x, torch.nextafter(y, torch.full_like(y, float("inf"))), y)


@torch.inference_mode()
def label_contexts(
    backbone: Backbone,
    contexts: torch.Tensor,
    method: str = "exact",
    tol: float = DEFAULT_TOL,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
    k: int | None = None,
) -> dict[str, torch.Tensor]:
    """Label a shard ``contexts (C, N)`` with :func:`probe_context` (``method`` one of :data:`METHODS`;
    ``k`` the top-k probe's values per masked position).

    Returns safetensors-ready tensors: ``label`` and ``bound`` ``(C, N, N)`` float32 (bound rounded
    up; float32 storage of the label adds a relative rounding of at most 2**-24), ``masked (C, N)``
    bool, ``passes (C,)`` long and the diagnostics ``gap_mean``, ``gap_max``, ``asymmetry (C,)``
    float32; beside the MI, from the same probes, DEMASK's directed TV target ``tv`` and its proven
    error ``tv_bound`` ``(C, N, N)`` float32 (:class:`~mdm_mi.mi.probe.ProbeResult`; the bound rounded
    up). ``progress(done, total)`` is called after each context.
    """
    check_settings(method, k, tol, batch_size)
    n_ctx, n = contexts.shape
    results = []
    for done, tokens in enumerate(contexts, start=1):
        results.append(probe_context(backbone, tokens, method, tol, batch_size, k))
        if progress is not None:
            progress(done, n_ctx)
    empty = contexts.new_zeros(0, n, n, dtype=torch.float64)
    stats = {name: [getattr(r, name) for r in results] for name in ("gap_mean", "gap_max", "asymmetry")}
    return {
        "label": torch.stack([r.label for r in results]).float() if results else empty.float(),
        "bound": _round_up_f32(torch.stack([r.bound for r in results]) if results else empty),
        "tv": torch.stack([r.tv for r in results]).float() if results else empty.float(),
        "tv_bound": _round_up_f32(torch.stack([r.tv_bound for r in results]) if results else empty),
        "masked": contexts == backbone.mask_id,
        "passes": torch.tensor([r.passes for r in results], dtype=torch.long, device=contexts.device),
        **{name: torch.tensor(vals, dtype=torch.float32, device=contexts.device) for name, vals in stats.items()},
    }


def probe_context(backbone: Backbone, tokens: torch.Tensor, method: str, tol: float = DEFAULT_TOL,
                  batch_size: int = DEFAULT_BATCH_SIZE, k: int | None = None) -> ProbeResult:
    """:func:`exact_mi`, :func:`certified_mi` or :func:`topk_mi` (``method``, one of :data:`METHODS`)
    of one context ``tokens (N,)``, probed without its trailing pads (:func:`content_width`) and
    returned at width ``N`` (:func:`padded_result`): what the labeller and the MI oracle both run."""
    width = content_width(backbone, tokens)
    if method == "exact":
        result = exact_mi(backbone, tokens[:width], batch_size)
    elif method == "topk":
        result = topk_mi(backbone, tokens[:width], k, batch_size)
    else:
        result = certified_mi(backbone, tokens[:width], tol, batch_size)
    return padded_result(result, len(tokens))


def check_method(method: str, k: int | None) -> None:
    """A known labeller, ``k`` given for top-k, and ``k >= 1`` wherever given (the exact and certified
    probes ignore it): one-line :class:`InputError` otherwise."""
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if (method == "topk" and k is None) or (k is not None and k < 1):
        raise InputError(f"--k must be >= 1 (values probed per masked position; --method topk needs it), got {k}")


def check_settings(method: str, k: int | None, tol: float, batch_size: int) -> None:
    """:func:`check_method`, a batch of at least one sequence and a tolerance the certified probe can
    keep (every method is given one): one-line :class:`InputError` naming the flag otherwise."""
    check_method(method, k)
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1 (sequences per backbone call), got {batch_size}")
    if not tol > MIN_TOL:
        raise InputError(f"--tol must exceed {MIN_TOL:g} nats (the certified probe's largest error), got {tol:g}")


def recorded_k(method: str, k: int | None) -> int | None:
    """The ``k`` a shard's JSON records: top-k's; None for the methods that do not use it."""
    return k if method == "topk" else None
