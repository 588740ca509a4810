"""Tests for mdm_mi.sudoku.puzzle_maker: random grids, the solver, puzzle making and graded reveals."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, is_valid_solution, parse_puzzle
from mdm_mi.sudoku.puzzle_maker import count_solutions, find_solution, make_puzzles, random_solutions, reveal_cells

CURATED_CSV = Path(__file__).resolve().parents[1] / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"
# A 17-clue puzzle known to be hard for plain backtracking.
HARD_17 = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"


def _all_valid(grids: np.ndarray) -> bool:
    return bool(is_valid_solution(torch.as_tensor(grids)).all())


def _first_expert_row() -> dict[str, str]:
    if not CURATED_CSV.exists():
        pytest.skip(f"{CURATED_CSV} not available")
    with CURATED_CSV.open(newline="") as f:
        return next(row for row in csv.DictReader(f) if row["level"] == "Expert")


def _unavoidable_rectangle(grid: np.ndarray) -> list[int] | None:
    """Four cells a/b/b/a in two rows of one band and two columns spanning two boxes, or None."""
    g = grid.reshape(9, 9)
    for r1 in range(9):
        for r2 in range(r1 + 1, 3 * (r1 // 3) + 3):  # same band, so the rectangle lies in 2 boxes
            for c1 in range(9):
                for c2 in range(c1 + 1, 9):
                    if g[r1, c1] == g[r2, c2] and g[r1, c2] == g[r2, c1]:
                        return [9 * r1 + c1, 9 * r1 + c2, 9 * r2 + c1, 9 * r2 + c2]
    return None


def test_random_solutions_are_valid_distinct_int64_grids():
    grids = random_solutions(300, np.random.default_rng(0))
    assert grids.shape == (300, N_CELLS) and grids.dtype == np.int64
    assert grids.min() >= 0 and grids.max() < N_DIGITS
    assert _all_valid(grids)
    assert len({g.tobytes() for g in grids}) == 300


def test_random_solutions_zero_rows():
    assert random_solutions(0, np.random.default_rng(0)).shape == (0, N_CELLS)


def test_random_solutions_same_seed_same_output_different_seed_differs():
    a = random_solutions(20, np.random.default_rng(7))
    b = random_solutions(20, np.random.default_rng(7))
    c = random_solutions(20, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any(axis=1).all()


def test_count_solutions_is_one_for_curated_expert_puzzle_and_solve_finds_it():
    row = _first_expert_row()
    puzzle, solution = parse_puzzle(row["puzzle"]), parse_puzzle(row["solution"])
    assert count_solutions(puzzle) == 1
    np.testing.assert_array_equal(find_solution(puzzle), solution)


def test_hard_17_clue_puzzle_is_unique_and_solved_fast():
    puzzle = parse_puzzle(HARD_17)
    start = time.perf_counter()
    assert count_solutions(puzzle) == 1
    solution = find_solution(puzzle)
    assert time.perf_counter() - start < 1.0
    assert _all_valid(solution[None]) and (solution[puzzle != MASK_ID] == puzzle[puzzle != MASK_ID]).all()


def test_count_solutions_empty_grid_hits_limit():
    empty = np.full(N_CELLS, MASK_ID)
    assert count_solutions(empty) == 2
    assert count_solutions(empty, limit=50) == 50
    assert _all_valid(find_solution(empty)[None])


def test_count_solutions_is_exactly_two_for_blanked_unavoidable_rectangle():
    rng = np.random.default_rng(1)
    grid = next(g for g in random_solutions(50, rng) if _unavoidable_rectangle(g) is not None)
    puzzle = grid.copy()
    puzzle[_unavoidable_rectangle(grid)] = MASK_ID
    assert count_solutions(puzzle, limit=10) == 2


def test_count_solutions_is_zero_and_solve_none_for_conflicting_givens():
    puzzle = np.full(N_CELLS, MASK_ID)
    puzzle[0] = puzzle[5] = 3  # the same digit twice in row 0
    assert count_solutions(puzzle) == 0
    assert find_solution(puzzle) is None


def test_solve_none_for_unsolvable_puzzle_without_direct_conflict():
    puzzle = np.full(N_CELLS, MASK_ID)
    puzzle[:8] = np.arange(8)  # row 0 forces digit id 8 at cell 8 ...
    puzzle[4 * 9 + 8] = 8  # ... which column 8 already holds further down
    assert count_solutions(puzzle) == 0
    assert find_solution(puzzle) is None


def test_count_solutions_rejects_bad_input():
    with pytest.raises(ValueError):
        count_solutions(np.zeros(80, dtype=np.int64))
    with pytest.raises(ValueError):
        count_solutions(np.full(N_CELLS, MASK_ID + 1))


def test_make_puzzles_are_unique_minimal_and_agree_with_solution():
    puzzles, solutions = make_puzzles(4, np.random.default_rng(2))
    assert puzzles.shape == solutions.shape == (4, N_CELLS)
    assert _all_valid(solutions)
    given = puzzles != MASK_ID
    assert (puzzles[given] == solutions[given]).all()
    for puzzle, solution in zip(puzzles, solutions):
        assert count_solutions(puzzle) == 1
        np.testing.assert_array_equal(find_solution(puzzle), solution)
        for cell in np.flatnonzero(puzzle != MASK_ID):  # default settings give minimal puzzles
            fewer = puzzle.copy()
            fewer[cell] = MASK_ID
            assert count_solutions(fewer) == 2


def test_make_puzzles_stop_at_target_clue_count():
    puzzles, _ = make_puzzles(3, np.random.default_rng(3), min_clues=40, max_clues=45)
    clues = (puzzles != MASK_ID).sum(1)
    assert ((clues >= 40) & (clues <= 45)).all()
    assert all(count_solutions(p) == 1 for p in puzzles)


def test_make_puzzles_same_seed_same_output():
    a = make_puzzles(2, np.random.default_rng(4))
    b = make_puzzles(2, np.random.default_rng(4))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_reveal_cells_keeps_givens_matches_solution_and_has_n_givens():
    puzzles, solutions = make_puzzles(3, np.random.default_rng(5))
    revealed = reveal_cells(puzzles, solutions, 40, np.random.default_rng(6))
    given = puzzles != MASK_ID
    np.testing.assert_array_equal(revealed[given], puzzles[given])
    shown = revealed != MASK_ID
    assert (revealed[shown] == solutions[shown]).all()
    assert ((revealed != MASK_ID).sum(1) == 40).all()
    assert (puzzles == revealed).sum() < puzzles.size  # cells were actually revealed
    np.testing.assert_array_equal(revealed, reveal_cells(puzzles, solutions, 40, np.random.default_rng(6)))


def test_reveal_cells_leaves_puzzles_with_enough_givens_unchanged():
    puzzles, solutions = make_puzzles(2, np.random.default_rng(7))
    np.testing.assert_array_equal(reveal_cells(puzzles, solutions, 10, np.random.default_rng(0)), puzzles)
    full = reveal_cells(puzzles, solutions, N_CELLS, np.random.default_rng(0))
    np.testing.assert_array_equal(full, solutions)


def test_reveal_cells_rejects_givens_that_disagree_with_solution():
    puzzles, solutions = make_puzzles(1, np.random.default_rng(8))
    bad = solutions.copy()
    cell = np.flatnonzero(puzzles[0] != MASK_ID)[0]
    bad[0, cell] = (bad[0, cell] + 1) % N_DIGITS
    with pytest.raises(ValueError):
        reveal_cells(puzzles, bad, 40, np.random.default_rng(0))


def test_search_nodes_is_the_blanks_when_forced_and_grows_with_difficulty():
    """A model-free difficulty: a puzzle one cell short of its solution costs one node; Radcliffe's
    Expert puzzles cost more than its Beginner ones (medians over 50 of each)."""
    from pathlib import Path

    from mdm_mi.sudoku.data import load_puzzle_csv
    from mdm_mi.sudoku.puzzle_maker import random_solutions, search_nodes

    one_blank = random_solutions(1, np.random.default_rng(0))[0].copy()
    one_blank[5] = MASK_ID
    assert search_nodes(one_blank) == 1
    rad = load_puzzle_csv(Path(__file__).resolve().parents[1] / "resources/data/sudoku/radcliffe_curated_5000.csv")
    levels = np.array(rad.levels)
    median = {lv: np.median([search_nodes(rad.puzzles[i]) for i in np.flatnonzero(levels == lv)[:50]])
              for lv in ("Beginner", "Expert")}
    assert median["Expert"] > 2 * median["Beginner"]
