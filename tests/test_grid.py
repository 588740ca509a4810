"""Properties of :mod:`mdm_mi.sudoku.grid`: the text/token encoding and the rule checks, on the
real puzzles and solutions of the bundled HKUNLP easy set."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from conftest import EASY_CSV
from mdm_mi.sudoku.grid import (
    MASK_ID,
    N_CELLS,
    N_DIGITS,
    PuzzleFormatError,
    UNITS,
    clues_conflict,
    consistent_with_clues,
    format_grid,
    is_valid_solution,
    parse_puzzle,
    peer_matrix,
)


@pytest.fixture(scope="module")
def easy_all() -> tuple[list[str], np.ndarray, np.ndarray]:
    """All 1000 easy puzzles as text, tokens, and their solutions as tokens."""
    with EASY_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    texts = [r["puzzle"] for r in rows]
    return texts, np.stack([parse_puzzle(t) for t in texts]), np.stack([parse_puzzle(r["solution"]) for r in rows])


def test_mask_is_outside_the_digit_vocabulary():
    assert N_DIGITS == 9 and MASK_ID == 9 and N_CELLS == 81


def test_parse_format_round_trip(easy_all):
    texts, puzzles, solutions = easy_all
    assert len(texts) == 1000
    for text, tokens in zip(texts, puzzles):
        assert format_grid(tokens) == text
        assert np.array_equal(parse_puzzle(format_grid(tokens)), tokens)
    for sol in solutions:
        assert np.array_equal(parse_puzzle(format_grid(sol)), sol)


def test_parse_encodes_digits_and_blanks():
    text = "123456789" + "0" * 36 + "." * 36
    tokens = parse_puzzle(text)
    assert tokens.dtype == np.int64 and tokens.shape == (81,)
    assert tokens[:9].tolist() == list(range(9))  # digit d → id d - 1
    assert (tokens[9:] == MASK_ID).all()


def test_dot_and_zero_blanks_are_the_same(easy_all):
    text = easy_all[0][0]
    assert "0" in text
    assert np.array_equal(parse_puzzle(text.replace("0", ".")), parse_puzzle(text))
    assert format_grid(parse_puzzle(text.replace("0", "."))) == text  # formats blanks as 0


def test_parse_strips_surrounding_whitespace(easy_all):
    text = easy_all[0][0]
    assert np.array_equal(parse_puzzle(f"  {text}\n"), parse_puzzle(text))


@pytest.mark.parametrize(("length", "named"), [(80, "got 80"), (82, "got 82"), (0, "got 0")])
def test_wrong_length_raises_naming_the_length(easy_all, length, named):
    text = (easy_all[0][0] * 2)[:length]
    with pytest.raises(PuzzleFormatError, match="81 cells") as info:
        parse_puzzle(text)
    assert named in str(info.value)


@pytest.mark.parametrize("bad", ["x", "A", "-", " ", "*"])
def test_foreign_character_raises_naming_it(easy_all, bad):
    text = easy_all[0][0]
    text = text[:40] + bad + text[41:]
    with pytest.raises(PuzzleFormatError, match="characters other than 1-9") as info:
        parse_puzzle(text)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", ["²", "٣"])
def test_non_ascii_digits_raise_puzzle_format_error(easy_all, bad):
    text = easy_all[0][0]
    with pytest.raises(PuzzleFormatError):
        parse_puzzle(text[:40] + bad + text[41:])


def test_format_marks_masked_cells_with_zero():
    tokens = np.full(81, MASK_ID)
    tokens[0] = 4
    assert format_grid(tokens) == "5" + "0" * 80
    assert format_grid(torch.as_tensor(tokens)) == "5" + "0" * 80


def test_real_solutions_are_valid(easy_all):
    _, puzzles, solutions = easy_all
    assert is_valid_solution(torch.as_tensor(solutions)).all()
    assert consistent_with_clues(torch.as_tensor(solutions), torch.as_tensor(puzzles)).all()


def test_swapping_two_cells_in_a_row_breaks_validity(easy_all):
    solutions = torch.as_tensor(easy_all[2])
    rng = np.random.default_rng(0)
    broken = solutions.clone()
    for i in range(len(broken)):
        r, (c1, c2) = rng.integers(9), rng.choice(9, 2, replace=False)
        a, b = 9 * r + c1, 9 * r + c2
        assert broken[i, a] != broken[i, b]  # a valid row holds different digits
        broken[i, a], broken[i, b] = broken[i, b].clone(), broken[i, a].clone()
    assert not is_valid_solution(broken).any()


def test_incomplete_or_out_of_range_grids_are_invalid(easy_all):
    sol = torch.as_tensor(easy_all[2][:1])
    for value in (MASK_ID, -1, 42):
        bad = sol.clone()
        bad[0, 17] = value
        assert not is_valid_solution(bad).item(), value
    assert not is_valid_solution(torch.as_tensor(easy_all[1][:1])).item()  # a puzzle has blanks


def test_is_valid_solution_accepts_a_flat_grid(easy_all):
    assert is_valid_solution(torch.as_tensor(easy_all[2][0])).tolist() == [True]


def test_consistent_with_clues_detects_a_changed_given(easy_all):
    _, puzzles, solutions = easy_all
    puzzle, sol = torch.as_tensor(puzzles[:1]), torch.as_tensor(solutions[:1]).clone()
    given = int((puzzle[0] != MASK_ID).nonzero()[0])
    sol[0, given] = (sol[0, given] + 1) % 9
    assert not consistent_with_clues(sol, puzzle).item()


def test_real_puzzles_have_no_clue_conflict(easy_all):
    assert not any(clues_conflict(p) for p in easy_all[1])


@pytest.mark.parametrize(
    ("cells", "unit"),
    [((0, 8), "row"), ((0, 72), "column"), ((0, 20), "box"), ((40, 30), "box")],
)
def test_clues_conflict_on_a_repeat_in_any_unit(cells, unit):
    puzzle = np.full(81, MASK_ID)
    puzzle[list(cells)] = 4
    assert clues_conflict(puzzle), unit
    puzzle[cells[1]] = 5
    assert not clues_conflict(puzzle)


def test_units_cover_rows_columns_boxes():
    assert UNITS.shape == (27, 9)
    for unit in UNITS:
        assert len(set(unit.tolist())) == 9
    counts = np.bincount(UNITS.ravel(), minlength=81)
    assert (counts == 3).all()  # each cell is in one row, one column and one box


def test_peer_matrix_has_twenty_peers_per_cell():
    peers = peer_matrix()
    assert peers.shape == (81, 81) and peers.dtype == bool
    assert (peers.sum(1) == 20).all()
    assert (peers == peers.T).all() and not peers.diagonal().any()
    expected_0 = set(range(1, 9)) | {9 * r for r in range(1, 9)} | {10, 11, 19, 20}
    assert set(np.flatnonzero(peers[0]).tolist()) == expected_0
