"""THE table of samplers and what derives from it. Each sampler says what it is in the ``spec`` beside its
class (:mod:`mdm_mi.core.sampler_spec`: the flags it takes, the pairwise matrix it reads, its plot style,
the workflow's fixed grid of it, what the calibrated comparisons search); ``python -m
mdm_mi.sampling.codegen`` copies every listed class's spec (:data:`mdm_mi.sampling.registry.SAMPLER_LIST`)
into the generated, torch-free :mod:`mdm_mi.core.sampler_entries`, re-exported here. Everything else
derives from :data:`SAMPLERS`: the decoding verbs take its flags (:class:`SamplerFlags`), the
comparisons their swept settings' flags (:class:`SweptFlags`), :mod:`mdm_mi.evaluation.calibrate` its
families, :mod:`mdm_mi.evaluation.budgets` its contenders and baselines (``mi*`` from
:data:`ALGORITHM_1`), :mod:`mdm_mi.evaluation.tables` its columns, :mod:`mdm_mi.evaluation.plotting`
its style and the workflow its decode list (:func:`decode_runs`) and its per-set lists of extra
families (:func:`extra_family_keys`). This module imports nothing heavy: the workflow reads it when it
builds the DAG, and :mod:`mdm_mi.evaluation` reads it.

    spec = SAMPLERS["eb"]                  # flags ("gamma",), calibration of γ, plot style, ...
    runs = decode_runs(config["sudoku"]["samplers"])
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping

from mdm_mi.core.fallbacks import Calibrated
from mdm_mi.core.sampler_entries import (SAMPLERS, AntibodySweptFlags, ProteinSweptFlags, SamplerFlags, SudokuSweptFlags,
                                         SweptFlags)
from mdm_mi.core.sampler_spec import (ALGORITHM_1, ATTENTION, CALIBRATED_HELP, GAMMA_RANGE, HEAD, ORACLE, QUALITY,
                                      TAU_RANGE, TOKENS, TV_HEAD, Calibration, Flag, SamplerSpec, Setting, Style)
from mdm_mi.infra.errors import InputError

__all__ = ["ALGORITHM_1", "ATTENTION", "CALIBRATED_HELP", "GAMMA_RANGE", "HEAD", "ORACLE", "TAU_RANGE", "TOKENS",
           "TV_HEAD", "AntibodySweptFlags", "Calibration", "Flag", "ProteinSweptFlags", "SAMPLERS", "SamplerFlags",
           "SamplerSpec", "Setting", "Style", "SudokuSweptFlags", "SweptFlags", "HEAD_SAMPLERS", "USER_SAMPLERS",
           "sampler_of", "slug", "decode_runs", "swept_entries", "swept_settings", "extra_family_keys", "calibrated_variants", "is_algorithm_1",
           "comparison_settings", "sampler_params"]

HEAD_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.pairwise == HEAD)
USER_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.user)


def sampler_of(family: str) -> str:
    """The sampler of a calibrated family's label: ``mi λ=1`` → ``mi``, ``eb`` → ``eb``."""
    return family.split(" ", 1)[0]


def slug(label: str) -> str:
    """A family label as a file and job name (``mi λ=1`` → ``mi-l1``, ``mi-indep cap=0.05`` → ``mi-indep-cap0.05``)."""
    for spec in SAMPLERS.values():
        each = spec.calibration and spec.calibration.each
        if each:
            label = label.replace(f" {each.symbol}=", f"-{each.code}")
    return label


def decode_runs(grid: Mapping) -> dict[str, dict]:
    """The workflow's fixed grid from a config section (``sudoku.samplers``, ``protein.samplers``):
    run name → sampler flags, one run per combination of each entry's ``grid`` lists (in table order;
    an entry whose lists the section lacks is left out), e.g. ``mi-g0.3-l1.0`` →
    ``{sampler: mi, gamma: 0.3, lam: 1.0, on_reject: skip, charge_first: False}``."""
    runs = {}
    for name, spec in SAMPLERS.items():
        if not spec.grid or any(s.key not in grid for s in spec.grid):
            continue
        shared = {s.flag: grid[s.key] for s in spec.shared}
        for values in itertools.product(*(grid[s.key] for s in spec.grid)):
            run = name + "".join(f"-{s.code}{v}" for s, v in zip(spec.grid, values))
            runs[run] = {"sampler": name} | {s.flag: v for s, v in zip(spec.grid, values)} | shared
    return runs


