"""THE table of samplers: one entry says everything about a sampler — its class, the flags it takes,
the pairwise matrix it reads, its plot style, the workflow's fixed grid of it, what the calibrated
comparisons search and the calibrated defaults. Everything else derives from :data:`SAMPLERS`: the
decoding verbs build their sampler here and take its flags (:data:`SamplerFlags`), the comparisons
their swept settings' flags (:data:`SweptFlags`), :mod:`mdm_mi.evaluation.calibrate` its families,
:mod:`mdm_mi.evaluation.budgets` its contenders and baselines (``mi*`` from :data:`ALGORITHM_1`),
:mod:`mdm_mi.evaluation.tables` its columns, :mod:`mdm_mi.evaluation.plotting` its style and the workflow its decode list
(:func:`decode_runs`) and its per-set rule lists (:func:`rule_keys`). A sampler with a swept setting is
its class and one entry (``docs/developing.md``).

The classes live in :mod:`mdm_mi.core.samplers` (baselines), :mod:`mdm_mi.mi.guided` (Algorithm 1 and its
oracle) and :mod:`mdm_mi.mi.rules` (rules beyond Algorithm 1); an entry names its class as
``"module:Class"``, imported on first use, so this module imports nothing heavy (the workflow reads it
when it builds the DAG) and any module may use it.

    sampler = build_sampler("eb", gamma=0.2)
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import math
from dataclasses import KW_ONLY, dataclass, field, make_dataclass
from typing import TYPE_CHECKING, Mapping

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h

if TYPE_CHECKING:
    from mdm_mi.core.samplers import Sampler

HEAD, ORACLE = "head", "oracle"  # where a sampler's pairwise matrix comes from
TV_HEAD = "tv-head"  # a head of the same architecture trained on DEMASK's TV target (docs/rivals.md)
ATTENTION = "attention"  # the backbone's own attention of the same pass (DAPD; docs/rivals.md)
GAMMA_RANGE = (1e-9, 1e3)  # nats: from one token per pass (near-deterministic cells sit below 1e-3) to all at once
TAU_RANGE = (0.0, 1 - 1e-6)
TOKENS = None  # a search range's upper end: the domain's number of tokens (naive k)


@dataclass(frozen=True)
class Setting:
    """A sampler keyword that the workflow's config (and a comparison's flags) set: ``flag`` the
    keyword, ``key`` its config key and comparison argument (``mi_lambda``), ``code`` its mark in run
    names and slugs (``-l1.0``), ``symbol`` its mark in family labels (``mi λ=1``), ``help`` the help
    text of its comparison flag (a calibration's ``each``: :data:`SweptFlags`)."""

    flag: str
    key: str
    code: str = ""
    symbol: str = ""
    help: str = ""


@dataclass(frozen=True)
class Calibration:
    """What the calibrated comparisons search: ``param`` (shown as ``symbol``) in ``[lo, hi]`` (``hi``
    :data:`TOKENS`: the domain's token count) on the ``scale`` of :data:`mdm_mi.evaluation.calibrate.SCALES`;
    ``increasing``: whether mean passes rise with it. ``each``: one family per value of that setting
    (MI-guided: one per λ, labelled ``mi λ=1``), else one family named after the sampler; ``against``:
    the baselines, in order, that the who-wins summary sets the best of its families against."""

    param: str
    symbol: str
    lo: float
    hi: float | None
    scale: str
    increasing: bool
    each: Setting | None = None
    against: tuple[str, ...] = ()


@dataclass(frozen=True)
class Style:
    """How figures draw a sampler: its legend label and colour."""

    label: str
    colour: str


@dataclass(frozen=True)
class SamplerSpec:
    """One sampler. ``impl``: its class, or ``"module:Class"`` imported on first use (:attr:`cls`);
    ``flags``: its constructor arguments, which are also its table columns; ``pairwise``: the matrix
    it reads (``None``, the trained ``HEAD``, the ``TV_HEAD``, the backbone's ``ATTENTION`` or the probing ``ORACLE``; one that reads a
    pairwise matrix is a contender of the comparisons, the others are baselines); ``user``: whether users may pick it.
    ``style``: how figures draw it (``None``: grey). ``grid``: the workflow's fixed grid, one run per
    combination of these config lists; ``shared``: flags set from one config value (not a list) in the
    grid and the comparisons. ``calibration``: what the comparisons search (``None``: not calibrated);
    ``calibrated``: domain → the parameters a user who omits them gets. ``flag_help``: the help text of
    each flag that :class:`_CommonSamplerFlags` lacks (a number; omitted: calibrated), which becomes a
    field of :data:`SamplerFlags`."""

    impl: type | str
    flags: tuple[str, ...]
    pairwise: str | None = None
    user: bool = True
    _: KW_ONLY
    flag_help: Mapping[str, str] = field(default_factory=dict)
    style: Style | None = None
    grid: tuple[Setting, ...] = ()
    shared: tuple[Setting, ...] = ()
    calibration: Calibration | None = None
    calibrated: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @property
    def cls(self) -> type[Sampler]:
        if isinstance(self.impl, str):
            module, name = self.impl.split(":")
            return getattr(importlib.import_module(module), name)
        return self.impl

    @property
    def contender(self) -> bool:
        """Whether the comparisons set it against the baselines: it reads pairwise MI."""
        return self.pairwise is not None


def _gamma(**kw) -> Calibration:
    """The entropy budget γ, searched on a log scale: passes fall as it grows."""
    return Calibration("gamma", "γ", *GAMMA_RANGE, "log", increasing=False, **kw)


def _rule(name: str, cls: str, each: Setting, meaning: str, calibrated: Mapping) -> SamplerSpec:
    """A rule beyond Algorithm 1 (class ``cls`` of :mod:`mdm_mi.mi.rules`): EB's entropy budget γ and
    its own parameter ``each.flag`` (``meaning``, nats); the comparisons calibrate γ at each value of
    ``each`` (config list ``each.key``); it reads the MI head."""
    own = dataclasses.replace(each, help=f"{name}: {each.flag} values (nats), each calibrated; none: no {name}")
    return SamplerSpec(f"mdm_mi.mi.rules:{cls}", ("gamma", each.flag), HEAD, style=Style(name, "tab:brown"),
                       flag_help={each.flag: f"{meaning} (nats); default: the comparisons' {each.symbol}"},
                       calibration=_gamma(each=own), calibrated=calibrated)


# `calibrated`: each parallel sampler's parameters when a user omits them, the settings that
# `sudoku-compare` and `protein-compare` calibrated to 1/CALIBRATED_AT of sequential decoding's mean
# passes on the CPU default's backbones (Sudoku: the hard set's calibration puzzles; proteins: the
# calibration lengths), with the rules' fixed cap / δ of those comparisons. Passes depend on the inputs:
# easier puzzles need fewer passes at the same γ. Source:
# results/cpu-default/{sudoku/budgets/hard,protein/budgets}/runs.json. Proteins: the 2026-12-02
# backbone (mi: λ = 1, mi*'s choice at 1/3); mi-indep / mi-2b: the 2026-12-01 backbone.
CALIBRATED_AT = 3  # sequential's passes ÷ this
MI_FLAGS = ("gamma", "lam", "on_reject", "charge_first")
MI_SHARED = (Setting("on_reject", "mi_on_reject"), Setting("charge_first", "mi_charge_first"))
MI_CALIBRATED = {"sudoku": {"gamma": 0.42328}, "protein": {"gamma": 3.8680}}
SAMPLERS: dict[str, SamplerSpec] = {
    "sequential": SamplerSpec(
        "mdm_mi.core.samplers:Sequential", ("order",), style=Style("sequential", "black"),
        grid=(Setting("order", "sequential"),)),
    "naive": SamplerSpec(
        "mdm_mi.core.samplers:TopK", ("k",), style=Style("naive top-k", "tab:orange"),
        grid=(Setting("k", "naive_k", "k"),),
        calibration=Calibration("k", "k", 1.0, TOKENS, "log", increasing=False),
        calibrated={"sudoku": {"k": 3.1321}, "protein": {"k": 3.0642}}),
    "eb": SamplerSpec(
        "mdm_mi.core.samplers:EntropyBounded", ("gamma",), style=Style("EB-Sampler", "tab:blue"),
        grid=(Setting("gamma", "eb_gamma", "g"),), calibration=_gamma(),
        calibrated={"sudoku": {"gamma": 0.13911}, "protein": {"gamma": 3.4457}}),
    "threshold": SamplerSpec(
        "mdm_mi.core.samplers:ConfidenceThreshold", ("tau",), style=Style("threshold", "tab:red"),
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True),
        calibrated={"sudoku": {"tau": 0.91525}, "protein": {"tau": 0.34353}}),
    "mi": SamplerSpec(
        "mdm_mi.mi.guided:MIGuided", MI_FLAGS, HEAD, style=Style("MI-guided (ours)", "tab:green"),
        grid=(Setting("gamma", "mi_gamma", "g"), Setting("lam", "mi_lambda", "l")), shared=MI_SHARED,
        calibration=_gamma(each=Setting("lam", "mi_lambda", "l", "λ", "MI-guided λ values, each calibrated"),
                           against=("eb", "naive", "threshold", "sequential")),
        calibrated=MI_CALIBRATED),
    "mi-indep": _rule("mi-indep", "IndependentSet", Setting("cap", "indep_cap", "cap", "cap"),
                      "never unmask together two tokens with MI above this cap",
                      {"sudoku": {"gamma": 0.11955, "cap": 0.05}, "protein": {"gamma": 3.4391, "cap": 0.05}}),
    "mi-2b": _rule("mi-2b", "TwoBudget", Setting("delta", "two_budget_delta", "d", "δ"),
                   "budget δ on the summed pairwise MI of one pass",
                   {"sudoku": {"gamma": 0.13443, "delta": 0.1}, "protein": {"gamma": 3.3170, "delta": 0.25}}),
    # the rivals of docs/rivals.md; `calibrated` not yet measured for them: the nearest calibrated
    # sampler's value (EB's γ, threshold's τ, Algorithm 1's γ) with the comparisons' default setting
    "unit-disjoint": SamplerSpec(
        "mdm_mi.sudoku.unit_disjoint:UnitDisjoint", ("gamma", "peers"), style=Style("unit-disjoint", "xkcd:teal"),
        flag_help={"peers": "at most this many peers (same row, column or box) admitted with a cell in one pass; "
                            "default: the comparisons' peers"},
        calibration=_gamma(each=Setting("peers", "unit_disjoint_peers", "p", "peers",
                                        "unit-disjoint: peer caps (0: no two peers in a pass), each calibrated; "
                                        "none: no unit-disjoint")),
        calibrated={"sudoku": {"gamma": 0.13911, "peers": 0}, "protein": {"gamma": 3.4457, "peers": 0}}),
    "demask": SamplerSpec(  # the TV head is trained beside the MI head on the same label shards
        "mdm_mi.mi.demask:Demask", ("tau", "eps"), TV_HEAD, user=False, style=Style("DEMASK", "tab:pink"),
        flag_help={"eps": "DEMASK's budget ε on the summed pairwise dependence of one pass (TV, or nats for "
                          "demask-mi); default: the comparisons' ε"},
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True,
                                each=Setting("eps", "demask_eps", "e", "ε",
                                             "demask: TV budgets ε, each calibrated; none: no demask")),
        calibrated={"sudoku": {"tau": 0.91525, "eps": 0.05}, "protein": {"tau": 0.34353, "eps": 0.05}}),
    "demask-mi": SamplerSpec(
        "mdm_mi.mi.demask:DemaskMI", ("tau", "eps"), HEAD, style=Style("DEMASK rule, MI head", "tab:olive"),
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True,
                                each=Setting("eps", "demask_mi_eps", "e", "ε",
                                             "demask-mi: dependence budgets ε (nats), each calibrated; none: no demask-mi")),
        calibrated={"sudoku": {"tau": 0.91525, "eps": 0.1}, "protein": {"tau": 0.34353, "eps": 0.1}}),
    "mi-tv": SamplerSpec(
        "mdm_mi.mi.tv_guided:TVGuided", MI_FLAGS, TV_HEAD, user=False, style=Style("Algorithm 1, TV head", "tab:gray"),
        shared=MI_SHARED,
        calibration=_gamma(each=Setting("lam", "mi_tv_lambda", "l", "λ", "mi-tv: λ values, each calibrated; none: no mi-tv")),
        calibrated=MI_CALIBRATED),
    "dapd": SamplerSpec(
        "mdm_mi.mi.dapd:Dapd", ("gamma", "theta"), ATTENTION, user=False, style=Style("DAPD", "tab:cyan"),
        flag_help={"theta": "attention-edge threshold θ (× the uniform 1/N); default: the comparisons' θ"},
        calibration=_gamma(each=Setting("theta", "dapd_theta", "t", "θ",
                                        "dapd: attention-edge thresholds θ (× the uniform 1/N), each calibrated; none: no dapd")),
        calibrated={"sudoku": {"gamma": 0.13911, "theta": 1.0}, "protein": {"gamma": 3.4457, "theta": 1.0}}),
    "mi-oracle": SamplerSpec(  # 1 + |M|·V extra passes per step; Algorithm 1 with the probed MI: mi's setting
        "mdm_mi.mi.guided:OracleMI", MI_FLAGS, ORACLE, user=False, style=Style("MI-guided, exact MI", "tab:purple"),
        calibrated=MI_CALIBRATED),
}
ALGORITHM_1 = "mi"  # the paper's Algorithm 1: mi* picks its `each` value per budget; the budgets summary's contender
HEAD_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.pairwise == HEAD)
USER_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.user)
CALIBRATED = {domain: {name: s.calibrated[domain] for name, s in SAMPLERS.items() if domain in s.calibrated}
              for domain in dict.fromkeys(d for s in SAMPLERS.values() for d in s.calibrated)}
