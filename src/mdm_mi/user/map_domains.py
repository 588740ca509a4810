"""How ``mdm-mi mi-map`` reads, locates and draws each domain's input: one :class:`MapDomain` per
domain, named by :data:`mdm_mi.domain.DOMAINS` (``mapper``).

A context is the checked input (Sudoku: ``(81,)`` tokens; protein: a string over the 20 amino acids
with ``_`` masked). Positions are token indices of the backbone's input ``(N,)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from mdm_mi.errors import InputError
from mdm_mi.sudoku.grid import MASK_ID, SIDE, cell_name

TOP_PARTNERS = 5  # partners listed in the printed summary


class MapDomain(ABC):
    """One domain's input, cell names and figure for the MI map."""

    @abstractmethod
    def check(self, text: str):
        """Input text → the context, or a one-line :class:`InputError` (no model needed)."""

    @abstractmethod
    def tokens(self, context, backbone, device) -> torch.Tensor:
        """The context as backbone input ``(N,)`` long."""

    @abstractmethod
    def parse_cell(self, spec: str | None, context) -> int:
        """``--cell`` → a masked position's token index; -1 when ``spec`` is None (pick the best)."""

    @abstractmethod
    def name(self, i: int, context) -> str:
        """Human name of token index ``i``."""

    @abstractmethod
    def draw(self, context, pred: torch.Tensor, label, cell: int, out, backbone_name: str) -> None:
        """Figure of row ``cell`` of ``pred (N, N)`` (and ``label``) at ``out``."""

    def probe_passes(self, tokens: torch.Tensor, backbone) -> int:
        """Forward passes of exact probing: ``1 + |M| V``."""
        return 1 + int((tokens == backbone.mask_id).sum()) * int(backbone.vocab_size)

    def summary(self, context, pred: torch.Tensor, label, cell: int) -> str:
        """One line: the cell and its strongest partners by predicted MI (nats)."""
        row = pred[cell]
        top = [j for j in row.argsort(descending=True).tolist() if row[j] > 0][:TOP_PARTNERS]
        parts = [f"{self.name(j, context)} {float(row[j]):.3f}" for j in top]
        if label is not None:
            parts = [f"{p} (exact {float(label[cell, j]):.3f})" for p, j in zip(parts, top)]
        return f"{self.name(cell, context)}: highest predicted MI (nats) with " + (", ".join(parts) or "none")


class SudokuMap(MapDomain):
    """A puzzle on the 9×9 grid; ``--cell row,column`` (1-based)."""

    def check(self, text: str) -> np.ndarray:
        from mdm_mi.user.puzzles import check_puzzle, read_puzzles

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
        from mdm_mi.mi_figures import mi_map_figure

        mi_map_figure(context, pred, label, cell, out, backbone_name)


PROTEIN_MASK = "_"
PROTEIN_MIN_LEN = 2
PROTEIN_MAX_LEN = 2046  # ESM-C's 2048-token context minus BOS and EOS


class ProteinMap(MapDomain):
    """A sequence with ``_`` for masked residues, drawn as bars over positions; ``--cell`` is a
    1-based residue position. The backbone must offer ``encode([seq])`` (BOS + residues + EOS)."""

    def check(self, text: str) -> str:
        from mdm_mi.protein.fasta import validate_sequence

        seq = "".join(text.split()).upper()
        residues = seq.replace(PROTEIN_MASK, "")
        if residues:
            validate_sequence(residues)  # names letters outside the 20 amino acids
        if not PROTEIN_MIN_LEN <= len(seq) <= PROTEIN_MAX_LEN:
            raise InputError(f"sequence has length {len(seq)}, outside {PROTEIN_MIN_LEN}..{PROTEIN_MAX_LEN}")
        if seq.count(PROTEIN_MASK) < 2:
            raise InputError(f"the sequence has fewer than 2 masked positions ({PROTEIN_MASK}); "
                             "the MI map is between masked positions")
        return seq

    def tokens(self, context, backbone, device) -> torch.Tensor:
        if not hasattr(backbone, "encode"):
            raise InputError("this protein model cannot encode sequences (no encode method)")
        return backbone.encode([context], device)[0]

    def parse_cell(self, spec: str | None, context) -> int:
        if spec is None:
            return -1
        if not spec.strip().isdigit() or not 1 <= int(spec) <= len(context):
            raise InputError(f"--cell must be a position 1..{len(context)} of the sequence, got {spec!r}")
        if context[int(spec) - 1] != PROTEIN_MASK:
            raise InputError(f"--cell {spec}: position {spec} is not masked ({PROTEIN_MASK}); choose a masked one")
        return int(spec)  # token index: BOS comes first

    def name(self, i: int, context) -> str:
        return f"position {i}"

    def draw(self, context, pred, label, cell, out, backbone_name) -> None:
        protein_map_figure(context, pred, label, cell, out, backbone_name)


def protein_map_figure(seq: str, pred: torch.Tensor, label, cell: int, out, backbone_name: str) -> None:
    """Bars of Î(cell, j) (and the exact MI) over residue positions ``j = 1..L`` (token indices; BOS at
    0), the sequence letters as ticks."""
    from mdm_mi.plotting import plt, save

    pos = np.arange(1, len(seq) + 1)
    panels = [("MI head Î", pred)] + ([("exact probing MI", label)] if label is not None else [])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.16 * len(seq)), 3.2))
    width = 0.8 / len(panels)
    for k, (name, mat) in enumerate(panels):
        ax.bar(pos + (k - (len(panels) - 1) / 2) * width, mat[cell, 1 : len(seq) + 1].numpy(), width, label=name)
    ax.axvline(cell, color="red", lw=1.5)
    ax.set_xticks(pos, list(seq), fontsize=6)
    ax.set_xlim(0.3, len(seq) + 0.7)
    ax.set_xlabel("residue (_ = masked)")
    ax.set_ylabel("nats")
    ax.legend(fontsize=8)
    ax.set_title(f"MI of position {cell} (red) with every other — backbone: {backbone_name}", fontsize=9)
    save(fig, out)
