"""Shared by the user-verb tests (test_user_verbs, test_bad_inputs): a workflow-like results folder with a
tiny Sudoku model and MI head, and the README's example puzzle."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from mdm_mi.mi.head import HeadConfig, MIHead, save_head

PUZZLE = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"
SOLUTION = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
NO_SOLUTION = "13..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"  # no direct clash
MANY_SOLUTIONS = "." * 9 + PUZZLE[9:]
TINY_HEAD = HeadConfig(hidden=4, heads=2, rank=2, unary=True)


def save_tiny_head(directory: Path, in_dim: int = 16, target: str | None = None) -> Path:
    """A seeded, untrained MI head (``target="tv"``: a TV head) reading hidden states of width ``in_dim``."""
    torch.manual_seed(0)
    save_head(MIHead(in_dim, TINY_HEAD), directory, {"backbone": "tiny"} | ({"target": target} if target else {}))
    return directory


def make_run(results: Path, run: str, checkpoint: Path, head: bool = True) -> Path:
    """``results/<run>/sudoku/model`` (a copy of ``checkpoint``) and, if ``head``, ``.../sudoku/head``
    as the workflow lays them out → the model folder."""
    model = results / run / "sudoku" / "model"
    shutil.copytree(checkpoint, model)
    (model / "meta.json").touch()  # copytree keeps the source's mtime; a new run is the newest
    if head:
        save_tiny_head(results / run / "sudoku" / "head")
    return model
