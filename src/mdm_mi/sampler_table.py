"""THE table of samplers: name → class, the flags it takes and what pairwise matrix it reads.

Every decoding verb (Sudoku ``evaluate``/``solve``, protein ``generate``, the comparisons) builds its
sampler here; the classes live in :mod:`mdm_mi.samplers` (baselines), :mod:`mdm_mi.mi.guided`
(Algorithm 1 and its oracle) and :mod:`mdm_mi.mi.rules` (rules beyond Algorithm 1).

    sampler = build_sampler("eb", gamma=0.2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from mdm_mi.errors import InputError
from mdm_mi.flags import h
from mdm_mi.mi.guided import MIGuided, OracleMI
from mdm_mi.mi.rules import IndependentSet, TwoBudget
from mdm_mi.samplers import ConfidenceThreshold, EntropyBounded, Sampler, Sequential, TopK

HEAD, ORACLE = "head", "oracle"  # where a sampler's pairwise matrix comes from


class SamplerSpec(NamedTuple):
    """One sampler: its class, the flags (constructor arguments) it takes, the pairwise matrix it
    reads (``None``, the trained ``HEAD`` or the probing ``ORACLE``) and whether users may pick it."""

    cls: type[Sampler]
    flags: tuple[str, ...]
    pairwise: str | None = None
    user: bool = True


MI_FLAGS = ("gamma", "lam", "on_reject", "charge_first")
SAMPLERS: dict[str, SamplerSpec] = {
    "sequential": SamplerSpec(Sequential, ("order",)),
    "naive": SamplerSpec(TopK, ("k",)),
    "eb": SamplerSpec(EntropyBounded, ("gamma",)),
    "threshold": SamplerSpec(ConfidenceThreshold, ("tau",)),
    "mi": SamplerSpec(MIGuided, MI_FLAGS, HEAD),
    "mi-indep": SamplerSpec(IndependentSet, ("gamma", "cap"), HEAD),
    "mi-2b": SamplerSpec(TwoBudget, ("gamma", "delta"), HEAD),
    "mi-oracle": SamplerSpec(OracleMI, MI_FLAGS, ORACLE, user=False),  # 1 + |M|·V extra passes per step
}
HEAD_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.pairwise == HEAD)
USER_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.user)


def build_sampler(name: str, **params) -> Sampler:
    """Instantiate a sampler of :data:`SAMPLERS` by name, e.g. ``build_sampler("naive", k=4)``."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; known: {', '.join(sorted(SAMPLERS))}")
    return SAMPLERS[name].cls(**params)


# Each parallel sampler's parameters when a user omits them: the settings that `sudoku-compare` and
# `protein-compare` calibrated to 1/3 of sequential decoding's mean passes on the CPU default's
# backbones (Sudoku: the hard set's calibration puzzles; proteins: the calibration lengths), with
# the rules' fixed τ / δ of those comparisons. Passes depend on the inputs: easier puzzles need fewer
# passes at the same γ. Source: results/cpu-default/{sudoku/budgets/hard,protein/budgets}/runs.json.
CALIBRATED_AT = 3  # sequential's passes ÷ this
_MEASURED: dict[str, dict[str, dict[str, float]]] = {
    "sudoku": {
        "naive": {"k": 3.1321},
        "eb": {"gamma": 0.13911},
        "threshold": {"tau": 0.91525},
        "mi": {"gamma": 0.42328},
        "mi-indep": {"gamma": 0.11955, "cap": 0.05},
        "mi-2b": {"gamma": 0.13443, "delta": 0.1},
    },
    "protein": {  # 2026-12-02 backbone (mi: λ = 1, mi*'s choice at 1/3); mi-indep / mi-2b: 2026-12-01 backbone
        "naive": {"k": 3.0642},
        "eb": {"gamma": 3.4457},
        "threshold": {"tau": 0.34353},
        "mi": {"gamma": 3.8680},
        "mi-indep": {"gamma": 3.4391, "cap": 0.05},
        "mi-2b": {"gamma": 3.3170, "delta": 0.25},
    },
}
# the oracle is Algorithm 1 with the probed MI in place of the head: the same setting
CALIBRATED = {domain: table | {"mi-oracle": table["mi"]} for domain, table in _MEASURED.items()}
CALIBRATED_HELP = f"default: calibrated to sequential's passes ÷ {CALIBRATED_AT} (sampler_table.CALIBRATED)"


