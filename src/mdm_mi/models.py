"""Load any trained backbone from its checkpoint folder, dispatching on the domain in its meta.json.

    backbone, meta = load_backbone("results/cpu-default/sudoku/model", device="cpu")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from mdm_mi.checkpoint import META, CheckpointError

LOADERS: dict[str, Callable] = {}


def register_loader(domain: str):
    """Register ``fn(directory, device) -> (backbone, meta)`` for checkpoints of ``domain``."""

    def deco(fn):
        LOADERS[domain] = fn
        return fn

    return deco


@register_loader("sudoku")
def _load_sudoku(directory, device):
    from mdm_mi.sudoku.model import load_model

    return load_model(directory, device)


@register_loader("protein")
def _load_protein(directory, device):
    from mdm_mi.protein.model import load_protein_model

    return load_protein_model(directory, device)


def checkpoint_domain(directory: str | Path) -> str:
    """The ``domain`` recorded in a checkpoint's meta.json (one-line error if unreadable)."""
    path = Path(directory) / META
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        return json.loads(path.read_text())["domain"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise CheckpointError(f"checkpoint metadata has no readable 'domain': {path}") from None


def load_backbone(directory: str | Path, device: str = "cpu", domain: str | None = None):
    """Load the backbone in ``directory``; with ``domain`` given, refuse a checkpoint of another."""
    found = checkpoint_domain(directory)
    if domain is not None and found != domain:
        raise CheckpointError(f"checkpoint {directory} is a {found!r} model, but a {domain!r} model is needed")
    if found not in LOADERS:
        raise CheckpointError(f"checkpoint {directory} has unknown domain {found!r}; known: {sorted(LOADERS)}")
    return LOADERS[found](directory, device)
