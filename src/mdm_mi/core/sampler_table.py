"""THE table of samplers: one entry says everything about a sampler but its class — the flags it
takes, the pairwise matrix it reads, its plot style, the workflow's fixed grid of it, what the calibrated
comparisons search. Everything else derives from :data:`SAMPLERS`: the
decoding verbs take its flags (:data:`SamplerFlags`), the comparisons
their swept settings' flags (:data:`SweptFlags`), :mod:`mdm_mi.evaluation.calibrate` its families,
:mod:`mdm_mi.evaluation.budgets` its contenders and baselines (``mi*`` from :data:`ALGORITHM_1`),
:mod:`mdm_mi.evaluation.tables` its columns, :mod:`mdm_mi.evaluation.plotting` its style and the workflow its decode list
(:func:`decode_runs`) and its per-set lists of extra families (:func:`extra_family_keys`). A sampler with a swept setting is
its class and one entry (``docs/developing.md``).

The classes live in :mod:`mdm_mi.core.samplers` (baselines), :mod:`mdm_mi.mi` (Algorithm 1, its
oracle, the rules beyond it and the rivals) and :mod:`mdm_mi.sudoku.unit_disjoint`, all above this
module; the class of each entry is in :data:`mdm_mi.sampler_classes.SAMPLER_CLASSES` under the same key
(a test checks both tables have the same keys), which builds them. This module imports nothing heavy:
the workflow reads it when it builds the DAG, and :mod:`mdm_mi.evaluation` reads it.

    spec = SAMPLERS["eb"]                  # flags ("gamma",), calibration of γ, plot style, ...
    runs = decode_runs(config["sudoku"]["samplers"])
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Callable, Mapping

from mdm_mi.core.calibrated import Calibrated
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import from_schema, h

HEAD, ORACLE = "head", "oracle"  # where a sampler's pairwise matrix comes from
TV_HEAD = "tv-head"  # a head of the same architecture trained on DEMASK's TV target (docs/record/rivals.md)
ATTENTION = "attention"  # the backbone's own attention of the same pass (DAPD; docs/record/rivals.md)
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
    """One sampler (its class: :data:`mdm_mi.sampler_classes.SAMPLER_CLASSES` under the same key).
    ``flags``: its constructor arguments, which are also its table columns; ``pairwise``: the matrix
    it reads (``None``, the trained ``HEAD``, the ``TV_HEAD``, the backbone's ``ATTENTION`` or the probing ``ORACLE``; one that reads a
    pairwise matrix is a contender of the comparisons, the others are baselines); ``user``: whether users may pick it.
    ``style``: how figures draw it (``None``: grey). ``grid``: the workflow's fixed grid, one run per
    combination of these config lists; ``shared``: flags set from one config value (not a list) in the
    grid and the comparisons. ``calibration``: what the comparisons search (``None``: not calibrated);
    the parameters a user who omits them gets are the model's own (:mod:`mdm_mi.core.calibrated`:
    its MANIFEST.json), looked up under this entry's name or under ``settings_of`` (an entry whose
    calibrated settings it shares). ``flag_help``: the help text of each number flag the entry adds
    (omitted: calibrated); the flag itself is a field written in :class:`SamplerFlags`
    (:func:`missing_fields` names any that is not)."""

    flags: tuple[str, ...]
    pairwise: str | None = None
    user: bool = True
    _: KW_ONLY
    flag_help: Mapping[str, str] = field(default_factory=dict)
    style: Style | None = None
    grid: tuple[Setting, ...] = ()
    shared: tuple[Setting, ...] = ()
    calibration: Calibration | None = None
    settings_of: str | None = None

    @property
    def contender(self) -> bool:
        """Whether the comparisons set it against the baselines: it reads pairwise MI."""
        return self.pairwise is not None


def _gamma(**kw) -> Calibration:
    """The entropy budget γ, searched on a log scale: passes fall as it grows."""
    return Calibration("gamma", "γ", *GAMMA_RANGE, "log", increasing=False, **kw)


def _rule(name: str, each: Setting, meaning: str) -> SamplerSpec:
    """A rule beyond Algorithm 1 (a class of :mod:`mdm_mi.mi.decoding_rules`): EB's entropy budget γ and
    its own parameter ``each.flag`` (``meaning``, nats); the comparisons calibrate γ at each value of
    ``each`` (config list ``each.key``); it reads the MI head."""
    own = dataclasses.replace(each, help=f"{name}: {each.flag} values (nats), each calibrated; none: no {name}")
    return SamplerSpec(("gamma", each.flag), HEAD, style=Style(name, "tab:brown"),
                       flag_help={each.flag: f"{meaning} (nats); default: the comparisons' {each.symbol}"},
                       calibration=_gamma(each=own))


MI_FLAGS = ("gamma", "lam", "on_reject", "charge_first")
MI_SHARED = (Setting("on_reject", "mi_on_reject"), Setting("charge_first", "mi_charge_first"))
SAMPLERS: dict[str, SamplerSpec] = {
    "sequential": SamplerSpec(("order",), style=Style("sequential", "black"),
        grid=(Setting("order", "sequential"),)),
    "naive": SamplerSpec(("k",), style=Style("naive top-k", "tab:orange"),
        grid=(Setting("k", "naive_k", "k"),),
        calibration=Calibration("k", "k", 1.0, TOKENS, "log", increasing=False)),
    "eb": SamplerSpec(("gamma",), style=Style("EB-Sampler", "tab:blue"),
        grid=(Setting("gamma", "eb_gamma", "g"),), calibration=_gamma()),
    "threshold": SamplerSpec(("tau",), style=Style("threshold", "tab:red"),
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True)),
    "mi": SamplerSpec(MI_FLAGS, HEAD, style=Style("MI-guided (ours)", "tab:green"),
        grid=(Setting("gamma", "mi_gamma", "g"), Setting("lam", "mi_lambda", "l")), shared=MI_SHARED,
        calibration=_gamma(each=Setting("lam", "mi_lambda", "l", "λ", "MI-guided λ values, each calibrated"),
                           against=("eb", "naive", "threshold", "sequential"))),
    "mi-indep": _rule("mi-indep", Setting("cap", "indep_cap", "cap", "cap"),
                      "never unmask together two tokens with MI above this cap"),
    "mi-2b": _rule("mi-2b", Setting("delta", "two_budget_delta", "d", "δ"),
                   "budget δ on the summed pairwise MI of one pass"),
    # the rivals of docs/record/rivals.md (no calibrated fallbacks in any MANIFEST yet: a user passes their flags)
    "unit-disjoint": SamplerSpec(("gamma", "peers"), style=Style("unit-disjoint", "xkcd:teal"),
        flag_help={"peers": "at most this many peers (same row, column or box) admitted with a cell in one pass; "
                            "default: the comparisons' peers"},
        calibration=_gamma(each=Setting("peers", "unit_disjoint_peers", "p", "peers",
                                        "unit-disjoint: peer caps (0: no two peers in a pass), each calibrated; "
                                        "none: no unit-disjoint"))),
    "demask": SamplerSpec(  # the TV head is trained beside the MI head on the same label shards
        ("tau", "eps"), TV_HEAD, user=False, style=Style("DEMASK", "tab:pink"),
        flag_help={"eps": "DEMASK's budget ε on the summed pairwise dependence of one pass (TV, or nats for "
                          "demask-mi); default: the comparisons' ε"},
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True,
                                each=Setting("eps", "demask_eps", "e", "ε",
                                             "demask: TV budgets ε, each calibrated; none: no demask"))),
    "demask-mi": SamplerSpec(("tau", "eps"), HEAD, style=Style("DEMASK rule, MI head", "tab:olive"),
        calibration=Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True,
                                each=Setting("eps", "demask_mi_eps", "e", "ε",
                                             "demask-mi: dependence budgets ε (nats), each calibrated; none: no demask-mi"))),
    "mi-tv": SamplerSpec(MI_FLAGS, TV_HEAD, user=False, style=Style("Algorithm 1, TV head", "tab:gray"),
        shared=MI_SHARED,
        calibration=_gamma(each=Setting("lam", "mi_tv_lambda", "l", "λ", "mi-tv: λ values, each calibrated; none: no mi-tv"))),
    "dapd": SamplerSpec(("gamma", "theta"), ATTENTION, user=False, style=Style("DAPD", "tab:cyan"),
        flag_help={"theta": "attention-edge threshold θ (× the uniform 1/N); default: the comparisons' θ"},
        calibration=_gamma(each=Setting("theta", "dapd_theta", "t", "θ",
                                        "dapd: attention-edge thresholds θ (× the uniform 1/N), each calibrated; none: no dapd"))),
    "mi-oracle": SamplerSpec(  # 1 + |M|·V extra passes per step; Algorithm 1 with the probed MI: mi's setting
        MI_FLAGS, ORACLE, user=False, style=Style("MI-guided, exact MI", "tab:purple"),
        settings_of="mi"),
}
ALGORITHM_1 = "mi"  # the paper's Algorithm 1: mi* picks its `each` value per budget; the budgets summary's contender
HEAD_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.pairwise == HEAD)
USER_SAMPLERS = tuple(name for name, s in SAMPLERS.items() if s.user)
CALIBRATED_HELP = "default: the model's calibrated value (its MANIFEST.json, mdm_mi.core.calibrated)"


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


def comparison_settings(args) -> dict:
    """A comparison verb's arguments by config key, as :func:`mdm_mi.evaluation.calibrate.calibrated_families`
    reads them: each swept setting (argument named by its key) and each shared one (argument named by
    its flag: ``--on-reject``)."""
    shared = {s.key: getattr(args, s.flag) for spec in SAMPLERS.values() if spec.calibration for s in spec.shared}
    return {s.key: getattr(args, s.key) for s in swept_settings()} | shared


def _users(flag: str) -> str:
    """The user samplers taking ``flag``, for its help text (``eb, mi, mi-indep, mi-2b``)."""
    return ", ".join(name for name, s in SAMPLERS.items() if s.user and flag in s.flags)


def _own(flag: str) -> dict:
    """The help of a flag one entry adds (its ``flag_help``), as field metadata."""
    text = next(s.flag_help[flag] for s in SAMPLERS.values() if flag in s.flag_help)
    return h(f"{_users(flag)}: {text}")


@dataclass(frozen=True, kw_only=True)
class SamplerFlags:
    """The decoding flags of ``sudoku-evaluate``, ``solve``, ``generate`` and ``infill`` (inherited by their
    arguments): one field per flag an entry of :data:`SAMPLERS` takes (:func:`missing_fields` is
    empty; a test checks it). Each sampler reads the ones its entry names; an omitted (``None``)
    number takes the model's calibrated value (:mod:`mdm_mi.core.calibrated`)."""

    sampler: str = field(default="sequential", metadata=h(" | ".join(SAMPLERS)))
    order: str = field(default="entropy", metadata=h(f"{_users('order')}: entropy | margin"))
    k: float | None = field(default=None, metadata=h(
        f"{_users('k')}: tokens per pass (fractional: ⌊k⌋ or ⌈k⌉, k on average); {CALIBRATED_HELP}"))
    gamma: float | None = field(default=None, metadata=h(f"{_users('gamma')}: entropy budget γ (nats); {CALIBRATED_HELP}"))
    tau: float | None = field(default=None, metadata=h(
        f"{_users('tau')}: unmask every token whose top probability exceeds τ; {CALIBRATED_HELP}"))
    lam: float = field(default=1.0, metadata=h(f"{_users('lam')}: weight λ of the pairwise MI"))
    on_reject: str = from_schema("sudoku.samplers.mi_on_reject", f"{_users('on_reject')}: skip | stop at a rejected candidate")
    charge_first: bool = from_schema("sudoku.samplers.mi_charge_first",
                                     f"{_users('charge_first')}: charge the first token's entropy to γ")
    oracle_tol: float = field(default=1e-3, metadata=h(
        f"{', '.join(n for n, s in SAMPLERS.items() if s.pairwise == ORACLE)}: certified probing tolerance (nats)"))
    cap: float | None = field(default=None, metadata=_own("cap"))  # mi-indep's flag_help
    delta: float | None = field(default=None, metadata=_own("delta"))  # mi-2b's flag_help
    peers: float | None = field(default=None, metadata=_own("peers"))  # unit-disjoint's flag_help
    eps: float | None = field(default=None, metadata=_own("eps"))  # demask's and demask-mi's flag_help
    theta: float | None = field(default=None, metadata=_own("theta"))  # dapd's flag_help


