"""Sudoku puzzles as a person types them: read, check before decoding, and print.

A puzzle is 81 characters (``0`` or ``.`` for a blank), given as an argument, or many in a file or on
stdin: one per line (blank lines and ``#`` comments skipped), or a CSV with a ``puzzle`` column.

    puzzles = read_puzzles("53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79", None)
    n = check_puzzle(puzzles[0])       # 1: one solution; 2: several; None: undecided
    print("\\n".join(grid_lines(tokens)))
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.reader import STDIN, canonical, read_file_text
from mdm_mi.sudoku.data import read_puzzle_csv
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, PuzzleFormatError, SIDE, cell_name, parse_puzzle, rule_break
from mdm_mi.sudoku.puzzle_maker import SearchLimitError, count_solutions

MAX_NODES = 100_000  # solver nodes spent deciding solvability (hard puzzles need ~2,000; ~0.3 s at most)


@dataclass(frozen=True)
class Puzzle:
    """One puzzle: ``tokens (81,)`` int64 with MASK_ID blanks, and where it came from (for messages;
    empty for the PUZZLE argument)."""

    tokens: np.ndarray
    source: str = ""


def _where(source: str) -> str:
    """Message prefix naming where a puzzle came from."""
    return f"{source}: " if source else ""


def read_puzzles(text: str | None, file: Path | None) -> list[Puzzle]:
    """The puzzles of the ``PUZZLE`` argument (``-`` = stdin) or of ``--file``, read by the one reader
    (:mod:`mdm_mi.infra.reader`: spaces and line breaks of a puzzle mean nothing), then parsed as
    puzzles (a CSV, or one per line); one-line errors."""
    if text is not None and file is not None:
        raise InputError("give either a PUZZLE argument or --file, not both")
    if text is None and file is None:
        raise InputError("no puzzle given: pass 81 characters (0 or . for blanks), --file PATH, or - to read stdin")
    if file is not None:
        return parse_many(read_file_text(file, "puzzle"), str(file))
    if text == STDIN:
        return parse_many(read_file_text(STDIN, "puzzle"), "stdin")
    return [Puzzle(_parse_one(canonical(text, one_char=True), ""))]


def _parse_one(text: str, source: str) -> np.ndarray:
    """One puzzle string → tokens; the error names ``source``."""
    try:
        return parse_puzzle(text)
    except PuzzleFormatError as exc:
        hint = " (to read puzzles from a file use --file)" if _is_file(text.strip()) else ""
        raise InputError(f"{_where(source)}{exc}{hint}") from None


def _is_file(text: str) -> bool:
    """Whether ``text`` names an existing file (False for anything that cannot be a path)."""
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def parse_many(text: str, name: str) -> list[Puzzle]:
    """Puzzles from file text: a CSV when the first line has a comma, else one per line."""
    lines = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines())]
    lines = [(n, line) for n, line in lines if line and not line.startswith("#")]
    if not lines:
        raise InputError(f"{name}: no puzzles (the input is empty)")
    if "," in lines[0][1] or lines[0][1].lower() == "puzzle":
        ps = read_puzzle_csv(io.StringIO(text), name)
        return [Puzzle(p, f"{name} line {i + 2}") for i, p in enumerate(ps.puzzles)]  # line 1: the header
    return [Puzzle(_parse_one(line, f"{name} line {n}"), f"{name} line {n}") for n, line in lines]


def check_puzzle(puzzle: Puzzle) -> int | None:
    """Refuse a puzzle whose clues break a rule or that has no solution (one-line errors) → the
    number of solutions capped at 2, or None when the solver gave up after :data:`MAX_NODES`."""
    broken = rule_break(puzzle.tokens)
    if broken:
        raise InputError(f"{_where(puzzle.source)}the puzzle's clues already break a rule: {broken}")
    try:
        n = count_solutions(puzzle.tokens, limit=2, max_nodes=MAX_NODES)
    except SearchLimitError:
        return None
    if n == 0:
        raise InputError(f"{_where(puzzle.source)}the puzzle has no solution (no complete grid keeps its clues)")
    return n


def answer_problem(grid: np.ndarray, puzzle: np.ndarray) -> str | None:
    """Why a decoded ``(81,)`` grid is not a valid answer to ``puzzle``, or None if it is."""
    blanks = np.flatnonzero(grid == MASK_ID)
    if len(blanks):
        return f"cell {cell_name(int(blanks[0]))} is still blank"
    changed = np.flatnonzero((puzzle != MASK_ID) & (grid != puzzle))
    if len(changed):
        i = int(changed[0])
        return f"it changes the clue at {cell_name(i)} from {puzzle[i] + 1} to {grid[i] + 1}"
    return rule_break(grid)


def grid_lines(tokens: np.ndarray) -> list[str]:
    """``(81,)`` tokens → 9 lines like ``534 678 912`` (``.`` for a blank)."""
    chars = ["." if v == MASK_ID else str(int(v) + 1) for v in np.asarray(tokens).reshape(N_CELLS)]
    rows = ["".join(chars[r * SIDE : (r + 1) * SIDE]) for r in range(SIDE)]
    return [" ".join(row[b : b + 3] for b in range(0, SIDE, 3)) for row in rows]