@dataclass(frozen=True, kw_only=True)
class SamplerFlags:
    """The decoding flags shared by ``evaluate``, ``solve`` and ``generate`` (inherited by their
    arguments); each sampler reads the ones its :data:`SAMPLERS` entry names, and an omitted
    (``None``) parameter takes the domain's :data:`CALIBRATED` value."""

    sampler: str = field(default="sequential", metadata=h(" | ".join(SAMPLERS)))
    order: str = field(default="entropy", metadata=h("sequential: entropy | margin"))
    k: float | None = field(default=None, metadata=h(
        f"naive: tokens per pass (fractional: ⌊k⌋ or ⌈k⌉, k on average); {CALIBRATED_HELP}"))
    gamma: float | None = field(default=None, metadata=h(f"eb, mi, mi-indep, mi-2b: entropy budget γ (nats); {CALIBRATED_HELP}"))
    tau: float | None = field(default=None, metadata=h(
        f"threshold: unmask every token whose top probability exceeds τ; {CALIBRATED_HELP}"))
    cap: float | None = field(default=None, metadata=h(
        "mi-indep: never unmask together two tokens with MI above this (nats); default: the comparisons' τ"))
    delta: float | None = field(default=None, metadata=h(
        "mi-2b: budget on the summed pairwise MI of one pass (nats); default: the comparisons' δ"))
    lam: float = field(default=1.0, metadata=h("mi: weight λ of the pairwise MI"))
    on_reject: str = field(default="skip", metadata=h("mi: skip | stop at a rejected candidate"))
    charge_first: bool = field(default=False, metadata=h("mi: charge the first token's entropy to γ"))
    oracle_tol: float = field(default=1e-3, metadata=h("mi-oracle: certified probing tolerance (nats)"))


def sampler_params(args, domain: str) -> dict:
    """The constructor arguments of ``args.sampler`` from ``args``; omitted (``None``) ones are the
    domain's :data:`CALIBRATED` values."""
    params = {f: getattr(args, f) for f in SAMPLERS[args.sampler].flags}
    for name, value in params.items():
        if value is None:
            params[name] = CALIBRATED[domain][args.sampler][name]
        elif not (isinstance(value, str) or math.isfinite(value)):
            raise InputError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    return params


def sampler_from_args(args, allowed: tuple[str, ...] = tuple(SAMPLERS), domain: str = "sudoku") -> Sampler:
    """Build the sampler named by ``args.sampler`` from the flags it uses, omitted parameters at the
    ``domain``'s calibrated values (InputError if invalid)."""
    if args.sampler not in allowed:
        raise InputError(f"unknown sampler {args.sampler!r}; choose one of {', '.join(allowed)}")
    try:
        return build_sampler(args.sampler, **sampler_params(args, domain))
    except ValueError as exc:
        raise InputError(str(exc)) from None


def pairwise_from_args(args, backbone, model_dir, domain: str, device):
    """The pairwise matrix of MI samplers: ``HEAD`` samplers read the trained head (``--head``, else
    the one beside ``model_dir``; no extra pass), ``mi-oracle`` probes the model exactly; else ``None``."""
    from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn
    from mdm_mi.user_common import load_head_for

    source = SAMPLERS[args.sampler].pairwise
    if source == HEAD:
        return head_pairwise_fn(load_head_for(args, backbone, model_dir, domain, device))
    if source == ORACLE:
        return oracle_pairwise_fn(backbone, method="certified", tol=args.oracle_tol)
    return None