def _swept(key: str) -> dict:
    """The metadata of a swept setting's comparison flag: its ``Setting.help``; a rule's list
    (:func:`extra_family_keys`) may be given empty (no such family)."""
    setting = next(s for s in swept_settings() if s.key == key)
    return h(setting.help, empty=key in extra_family_keys())


def optional_swept(key: str, section: str, needs: str = ""):
    """The comparison flag of swept setting ``key`` where a verb makes it optional (``protein-compare``,
    ``antibody-compare``): its default the schema's for config ``section`` (none there: no such family),
    its help the entry's ``Setting.help`` (one home), plus what it ``needs``;
    ``indep_cap: tuple[float, ...] = optional_swept("indep_cap", "protein.compare")``."""
    setting = next(s for s in swept_settings() if s.key == key)
    return from_schema(f"{section}.{key}", setting.help + (f"; {needs}" if needs else ""), kw_only=True, empty=True)


@dataclass(frozen=True, kw_only=True)
class SweptFlags:
    """The comparison verbs' flags of the swept settings (:func:`swept_settings`, one field each, in
    table order): a tuple of values each, required."""

    mi_lambda: tuple[float, ...] = field(metadata=_swept("mi_lambda"))  # mi's calibration.each
    indep_cap: tuple[float, ...] = field(metadata=_swept("indep_cap"))  # mi-indep's
    two_budget_delta: tuple[float, ...] = field(metadata=_swept("two_budget_delta"))  # mi-2b's
    unit_disjoint_peers: tuple[float, ...] = field(metadata=_swept("unit_disjoint_peers"))  # unit-disjoint's
    demask_eps: tuple[float, ...] = field(metadata=_swept("demask_eps"))  # demask's
    demask_mi_eps: tuple[float, ...] = field(metadata=_swept("demask_mi_eps"))  # demask-mi's
    mi_tv_lambda: tuple[float, ...] = field(metadata=_swept("mi_tv_lambda"))  # mi-tv's
    dapd_theta: tuple[float, ...] = field(metadata=_swept("dapd_theta"))  # dapd's


