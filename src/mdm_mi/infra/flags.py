"""Flag metadata for the verbs' argument dataclasses, and the flags many verbs share; imports only
:mod:`mdm_mi.infra.schema` (the config schema's defaults) and :mod:`mdm_mi.infra.validate` (what a flag
accepts: ``h("...", low=1)``, checked by the CLI before the verb runs).

    sampler: str = field(default="sequential", metadata=h("which sampler"))
    batch_size: int = from_schema("sudoku.eval.batch_size", "puzzles decoded together")

A verb's arguments inherit the shared flags it takes (each a frozen, keyword-only mixin, so its fields
can come before required ones; the CLI builds every dataclass by keyword) and declare the rest:

    @dataclass(frozen=True)
    class FigureMiMapArgs(FigureOut, DeviceFlag):
        puzzles: Path = field(metadata=h("puzzle CSV"))

A flag fed from the config has the schema's default (only an input path may stay required:
``tests/test_config.py``); a shared flag whose default differs by domain is declared again by each verb
with its own (:func:`shared_from_schema`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from mdm_mi.infra.schema import schema_default
from mdm_mi.infra.validate import CHECK_KEYS, NAME_TAG, WILDCARD


def h(text: str, positional: bool = False, group: str | None = None, empty: bool = False, **check) -> dict:
    """Field metadata carrying a flag's help text: ``field(metadata=h("..."))``; ``positional=True``
    makes the field an optional positional argument instead of a ``--flag``; ``group`` lists the flag
    under that heading in ``--help``; ``empty=True`` lets a required or config-fed tuple flag be given with
    no values (``--indep-cap`` alone: none), as a config's empty list is passed; ``check`` holds what the flag
    accepts beyond its type's and its name's rules (:class:`mdm_mi.infra.validate.FlagCheck`'s fields:
    ``low=-1``, ``kind=OUT_FOLDER``, ``item_bytes=...``)."""
    unknown = set(check) - set(CHECK_KEYS)
    if unknown:
        raise TypeError(f"h() got unknown check keys {sorted(unknown)}; known: {', '.join(CHECK_KEYS)}")
    return {"help": text, "positional": positional, "group": group, "empty": empty, "check": check}


def from_schema(key: str, text: str, *, kw_only: bool | None = None, **options):
    """A flag fed from the config key ``key`` (``"sudoku.eval.batch_size"``) whose default is the
    schema's (:func:`mdm_mi.infra.schema.schema_default`: written there only), with help ``text`` and
    :func:`h`'s ``options``; its metadata names the key (``metadata["config"]``), which the tests read."""
    return field(default=schema_default(key), kw_only=MISSING if kw_only is None else kw_only,
                 metadata=h(text, **options) | {"config": key})


def shared_from_schema(shared: type, key: str, name: str | None = None):
    """A field of the shared flags class ``shared`` declared again by a verb with one domain's default: the
    field ``name`` (default: ``key``'s last part), its help and checks as ``shared`` declares them,
    keyword-only, its default the schema's of ``key`` (as :func:`from_schema`), so two domains share a
    flag's words and each keeps its own default:

        steps: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.steps")
        on_reject: str = shared_from_schema(ComparisonFlags, "sudoku.samplers.mi_on_reject", "on_reject")
    """
    name = name or key.rsplit(".", 1)[-1]
    (f,) = [f for f in fields(shared) if f.name == name]
    return field(default=schema_default(key), kw_only=True, metadata=dict(f.metadata) | {"config": key})


@dataclass(frozen=True)
class TrackingFlags:
    """The tracking flags every workflow verb takes (``user`` verbs none), checked by the one validator
    before the job opens its run. ``--wildcard`` is repeated, one ``KEY=VALUE`` each."""

    tracking_uri: str = field(default="none", metadata=h(
        "MLflow URI: none (no tracking), sqlite:///PATH (spooled; `mdm-mi track` mirrors it), file:PATH or http(s)://HOST"))
    experiment: str = field(default="mdm-mi", metadata=h("MLflow experiment"))
    rule: str | None = field(default=None, metadata=h(
        "rule name tag (default: the workflow rule named after this verb, e.g. prepare_sudoku)", pattern=NAME_TAG))
    wildcard: tuple[str, ...] = field(default=(), metadata=h("wildcard tag KEY=VALUE (the flag repeated for more)",
                                                             pattern=WILDCARD))
    config_hash: str | None = field(default=None, metadata=h("tag value; default: hash of this job's arguments"))


DEVICE_HELP = "auto | cpu | cuda"
THREADS_HELP = "torch CPU threads"
SEED_HELP = "random seed"


# --- where a job runs ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DeviceFlag:
    """``--device`` of a verb that runs a model: the GPU when there is one, unless given."""

    device: str = field(default="auto", metadata=h(DEVICE_HELP))


@dataclass(frozen=True, kw_only=True)
class DeviceThreadsFlags(DeviceFlag):
    """``--device`` and ``--threads`` of a decoding job (one CPU thread unless given: jobs run side by side)."""

    threads: int = field(default=1, metadata=h(THREADS_HELP))


