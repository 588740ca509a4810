"""The paper's protein metric and companions: cluster-histogram JSD, composition, diversity.

    emb_ref = embed(embedder, reference)                  # (R, D) mean-pooled hidden states
    km = fit_clusters(emb_ref, k=15, seed=0)              # k-means on the reference only
    jsd = cluster_jsd(km, emb_ref, embed(embedder, generated))

JSDs are in bits (log base 2), so they lie in [0, 1]; the paper does not state its base.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Sequence

import numpy as np
import torch

from mdm_mi.protein.fasta import AMINO_ACIDS
from mdm_mi.protein.tokens import protein_tokens

EMBED_BATCH = 64
MAX_DIVERSITY_PAIRS = 20000


def jsd_bits(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon divergence of two histograms (normalised here), in bits, in [0, 1]."""
    p = np.asarray(p, dtype=np.float64) / np.sum(p)
    q = np.asarray(q, dtype=np.float64) / np.sum(q)
    m = (p + q) / 2

    def kl(a):
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return max(0.0, (kl(p) + kl(q)) / 2)


@torch.inference_mode()
def embed(embedder, seqs: Sequence[str], batch_size: int = EMBED_BATCH) -> np.ndarray:
    """Mean-pooled hidden states over residues (BOS/EOS/pads excluded) → ``(S, D)`` float64.

    ``embedder`` is an :class:`~mdm_mi.protein.esmc.ESMCBackbone`; sequences are batched by length.
    """
    order = np.argsort([len(s) for s in seqs], kind="stable")
    out = np.zeros((len(seqs), embedder.hidden_dim))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        tokens = embedder.encode([seqs[i] for i in idx])
        hidden = embedder(tokens).hidden.double()  # (B, N, D)
        keep = protein_tokens().residues(tokens).double()
        pooled = (hidden * keep[..., None]).sum(1) / keep.sum(1, keepdim=True).clamp(min=1)
        out[idx] = pooled.cpu().numpy()
    return out


def fit_clusters(reference_emb: np.ndarray, k: int, seed: int):
    """scikit-learn k-means with ``k`` clusters on the reference embeddings (10 restarts)."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, n_init=10, random_state=seed).fit(reference_emb)


def cluster_histogram(km, emb: np.ndarray) -> np.ndarray:
    """Counts of ``emb`` rows per k-means cluster → ``(k,)``."""
    return np.bincount(km.predict(emb), minlength=km.n_clusters)


def cluster_jsd(km, reference_emb: np.ndarray, other_emb: np.ndarray) -> float:
    """JSD (bits) between the reference's and ``other``'s cluster histograms (the paper's metric)."""
    return jsd_bits(cluster_histogram(km, reference_emb), cluster_histogram(km, other_emb))


def bootstrap_jsd_ci(ref_hist: np.ndarray, other_hist: np.ndarray, seed: int, n_boot: int = 1000):
    """95% percentile interval of the JSD when both samples are redrawn (multinomially from their own
    histograms, same sizes) — the metric's sampling uncertainty at these sample sizes."""
    rng = np.random.default_rng(seed)
    p, q = ref_hist / ref_hist.sum(), other_hist / other_hist.sum()
    draws = [jsd_bits(rng.multinomial(int(ref_hist.sum()), p) + 0.0, rng.multinomial(int(other_hist.sum()), q) + 0.0)
             for _ in range(n_boot)]
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def composition(seqs: Sequence[str]) -> np.ndarray:
    """Amino-acid frequencies over all residues → ``(20,)`` in :data:`AMINO_ACIDS` order."""
    counts = Counter("".join(seqs))
    total = sum(counts[a] for a in AMINO_ACIDS)
    return np.array([counts[a] / max(1, total) for a in AMINO_ACIDS])


def kmer_set(seq: str, k: int = 3) -> frozenset:
    return frozenset(seq[i : i + k] for i in range(len(seq) - k + 1))


def diversity(seqs: Sequence[str], seed: int = 0, k: int = 3) -> dict:
    """Diversity of a sample: unique fraction, mean pairwise k-mer Jaccard distance (up to
    :data:`MAX_DIVERSITY_PAIRS` seeded pairs), distinct-k-mer ratio and the mean longest run of one
    residue (degenerate repeats show up here)."""
    sets = [kmer_set(s, k) for s in seqs]
    pairs = list(combinations(range(len(seqs)), 2))
    if len(pairs) > MAX_DIVERSITY_PAIRS:
        pick = np.random.default_rng(seed).choice(len(pairs), MAX_DIVERSITY_PAIRS, replace=False)
        pairs = [pairs[i] for i in pick]
    dist = [1 - len(sets[a] & sets[b]) / max(1, len(sets[a] | sets[b])) for a, b in pairs]
    total_kmers = sum(max(0, len(s) - k + 1) for s in seqs)
    runs = [max((len(r) for r in _runs(s)), default=0) for s in seqs]
    return {"unique_fraction": len(set(seqs)) / max(1, len(seqs)),
            "kmer_distance": float(np.mean(dist)) if dist else 0.0,
            "distinct_kmers": len(set().union(*sets)) / max(1, total_kmers) if sets else 0.0,
            "mean_longest_run": float(np.mean(runs)) if runs else 0.0}


def _runs(seq: str):
    start = 0
    for i in range(1, len(seq) + 1):
        if i == len(seq) or seq[i] != seq[start]:
            yield seq[start:i]
            start = i


def score_sample(generated: Sequence[str], reference: Sequence[str], reference2: Sequence[str],
                 embedder, k: int, seed: int) -> dict:
    """All protein metrics of ``generated`` against ``reference``: cluster JSD (paper) with a bootstrap
    95% interval and the histograms, its noise floor (``reference2`` vs ``reference``), amino-acid
    composition JSD, diversity and mean length."""
    ref_emb = embed(embedder, reference)
    km = fit_clusters(ref_emb, k, seed)
    ref_hist = cluster_histogram(km, ref_emb)
    gen_hist = cluster_histogram(km, embed(embedder, generated))
    ref2_hist = cluster_histogram(km, embed(embedder, reference2))
    lo, hi = bootstrap_jsd_ci(ref_hist, gen_hist, seed)
    return {"jsd": jsd_bits(ref_hist, gen_hist), "jsd_lo": lo, "jsd_hi": hi,
            "jsd_noise_floor": jsd_bits(ref_hist, ref2_hist), "n_reference2": len(reference2),
            "cluster_hist_reference": ref_hist.tolist(), "cluster_hist_generated": gen_hist.tolist(),
            "composition_jsd": jsd_bits(composition(reference), composition(generated)),
            "composition_jsd_floor": jsd_bits(composition(reference), composition(reference2)),
            "mean_length": float(np.mean([len(s) for s in generated])), **diversity(generated, seed)}
