"""How well the MI head's Î reproduces the probing labels, and how well either recovers structure.

All statistics pool the masked pairs ``i < j`` of every context (each unordered pair once). For
Sudoku, ``structure`` is :func:`mdm_mi.sudoku.grid.peer_matrix` (same row, column or box) and the
AUROC says how well Î ranks constrained pairs above unconstrained ones; the label's own AUROC is
reported beside it as the ceiling a perfect head would reach.

    from mdm_mi.mi.fidelity import fidelity
    from mdm_mi.sudoku.grid import peer_matrix
    stats = fidelity(mi_hat, shard["label"], shard["masked"], torch.as_tensor(peer_matrix()))
    # {"pairs": ..., "pearson": ..., "spearman": ..., "mae": ..., "rmse": ...,
    #  "auroc": ..., "auroc_label": ..., "structure_pairs": ...}
"""

from __future__ import annotations

import math

import numpy as np
import torch

NAN = float("nan")


def masked_pairs(masked: torch.Tensor) -> torch.Tensor:
    """``(C, N)`` bool → ``(C, N, N)`` bool selecting ``i < j`` with both positions masked."""
    n = masked.shape[1]
    upper = torch.ones(n, n, dtype=torch.bool, device=masked.device).triu(1)
    return masked[:, :, None] & masked[:, None, :] & upper


def average_ranks(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks of a 1-D tensor, ties sharing their average rank (float64, same order as x)."""
    assert x.ndim == 1, x.shape
    values, order = x.double().sort(stable=True)
    _, counts = torch.unique_consecutive(values, return_counts=True)
    ends = counts.cumsum(0).double()  # 1-based rank of each tie group's last member
    group_rank = ends - (counts.double() - 1) / 2  # average of ranks end-count+1 .. end
    ranks = torch.empty_like(values)
    ranks[order] = group_rank.repeat_interleave(counts)
    return ranks


def _flat(v) -> torch.Tensor:
    """A tensor, or an array (a list) as a float64 tensor, flattened."""
    return (v if isinstance(v, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(v, np.float64))).flatten()


def pearson(x, y) -> float:
    """Pearson correlation of two tensors or arrays of the same shape, flattened (NaN when either is
    constant or has < 2 entries; clipped to [-1, 1] against round-off, as ``np.corrcoef`` is)."""
    x, y = _flat(x), _flat(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    if x.numel() < 2:
        return NAN
    xc, yc = x.double() - x.double().mean(), y.double() - y.double().mean()
    denom = float(xc.norm() * yc.norm())
    return float(np.clip(float((xc * yc).sum()) / denom, -1.0, 1.0)) if denom > 0 else NAN


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman rank correlation: Pearson of the average ranks (ties handled)."""
    if x.numel() < 2:
        return NAN
    return pearson(average_ranks(x), average_ranks(y))


def auroc(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve of ``scores`` for ``positive`` (1-D bool) vs the rest.

    Mann–Whitney form ``(R₊ − n₊(n₊+1)/2) / (n₊ n₋)`` with average ranks, so a tie between a
    positive and a negative counts one half. NaN when either class is empty.
    """
    n_pos = int(positive.sum())
    n_neg = positive.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return NAN
    rank_sum = float(average_ranks(scores)[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def fidelity(
    pred: torch.Tensor,
    label: torch.Tensor,
    masked: torch.Tensor,
    structure: torch.Tensor | None = None,
) -> dict:
    """Agreement of Î with the labels over masked pairs ``i < j``.

    pred, label ``(C, N, N)``; masked ``(C, N)`` bool; structure ``(N, N)`` bool or None. Returns
    ``pairs`` (count), ``pearson``, ``spearman``, ``mae``, ``rmse`` (nats) and, with ``structure``,
    ``auroc`` (Î: structure pairs vs the others), ``auroc_label`` (the label's own) and
    ``structure_pairs`` (count of positive pairs). Statistics of an empty set are NaN.
    """
    assert pred.ndim == 3 and pred.shape == label.shape, (pred.shape, label.shape)
    assert masked.shape == pred.shape[:2], (masked.shape, pred.shape)
    masked = masked.to(pred.device)
    sel = masked_pairs(masked)
    p, y = pred.double()[sel], label.to(pred.device).double()[sel]
    err = p - y
    out = {
        "pairs": int(sel.sum()),
        "pearson": pearson(p, y),
        "spearman": spearman(p, y),
        "mae": float(err.abs().mean()) if err.numel() else NAN,
        "rmse": math.sqrt(float(err.square().mean())) if err.numel() else NAN,
    }
    if structure is not None:
        structure = torch.as_tensor(structure, device=pred.device).bool()
        assert structure.shape == pred.shape[1:], structure.shape
        positive = structure.expand_as(sel)[sel]
        out.update(auroc=auroc(p, positive), auroc_label=auroc(y, positive))
        out["structure_pairs"] = int(positive.sum())
    return out


BOOT_REPLICATES = 1000  # resamples of the contexts behind a fidelity interval
BOOT_LEVEL = 0.95


def bootstrap_over_contexts(pred: torch.Tensor, label: torch.Tensor, masked: torch.Tensor,
                            n_boot: int = BOOT_REPLICATES, seed: int = 0, level: float = BOOT_LEVEL) -> dict:
    """Percentile intervals of Pearson and Spearman when the ``C`` contexts are resampled with
    replacement (pairs of one context move together: they share the context, so they are not
    independent). pred, label ``(C, N, N)``; masked ``(C, N)``. Returns ``pearson_ci``,
    ``spearman_ci`` ([lo, hi]) and ``n_boot``; NaN bounds with fewer than 2 contexts."""
    sel = masked_pairs(masked.to(pred.device))
    per_context = [(pred[c].double()[sel[c]], label[c].to(pred.device).double()[sel[c]]) for c in range(len(pred))]
    if len(per_context) < 2:
        return {"pearson_ci": [NAN, NAN], "spearman_ci": [NAN, NAN], "n_boot": 0}
    gen = torch.Generator().manual_seed(seed)
    stats = {"pearson": [], "spearman": []}
    for _ in range(n_boot):
        idx = torch.randint(len(per_context), (len(per_context),), generator=gen).tolist()
        p = torch.cat([per_context[i][0] for i in idx])
        y = torch.cat([per_context[i][1] for i in idx])
        stats["pearson"].append(pearson(p, y))
        stats["spearman"].append(spearman(p, y))
    tail = (1 - level) / 2
    out = {f"{k}_ci": torch.tensor(v, dtype=torch.float64).nanquantile(torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
           for k, v in stats.items()}
    return out | {"n_boot": n_boot}
