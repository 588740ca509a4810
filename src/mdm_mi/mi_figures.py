"""MI figures: the Figure-1-style MI map of one cell on the 9×9 grid, and head-vs-label scatter.

    python -m mdm_mi figure-mi-map --model M --head H --puzzles hard.csv --out map.png --csv map.csv
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

from mdm_mi.io import atomic_path
from mdm_mi.plotting import plt, save
from mdm_mi.sudoku.grid import MASK_ID, SIDE


@torch.inference_mode()
def mi_matrices(backbone, head, tokens: torch.Tensor, exact: bool):
    """For one context ``tokens (N,)``: head Î ``(N, N)`` and, if ``exact``, the probing label ``(N, N)``."""
    from mdm_mi.mi.probe import exact_mi

    masked = tokens == backbone.mask_id
    out = backbone(tokens[None])
    pred = head(out.hidden, masked[None])[0].float().cpu()
    label = exact_mi(backbone, tokens).label.float().cpu() if exact else None
    return pred, label


def pick_cell(pred: torch.Tensor, masked: torch.Tensor, cell: int) -> int:
    """``cell`` if ≥ 0, else the masked cell with the largest total predicted MI."""
    if cell >= 0:
        return cell
    total = pred.sum(1).masked_fill(~masked.cpu(), -1.0)
    return int(total.argmax())


def _draw_grid(ax, values: np.ndarray, puzzle: np.ndarray, cell: int, title: str, vmax: float) -> None:
    """One 9×9 panel: colour = MI with ``cell`` (nats, printed), givens as digits."""
    grid = values.reshape(SIDE, SIDE)
    ax.imshow(grid, cmap="viridis", vmin=0, vmax=vmax)
    for r in range(SIDE):
        for c in range(SIDE):
            i = r * SIDE + c
            if i == cell:
                ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
            if puzzle[i] != MASK_ID:
                ax.text(c, r, str(int(puzzle[i]) + 1), ha="center", va="center", fontsize=11, color="white",
                        fontweight="bold")
            elif i != cell:
                ax.text(c, r, f"{grid[r, c]:.2f}", ha="center", va="center", fontsize=6.5,
                        color="black" if grid[r, c] > 0.6 * vmax else "white")
    for k in range(0, SIDE + 1, 3):
        ax.axhline(k - 0.5, color="k", lw=2)
        ax.axvline(k - 0.5, color="k", lw=2)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


def mi_map_figure(puzzle: np.ndarray, pred, label, cell: int, out, backbone_name: str) -> None:
    """Head Î (and exact MI) of ``cell`` with every other cell, drawn on the grid."""
    panels = [("MI head Î", pred)] + ([("exact probing MI", label)] if label is not None else [])
    vmax = max(float(m[cell].max()) for _, m in panels) or 1.0
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.8))
    for ax, (name, mat) in zip(np.atleast_1d(axes), panels):
        row = mat[cell].numpy().copy()
        _draw_grid(ax, row, puzzle, cell, f"{name}: I(X_{cell}; X_j | C) in nats", vmax)
    fig.suptitle(f"MI of cell r{cell // SIDE + 1}c{cell % SIDE + 1} (red) — backbone: {backbone_name}", fontsize=10)
    save(fig, out)


def write_matrix_csv(path, pred, label) -> None:
    """The full matrices as CSV rows ``i, j, head, exact`` (exact empty if not computed)."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["i", "j", "head", "exact"])
        n = pred.shape[0]
        for i in range(n):
            for j in range(n):
                w.writerow([i, j, f"{float(pred[i, j]):.6g}", "" if label is None else f"{float(label[i, j]):.6g}"])


def reported_fidelity(fidelity: dict) -> tuple[str, dict]:
    """The reported split's name and numbers of a train-head fidelity JSON (``"reported": "test"``);
    a JSON from before the val/test split holds one flat set of held-out numbers."""
    name = fidelity.get("reported")
    return (name, fidelity[name]) if name else ("held-out", fidelity)


def scatter_figure(pairs_csv, fidelity: dict, out, backbone_name: str) -> None:
    """Head prediction against the probing label over the reported (test) split's masked pairs, with
    that split's fidelity numbers."""
    with Path(pairs_csv).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    x = np.array([float(r["label"]) for r in rows])
    y = np.array([float(r["prediction"]) for r in rows])
    fig, ax = plt.subplots(figsize=(4.8, 4.6))
    ax.scatter(x, y, s=3, alpha=0.3)
    hi = float(max(x.max(initial=0), y.max(initial=0))) or 1.0
    ax.plot([0, hi], [0, hi], "k--", lw=1)
    ax.set_xlabel("probing label I(X_i; X_j | C) (nats)")
    ax.set_ylabel("MI head Î (nats)")
    split, numbers = reported_fidelity(fidelity)
    text = ", ".join(f"{k} {numbers[k]:.3f}" for k in ("pearson", "spearman", "mae", "auroc") if k in numbers)
    ax.set_title(f"{split} pairs — {text}\nbackbone: {backbone_name}", fontsize=8)
    save(fig, out)
