"""Family-level scores of generated proteins: a profile HMM (pyhmmer) and alignment statistics.

    hmm = build_hmm(train)                                   # train: FamilyRecords of the train split
    threshold = score_threshold(hmm_scores(hmm, [r.sequence for r in val]))
    rate = pass_rate(hmm_scores(hmm, generated), threshold)
    columns = align_columns(hmm, generated)                  # 53 match-column strings each
    r_cij = correlation_r(columns, [r.columns for r in reference])
    r_mi = corrected_mi_r(columns, [r.columns for r in reference], seed=0)

HMMER aligns in unihit *local* mode (``hmmalign`` has no glocal option), so a weakly scoring residue
at either end can be left unaligned (a ``-`` in the first or last match column). Compare statistics of
sets aligned the same way: natural sequences through :func:`align_columns` too, or both from Pfam.

Statistics use the 21-letter column alphabet (20 amino acids + gap), frequencies unweighted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyhmmer
from pyhmmer import easel, plan7

from mdm_mi.mi.fidelity import pearson
from mdm_mi.protein import metrics
from mdm_mi.protein.family.alignment import (FamilyRecord, GAP, GAP_INDEX, N_LETTERS, a2m_row, encode_columns,
                                             identity_blocks, pad_insertions, residue_one_hot)

HMM_SEED = 42  # HMMER's default seed: builder calibration and pipeline are then reproducible
THRESHOLD_PERCENTILE = 1.0  # pass threshold = this percentile of natural validation scores
MI_SHUFFLES = 3  # independent column shuffles averaged for the MI bias
_AMINO = easel.Alphabet.amino()


# --- profile HMM --------------------------------------------------------------------------------------


def build_hmm(train: Sequence[FamilyRecord], name: str = "family") -> plan7.HMM:
    """Profile HMM with exactly one match state per match column of ``train``.

    Built with HMMER's hand architecture from the training records' full A2M rows (insertions
    padded, :func:`pad_insertions`) and a reference line marking the match columns, so insert and
    delete transitions are learnt from the data; HMMER's default position-based weights, entropy
    weighting and Dirichlet priors. Records without a known row contribute their match columns only."""
    rows, reference = pad_insertions([a2m_row(r) for r in train])
    seqs = [easel.TextSequence(name=str(i).encode(), sequence=row) for i, row in enumerate(rows)]
    msa = easel.TextMSA(name=name.encode(), sequences=seqs)
    msa.reference = reference
    builder = plan7.Builder(_AMINO, architecture="hand", seed=HMM_SEED)
    hmm, _, _ = builder.build_msa(msa.digitize(_AMINO), plan7.Background(_AMINO))
    return hmm


def _digital(seqs: Sequence[str]) -> easel.DigitalSequenceBlock:
    """Protein sequences → a digital block whose names are their indices."""
    text = [easel.TextSequence(name=str(i).encode(), sequence=s) for i, s in enumerate(seqs)]
    return easel.TextSequenceBlock(text).digitize(_AMINO)


def hmm_scores(hmm: plan7.HMM, seqs: Sequence[str]) -> np.ndarray:
    """Bit score ``(n,)`` of each protein sequence against ``hmm`` (``hmmsearch --max``: no filters,
    every target reported; the per-sequence score with HMMER's null2 composition correction).
    ``-inf`` where HMMER finds no domain at all."""
    pipeline = plan7.Pipeline(_AMINO, bias_filter=False, F1=1.0, F2=1.0, F3=1.0, T=-np.inf, domT=-np.inf,
                              seed=HMM_SEED)
    scores = np.full(len(seqs), -np.inf)
    for hit in pipeline.search_hmm(hmm, _digital(seqs)):
        name = hit.name.decode() if isinstance(hit.name, bytes) else hit.name
        scores[int(name)] = hit.score
    return scores


def score_threshold(natural_scores: np.ndarray, percentile: float = THRESHOLD_PERCENTILE) -> float:
    """Pass threshold: the ``percentile``-th percentile (linear interpolation) of natural held-out
    (validation) sequences' bit scores, so about 99% of natural family members pass by default."""
    return float(np.percentile(natural_scores, percentile))


def pass_rate(scores: np.ndarray, threshold: float) -> float:
    """Fraction of ``scores`` ``(n,)`` at or above ``threshold``."""
    return float(np.mean(np.asarray(scores) >= threshold))


def align_rows(hmm: plan7.HMM, seqs: Sequence[str]) -> list[str]:
    """``hmmalign`` protein sequences to ``hmm`` → unpadded A2M rows: one upper-case letter or ``-``
    per match state, insertions and unaligned flanks in lower case."""
    msa = pyhmmer.hmmer.hmmalign(hmm, _digital(seqs), trim=False, all_consensus_cols=True, cpus=1)
    is_match = [c == "x" for c in msa.reference]
    rows = []
    for aligned in msa.alignment:
        rows.append("".join((c.upper() if c.isalpha() else GAP) if m else c.lower()
                            for c, m in zip(aligned, is_match) if m or c.isalpha()))
    return rows


def align_columns(hmm: plan7.HMM, seqs: Sequence[str]) -> list[str]:
    """``hmmalign`` protein sequences to ``hmm`` → one match-column string (``hmm.M`` letters of
    :data:`~mdm_mi.protein.family.COLUMN_ALPHABET`) per sequence."""
    return ["".join(c for c in row if not c.islower()) for row in align_rows(hmm, seqs)]


def align_records(hmm: plan7.HMM, names: Sequence[str], seqs: Sequence[str]) -> list[FamilyRecord]:
    """Protein sequences aligned to ``hmm`` as :class:`FamilyRecord` (columns and A2M row)."""
    rows = align_rows(hmm, seqs)
    return [FamilyRecord(n, s, "".join(c for c in row if not c.islower()), row)
            for n, s, row in zip(names, seqs, rows)]


# --- single-site and pair statistics ------------------------------------------------------------------


def _one_hot(codes: np.ndarray) -> np.ndarray:
    """Codes ``(n, L)`` → float64 one-hot ``(n, L*21)``, gap included."""
    out = np.zeros((*codes.shape, N_LETTERS))
    np.put_along_axis(out, codes[..., None], 1.0, axis=2)
    return out.reshape(len(codes), -1)


def one_hot_columns(columns: Sequence[str]) -> np.ndarray:
    """Match-column strings → float64 one-hot ``(n, L*21)`` (gap included), e.g. for k-means."""
    return _one_hot(encode_columns(columns))


def site_frequencies(columns: Sequence[str]) -> np.ndarray:
    """Single-site frequencies ``f_i(a)`` ``(L, 21)`` of match-column strings."""
    x = one_hot_columns(columns)
    return x.mean(0).reshape(-1, N_LETTERS)


def _pair_frequencies(x: np.ndarray) -> np.ndarray:
    """One-hot ``(n, L*21)`` → pair frequencies ``f_ij(a, b)`` ``(L, L, 21, 21)`` (diagonal i = j kept)."""
    length = x.shape[1] // N_LETTERS
    f = (x.T @ x / len(x)).reshape(length, N_LETTERS, length, N_LETTERS)
    return f.transpose(0, 2, 1, 3)


def _pair_blocks(x: np.ndarray, length: int, k: int) -> np.ndarray:
    """One-hot ``(n, L*k)`` → co-occurrence counts of every column pair ``i < j`` (row-major) →
    float64 ``(L(L−1)/2, k, k)``. The product runs in float32, exact for counts below 2^24."""
    assert len(x) < 2**24, "float32 counts are exact only below 2^24 sequences"
    x32 = x.astype(np.float32, copy=False)
    counts = (x32.T @ x32).reshape(length, k, length, k)
    i, j = np.triu_indices(length, k=1)
    return counts[i, :, j, :].astype(np.float64)


def _connected(x: np.ndarray, length: int, k: int) -> np.ndarray:
    """One-hot ``(n, L*k)`` → ``C_ij(a, b) = f_ij(a, b) − f_i(a) f_j(b)`` for ``i < j`` → ``(L(L−1)/2, k, k)``."""
    f_i = x.mean(0, dtype=np.float64).reshape(length, k)
    i, j = np.triu_indices(length, k=1)
    return _pair_blocks(x, length, k) / len(x) - f_i[i][:, :, None] * f_i[j][:, None, :]


def connected_correlations(columns: Sequence[str]) -> np.ndarray:
    """``C_ij(a, b) = f_ij(a, b) − f_i(a) f_j(b)`` for column pairs ``i < j`` (row-major order) →
    ``(L(L−1)/2, 21, 21)``."""
    codes = encode_columns(columns)
    return _connected(_one_hot(codes), codes.shape[1], N_LETTERS)


def frequency_r(columns_a: Sequence[str], columns_b: Sequence[str]) -> float:
    """Pearson r of the single-site frequencies ``f_i(a)`` (all ``L × 21``) of two sets."""
    return pearson(site_frequencies(columns_a), site_frequencies(columns_b))


def residue_correlations(columns: Sequence[str]) -> np.ndarray:
    """:func:`connected_correlations` of the 20 × 20 residue pairs only → ``(L(L−1)/2, 20, 20)``,
    computed on those pairs alone."""
    codes = encode_columns(columns)
    return _connected(residue_one_hot(codes), codes.shape[1], GAP_INDEX)


def correlation_r(columns_a: Sequence[str], columns_b: Sequence[str], residues_only: bool = False) -> float:
    """Pearson r of the connected correlations ``C_ij(a, b)`` (all ``i < j``, all letter pairs, or the
    20 × 20 residue pairs only with ``residues_only``). Sets realigned by :func:`align_columns` share
    gap-placement correlations even when their residues are independent (profile draws realigned
    give r ≈ 0.15 with all letters, ≈ 0.01 with ``residues_only``)."""
    stats = residue_correlations if residues_only else connected_correlations
    return pearson(stats(columns_a), stats(columns_b))


# --- column-pair mutual information -------------------------------------------------------------------


def plugin_mi(codes: np.ndarray) -> np.ndarray:
    """Plug-in mutual information (nats) of every column pair of codes ``(n, L)`` → ``(L, L)``,
    ``Σ_ab f_ij(a,b) ln(f_ij(a,b) / (f_i(a) f_j(b)))`` over the 21 letters; the diagonal is the column
    entropy."""
    x = _one_hot(codes)
    f_ij = _pair_frequencies(x)
    f_i = x.mean(0).reshape(-1, N_LETTERS)
    indep = f_i[:, None, :, None] * f_i[None, :, None, :]
    ratio = np.divide(f_ij, indep, out=np.ones_like(f_ij), where=f_ij > 0)  # f_ij > 0 implies indep > 0
    return (f_ij * np.log(ratio)).sum((2, 3))


def _sum_xlogx(a: np.ndarray, axis) -> np.ndarray:
    """``Σ a ln a`` over ``axis`` with ``0 ln 0 = 0``."""
    return np.sum(a * np.log(np.where(a > 0, a, 1.0)), axis=axis)


def residue_mi(codes: np.ndarray) -> np.ndarray:
    """Plug-in MI (nats) of every column pair ``i < j`` (row-major) over the 20 residues only, on the
    sequences where both columns hold a residue (pair-specific frequencies) → ``(L(L−1)/2,)``, as
    ``H(f_i) + H(f_j) − H(f_ij)`` of those frequencies. Gaps are left out: realigning generated
    sequences places gaps whose co-occurrence is alignment structure, not residue coupling."""
    length = codes.shape[1]
    counts = _pair_blocks(residue_one_hot(codes), length, GAP_INDEX)  # (P, 20, 20)
    f = counts / np.maximum(counts.sum((1, 2)), 1)[:, None, None]
    return _sum_xlogx(f, (1, 2)) - _sum_xlogx(f.sum(2), 1) - _sum_xlogx(f.sum(1), 1)


def corrected_mi(columns: Sequence[str], seed: int, n_shuffles: int = MI_SHUFFLES,
                 residues_only: bool = False) -> np.ndarray:
    """Bias-corrected column-pair dependence ``(L(L−1)/2,)`` for ``i < j``: plug-in MI minus the mean
    plug-in MI after shuffling every column independently across sequences (``n_shuffles`` seeded
    shuffles). Shuffling keeps each column's letters and removes all dependence, so what remains is
    the finite-sample bias (about ``(k_i − 1)(k_j − 1) / 2n``); independent columns give ≈ 0. With
    ``residues_only`` the MI is :func:`residue_mi` (gaps left out), as it must be for realigned sets."""
    codes = encode_columns(columns)
    i, j = np.triu_indices(codes.shape[1], k=1)
    mi = residue_mi if residues_only else (lambda c: plugin_mi(c)[i, j])
    rng = np.random.default_rng(seed)
    null = np.mean([mi(rng.permuted(codes, axis=0)) for _ in range(n_shuffles)], axis=0)
    return mi(codes) - null


def corrected_mi_r(columns_a: Sequence[str], columns_b: Sequence[str], seed: int,
                   n_shuffles: int = MI_SHUFFLES, residues_only: bool = False) -> float:
    """Pearson r of :func:`corrected_mi` between two sets (same shuffling seed for both)."""
    return pearson(corrected_mi(columns_a, seed, n_shuffles, residues_only),
                   corrected_mi(columns_b, seed, n_shuffles, residues_only))


# --- diversity, memorisation, clusters ----------------------------------------------------------------


def mean_pairwise_identity(columns: Sequence[str]) -> float:
    """Mean :func:`~mdm_mi.protein.family.pairwise_identity` over all pairs of distinct members."""
    codes = encode_columns(columns)
    n = len(codes)
    assert n >= 2, "need at least two sequences"
    total = sum(block.sum() - np.trace(block[:, start:]) for start, block in identity_blocks(codes, codes))
    return float(total / (n * (n - 1)))


def max_identity_to(columns: Sequence[str], train_columns: Sequence[str]) -> np.ndarray:
    """Memorisation: each sequence's highest identity to any training sequence ``(n,)``."""
    codes, train = encode_columns(columns), encode_columns(train_columns)
    out = np.empty(len(codes))
    for start, block in identity_blocks(codes, train):
        out[start : start + len(block)] = block.max(1)
    return out


def cluster_jsd_columns(reference_columns: Sequence[str], other_columns: Sequence[str], k: int,
                        seed: int) -> dict:
    """The paper's cluster JSD (bits) on one-hot match columns instead of ESM embeddings: k-means on
    the reference (:func:`mdm_mi.protein.metrics.fit_clusters`), histograms compared with a bootstrap
    interval (:func:`mdm_mi.protein.metrics.jsd_with_interval`) → ``cluster_jsd`` (plug-in),
    ``cluster_jsd_bc`` (bias-corrected), ``cluster_jsd_lo`` / ``cluster_jsd_hi`` (basic 95%)."""
    ref = one_hot_columns(reference_columns)
    km = metrics.fit_clusters(ref, k, seed)
    out = metrics.jsd_with_interval(metrics.cluster_histogram(km, ref),
                                    metrics.cluster_histogram(km, one_hot_columns(other_columns)), seed)
    return {f"cluster_{key}": out[key] for key in ("jsd", "jsd_bc", "jsd_lo", "jsd_hi")}
