"""THE table of domains: how each kind of sequence is stored, loaded, drawn and described.

A model's checkpoint records its domain (``meta.json`` ``domain``); everything that differs between
Sudoku, proteins and a Hugging Face model of your own (``hf``) outside their own packages is looked
up here, by that name:

    dom = DOMAINS["protein"]
    dom.describe(read_meta(model_dir))   # e.g. "small ESM-C d64 L2, 0.10M params, trained here"

Models are loaded by :func:`mdm_mi.models.loading.load_model`, which calls the entry's ``load``.

Loading is lazy (each entry imports its package only when called), so this module imports nothing
heavy and any module may use it. Another kind of model joins without editing this table:
``register_domain(Domain("mine", ...))`` before the verbs run (docs/your_model.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mdm_mi.infra.reader import FASTA_SUFFIXES
from mdm_mi.infra.checkpoint import CheckpointError, read_meta

HF_TRAIN_HINT = ("train a head for your model with hf-data, label and train-head (docs/your_model.md), or "
                 "`snakemake hf --cores 2 --configfile config/hf.yaml`")
PUZZLE_CHARS = set("0123456789.")


@dataclass(frozen=True)
class Domain:
    """One domain. ``model_dirs``/``head_dirs``: checkpoint folders inside a run's ``results/<run>/``;
    ``set_suffixes``: file types of its evaluation sets; ``load(dir, meta, device) -> backbone`` (called
    only by :mod:`mdm_mi.models.loading`, with the meta it read);
    ``structure() -> (N, N) bool | None``: known dependency structure that scores the head;
    ``describe(meta) -> str``: the backbone in figure titles; ``mapper()``: its ``mi-map`` input/figure;
    ``sequences``: its backbones are :class:`~mdm_mi.core.backbone.SequenceBackbone` (strings in and out),
    so ``generate`` and ``protein-compare`` take them; ``train_hint``: how to train a missing model or
    head, in the one-line error that reports it."""

    name: str
    model_dirs: tuple[str, ...]
    head_dirs: tuple[str, ...]
    set_suffixes: tuple[str, ...]
    load: Callable
    structure: Callable
    describe: Callable[[dict], str]
    mapper: Callable
    sequences: bool = False
    train_hint: str = "train one with `snakemake --cores 2` (see README.md)"


def _load_sudoku(directory, meta, device):
    from mdm_mi.sudoku.model import load_sudoku_model  # lazy: each domain loads on demand

    return load_sudoku_model(directory, device, meta=meta)[0]


def _load_protein(directory, meta, device):
    """A protein model folder: a column model (``kind: columns``, :mod:`mdm_mi.protein.family.columns`)
    or an ESM-C backbone (:func:`mdm_mi.protein.model.load_protein_model`)."""
    from mdm_mi.protein.model import KIND_COLUMNS, load_protein_model  # lazy: on demand (esm: seconds)

    if meta.get("kind") == KIND_COLUMNS:
        from mdm_mi.protein.family.columns import load_column_model  # lazy: scipy (~1 s at every CLI start)

        return load_column_model(directory, meta, device)
    return load_protein_model(directory, device, meta=meta)[0]


def _load_hf(directory, meta, device):
    from mdm_mi.hf.model import load_hf_model  # lazy: on demand (transformers: ~1 s)

    return load_hf_model(directory, device, meta=meta)[0]


def _sudoku_structure():
    """Sudoku's same row / column / box pairs ``(81, 81)``."""
    import torch  # lazy: with the domain that needs it

    from mdm_mi.sudoku.grid import peer_matrix  # lazy: each domain loads on demand

    return torch.as_tensor(peer_matrix())


def _size(meta: dict) -> str:
    n = meta.get("metrics", {}).get("n_params")
    return f", {n / 1e6:.2f}M params" if n else ""


def _describe_sudoku(meta: dict) -> str:
    return f"sudoku MDM{_size(meta)}"


def _describe_protein(meta: dict) -> str:
    if meta.get("kind") == "esmc-300m":
        return "ESM-C 300M (pretrained)"
    if meta.get("kind") == "columns":
        dims = meta.get("columns", {})
        return f"column MDM (Potts + d{dims.get('d_model')} L{dims.get('n_layers')}){_size(meta)}, trained here"
    dims = meta.get("esmc", {})
    return f"small ESM-C d{dims.get('d_model')} L{dims.get('n_layers')}{_size(meta)}, trained here"


def _describe_hf(meta: dict) -> str:
    return f"{meta.get('architecture', 'Hugging Face masked LM')} (your model)"


def _sudoku_mapper():
    from mdm_mi.sudoku.map import SudokuMap  # lazy: each domain loads on demand

    return SudokuMap()


def _protein_mapper():
    from mdm_mi.protein.map import ProteinMap  # lazy: on demand (esm: seconds)

    return ProteinMap()


def _hf_mapper():
    from mdm_mi.hf.map import HFMap  # lazy: on demand (transformers: ~1 s)

    return HFMap()


DOMAINS: dict[str, Domain] = {
    "sudoku": Domain("sudoku", ("sudoku/model",), ("sudoku/head",), (".csv",), _load_sudoku, _sudoku_structure,
                     _describe_sudoku, _sudoku_mapper),
    "protein": Domain("protein", ("protein/model",), ("protein/head", "protein/mi/head"), FASTA_SUFFIXES,
                      _load_protein, lambda: None, _describe_protein, _protein_mapper, sequences=True),
    "hf": Domain("hf", ("hf/model",), ("hf/head",), FASTA_SUFFIXES, _load_hf, lambda: None, _describe_hf,
                 _hf_mapper, sequences=True, train_hint=HF_TRAIN_HINT),
}


def register_domain(domain: Domain) -> None:
    """Add ``domain`` to :data:`DOMAINS` (a model kind of your own; one-line error if the name is taken)."""
    if domain.name in DOMAINS:
        raise CheckpointError(f"domain {domain.name!r} is already registered")
    DOMAINS[domain.name] = domain


def get_domain(name: str) -> Domain:
    """The :data:`DOMAINS` entry ``name`` (one-line error naming the known ones)."""
    if name not in DOMAINS:
        raise CheckpointError(f"unknown domain {name!r}; known: {', '.join(DOMAINS)}")
    return DOMAINS[name]


def set_domain(path: str | Path) -> str:
    """The domain whose evaluation sets have ``path``'s file type (a puzzle CSV, a FASTA reference)."""
    suffix = Path(path).suffix.lower()
    return next((d.name for d in DOMAINS.values() if suffix in d.set_suffixes), "sudoku")


def guess_domain(text: str) -> str:
    """``sudoku`` for digits and dots (a puzzle), else ``protein``."""
    return "sudoku" if set(text.strip()) <= PUZZLE_CHARS else "protein"


def backbone_name(model_dir: str | Path) -> str:
    """A short description of the backbone in ``model_dir``, for figure titles and tables."""
    meta = read_meta(model_dir)
    return get_domain(meta.get("domain")).describe(meta)
