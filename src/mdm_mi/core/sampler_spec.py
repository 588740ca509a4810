"""What a sampler says about itself, beside its class: the types of its ``spec`` (a class attribute of
every :class:`mdm_mi.core.samplers.Sampler` listed in :data:`mdm_mi.sampling.registry.SAMPLER_LIST`).

    class EntropyBounded(Sampler):
        name = "eb"
        spec = SamplerSpec(("gamma",), own_flags={"gamma": Flag("float | None", "entropy budget γ (nats)", calibrated=True)},
                           style=Style("EB-Sampler", "tab:blue"), grid=(Setting("gamma", "eb_gamma", "g"),),
                           calibration=gamma_calibration())

``python -m mdm_mi.sampling.codegen`` writes every listed class's spec, by name, into the torch-free
:mod:`mdm_mi.core.sampler_entries` (with the flag dataclasses they imply) and the schema keys they
name: the workflow reads the table without importing a class. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Mapping

HEAD, ORACLE = "head", "oracle"  # where a sampler's pairwise matrix comes from
TV_HEAD = "tv-head"  # a head of the same architecture trained on DEMASK's TV target (docs/record/rivals.md)
ATTENTION = "attention"  # the backbone's own attention of the same pass (DAPD; docs/record/rivals.md)
QUALITY = "quality-head"  # not a matrix: the quality head's (B, N) P(token right) of the same pass (core/prism.py)
GAMMA_RANGE = (1e-9, 1e3)  # nats: from one token per pass (near-deterministic cells sit below 1e-3) to all at once
TAU_RANGE = (0.0, 1 - 1e-6)
TOKENS = None  # a search range's upper end: the domain's number of tokens (naive k)
ALGORITHM_1 = "mi"  # the paper's Algorithm 1: mi* picks its `each` value per budget; every comparison requires its list
CALIBRATED_HELP = "default: the model's calibrated value (its MANIFEST.json, mdm_mi.core.fallbacks)"


@dataclass(frozen=True)
class Setting:
    """A sampler keyword that the workflow's config (and a comparison's flags) set: ``flag`` the
    keyword, ``key`` its config key and comparison argument (``mi_lambda``), ``code`` its mark in run
    names and slugs (``-l1.0``), ``symbol`` its mark in family labels (``mi λ=1``), ``help`` the help
    text of its comparison flag and schema key (a calibration's ``each``: ``SweptFlags``)."""

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
class Flag:
    """A decoding flag that one sampler introduces (others may take it too): a field of ``SamplerFlags``
    (``sudoku-evaluate``, ``solve``, ``generate``, ``infill``), written by the code generator as
    ``<name>: <type> = <default>`` with ``help`` after the samplers that take it. ``calibrated``: an
    omitted value (``None``) is the model's calibrated one (:mod:`mdm_mi.core.fallbacks`), said in the
    help; ``schema``: the default is that config key's (``infra.flags.from_schema``), not ``default``."""

    type: str
    help: str
    default: object = None
    calibrated: bool = False
    schema: str | None = None


@dataclass(frozen=True)
class SamplerSpec:
    """One sampler, beside its class. ``flags``: its constructor arguments, which are also its table
    columns; ``own_flags``: the ones no earlier entry introduced (each flag is introduced by exactly
    one entry); ``pairwise``: the matrix it reads (``None``, the trained :data:`HEAD`, the
    :data:`TV_HEAD`, the backbone's :data:`ATTENTION`, the probing :data:`ORACLE`, or the per-token
    :data:`QUALITY` head, which a sampler reads as ``view.quality``; one that reads a
    pairwise matrix is a contender of the comparisons, the others are baselines); ``user``: whether
    users may pick it. ``style``: how figures draw it (``None``: grey). ``grid``: the workflow's fixed
    grid, one run per combination of these config lists; ``shared``: flags set from one config value
    (not a list) in the grid and the comparisons. ``calibration``: what the comparisons search
    (``None``: not calibrated); the parameters a user who omits them gets are the model's own
    (:mod:`mdm_mi.core.fallbacks`: its MANIFEST.json), looked up under this entry's name or under
    ``settings_of`` (an entry whose calibrated settings it shares)."""

    flags: tuple[str, ...]
    pairwise: str | None = None
    user: bool = True
    _: KW_ONLY
    own_flags: Mapping[str, Flag] = field(default_factory=dict)
    style: Style | None = None
    grid: tuple[Setting, ...] = ()
    shared: tuple[Setting, ...] = ()
    calibration: Calibration | None = None
    settings_of: str | None = None

    @property
    def contender(self) -> bool:
        """Whether the comparisons set it against the baselines: it reads pairwise MI."""
        return self.pairwise is not None


def gamma_calibration(**kw) -> Calibration:
    """The entropy budget γ, searched on a log scale: passes fall as it grows."""
    return Calibration("gamma", "γ", *GAMMA_RANGE, "log", increasing=False, **kw)


def tau_calibration(**kw) -> Calibration:
    """The confidence threshold τ, searched on a log(1 − τ) scale: passes rise with it."""
    return Calibration("tau", "τ", *TAU_RANGE, "log1m", increasing=True, **kw)
