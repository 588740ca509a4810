"""Shared fixtures: a mock Backbone with known logits, a tiny real Sudoku MDM and its checkpoint,
and a few real puzzles from the bundled easy set."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.infra.checkpoint import save_checkpoint
from mdm_mi.sudoku.grid import parse_puzzle
from mdm_mi.sudoku.model import DOMAIN, ModelConfig, SudokuMDM

REPO = Path(__file__).resolve().parents[1]
EASY_CSV = REPO / "resources" / "data" / "sudoku" / "hkunlp_easy_1k.csv"
torch.set_num_threads(1)  # tiny tensors: threads only add overhead on a shared 2-core machine

TINY_CFG = ModelConfig(d_model=16, n_layers=1, n_heads=2, ff_mult=2, dropout=0.0, hidden_layer=-1)


def pytest_collection_modifyitems(config, items):
    """The slow end-to-end tests first (the smoke DAG first of all), so that with ``-n 2``
    (scripts/test.sh) they start at once and the unit tests fill the other worker around them."""
    def weight(item) -> int:
        return 0 if "smoke_dag" in item.name else (1 if item.get_closest_marker("slow") else 2)

    items.sort(key=weight)  # stable: the collection order within each group



class MockBackbone:
    """Backbone with known logits: the same ``(N, V)`` logits for every sequence and every pass.

    Token ids are ``vocab_token_ids = arange(V) + offset`` and the mask is ``mask_id``; an offset
    other than 0 checks that decode maps logit indices to input ids. ``calls`` records the batch
    size of every forward pass.
    """

    hidden_dim = 4

    def __init__(self, logits: torch.Tensor, mask_id: int, offset: int = 0):
        assert logits.ndim == 2, logits.shape
        self.logits = logits.float()
        self.vocab_size = logits.shape[-1]
        self.mask_id = mask_id
        self.vocab_token_ids = torch.arange(self.vocab_size) + offset
        self.calls: list[int] = []

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        assert tokens.ndim == 2 and tokens.shape[1] == self.logits.shape[0], tokens.shape
        b, n = tokens.shape
        self.calls.append(b)
        logits = self.logits.expand(b, n, self.vocab_size).clone()
        return BackboneOutput(logits=logits, hidden=torch.zeros(b, n, self.hidden_dim))


def seeded_logits(n: int, v: int, seed: int = 0) -> torch.Tensor:
    """Random ``(N, V)`` logits (distinct entropies almost surely)."""
    return 3 * torch.randn(n, v, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def mock_backbone():
    """Factory: ``mock_backbone(logits, mask_id, offset=0)``."""
    return MockBackbone


@pytest.fixture(scope="session")
def easy_rows() -> list[dict]:
    """The first 20 rows of the bundled HKUNLP easy set."""
    with EASY_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows[:20]


@pytest.fixture(scope="session")
def easy_puzzles(easy_rows) -> tuple[np.ndarray, np.ndarray]:
    """``(20, 81)`` puzzles (MASK_ID blanks) and their solutions."""
    puzzles = np.stack([parse_puzzle(r["puzzle"]) for r in easy_rows])
    solutions = np.stack([parse_puzzle(r["solution"]) for r in easy_rows])
    return puzzles, solutions


def make_tiny_model(seed: int = 0) -> SudokuMDM:
    """A real SudokuMDM with d_model 16 and one layer, seeded, in eval mode."""
    torch.manual_seed(seed)
    return SudokuMDM(TINY_CFG).eval()


@pytest.fixture(scope="session")
def tiny_model() -> SudokuMDM:
    return make_tiny_model()


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tiny_model) -> Path:
    """A saved checkpoint of :func:`tiny_model` (read-only: copy it before corrupting it)."""
    out = tmp_path_factory.mktemp("ckpt") / "model"
    save_checkpoint(tiny_model, out, {"domain": DOMAIN, "model": dataclasses.asdict(TINY_CFG)})
    return out


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """Write a small CSV and return its path."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture
def easy_csv(tmp_path, easy_rows) -> Path:
    """A CSV of 3 easy puzzles with puzzle, solution and level columns."""
    rows = [[r["puzzle"], r["solution"], r["level"]] for r in easy_rows[:3]]
    return write_csv(tmp_path / "three.csv", ["puzzle", "solution", "level"], rows)
