"""Sampler flags shared by the decoding verbs (Sudoku ``evaluate``/``solve``, protein ``generate``).

A verb's argument dataclass carries ``sampler`` plus the flags below; these functions turn them into
a :class:`~mdm_mi.samplers.Sampler` and, for MI samplers, the pairwise-matrix source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mdm_mi.cli import h
from mdm_mi.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from mdm_mi.samplers import Sampler

MI_FLAGS = ("gamma", "lam", "on_reject", "charge_first")
SAMPLER_FLAGS = {"sequential": ("order",), "naive": ("k",), "eb": ("gamma",), "threshold": ("tau",),
                 "mi": MI_FLAGS, "mi-oracle": MI_FLAGS, "mi-indep": ("gamma", "cap"), "mi-2b": ("gamma", "delta")}
HEAD_SAMPLERS = ("mi", "mi-indep", "mi-2b")  # samplers that read the trained MI head


@dataclass(frozen=True, kw_only=True)
class SamplerFlags:
    """The decoding flags shared by ``evaluate`` and ``generate`` (inherited by their arguments)."""

    sampler: str = field(default="sequential", metadata=h("sequential | naive | eb | threshold | mi | mi-indep | mi-2b | mi-oracle"))
    order: str = field(default="entropy", metadata=h("sequential: entropy | margin"))
    k: float = field(default=0, metadata=h("naive: tokens per pass (fractional: ⌊k⌋ or ⌈k⌉, k on average)"))
    gamma: float = field(default=0.0, metadata=h("eb, mi: budget γ (nats)"))
    tau: float = field(default=0.9, metadata=h("threshold: unmask every token whose top probability exceeds τ"))
    cap: float = field(default=0.05, metadata=h("mi-indep: never unmask together two tokens with MI above this (nats)"))
    delta: float = field(default=0.1, metadata=h("mi-2b: budget on the summed pairwise MI of one pass (nats)"))
    lam: float = field(default=1.0, metadata=h("mi: weight λ of the pairwise MI"))
    on_reject: str = field(default="skip", metadata=h("mi: skip | stop at a rejected candidate"))
    charge_first: bool = field(default=False, metadata=h("mi: charge the first token's entropy to γ"))
    oracle_tol: float = field(default=1e-3, metadata=h("mi-oracle: certified probing tolerance (nats)"))


def sampler_from_args(args) -> "Sampler":
    """Build the sampler named by ``args.sampler`` from the flags it uses (InputError if invalid)."""
    import mdm_mi.mi.guided  # noqa: F401  (registers mi and mi-oracle)
    import mdm_mi.mi.rules  # noqa: F401  (registers mi-indep and mi-2b)
    from mdm_mi.samplers import build_sampler

    if args.sampler not in SAMPLER_FLAGS:
        raise InputError(f"unknown sampler {args.sampler!r}; choose one of {', '.join(SAMPLER_FLAGS)}")
    try:
        return build_sampler(args.sampler, **{f: getattr(args, f) for f in SAMPLER_FLAGS[args.sampler]})
    except ValueError as exc:
        raise InputError(str(exc)) from None


def pairwise_from_args(args, backbone, model_dir, domain: str, device):
    """The pairwise matrix of MI samplers: ``mi`` reads the trained head (``--head``, else the one
    beside ``model_dir``; no extra pass), ``mi-oracle`` probes the model exactly; ``None`` otherwise."""
    from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn
    from mdm_mi.user.common import load_head_for

    if args.sampler in HEAD_SAMPLERS:
        return head_pairwise_fn(load_head_for(args, backbone, model_dir, domain, device))
    if args.sampler == "mi-oracle":
        return oracle_pairwise_fn(backbone, method="certified", tol=args.oracle_tol)
    return None
