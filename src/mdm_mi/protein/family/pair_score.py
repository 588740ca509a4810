"""Per-sequence pair log-odds against the natural family: how well one sequence respects the family's
residue couplings, a score that can be compared on a few dozen sequences (where the set-level
co-variation r is noise).

For match columns ``i < j`` and residues ``a, b``, the natural pair log-odds are

    w_ij(a, b) = ln f̃_ij(a, b) − ln f̃_i(a) − ln f̃_j(b),

with ``f̃_ij`` the training split's residue-pair frequencies of the column pair (sequences with a gap
in either column left out, like :func:`mdm_mi.protein.family.metrics.residue_mi`), mixed with a
uniform share ``PSEUDOCOUNT`` (the pseudocount of direct-coupling analysis), and ``f̃_i, f̃_j`` its
marginals. A sequence's pair score is the mean of ``w_ij(x_i, x_j)`` over its residue-residue column
pairs. Its expectation under ``f̃_ij`` is the column pairs' mean MI (≥ 0); under the product of the
same marginals (a site-independent draw) it is minus a KL divergence (≤ 0). So natural sequences score
above site-independent ones, and decoding that breaks couplings pulls the score down.

    weights = pair_weights(train_codes)           # (L, L, 20, 20)
    scores = pair_scores(weights, codes)          # (n,) nats per column pair
"""

from __future__ import annotations

import numpy as np

from mdm_mi.protein.family.alignment import GAP_INDEX

PSEUDOCOUNT = 0.1  # uniform share mixed into each column pair's residue-pair frequencies (a choice)


def pair_weights(codes: np.ndarray, pseudocount: float = PSEUDOCOUNT) -> np.ndarray:
    """Training codes ``(n, L)`` (gap = ``GAP_INDEX``) → log-odds ``w (L, L, 20, 20)`` float64,
    symmetric (``w[i, j] = w[j, i].T``); the diagonal ``i = j`` is zero and never read."""
    if not 0 < pseudocount <= 1:
        raise ValueError(f"pseudocount must lie in (0, 1], got {pseudocount}")
    n, length = codes.shape
    x = np.zeros((n, length, GAP_INDEX + 1))
    np.put_along_axis(x, codes[..., None], 1.0, axis=2)
    x = x[:, :, :GAP_INDEX].reshape(n, -1)  # residues only: a gap is all zeros
    counts = (x.T @ x).reshape(length, GAP_INDEX, length, GAP_INDEX).transpose(0, 2, 1, 3)
    n_ij = counts.sum((2, 3), keepdims=True)
    f = np.divide(counts, n_ij, out=np.zeros_like(counts), where=n_ij > 0)
    f = (1 - pseudocount) * f + pseudocount / GAP_INDEX**2
    w = np.log(f) - np.log(f.sum(3, keepdims=True)) - np.log(f.sum(2, keepdims=True))
    w[np.arange(length), np.arange(length)] = 0.0
    return w


def pair_scores(weights: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Mean ``w_ij(x_i, x_j)`` over the column pairs ``i < j`` where both hold a residue → ``(n,)``
    nats; NaN for a sequence with fewer than two residues in match columns."""
    length = weights.shape[0]
    assert codes.ndim == 2 and codes.shape[1] == length, (codes.shape, weights.shape)
    i, j = np.triu_indices(length, k=1)
    a, b = codes[:, i], codes[:, j]  # (n, P)
    both = (a != GAP_INDEX) & (b != GAP_INDEX)
    w = weights[i, j, np.minimum(a, GAP_INDEX - 1), np.minimum(b, GAP_INDEX - 1)]  # (n, P); gaps masked below
    total, count = np.where(both, w, 0.0).sum(1), both.sum(1)
    return np.divide(total, count, out=np.full(len(codes), np.nan), where=count > 0)
