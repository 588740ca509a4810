"""How ``mdm-mi mi-map`` reads, locates and draws each domain's input: the :class:`MapDomain`
interface, implemented by :class:`mdm_mi.sudoku.map.SudokuMap` and :class:`mdm_mi.protein.map.ProteinMap`
and named by :data:`mdm_mi.models.domains.DOMAINS` (``mapper``).

A context is the checked input (Sudoku: ``(81,)`` tokens; protein: a string over the 20 amino acids
with ``_`` masked). Positions are token indices of the backbone's input ``(N,)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

TOP_PARTNERS = 5  # partners listed in the printed summary
SMALL_NATS = 1e-3  # below this (and above 0) an MI value prints in scientific notation


def nats(x: float) -> str:
    """An MI value for print: three decimals, or scientific notation when small (1e-5 is not ``0.000``)."""
    return f"{x:.2e}" if 0 < abs(x) < SMALL_NATS else f"{x:.3f}"


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
        parts = [f"{self.name(j, context)} {nats(float(row[j]))}" for j in top]
        if label is not None:
            parts = [f"{p} (exact {nats(float(label[cell, j]))})" for p, j in zip(parts, top)]
        return f"{self.name(cell, context)}: highest predicted MI (nats) with " + (", ".join(parts) or "none")
