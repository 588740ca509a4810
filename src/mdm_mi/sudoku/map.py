"""The Sudoku input of ``mdm-mi mi-map``: a puzzle on the 9×9 grid, cells named r1c1…r9c9."""

from __future__ import annotations

import numpy as np
import torch

from mdm_mi.core.map_domain import MapDomain
from mdm_mi.infra.errors import InputError
from mdm_mi.sudoku.grid import MASK_ID, SIDE, cell_name
from mdm_mi.sudoku.puzzles import check_puzzle, read_puzzles
from mdm_mi.sudoku.report import mi_map_figure


class SudokuMap(MapDomain):
    """A puzzle on the 9×9 grid; ``--cell row,column`` (1-based)."""

    def check(self, text: str) -> np.ndarray:
        (puzzle,) = read_puzzles(text, None)
        check_puzzle(puzzle)
        if (puzzle.tokens == MASK_ID).sum() < 2:
            raise InputError("the puzzle has fewer than 2 blanks; the MI map is between blank cells")
        return puzzle.tokens

    def tokens(self, context, backbone, device) -> torch.Tensor:
        return torch.as_tensor(context, device=device)

    def parse_cell(self, spec: str | None, context) -> int:
        if spec is None:
            return -1
        parts = spec.replace(" ", "").split(",")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise InputError(f"--cell must be row,column with numbers 1-9 (e.g. 1,3), got {spec!r}")
        r, c = int(parts[0]), int(parts[1])
        if not (1 <= r <= SIDE and 1 <= c <= SIDE):
            raise InputError(f"--cell {spec}: row and column must be 1-9")
        i = (r - 1) * SIDE + (c - 1)
        if context[i] != MASK_ID:
            raise InputError(f"--cell {spec}: r{r}c{c} is a clue; choose a blank cell")
        return i

    def name(self, i: int, context) -> str:
        return cell_name(i)

    def draw(self, context, pred, label, cell, out, backbone_name) -> None:
        mi_map_figure(context, pred, label, cell, out, backbone_name)
