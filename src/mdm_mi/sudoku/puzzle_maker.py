"""Random Sudoku solutions, a bitmask solver, unique-solution puzzles and graded reveals.

Everything is plain Python/numpy and deterministic given a :class:`numpy.random.Generator`.
Grids use the encoding of :mod:`mdm_mi.sudoku.grid`: 81 cells row-major, digit ``d`` is id
``d - 1`` and a blank is :data:`~mdm_mi.sudoku.grid.MASK_ID`.

* :func:`random_solutions` — complete valid grids: an independent randomized backtracking fill
  per grid (row-major, candidates from a random start) followed by a random validity-preserving
  transform (digit relabelling, row/column permutations within bands/stacks, band/stack
  permutations, transpose). ~7k grids/s on one core.
* :func:`count_solutions` / :func:`find_solution` — backtracking over per-unit used-digit bitmasks,
  branching on the blank with the fewest candidates (MRV) or, when that is ≥ 2, on the places of a
  digit with fewer places in some unit (hidden singles/pairs). Hard 17-clue puzzles take < 0.1 s.
* :func:`make_puzzles` — "minimal-ish random" unique-solution puzzles: clues are removed from a
  random solution in random order while the solution stays unique. They are *not* rated for
  difficulty; most land at 22–26 clues.
* :func:`reveal_cells` — an RRN-style graded set: copy extra cells from the solution until each
  puzzle has a given number of givens.

Example::

    >>> rng = np.random.default_rng(0)
    >>> puzzles, solutions = make_puzzles(2, rng)
    >>> [count_solutions(p) for p in puzzles]
    [1, 1]
    >>> easier = reveal_cells(puzzles, solutions, 40, rng)
    >>> (easier != MASK_ID).sum(1).tolist()
    [40, 40]
"""

from __future__ import annotations

import random

import numpy as np

from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, SIDE, UNITS

_FULL = (1 << N_DIGITS) - 1  # bitmask with every digit set
_POPCOUNT = tuple(bin(m).count("1") for m in range(_FULL + 1))
_DIGITS_OF = tuple(tuple(d for d in range(N_DIGITS) if m >> d & 1) for m in range(_FULL + 1))


def _units_of_cells() -> tuple[tuple[int, int, int], ...]:
    """For each cell, the indices into UNITS of its (row, column, box) — one unit of each kind."""
    owners: list[list[int]] = [[] for _ in range(N_CELLS)]
    for u, unit in enumerate(UNITS):
        for cell in unit.tolist():
            owners[cell].append(u)
    assert all(len(o) == 3 for o in owners), "every cell lies in exactly one row, column and box"
    return tuple(tuple(o) for o in owners)


_CELL_UNITS = _units_of_cells()
_UNIT_CELLS = tuple(tuple(unit) for unit in UNITS.tolist())
_N_UNITS = len(UNITS)
_SEED_HIGH = 2**63


# ---------------------------------------------------------------------------------------------
# Random complete grids
# ---------------------------------------------------------------------------------------------


def _fill(rnd: random.Random) -> list[int]:
    """One complete grid (81 ids) by randomized row-major backtracking from an empty grid.

    Each cell tries its candidates starting from a uniformly random one, then cyclically (cheaper
    than a full shuffle; on the common no-backtrack path it is the same distribution).
    """
    grid = [-1] * N_CELLS
    used = [0] * _N_UNITS
    rand = rnd.random

    def place(i: int) -> bool:
        if i == N_CELLS:
            return True
        a, b, c = _CELL_UNITS[i]
        digits = _DIGITS_OF[_FULL & ~(used[a] | used[b] | used[c])]
        start = int(rand() * len(digits))
        for d in digits[start:] + digits[:start]:
            bit = 1 << d
            used[a] |= bit
            used[b] |= bit
            used[c] |= bit
            grid[i] = d
            if place(i + 1):
                return True
            used[a] ^= bit
            used[b] ^= bit
            used[c] ^= bit
        return False

    if not place(0):  # pragma: no cover - an empty grid always has a completion
        raise RuntimeError("backtracking fill failed")
    return grid


