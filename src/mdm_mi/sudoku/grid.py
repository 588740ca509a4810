"""Sudoku encoding and rule checking.

A grid is 81 cells in row-major order. As tokens, digit d ∈ 1..9 is id ``d - 1`` and a blank is
:data:`MASK_ID`; as text, a puzzle is 81 characters with ``0`` or ``.`` for a blank.
"""

from __future__ import annotations

import numpy as np
import torch

from mdm_mi.infra.errors import UserError

N_CELLS = 81
SIDE = 9
N_DIGITS = 9  # vocabulary size V: ids 0..8 are the digits 1..9
MASK_ID = N_DIGITS  # the mask token's id, outside the digit vocabulary
BLANK_CHARS = "0."
DIGIT_CHARS = "123456789"


class PuzzleFormatError(UserError):
    """A puzzle string that is not 81 digits/blanks."""


def parse_puzzle(text: str) -> np.ndarray:
    """81-char puzzle string (``0``/``.`` blank) → ``(81,)`` int64 tokens with blanks as MASK_ID."""
    s = text.strip()
    if len(s) != N_CELLS:
        raise PuzzleFormatError(f"puzzle must have {N_CELLS} cells, got {len(s)}: {s[:20]!r}...")
    bad = sorted({c for c in s if c not in DIGIT_CHARS and c not in BLANK_CHARS})
    if bad:
        raise PuzzleFormatError(f"puzzle has characters other than 1-9, 0 and '.': {''.join(bad)!r}")
    return np.array([MASK_ID if c in BLANK_CHARS else int(c) - 1 for c in s], dtype=np.int64)


def format_grid(tokens) -> str:
    """``(81,)`` tokens → 81-char string, ``0`` for a masked cell."""
    t = np.asarray(tokens).reshape(-1)
    return "".join("0" if v == MASK_ID else str(int(v) + 1) for v in t)


def unit_index() -> np.ndarray:
    """``(27, 9)`` cell indices of the 9 rows, 9 columns and 9 boxes."""
    idx = np.arange(N_CELLS).reshape(SIDE, SIDE)
    rows = [idx[r] for r in range(SIDE)]
    cols = [idx[:, c] for c in range(SIDE)]
    boxes = [idx[3 * (b // 3) : 3 * (b // 3) + 3, 3 * (b % 3) : 3 * (b % 3) + 3].ravel() for b in range(SIDE)]
    return np.stack(rows + cols + boxes)


UNITS = unit_index()


def peer_matrix() -> np.ndarray:
    """``(81, 81)`` bool: cells that share a row, column or box (diagonal False). Evaluation only."""
    m = np.zeros((N_CELLS, N_CELLS), dtype=bool)
    for unit in UNITS:
        m[np.ix_(unit, unit)] = True
    np.fill_diagonal(m, False)
    return m


def is_valid_solution(tokens: torch.Tensor) -> torch.Tensor:
    """``(B, 81)`` tokens → ``(B,)`` bool: complete and every row/column/box holds each digit once."""
    t = torch.as_tensor(tokens).reshape(-1, N_CELLS)
    complete = (t >= 0).all(1) & (t < N_DIGITS).all(1)
    units = t[:, torch.as_tensor(UNITS)].clamp(0, N_DIGITS - 1)  # (B, 27, 9)
    counts = torch.nn.functional.one_hot(units, N_DIGITS).sum(2)  # (B, 27, 9)
    return complete & (counts == 1).all(-1).all(-1)


def consistent_with_clues(solution: torch.Tensor, puzzle: torch.Tensor) -> torch.Tensor:
    """``(B, 81)`` × ``(B, 81)`` → ``(B,)`` bool: the solution keeps every given of the puzzle."""
    given = puzzle != MASK_ID
    return ((solution == puzzle) | ~given).all(1)


UNIT_NAMES = tuple(f"{kind} {i + 1}" for kind in ("row", "column", "box") for i in range(SIDE))  # as UNITS


def cell_name(i: int) -> str:
    """Cell index 0..80 → ``r{row}c{column}``, 1-based."""
    return f"r{i // SIDE + 1}c{i % SIDE + 1}"


def rule_break(tokens: np.ndarray) -> str | None:
    """The first broken rule of one ``(81,)`` grid (blanks ignored), e.g. ``digit 5 repeats in row 1``;
    None when no digit repeats within a row, column or box."""
    t = np.asarray(tokens).reshape(-1)
    for unit, name in zip(UNITS, UNIT_NAMES):
        vals = t[unit]
        vals = vals[vals != MASK_ID].tolist()
        repeated = sorted({v for v in vals if vals.count(v) > 1})
        if repeated:
            return f"digit {repeated[0] + 1} repeats in {name}"
    return None


def clues_conflict(puzzle: np.ndarray) -> bool:
    """True when the givens of one ``(81,)`` puzzle already repeat a digit within a unit."""
    return rule_break(puzzle) is not None
