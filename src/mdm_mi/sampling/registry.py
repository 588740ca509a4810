"""The samplers, in table order: :data:`SAMPLER_LIST` is the one list a new sampler joins (its class,
with its ``spec``, in a module of its own or of its rule family); ``python -m mdm_mi.sampling.codegen``
then writes the torch-free table (:mod:`mdm_mi.core.sampler_entries`) and the schema keys from it.
Built here by name:

    sampler = build_sampler("eb", gamma=0.2)
    sampler = sampler_from_args(args, allowed=USER_SAMPLERS, calibrated=calibrated_for(args, "sudoku"))

The classes are plain imports (an editor goes from a list entry to its class in one hop), which puts
this module above :mod:`mdm_mi.mi` and the domains; the settings table stays in :mod:`mdm_mi.core`
because :mod:`mdm_mi.evaluation` and the workflow (at DAG build, without torch) read it. Verbs build
samplers here and hand the classes to the library that builds its own (the calibrated families of
:func:`mdm_mi.evaluation.calibrate.calibrated_families`).
"""

from __future__ import annotations

from typing import Callable

from mdm_mi.core.fallbacks import Calibrated
from mdm_mi.core.sampler_table import SAMPLERS, sampler_params
from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded, NaiveTopK, Sampler, Sequential
from mdm_mi.core.klass import Klass
from mdm_mi.core.prism import EBPrism, Prism
from mdm_mi.core.wino import EBVerify, Wino
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.dapd import Dapd
from mdm_mi.mi.decoding_rules import IndependentSet, TwoBudget
from mdm_mi.mi.demask import Demask, DemaskMI
from mdm_mi.mi.guided import MIGuided, OracleMI
from mdm_mi.mi.punt import Punt
from mdm_mi.mi.remask import MIRemask
from mdm_mi.mi.tv_guided import TVGuided
from mdm_mi.sudoku.unit_disjoint import UnitDisjoint

SAMPLER_LIST: tuple[type[Sampler], ...] = (  # the table's order: baselines, Algorithm 1, the rules beyond it, the rivals
    Sequential,
    NaiveTopK,
    EntropyBounded,
    ConfidenceThreshold,
    MIGuided,
    IndependentSet,
    TwoBudget,
    UnitDisjoint,
    Demask,
    DemaskMI,
    TVGuided,
    Dapd,
    Wino,
    EBVerify,
    MIRemask,
    Klass,
    Punt,
    Prism,
    EBPrism,
    OracleMI,
)
SAMPLER_CLASSES: dict[str, type[Sampler]] = {cls.name: cls for cls in SAMPLER_LIST}


def build_sampler(name: str, **params) -> Sampler:
    """Instantiate a sampler of :data:`SAMPLER_CLASSES` by name, e.g. ``build_sampler("naive", k=4)``."""
    if name not in SAMPLER_CLASSES:
        raise ValueError(f"unknown sampler {name!r}; known: {', '.join(sorted(SAMPLER_CLASSES))}")
    return SAMPLER_CLASSES[name](**params)


def sampler_from_args(args, allowed: tuple[str, ...] = tuple(SAMPLERS),
                      calibrated: Calibrated | Callable[[], Calibrated] = Calibrated()) -> Sampler:
    """Build the sampler named by ``args.sampler`` from the flags it uses, omitted parameters at the
    model's calibrated values (:func:`mdm_mi.core.sampler_table.sampler_params`; InputError if invalid)."""
    if args.sampler not in allowed:
        raise InputError(f"unknown sampler {args.sampler!r}; choose one of {', '.join(allowed)}")
    try:
        return build_sampler(args.sampler, **sampler_params(args, calibrated))
    except ValueError as exc:
        raise InputError(str(exc)) from None