def _band_order(n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, 9)`` random line order: bands (stacks) permuted, lines permuted within each."""
    bands = rng.random((n, 3)).argsort(1)  # (n, 3)
    within = rng.random((n, 3, 3)).argsort(2)  # (n, 3, 3)
    return (3 * bands[:, :, None] + within).reshape(n, SIDE)


def _random_transform(grids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Apply an independent random validity-preserving symmetry to each ``(n, 81)`` grid."""
    n = len(grids)
    relabel = rng.random((n, N_DIGITS)).argsort(1)  # (n, 9): old id -> new id
    g = np.take_along_axis(relabel, grids, axis=1).reshape(n, SIDE, SIDE)
    rows, cols = _band_order(n, rng), _band_order(n, rng)
    g = g[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    flip = rng.random(n) < 0.5
    g[flip] = g[flip].transpose(0, 2, 1)
    return g.reshape(n, N_CELLS)


def random_solutions(n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, 81)`` int64 random complete valid grids (ids 0..8).

    Each grid is an independent backtracking fill (so grids come from many equivalence classes),
    then randomly relabelled / row-column permuted / transposed. Not an exactly uniform sampler.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rnd = random.Random(int(rng.integers(_SEED_HIGH)))
    grids = np.array([_fill(rnd) for _ in range(n)], dtype=np.int64).reshape(n, N_CELLS)
    return _random_transform(grids, rng)


# ---------------------------------------------------------------------------------------------
# Solver
# ---------------------------------------------------------------------------------------------


def _load(puzzle: np.ndarray) -> tuple[list[int], list[int]] | None:
    """``(81,)`` puzzle → (grid list with -1 blanks, 27 used-digit masks); None if givens conflict."""
    cells = np.asarray(puzzle).reshape(-1)
    if cells.shape != (N_CELLS,):
        raise ValueError(f"puzzle must have {N_CELLS} cells, got shape {np.shape(puzzle)}")
    grid, used = [-1] * N_CELLS, [0] * _N_UNITS
    for i, v in enumerate(cells.tolist()):
        if v == MASK_ID:
            continue
        if not 0 <= v < N_DIGITS:
            raise ValueError(f"cell {i} holds {v}; expected a digit id 0..{N_DIGITS - 1} or MASK_ID")
        a, b, c = _CELL_UNITS[i]
        bit = 1 << v
        if (used[a] | used[b] | used[c]) & bit:
            return None
        used[a] |= bit
        used[b] |= bit
        used[c] |= bit
        grid[i] = v
    return grid, used


def _unit_branch(grid: list[int], used: list[int], best_n: int) -> list[tuple[int, int]] | None:
    """Branch on where a digit goes within one unit rather than on a cell (``best_n`` ≥ 2 is the
    MRV cell's candidate count): ``[(cell, digit)]`` for a hidden single, else the two places of a
    digit with two places left if ``best_n`` ≥ 3; ``[]`` if some digit has no place; else None."""
    cand = [
        0 if v >= 0 else _FULL & ~(used[a] | used[b] | used[c]) for v, (a, b, c) in zip(grid, _CELL_UNITS)
    ]
    pair = None
    for u, unit in enumerate(_UNIT_CELLS):
        one = two = three = 0
        for cell in unit:
            m = cand[cell]
            three |= two & m
            two |= one & m
            one |= m
        if one | used[u] != _FULL:
            return []
        single = one & ~two
        double = two & ~three if best_n > 2 and pair is None else 0
        if single or double:
            digits = single or double
            bit = digits & -digits  # the lowest such digit
            places = [(cell, bit.bit_length() - 1) for cell in unit if cand[cell] & bit]
            if single:
                return places
            pair = places
    return pair


def _choose(grid: list[int], used: list[int], blanks: list[int]) -> list[tuple[int, int]]:
    """Alternatives ``[(cell, digit), ...]`` to branch on next; ``[]`` means a dead end.

    A blank with the fewest candidates (MRV), unless some digit has fewer places in a unit.
    """
    best_n = N_DIGITS + 1
    for i in blanks:
        if grid[i] < 0:
            a, b, c = _CELL_UNITS[i]
            mask = _FULL & ~(used[a] | used[b] | used[c])
            if _POPCOUNT[mask] < best_n:
                best_n, best_i, best_mask = _POPCOUNT[mask], i, mask
                if best_n <= 1:
                    break
    if best_n > 1:
        places = _unit_branch(grid, used, best_n)
        if places is not None:
            return places
    return [(best_i, d) for d in _DIGITS_OF[best_mask]]


class SearchLimitError(RuntimeError):
    """The solver gave up after visiting its ``max_nodes`` search nodes."""


def _search(
    grid: list[int], used: list[int], blanks: list[int], depth: int, limit: int, found: list, budget: list
) -> int:
    """Count completions (at most ``limit``) once ``depth`` of ``blanks`` are filled; the first is
    appended to ``found``. ``budget[0]`` is the number of search nodes left."""
    if depth == len(blanks):
        if not found:
            found.append(list(grid))
        return 1
    budget[0] -= 1
    if budget[0] < 0:
        raise SearchLimitError("the solver's node limit was reached")
    total = 0
    for i, d in _choose(grid, used, blanks):
        a, b, c = _CELL_UNITS[i]
        bit = 1 << d
        used[a] |= bit
        used[b] |= bit
        used[c] |= bit
        grid[i] = d
        total += _search(grid, used, blanks, depth + 1, limit - total, found, budget)
        used[a] ^= bit
        used[b] ^= bit
        used[c] ^= bit
        grid[i] = -1
        if total >= limit:
            break
    return total


def _count(puzzle: np.ndarray, limit: int, found: list, max_nodes: int | None = None) -> int:
    """Shared body of :func:`count_solutions` and :func:`find_solution`."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    loaded = _load(puzzle)
    if loaded is None:
        return 0
    grid, used = loaded
    blanks = [i for i, v in enumerate(grid) if v < 0]
    budget = [float("inf") if max_nodes is None else max_nodes]
    return _search(grid, used, blanks, 0, limit, found, budget)


def count_solutions(puzzle: np.ndarray, limit: int = 2, max_nodes: int | None = None) -> int:
    """Number of solutions of one ``(81,)`` puzzle (MASK_ID blanks), counted up to ``limit``.

    Returns ``min(#solutions, limit)``; 0 when the givens already conflict. ``limit=2`` is the
    uniqueness test (1 means exactly one solution). With ``max_nodes``, raises
    :class:`SearchLimitError` instead of searching more than that many nodes.
    """
    return _count(puzzle, limit, [], max_nodes)


def find_solution(puzzle: np.ndarray, max_nodes: int | None = None) -> np.ndarray | None:
    """One solution ``(81,)`` int64 of a ``(81,)`` puzzle, or None if it has none (or givens conflict);
    :class:`SearchLimitError` after ``max_nodes`` search nodes."""
    found: list[list[int]] = []
    _count(puzzle, 1, found, max_nodes)
    return np.array(found[0], dtype=np.int64) if found else None


# ---------------------------------------------------------------------------------------------
# Puzzles
# ---------------------------------------------------------------------------------------------


def _reduce(solution: np.ndarray, order: np.ndarray, target: int) -> np.ndarray:
    """Blank cells of ``solution`` in ``order`` while the solution stays unique, down to ``target`` clues."""
    puzzle = solution.copy()
    clues = N_CELLS
    for cell in order.tolist():
        if clues <= target:
            break
        puzzle[cell] = MASK_ID
        if count_solutions(puzzle, limit=2) == 1:
            clues -= 1
        else:
            puzzle[cell] = solution[cell]
    return puzzle


def make_puzzles(
    n: int, rng: np.random.Generator, min_clues: int = 17, max_clues: int = 17
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` "minimal-ish random" unique-solution puzzles: ``(puzzles, solutions)``, each ``(n, 81)``.

    Each puzzle starts from a :func:`random_solutions` grid and tries to blank every cell once, in
    random order, keeping a blank only when the puzzle still has exactly one solution. It stops
    early once it reaches a target clue count drawn uniformly from ``[min_clues, max_clues]``.
    With the defaults (17, 17) the target is practically never reached, so the puzzles are
    minimal (no clue can be removed). Puzzles are not rated for difficulty.
    """
    if not 17 <= min_clues <= max_clues <= N_CELLS:
        raise ValueError(f"need 17 <= min_clues <= max_clues <= {N_CELLS}, got {min_clues}, {max_clues}")
    solutions = random_solutions(n, rng)
    targets = rng.integers(min_clues, max_clues + 1, size=n)
    puzzles = np.empty_like(solutions)
    for k in range(n):
        puzzles[k] = _reduce(solutions[k], rng.permutation(N_CELLS), int(targets[k]))
    return puzzles, solutions


def reveal_cells(
    puzzles: np.ndarray, solutions: np.ndarray, n_givens: int, rng: np.random.Generator
) -> np.ndarray:
    """``(B, 81)`` puzzles with random blanks filled from ``(B, 81)`` solutions up to ``n_givens`` givens.

    Extra cells are chosen uniformly among each puzzle's blanks; old givens are kept. A puzzle that
    already has ``>= n_givens`` givens is returned unchanged. Returns a new ``(B, 81)`` int64 array.
    """
    puzzles = np.asarray(puzzles, dtype=np.int64).reshape(-1, N_CELLS)
    solutions = np.asarray(solutions, dtype=np.int64).reshape(-1, N_CELLS)
    if puzzles.shape != solutions.shape:
        raise ValueError(f"puzzles {puzzles.shape} and solutions {solutions.shape} differ in shape")
    if not 0 <= n_givens <= N_CELLS:
        raise ValueError(f"n_givens must be in [0, {N_CELLS}], got {n_givens}")
    given = puzzles != MASK_ID
    if (given & (puzzles != solutions)).any():
        raise ValueError("some givens disagree with their solution")
    keys = np.where(given, -1.0, rng.random(puzzles.shape))  # givens sort first, blanks at random
    rank = keys.argsort(1, kind="stable").argsort(1, kind="stable")  # (B, 81) position of each cell
    return np.where(given | (rank < n_givens), solutions, puzzles)



def search_nodes(puzzle: np.ndarray) -> int:
    """The solver's search nodes to find ``puzzle (81,)``'s solution and prove it unique (the count of
    :func:`count_solutions` with ``limit=2``): a model-free difficulty, the blanks when every step is
    forced and more for each guess."""
    loaded = _load(puzzle)
    if loaded is None:
        return 0
    grid, used = loaded
    start = 10**12
    budget = [start]
    _search(grid, used, [i for i, v in enumerate(grid) if v < 0], 0, 2, [], budget)
    return start - budget[0]