@dataclass(frozen=True, kw_only=True)
class SeededRunFlags(DeviceThreadsFlags):
    """``--seed`` (0 unless given), ``--device`` and ``--threads`` of a decoding job."""

    seed: int = field(default=0, metadata=h(SEED_HELP))


@dataclass(frozen=True, kw_only=True)
class TrainRunFlags:
    """``--device`` and ``--threads`` of a training or labelling job: the config's top-level keys, so their
    defaults are the schema's (the workflow passes them)."""

    device: str = from_schema("device", DEVICE_HELP)
    threads: int = from_schema("threads", THREADS_HELP)


@dataclass(frozen=True, kw_only=True)
class SeedFlag:
    """``--seed`` of a job that takes it from the config (the schema's top-level ``seed`` unless given)."""

    seed: int = from_schema("seed", SEED_HELP)


@dataclass(frozen=True, kw_only=True)
class ModelShapeFlags:
    """``--d-model``, ``--n-heads``, ``--n-layers`` of a pretraining verb (a verb fed from the config gives
    them its domain's schema defaults: :func:`shared_from_schema`)."""

    d_model: int = field(metadata=h("transformer width"))
    n_heads: int = field(metadata=h("attention heads"))
    n_layers: int = field(metadata=h("transformer blocks"))


@dataclass(frozen=True, kw_only=True)
class SeededTrainRunFlags(TrainRunFlags, SeedFlag):
    """:class:`TrainRunFlags` and :class:`SeedFlag`."""


# --- how a decode fills the positions a sampler picks ----------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Decoding:
    """The settings :func:`mdm_mi.core.samplers.decode` reads, passed from the verb as one object: a verb's
    own decoding flags subclass it (``protein.generate``: ``protein.decode_flags.DecodeFlags``), so a
    new key is the schema's, one field, and the code of ``decode`` that reads it."""

    temperature: float = field(default=0.0, metadata=h("sampling temperature (0 = argmax)"))

    @classmethod
    def of(cls, args) -> "Decoding":
        """This class's settings taken from a verb's arguments ``args`` (which inherit them)."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


# --- what a job writes ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OutDir:
    """``--out-dir``: the folder a job writes its several files into."""

    out_dir: Path = field(metadata=h("output folder"))


@dataclass(frozen=True, kw_only=True)
class FigureOut:
    """``--out`` of a figure verb."""

    out: Path = field(metadata=h("output PNG"))


@dataclass(frozen=True, kw_only=True)
class MarkdownOut:
    """``--out`` of a verb that writes one Markdown table."""

    out: Path = field(metadata=h("output Markdown"))


@dataclass(frozen=True, kw_only=True)
class TidyCsvOut:
    """``--out`` of a table verb: its tidy CSV."""

    out: Path = field(metadata=h("tidy CSV"))


@dataclass(frozen=True, kw_only=True)
class TableOuts(TidyCsvOut):
    """``--out`` and ``--markdown`` of a table verb: the tidy CSV and the same rows as a Markdown table."""

    markdown: Path = field(metadata=h("Markdown table"))


@dataclass(frozen=True, kw_only=True)
class PaperOverlay:
    """``--paper``/``--no-paper`` of a speed-quality figure."""

    paper: bool = field(default=True, metadata=h("overlay the paper's points"))


# --- what a job reads ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackboneFlag:
    """``--model`` of a verb that reads a trained backbone of either domain."""

    model: Path = field(metadata=h("backbone checkpoint folder"))


@dataclass(frozen=True, kw_only=True)
class HeadFlag:
    """``--head`` of a verb that reads a trained MI head."""

    head: Path = field(metadata=h("MI head checkpoint folder"))


# --- the comparisons and their oracle ceilings ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ComparisonFlags:
    """What both comparisons (``sudoku-compare``, ``protein-compare(-part)``) take from the config besides
    the swept settings (``sampler_table.SweptFlags``): the budgets and Algorithm 1's shared settings (each
    verb gives them its domain's schema defaults: :func:`shared_from_schema`)."""

    divisors: tuple[int, ...] = field(metadata=h("budgets: sequential's passes ÷ each", min_items=1))
    on_reject: str = field(metadata=h("MI-guided: skip | stop at a rejected candidate"))
    charge_first: bool = field(metadata=h("MI-guided: charge the first token's entropy to γ"))


@dataclass(frozen=True, kw_only=True)
class OracleCeilingFlags:
    """What both oracle ceilings (``sudoku-oracle-ceiling``, ``protein-oracle-ceiling``) take: the budgets
    and the oracle's probing tolerance (each verb gives them its domain's schema defaults:
    :func:`shared_from_schema`)."""

    divisors: tuple[int, ...] = field(metadata=h("budgets (sequential's passes ÷ d) at which to run the oracle",
                                                 min_items=1))
    tol: float = field(metadata=h("certified probing tolerance (nats)"))
