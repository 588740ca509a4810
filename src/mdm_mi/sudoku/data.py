"""Sudoku data sets: reading any puzzle CSV, building the evaluation sets and the training pool.

A puzzle CSV has a ``puzzle`` column (81 chars, ``0``/``.`` blank) and optional ``solution`` and
``level`` columns. The prepared sets are ``hard`` (Radcliffe Hard+Expert, stratified subset),
``easy`` (HKUNLP test split), ``levels`` (Radcliffe Beginner/Easy/Medium) and ``graded`` (hard puzzles
with extra solution cells revealed up to a number of givens, RRN-style).

    python -m mdm_mi prepare-sudoku --radcliffe resources/data/sudoku/radcliffe_curated_5000.csv ...
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path
from mdm_mi.sudoku.grid import MASK_ID, PuzzleFormatError, format_grid, parse_puzzle, rule_break
from mdm_mi.sudoku.puzzle_maker import reveal_cells

HARD_LEVELS = ("Hard", "Expert")
OTHER_LEVELS = ("Beginner", "Easy", "Medium")
DEFAULT_LEVEL = "all"


@dataclass(frozen=True)
class PuzzleSet:
    """puzzles ``(P, 81)`` with MASK_ID blanks; solutions ``(P, 81)`` or None; a level per puzzle."""

    puzzles: np.ndarray
    solutions: np.ndarray | None
    levels: list[str]

    def __len__(self) -> int:
        return len(self.puzzles)

    def subset(self, idx) -> "PuzzleSet":
        idx = np.asarray(idx, dtype=np.int64)
        sol = None if self.solutions is None else self.solutions[idx]
        return PuzzleSet(self.puzzles[idx], sol, [self.levels[i] for i in idx])


def _parse_row(row: dict, line: int, has_solution: bool):
    try:
        puzzle = parse_puzzle(row["puzzle"] or "")
    except PuzzleFormatError as exc:
        raise InputError(f"line {line}: {exc}") from None
    try:
        solution = parse_puzzle(row["solution"] or "") if has_solution else None
    except PuzzleFormatError as exc:
        raise InputError(f"line {line}: solution: {str(exc).replace('puzzle', 'solution')}") from None
    broken = rule_break(puzzle)
    if broken:
        raise InputError(f"line {line}: the puzzle's givens already break a rule ({broken})")
    if solution is not None and (solution == MASK_ID).any():
        raise InputError(f"line {line}: the solution has blanks")
    return puzzle, solution


def load_puzzle_csv(path: str | Path) -> PuzzleSet:
    """Read a puzzle CSV; one-line :class:`InputError` naming the first bad line or column."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"puzzle file not found: {path}")
    try:
        with path.open(newline="") as fh:
            return read_puzzle_csv(fh, str(path))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path}: not a readable text CSV ({type(exc).__name__})") from None


def read_puzzle_csv(fh: TextIO, name: str) -> PuzzleSet:
    """Parse puzzle-CSV text from ``fh`` (``name`` is used in messages)."""
    reader = csv.DictReader(fh)
    fields = reader.fieldnames or []
    if "puzzle" not in fields:
        raise InputError(f"{name}: needs a 'puzzle' column, found {fields}")
    has_solution = "solution" in fields
    parsed = []
    for i, row in enumerate(reader):
        try:
            parsed.append((_parse_row(row, i + 2, has_solution), row.get("level") or DEFAULT_LEVEL))
        except InputError as exc:
            raise InputError(f"{name} {exc}") from None
    if not parsed:
        raise InputError(f"{name}: no puzzles")
    puzzles = np.stack([p for (p, _), _ in parsed])
    solutions = np.stack([s for (_, s), _ in parsed]) if has_solution else None
    return PuzzleSet(puzzles, solutions, [lvl for _, lvl in parsed])


def write_puzzle_csv(path: str | Path, ps: PuzzleSet) -> None:
    """Write a :class:`PuzzleSet` as a puzzle CSV (atomically)."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["puzzle", "solution", "clues", "level"])
        for i in range(len(ps)):
            sol = format_grid(ps.solutions[i]) if ps.solutions is not None else ""
            w.writerow([format_grid(ps.puzzles[i]), sol, int((ps.puzzles[i] != MASK_ID).sum()), ps.levels[i]])


def stratified(ps: PuzzleSet, levels, n_total: int, rng: np.random.Generator) -> PuzzleSet:
    """A seeded subset with (about) equal counts per level, at most ``n_total`` puzzles."""
    per = max(1, n_total // len(levels))
    chosen = []
    for level in levels:
        idx = np.flatnonzero(np.array(ps.levels) == level)
        chosen.extend(rng.permutation(idx)[:per].tolist())
    return ps.subset(sorted(chosen))


def graded(ps: PuzzleSet, givens, per_level: int, rng: np.random.Generator) -> PuzzleSet:
    """RRN-style difficulty grading: for each target g, take puzzles with ≤ g clues and reveal solution
    cells (seeded) until each has exactly g givens; the level is ``givens=g``."""
    clues = (ps.puzzles != MASK_ID).sum(1)
    puzzles, solutions, levels = [], [], []
    for g in givens:
        idx = rng.permutation(np.flatnonzero(clues <= g))[:per_level]
        if len(idx) == 0:
            continue
        puzzles.append(reveal_cells(ps.puzzles[idx], ps.solutions[idx], g, rng))
        solutions.append(ps.solutions[idx])
        levels += [f"givens={g}"] * len(idx)
    return PuzzleSet(np.concatenate(puzzles), np.concatenate(solutions), levels)