def swept_entries(table: Mapping[str, SamplerSpec] = SAMPLERS) -> list[tuple[str, Setting]]:
    """(entry name, its ``each`` setting) of every calibrated entry with one, in table order (``table``:
    the code generator passes the classes' specs)."""
    return [(name, s.calibration.each) for name, s in table.items() if s.calibration and s.calibration.each]


def swept_settings() -> tuple[Setting, ...]:
    """The ``each`` setting of every calibrated entry, in table order: one comparison flag and config
    list each (``mi_lambda``, ``indep_cap``, ``two_budget_delta``)."""
    return tuple(each for _, each in swept_entries())


def extra_family_keys() -> tuple[str, ...]:
    """The config keys of the extra families' swept settings (every calibrated entry's but
    :data:`ALGORITHM_1`'s: mi-indep, mi-2b and the rivals): the lists ``sudoku.compare.extra_family_sets``
    turns off on the other sets."""
    algorithm_1 = SAMPLERS[ALGORITHM_1].calibration.each
    return tuple(s.key for s in swept_settings() if s is not algorithm_1)


def calibrated_variants(settings: Mapping) -> list[tuple[str, str, dict]]:
    """Every calibrated family of the table, in table order, as ``(label, sampler, fixed keywords)``:
    one per value of an entry's ``each`` setting in ``settings`` (a comparison's arguments, by config
    key: none without values) with its ``shared`` flags, or one named after the sampler. The workflow
    names the protein comparison's parts by their :func:`slug`;
    :func:`mdm_mi.evaluation.calibrate.calibrated_families` makes them families."""
    variants = []
    for name, spec in SAMPLERS.items():
        cal = spec.calibration
        if cal is None:
            continue
        own = [(name, {})] if cal.each is None else [
            (f"{name} {cal.each.symbol}={v:g}", {cal.each.flag: v}) for v in settings.get(cal.each.key, ())]
        shared = {s.flag: settings[s.key] for s in spec.shared} if own else {}
        variants += [(label, name, fixed | shared) for label, fixed in own]
    return variants


def is_algorithm_1(family: str) -> bool:
    """Whether a calibrated family's label (``mi λ=1``) is one of Algorithm 1's, the ones ``mi*`` picks from."""
    return sampler_of(family) == ALGORITHM_1


def refuse_quality(settings: Mapping[str, object]) -> None:
    """One-line :class:`InputError` when a comparison's swept ``settings`` (config key → values) ask for a
    rule that reads the quality head: no verb takes one yet (``benchmarks/dev_screen.py --quality-head``
    and ``benchmarks/confirm_63.py`` do), so it is refused before any work."""
    for name, each in swept_entries():
        if SAMPLERS[name].pairwise == QUALITY and settings.get(each.key):
            raise InputError(f"--{each.key.replace('_', '-')}: {name} reads a quality head, which this verb does not "
                             "take (benchmarks/dev_screen.py --quality-head does): pass no values")


def comparison_settings(args) -> dict:
    """A comparison verb's arguments by config key, as :func:`mdm_mi.evaluation.calibrate.calibrated_families`
    reads them: each swept setting (argument named by its key) and each shared one (argument named by
    its flag: ``--on-reject``)."""
    shared = {s.key: getattr(args, s.flag) for spec in SAMPLERS.values() if spec.calibration for s in spec.shared}
    return {s.key: getattr(args, s.key) for s in swept_settings()} | shared


def sampler_params(args, calibrated: Calibrated | Callable[[], Calibrated] = Calibrated()) -> dict:
    """The constructor arguments of ``args.sampler`` from ``args``; omitted (``None``) ones are the
    model's calibrated values (``calibrated``, or a function reading them, called only when one is
    omitted: :func:`mdm_mi.core.fallbacks.read_calibrated`); InputError when the model has none."""
    spec = SAMPLERS[args.sampler]
    params = {f: getattr(args, f) for f in spec.flags}
    for name, value in params.items():
        if value is None:
            calibrated = calibrated() if callable(calibrated) else calibrated
            params[name] = calibrated.value(args.sampler, name, spec.settings_of)
        elif not (isinstance(value, str) or math.isfinite(value)):
            raise InputError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    return params
