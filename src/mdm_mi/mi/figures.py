"""Domain-neutral MI figures and their data: the head's and the exact MI matrices of one context,
the cell to map, the matrices as CSV, and the head-vs-label scatter (each domain draws its own map:
:func:`mdm_mi.sudoku.report.mi_map_figure`, :func:`mdm_mi.evaluation.plotting.sequence_map_figure`).

    pred, label = mi_matrices(backbone, head, tokens, exact=True)     # (N, N) each
    python -m mdm_mi figure-scatter --pairs pairs.csv --fidelity fidelity.json --model M --out scatter.png
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

from mdm_mi.evaluation.plotting import plt, save
from mdm_mi.infra.io import atomic_path
from mdm_mi.mi.probe import exact_mi


@torch.inference_mode()
def mi_matrices(backbone, head, tokens: torch.Tensor, exact: bool):
    """For one context ``tokens (N,)``: head Î ``(N, N)`` and, if ``exact``, the probing label ``(N, N)``."""
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
