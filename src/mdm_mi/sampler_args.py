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
SAMPLER_FLAGS = {"sequential": ("order",), "naive": ("k",), "eb": ("gamma",), "mi": MI_FLAGS, "mi-oracle": MI_FLAGS}


@dataclass(frozen=True, kw_only=True)
class SamplerFlags:
    """The decoding flags shared by ``evaluate`` and ``generate`` (inherited by their arguments)."""

    sampler: str = field(default="sequential", metadata=h("sequential | naive | eb | mi | mi-oracle"))
    order: str = field(default="entropy", metadata=h("sequential: entropy | margin"))
    k: int = field(default=0, metadata=h("naive: tokens per pass"))
    gamma: float = field(default=0.0, metadata=h("eb, mi: budget γ (nats)"))
    lam: float = field(default=1.0, metadata=h("mi: weight λ of the pairwise MI"))
    on_reject: str = field(default="skip", metadata=h("mi: skip | stop at a rejected candidate"))
    charge_first: bool = field(default=False, metadata=h("mi: charge the first token's entropy to γ"))
    oracle_tol: float = field(default=1e-3, metadata=h("mi-oracle: certified probing tolerance (nats)"))


def sampler_from_args(args) -> "Sampler":
    """Build the sampler named by ``args.sampler`` from the flags it uses (InputError if invalid)."""
    import mdm_mi.mi.guided  # noqa: F401  (registers mi and mi-oracle)
    from mdm_mi.samplers import build_sampler

    if args.sampler not in SAMPLER_FLAGS:
        raise InputError(f"unknown sampler {args.sampler!r}; choose one of {', '.join(SAMPLER_FLAGS)}")
    try:
        return build_sampler(args.sampler, **{f: getattr(args, f) for f in SAMPLER_FLAGS[args.sampler]})
    except ValueError as exc:
        raise InputError(str(exc)) from None


def pairwise_from_args(args, backbone, device, head_dir=None):
    """The pairwise matrix of MI samplers: the trained head at ``head_dir`` (default ``args.head``;
    no extra pass) or the exact-MI oracle; ``None`` for the other samplers."""
    from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn
    from mdm_mi.mi.head import load_head

    head_dir = head_dir if head_dir is not None else getattr(args, "head", None)
    if args.sampler == "mi":
        if head_dir is None:
            raise InputError("sampler 'mi' needs --head (a trained MI head checkpoint folder)")
        head, _ = load_head(head_dir, device)
        if head.in_dim != backbone.hidden_dim:
            raise InputError(f"MI head {head_dir} reads width {head.in_dim}, the model gives {backbone.hidden_dim}")
        return head_pairwise_fn(head)
    if args.sampler == "mi-oracle":
        return oracle_pairwise_fn(backbone, method="certified", tol=args.oracle_tol)
    return None