CALIBRATED_HELP = f"default: calibrated to sequential's passes ÷ {CALIBRATED_AT} (sampler_table.CALIBRATED)"


def build_sampler(name: str, **params) -> Sampler:
    """Instantiate a sampler of :data:`SAMPLERS` by name, e.g. ``build_sampler("naive", k=4)``."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; known: {', '.join(sorted(SAMPLERS))}")
    return SAMPLERS[name].cls(**params)


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


def swept_settings() -> tuple[Setting, ...]:
    """The ``each`` setting of every calibrated entry, in table order: one comparison flag and config
    list each (``mi_lambda``, ``indep_cap``, ``two_budget_delta``)."""
    return tuple(s.calibration.each for s in SAMPLERS.values() if s.calibration and s.calibration.each)


def rule_keys() -> tuple[str, ...]:
    """The config keys of the swept settings of the rules beyond Algorithm 1 (every entry's but
    :data:`ALGORITHM_1`'s): the lists ``sudoku.compare.rule_sets`` turns off on the other sets."""
    algorithm_1 = SAMPLERS[ALGORITHM_1].calibration.each
    return tuple(s.key for s in swept_settings() if s is not algorithm_1)


def is_algorithm_1(family: str) -> bool:
    """Whether a calibrated family's label (``mi λ=1``) is one of Algorithm 1's, the ones ``mi*`` picks from."""
    return sampler_of(family) == ALGORITHM_1


def comparison_settings(args) -> dict:
    """A comparison verb's arguments by config key, as :func:`mdm_mi.evaluation.calibrate.calibrated_families`
    reads them: each swept setting (argument named by its key) and each shared one (argument named by
    its flag: ``--on-reject``)."""
    shared = {s.key: getattr(args, s.flag) for spec in SAMPLERS.values() if spec.calibration for s in spec.shared}
    return {s.key: getattr(args, s.key) for s in swept_settings()} | shared


def _users(flag: str) -> str:
    """The user samplers taking ``flag``, for its help text (``eb, mi, mi-indep, mi-2b``)."""
    return ", ".join(name for name, s in SAMPLERS.items() if s.user and flag in s.flags)


@dataclass(frozen=True, kw_only=True)
class _CommonSamplerFlags:
    """The decoding flags several samplers share; :data:`SamplerFlags` adds each entry's own
    (``flag_help``)."""

    sampler: str = field(default="sequential", metadata=h(" | ".join(SAMPLERS)))
    order: str = field(default="entropy", metadata=h(f"{_users('order')}: entropy | margin"))
    k: float | None = field(default=None, metadata=h(
        f"{_users('k')}: tokens per pass (fractional: ⌊k⌋ or ⌈k⌉, k on average); {CALIBRATED_HELP}"))
    gamma: float | None = field(default=None, metadata=h(f"{_users('gamma')}: entropy budget γ (nats); {CALIBRATED_HELP}"))
    tau: float | None = field(default=None, metadata=h(
        f"{_users('tau')}: unmask every token whose top probability exceeds τ; {CALIBRATED_HELP}"))
    lam: float = field(default=1.0, metadata=h(f"{_users('lam')}: weight λ of the pairwise MI"))
    on_reject: str = field(default="skip", metadata=h(f"{_users('on_reject')}: skip | stop at a rejected candidate"))
    charge_first: bool = field(default=False, metadata=h(f"{_users('charge_first')}: charge the first token's entropy to γ"))
    oracle_tol: float = field(default=1e-3, metadata=h(
        f"{', '.join(n for n, s in SAMPLERS.items() if s.pairwise == ORACLE)}: certified probing tolerance (nats)"))


def sampler_flags_class() -> type:
    """The decoding flags shared by ``evaluate``, ``solve`` and ``generate`` (inherited by their
    arguments): :class:`_CommonSamplerFlags` plus a number flag (``None``: calibrated) for each
    entry's ``flag_help``. Each sampler reads the ones its :data:`SAMPLERS` entry names, and an
    omitted (``None``) parameter takes the domain's calibrated value."""
    own = {f: text for s in SAMPLERS.values() for f, text in s.flag_help.items()}
    extra = [(f, float | None, field(default=None, metadata=h(f"{_users(f)}: {text}"))) for f, text in own.items()]
    return _here(make_dataclass("SamplerFlags", extra, bases=(_CommonSamplerFlags,), frozen=True, kw_only=True))


def swept_flags_class() -> type:
    """The comparison verbs' flags of the swept settings (:func:`swept_settings`): a tuple of values
    each, required; a rule's (:func:`rule_keys`) may be given empty (no such family)."""
    rules = set(rule_keys())
    fields_ = [(s.key, tuple[float, ...], field(metadata=h(s.help, empty=s.key in rules))) for s in swept_settings()]
    return _here(make_dataclass("SweptFlags", fields_, frozen=True, kw_only=True))


def _here(cls: type) -> type:
    """A made dataclass as a class of this module (its name resolves here, as a written one's would)."""
    cls.__module__ = __name__
    return cls


SamplerFlags = sampler_flags_class()
SweptFlags = swept_flags_class()


def sampler_params(args, domain: str) -> dict:
    """The constructor arguments of ``args.sampler`` from ``args``; omitted (``None``) ones are the
    domain's calibrated values (its entry's ``calibrated``)."""
    spec = SAMPLERS[args.sampler]
    params = {f: getattr(args, f) for f in spec.flags}
    for name, value in params.items():
        if value is None:
            params[name] = spec.calibrated[domain][name]
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