def missing_fields(decoding: type = SamplerFlags, swept: type = SweptFlags) -> list[str]:
    """The flags an entry of :data:`SAMPLERS` names that the written flag classes lack: each entry's
    ``flags`` in ``decoding`` and each swept setting's key in ``swept``, in table order (a test keeps
    it empty: a new entry's flag is one field written here)."""
    have = {f.name for f in dataclasses.fields(decoding)}
    flags = [f for s in SAMPLERS.values() for f in s.flags if f not in have]
    return list(dict.fromkeys(flags)) + [s.key for s in swept_settings() if s.key not in {
        f.name for f in dataclasses.fields(swept)}]


def sampler_params(args, calibrated: Calibrated | Callable[[], Calibrated] = Calibrated()) -> dict:
    """The constructor arguments of ``args.sampler`` from ``args``; omitted (``None``) ones are the
    model's calibrated values (``calibrated``, or a function reading them, called only when one is
    omitted: :func:`mdm_mi.core.calibrated.read_calibrated`); InputError when the model has none."""
    spec = SAMPLERS[args.sampler]
    params = {f: getattr(args, f) for f in spec.flags}
    for name, value in params.items():
        if value is None:
            calibrated = calibrated() if callable(calibrated) else calibrated
            params[name] = calibrated.value(args.sampler, name, spec.settings_of)
        elif not (isinstance(value, str) or math.isfinite(value)):
            raise InputError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
    return params
