"""Grouped-jackknife replicates of a set's co-variation statistics, for ``family-compare``'s intervals.

A set's sequences are split into G fixed groups (:func:`group_labels`) and each statistic is
recomputed without each group in turn. Residue pair counts are sums over sequences, so a
leave-one-group-out count is the set's count minus the group's; only the cells the group touches
change, and all G replicates cost about one more pass over the set.

The bias-corrected MI shuffles every column *within each group* (:func:`block_shuffles`), so the
shuffled copy of "the set without group g" is the set's shuffled copy without group g's rows. Each
group (its sequences and its shuffles) is then one independent unit, and the jackknife over groups
sees the shuffles' noise as part of the statistic's.

    labels = group_labels(len(codes), seed=0)                   # (n,) group of each sequence
    mi, mi_loo = corrected_mi_jackknife(codes, labels, seed=0)  # (P,), (G, P): all, without group g
    r, r_loo = correlation_r_jackknife(codes, labels, ref_cij)  # C_ij r with the reference: float, (G,)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdm_mi.protein.family.alignment import GAP_INDEX

MAX_GROUPS = 30  # jackknife groups of a set (t with G − 1 degrees of freedom)
MIN_GROUP_SIZE = 10  # fewer groups for small sets: a within-group shuffle needs rows to shuffle
_K = GAP_INDEX  # residues: gaps are left out (as in metrics.residue_mi)
_KK = _K * _K


def group_labels(n: int, seed: int) -> np.ndarray:
    """Group ``(n,)`` of each of ``n`` sequences: ``G = clip(n // MIN_GROUP_SIZE, 2, MAX_GROUPS)``
    groups of sizes differing by at most one, a seeded random partition (the same for every set of
    size ``n`` and seed, so index ``i`` of two sets falls in the same group: paired)."""
    assert n >= 2, n
    groups = int(np.clip(n // MIN_GROUP_SIZE, 2, MAX_GROUPS))
    labels = np.empty(n, dtype=np.int64)
    labels[np.random.default_rng([seed, 13]).permutation(n)] = np.arange(n) % groups
    return labels


def block_shuffles(codes: np.ndarray, labels: np.ndarray, n_shuffles: int, seed: int) -> list[np.ndarray]:
    """``n_shuffles`` copies of codes ``(n, L)`` with every column permuted independently within each
    group of ``labels`` ``(n,)`` (seeded)."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(labels == g) for g in range(labels.max() + 1)]
    out = []
    for _ in range(n_shuffles):
        shuffled = np.empty_like(codes)
        for rows in members:
            shuffled[rows] = rng.permuted(codes[rows], axis=0)
        out.append(shuffled)
    return out


def _cells(codes: np.ndarray) -> np.ndarray:
    """Codes ``(n, L)`` → each sequence's residue pair of every column pair ``p = (i < j)``
    (row-major) as the flat cell ``p·400 + 20·a + b`` ``(n, P)``; −1 where either is a gap."""
    i, j = np.triu_indices(codes.shape[1], k=1)
    a, b = codes.T[i].astype(np.int64), codes.T[j].astype(np.int64)  # (P, n)
    cell = np.arange(len(i))[:, None] * _KK + a * _K + b
    cell[(a >= _K) | (b >= _K)] = -1
    return cell.T


def _margins(cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat cells → their first and second residue's marginal cells ``p·20 + a`` and ``p·20 + b``."""
    pair = cell // _KK
    return pair * _K + (cell // _K) % _K, pair * _K + cell % _K


def _xlogx(n: int) -> np.ndarray:
    """``c ln c`` for the counts ``c = 0 … n`` (``0 ln 0 = 0``)."""
    c = np.arange(n + 1, dtype=np.float64)
    return c * np.log(np.where(c > 0, c, 1.0))


def _mi(s_joint: np.ndarray, s_first: np.ndarray, s_second: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Plug-in MI from count sums: ``(Σ c ln c − Σ c_a ln c_a − Σ c_b ln c_b) / N + ln N`` (0 where N = 0)."""
    nf = np.maximum(n, 1).astype(np.float64)
    return np.where(n > 0, (s_joint - s_first - s_second) / nf + np.log(nf), 0.0)


def _grouped(keys: np.ndarray, weights: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys ``g·size + index`` with weights → the distinct (group, index) and their summed weights."""
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq // size, uniq % size, np.bincount(inverse, weights=weights).astype(np.int64)


@dataclass(frozen=True)
class PairCounts:
    """Residue pair counts of a set of codes ``(n, L)`` (flat cells ``p·400 + 20·a + b``, ``(P·400,)``)
    and each group's share: the distinct (group, cell) of the set and how many of the group's
    sequences fall in each."""

    joint: np.ndarray
    groups: int
    n_pairs: int
    group: np.ndarray
    cell: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, codes: np.ndarray, labels: np.ndarray) -> "PairCounts":
        cells = _cells(codes)
        valid = cells >= 0
        cell, group = cells[valid], np.broadcast_to(labels[:, None], cells.shape)[valid]
        size = cells.shape[1] * _KK
        g, c, k = _grouped(group * size + cell, np.ones(len(cell)), size)
        return cls(np.bincount(cell, minlength=size), int(labels.max()) + 1, cells.shape[1], g, c, k)

    def without(self, g: int) -> np.ndarray:
        """The pair counts ``(P·400,)`` of the set without group ``g``."""
        out, mine = self.joint.copy(), self.group == g
        out[self.cell[mine]] -= self.count[mine]
        return out


def _pairs_within(group: np.ndarray, index: np.ndarray, count: np.ndarray):
    """(group, index, count) triplets → every two groups that touch the same index: their groups
    ``g1 < g2``, the index and both counts (for the delete-2 terms; ~3M pairs at 630 sequences)."""
    order = np.lexsort((group, index))
    g, c, k = group[order], index[order], count[order]
    start = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
    run = np.diff(np.r_[start, len(c)])
    later = np.repeat(run, run) - 1 - (np.arange(len(c)) - np.repeat(start, run))  # entries after each in its run
    first = np.repeat(np.arange(len(c)), later)
    second = first + 1 + np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
    return g[first], g[second], c[first], k[first], k[second]


def _xlogx_sums(total: np.ndarray, triplets: tuple, per: int, groups: int, xlogx: np.ndarray):
    """``Σ c ln c`` per pair ``(P,)`` of counts ``total`` (``per`` cells a pair), what each group's
    counts add to it ``(G, P)``, and the delete-2 overlap ``(G, G, P)``: ``Σ(without g and h) = Σ −
    D_g − D_h + O_gh``, O nonzero only where both groups touch a cell."""
    g, c, k = triplets
    n_pairs = len(total) // per
    drop = np.bincount(g * n_pairs + c // per, weights=xlogx[total[c]] - xlogx[total[c] - k],
                       minlength=groups * n_pairs).reshape(groups, n_pairs)
    g1, g2, cc, k1, k2 = _pairs_within(g, c, k)
    t = total[cc]
    both = np.bincount((g1 * groups + g2) * n_pairs + cc // per,
                       weights=xlogx[t] - xlogx[t - k1] - xlogx[t - k2] + xlogx[t - k1 - k2],
                       minlength=groups * groups * n_pairs).reshape(groups, groups, n_pairs)
    return xlogx[total].reshape(n_pairs, per).sum(1), drop, both + both.transpose(1, 0, 2)


def residue_mi_jackknife(counts: PairCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plug-in residue MI of every column pair (as :func:`mdm_mi.protein.family.metrics.residue_mi`)
    → ``(P,)``, of the set without each group → ``(G, P)``, and without each two groups → ``(G, G, P)``
    (the diagonal is meaningless)."""
    n_pairs, groups = counts.n_pairs, counts.groups
    first, second = _margins(np.arange(n_pairs * _KK))
    m_first = np.bincount(first, weights=counts.joint, minlength=n_pairs * _K).astype(np.int64)
    m_second = np.bincount(second, weights=counts.joint, minlength=n_pairs * _K).astype(np.int64)
    n = m_first.reshape(n_pairs, _K).sum(1)
    xlogx = _xlogx(int(n.max()))
    g, c, k = counts.group, counts.cell, counts.count
    a, b = _margins(c)
    terms = [_xlogx_sums(counts.joint, (g, c, k), _KK, groups, xlogx),
             _xlogx_sums(m_first, _grouped(g * (n_pairs * _K) + a, k, n_pairs * _K), _K, groups, xlogx),
             _xlogx_sums(m_second, _grouped(g * (n_pairs * _K) + b, k, n_pairs * _K), _K, groups, xlogx)]
    n_group = np.bincount(g * n_pairs + c // _KK, weights=k, minlength=groups * n_pairs)
    n_group = n_group.reshape(groups, n_pairs).astype(np.int64)
    point = _mi(*(s for s, _, _ in terms), n)
    loo = _mi(*(s - d for s, d, _ in terms), n - n_group)
    loo2 = _mi(*(s - d[:, None] - d[None] + o for s, d, o in terms), n - n_group[:, None] - n_group[None])
    return point, loo, loo2


def corrected_mi_jackknife(codes: np.ndarray, labels: np.ndarray, seed: int, n_shuffles: int,
                           counts: PairCounts | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bias-corrected residue MI ``(P,)``: plug-in residue MI minus the mean over ``n_shuffles``
    :func:`block_shuffles` (seeded) of theirs, and the same of the set without each group ``(G, P)``
    and each two groups ``(G, G, P)``. Shuffling within groups keeps each group's letters and removes
    its dependence, so what remains is the finite-sample bias, as with whole-column shuffles.
    ``counts``: the set's :class:`PairCounts`, when already made."""
    data = residue_mi_jackknife(counts or PairCounts.of(codes, labels))
    nulls = [residue_mi_jackknife(PairCounts.of(s, labels)) for s in block_shuffles(codes, labels, n_shuffles, seed)]
    return tuple(x - np.mean([m[i] for m in nulls], axis=0) for i, x in enumerate(data))


def block_corrected_mi(codes: np.ndarray, labels: np.ndarray, seed: int, n_shuffles: int) -> np.ndarray:
    """The value of :func:`corrected_mi_jackknife` alone ``(P,)``, without replicates (the reference's)."""
    from mdm_mi.protein.family.metrics import residue_mi  # lazy: pyhmmer, scipy (~1 s at every CLI start)

    nulls = block_shuffles(codes, labels, n_shuffles, seed)
    return residue_mi(codes) - np.mean([residue_mi(s) for s in nulls], axis=0)


def _site_counts(codes: np.ndarray) -> np.ndarray:
    """Residue counts ``(L, 20)`` of codes ``(n, L)`` (gaps not counted)."""
    keep = codes < _K
    idx = (np.arange(codes.shape[1]) * _K + codes)[keep]
    return np.bincount(idx, minlength=codes.shape[1] * _K).reshape(-1, _K)


def _connected(joint: np.ndarray, sites: np.ndarray, n: int) -> np.ndarray:
    """``C_ij(a, b) = f_ij(a, b) − f_i(a) f_j(b)`` over residue pairs, flat ``(P·400,)``, from pair
    counts ``(P·400,)`` and site counts ``(L, 20)`` of ``n`` sequences (as
    :func:`mdm_mi.protein.family.metrics.residue_correlations`)."""
    i, j = np.triu_indices(len(sites), k=1)
    f = sites / n
    return (joint.reshape(-1, _K, _K) / n - f[i][:, :, None] * f[j][:, None, :]).ravel()


def pearson_rows(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``x`` ``(..., D)`` with ``ref`` ``(D,)`` → ``(...)``."""
    xc, rc = x - x.mean(-1, keepdims=True), ref - ref.mean()
    return (xc @ rc) / np.sqrt((xc * xc).sum(-1) * (rc @ rc))


def _pair_sums(x: np.ndarray) -> np.ndarray:
    """``Σ_{i<j} x_i x_j`` over the last axis."""
    return (x.sum(-1) ** 2 - (x * x).sum(-1)) / 2


def _left_out(total, share: np.ndarray, both: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A sum over the set without each group, ``total − share_g`` ``(G, …)``, and without each two,
    ``total − share_g − share_h + both_gh`` ``(G, G, …)``."""
    two = total - share[:, None] - share[None]
    return total - share, two if both is None else two + both


def _bilinear_left_out(blocks: np.ndarray, sites: np.ndarray, group_sites: np.ndarray,
                       i: np.ndarray, j: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``Σ_p σ_iᵀ blocks_p σ_j`` for the site counts σ of the set, of the set without each group and
    without each two: the form expands over ``B[x, y] = Σ_p v_x,iᵀ blocks_p v_y,j`` of
    ``v = [σ, σ_0 … σ_{G−1}]`` (the groups' own site counts) → float, ``(G,)``, ``(G, G)``."""
    vectors = np.concatenate([sites[None], group_sites])
    right = np.einsum("pab,ypb->ypa", blocks, vectors[:, j, :])
    b = np.einsum("xpa,ypa->xy", vectors[:, i, :], right)
    inner = b[1:, 1:]
    return (b[0, 0], *_left_out(b[0, 0], b[0, 1:] + b[1:, 0] - np.diag(inner), inner + inner.T))


def _own_cells(counts: PairCounts, sites: np.ndarray, group_sites: np.ndarray, i: np.ndarray,
               j: np.ndarray) -> np.ndarray:
    """``W[g, h] = Σ_(g's cells) k·σ_i(a)·σ_j(b)`` with σ the site counts of the set without groups g
    and h (``W[g, g]``: without g only) → ``(G, G)``: group g's pair counts against the sites left."""
    pair, a, b = counts.cell // _KK, (counts.cell // _K) % _K, counts.cell % _K
    w = np.empty((counts.groups, counts.groups))
    for g in range(counts.groups):
        mine = counts.group == g
        ii, aa, jj, bb, k = i[pair[mine]], a[mine], j[pair[mine]], b[mine], counts.count[mine].astype(np.float64)
        left, right = sites[ii, aa] - group_sites[g, ii, aa], sites[jj, bb] - group_sites[g, jj, bb]
        x, y = group_sites[:, ii, aa], group_sites[:, jj, bb]
        w[g] = k @ (left * right) - y @ (k * left) - x @ (k * right) + (x * y) @ k
        w[g, g] = k @ (left * right)
    return w


def correlation_r_jackknife(codes: np.ndarray, labels: np.ndarray, ref: np.ndarray,
                            counts: PairCounts | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """Pearson r of the residue connected correlations of codes ``(n, L)`` (:func:`connected`) with
    ``ref`` ``(P·400,)``, of the set without each group of ``labels`` → ``(G,)``, and without each two
    groups → ``(G, G)`` (the diagonal is meaningless; all NaN when G = 2).

    ``C = J/m − f_i f_j`` (``J`` pair counts, ``m`` sequences, ``f = σ/m`` with site counts ``σ``), so r
    needs only ``Σ C``, ``Σ C²`` and ``Σ C·ref``. Each is a sum over the counts, where leaving groups
    out changes only the cells they touch, plus bilinear forms ``Σ_p σ_iᵀ M_p σ_j`` of the site counts
    (``M`` = ref or ``J``), which expand over the groups' own site counts: nothing of size ``P·400``
    is formed per replicate."""
    counts = counts or PairCounts.of(codes, labels)
    n_pairs, groups, size = counts.n_pairs, counts.groups, ref.size
    i, j = np.triu_indices(codes.shape[1], k=1)
    joint = counts.joint.astype(np.float64)
    sites = _site_counts(codes).astype(np.float64)
    group_sites = np.stack([_site_counts(codes[labels == g]) for g in range(groups)]).astype(np.float64)
    g, c, k = counts.group, counts.cell, counts.count.astype(np.float64)
    k_sum, k_ref, k_joint, k_k = (np.bincount(g, weights=w, minlength=groups)
                                  for w in (k, k * ref[c], k * joint[c], k * k))
    g1, g2, _, k1, k2 = _pairs_within(g, c, counts.count)
    both = np.bincount(g1 * groups + g2, weights=k1 * k2, minlength=groups * groups).reshape(groups, groups)
    w = _own_cells(counts, sites, group_sites, i, j)
    own, dots = (group_sites**2).sum(2), np.einsum("la,gla->gl", sites, group_sites)
    terms = [  # (set, without g, without g and h) of each sum
        (len(codes), *_left_out(len(codes), np.bincount(labels, minlength=groups).astype(np.float64))),
        (joint.sum(), *_left_out(joint.sum(), k_sum)),
        (joint @ ref, *_left_out(joint @ ref, k_ref)),
        (joint @ joint, *_left_out(joint @ joint, 2 * k_joint - k_k, 2 * (both + both.T))),
        _bilinear_left_out(ref.reshape(n_pairs, _K, _K), sites, group_sites, i, j),
        _bilinear_left_out(joint.reshape(n_pairs, _K, _K), sites, group_sites, i, j),
        (0.0, np.diag(w), w + w.T),
        (sites.sum(1), *_left_out(sites.sum(1), group_sites.sum(2))),
        ((sites * sites).sum(1), *_left_out((sites * sites).sum(1), 2 * dots - own,
                                            2 * np.einsum("gla,hla->ghl", group_sites, group_sites)))]
    ref_sum, ref_ss = ref.sum(), ref @ ref

    def r(m, s_j, s_jr, s_jj, bil_ref, bil_joint, w_left, tau, omega):
        s_x = s_j / m - _pair_sums(tau) / m**2
        s_xr = s_jr / m - bil_ref / m**2
        s_xx = s_jj / m**2 - 2 * (bil_joint - w_left) / m**3 + _pair_sums(omega) / m**4
        return (s_xr - s_x * ref_sum / size) / np.sqrt((s_xx - s_x**2 / size) * (ref_ss - ref_sum**2 / size))

    with np.errstate(divide="ignore", invalid="ignore"):  # two groups: nothing is left without both (NaN)
        loo2 = r(*(t[2] for t in terms))
    return float(r(*(t[0] for t in terms))), r(*(t[1] for t in terms)), loo2


def connected(codes: np.ndarray) -> np.ndarray:
    """Residue connected correlations of codes ``(n, L)``, flat ``(P·400,)`` (the values, in the same
    order, of :func:`mdm_mi.protein.family.metrics.residue_correlations`)."""
    return _connected(PairCounts.of(codes, np.zeros(len(codes), dtype=np.int64)).joint, _site_counts(codes), len(codes))
