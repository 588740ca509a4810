"""Where MI should matter: a column model's pairwise MI beside the family's own couplings and its
disulphide bonds.

    mi = empty_context_mi(backbone)                       # (L, L) nats: exact probing MI, all columns masked
    dca = ardca_scores(ardca.fit(codes, weights))         # (L, L): coupling norms, APC-corrected
    bonds = disulphide_pairs(column_profile(train))       # Kunitz: C1–C6, C2–C4, C3–C5 by column order
    top_overlap(mi, dca, k=L)                             # share of the model's top-L pairs among ArDCA's

**The model's map** is the exact probing MI (:func:`~mdm_mi.mi.probe.exact_mi`, 1 + L·21 passes) at
the fully masked row: the dependence the MI-guided sampler sees before its first pass. **ArDCA's map**
is the standard contact score of a Potts model: the Frobenius norm of each coupling block J_ij over the
20 amino acids after the zero-sum gauge, symmetrised and corrected by the average product (APC, Dunn
et al. 2008). **The disulphide bonds**: a Kunitz domain has six conserved cysteines bonded first–sixth,
second–fourth and third–fifth (BPTI: C5–C55, C14–C38, C30–C51); they are read off the training
profile as the six columns where cysteine is most frequent (≥ :data:`CYSTEINE_MIN`), else none.
"""

from __future__ import annotations

import numpy as np
import torch

from mdm_mi.evaluation.plotting import plt, save
from mdm_mi.infra.fasta import AMINO_ACIDS
from mdm_mi.mi.probe import exact_mi
from mdm_mi.protein.family.alignment import GAP_INDEX, N_LETTERS

CYSTEINE_MIN = 0.5  # a column is a conserved cysteine when at least this fraction of its rows hold C
KUNITZ_BONDS = ((0, 5), (1, 3), (2, 4))  # the six cysteines in column order: bonded 1–6, 2–4, 3–5


def apc(scores: np.ndarray) -> np.ndarray:
    """Average-product correction of a symmetric ``(L, L)`` score, diagonal ignored (set to 0)."""
    s = scores.copy()
    np.fill_diagonal(s, np.nan)
    row = np.nanmean(s, 1)
    out = s - np.outer(row, row) / np.nanmean(s)
    np.fill_diagonal(out, 0.0)
    return out


def ardca_scores(model) -> np.ndarray:
    """ArDCA couplings → ``(L, L)`` APC-corrected Frobenius norms of the gauge-centred 20 × 20 residue
    blocks (J_ij is fitted for j < i only; the score is symmetrised)."""
    length = model.length
    blocks = model.couplings.reshape(length, N_LETTERS, length, N_LETTERS)
    residues = [k for k in range(N_LETTERS) if k != GAP_INDEX]
    j = blocks[:, residues][:, :, :, residues]  # (L, 20, L, 20)
    j = j - j.mean(1, keepdims=True) - j.mean(3, keepdims=True) + j.mean((1, 3), keepdims=True)
    norm = np.sqrt((j ** 2).sum((1, 3)))
    return apc(norm + norm.T)


def disulphide_pairs(profile: np.ndarray) -> list[tuple[int, int]]:
    """The Kunitz disulphide column pairs (0-based) from a ``(L, 21)`` profile, or [] when the profile
    does not have exactly six conserved cysteine columns."""
    cys = profile[:, AMINO_ACIDS.index("C")]
    columns = np.flatnonzero(cys >= CYSTEINE_MIN)
    if len(columns) != 6:
        return []
    return [(int(columns[a]), int(columns[b])) for a, b in KUNITZ_BONDS]


@torch.inference_mode()
def empty_context_mi(backbone) -> np.ndarray:
    """Exact probing MI ``(L, L)`` of a column model at the fully masked row (its first pass)."""
    label = exact_mi(backbone, backbone.masked_sequence()).label.cpu().numpy()
    return label[1:-1, 1:-1]


def pair_ranks(scores: np.ndarray, pairs: list[tuple[int, int]]) -> list[int]:
    """1-based rank of each pair among all ``i < j`` pairs by descending score."""
    i, j = np.triu_indices(len(scores), k=1)
    order = np.argsort(-scores[i, j], kind="stable")
    rank = {(int(i[k]), int(j[k])): r + 1 for r, k in enumerate(order)}
    return [rank[(min(a, b), max(a, b))] for a, b in pairs]


def top_pairs(scores: np.ndarray, k: int, min_separation: int = 1) -> set[tuple[int, int]]:
    """The ``k`` highest-scoring pairs ``i < j`` with ``j − i ≥ min_separation``."""
    i, j = np.triu_indices(len(scores), k=min_separation)
    order = np.argsort(-scores[i, j], kind="stable")[:k]
    return {(int(i[o]), int(j[o])) for o in order}


def top_overlap(a: np.ndarray, b: np.ndarray, k: int, min_separation: int = 1) -> float:
    """Share of ``a``'s top-``k`` pairs that are among ``b``'s top-``k``."""
    return len(top_pairs(a, k, min_separation) & top_pairs(b, k, min_separation)) / k


def map_r(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two ``(L, L)`` maps over the pairs ``i < j``."""
    i, j = np.triu_indices(len(a), k=1)
    return float(np.corrcoef(a[i, j], b[i, j])[0, 1])


def contacts_figure(mi: np.ndarray, dca: np.ndarray, bonds: list[tuple[int, int]], out, title: str) -> None:
    """Two ``(L, L)`` maps side by side (the model's MI, ArDCA's scores), upper triangles' top-L pairs
    outlined below the diagonal, the disulphide pairs circled on both."""
    length = len(mi)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.4), layout="constrained")
    for ax, values, name in ((axes[0], mi, "column model: exact MI at the empty row (nats)"),
                             (axes[1], dca, "ArDCA: coupling norm, APC-corrected")):
        shown = values.astype(float).copy()
        np.fill_diagonal(shown, np.nan)
        vmax = float(np.nanpercentile(shown, 99.5)) or 1.0
        extent = (0.5, length + 0.5, length + 0.5, 0.5)
        im = ax.imshow(shown, cmap="viridis", vmin=max(0.0, float(np.nanmin(shown))), vmax=vmax, extent=extent,
                       interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.85)
        tops = top_pairs(values, length, min_separation=1)
        ax.scatter([i + 1 for i, _ in tops], [j + 1 for _, j in tops], s=10, facecolors="none", edgecolors="white",
                   linewidths=0.6, label=f"top {length} pairs")
        for a, b in bonds:
            ax.scatter([a + 1, b + 1], [b + 1, a + 1], s=90, facecolors="none", edgecolors="red", linewidths=1.5)
        ax.set_xlabel("match column")
        ax.set_ylabel("match column")
        ax.set_title(name + ("; red: disulphide pairs" if bonds else ""), fontsize=9)
    fig.suptitle(title, fontsize=10)
    save(fig, out)
