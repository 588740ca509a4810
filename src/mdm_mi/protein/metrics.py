"""The paper's protein metric and companions: cluster-histogram JSD, composition, diversity.

    emb_ref = embed(embedder, reference)                  # (R, D) mean-pooled hidden states
    km = fit_clusters(emb_ref, k=15, seed=0)              # k-means on the reference only
    jsd = cluster_jsd(km, emb_ref, embed(embedder, generated))

JSDs are in bits (log base 2), so they lie in [0, 1]; the paper does not state its base.

The plug-in JSD of finite samples is biased upwards (two samples of one distribution give about
``(k − 1)(1/n1 + 1/n2) / (8 ln 2)`` bits), so :func:`jsd_with_interval` reports a bias-corrected value
and a basic bootstrap interval, :func:`jsd_noise_floor` the JSD a perfect generator would get at the
sizes compared, and :func:`bootstrap_jsd_differences` compares samplers with k-means refit in every
bootstrap replicate. The interval and floor work on cluster histograms (``label_histogram`` of labels).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Sequence

import numpy as np
import torch

from mdm_mi.evaluation.stats import (CI_LEVEL, basic_bootstrap_interval, bootstrap_bias_corrected, bootstrap_p_value,
                                    jsd_bits)
from mdm_mi.infra.fasta import AMINO_ACIDS

EMBED_BATCH = 64
MAX_DIVERSITY_PAIRS = 20000
JSD_BOOTSTRAP_REPLICATES = 1000  # label redraws for the JSD interval (clusters fixed)
FLOOR_DRAWS = 2000  # parametric draws for the noise floor; Monte-Carlo error about 1% of the floor
DIFF_BOOTSTRAP_REPLICATES = 200  # full-metric replicates (k-means refit each) for sampler differences
KMEANS_RESTARTS = 10  # k-means restarts of every fit: the table's, the contrast's and each bootstrap replicate's
JSD_INTERVAL_KIND = "basic bootstrap {level:.0%}, clipped at 0 (labels redrawn, clusters fixed)"
JSD_FLOOR_KIND = "parametric: n_gen and n_ref labels drawn from the reference histogram"


@torch.inference_mode()
def embed(embedder, seqs: Sequence[str], batch_size: int = EMBED_BATCH) -> np.ndarray:
    """Mean-pooled hidden states over residues (BOS/EOS/pads excluded) → ``(S, D)`` float64.

    ``embedder`` is a :class:`~mdm_mi.core.backbone.SequenceBackbone` (an ESM-C or a Hugging Face model
    read at its embedding layer); sequences are batched by length.
    """
    order = np.argsort([len(s) for s in seqs], kind="stable")
    out = np.zeros((len(seqs), embedder.hidden_dim))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        tokens = embedder.encode([seqs[i] for i in idx])
        hidden = embedder(tokens).hidden.double()  # (B, N, D)
        keep = embedder.residues(tokens).double()
        pooled = (hidden * keep[..., None]).sum(1) / keep.sum(1, keepdim=True).clamp(min=1)
        out[idx] = pooled.cpu().numpy()
    return out


def fit_clusters(reference_emb: np.ndarray, k: int, seed: int):
    """scikit-learn k-means with ``k`` clusters on the reference embeddings (:data:`KMEANS_RESTARTS`
    restarts, seeded): the one estimator of the tables and of the contrasts between them."""
    from sklearn.cluster import KMeans  # lazy: scikit-learn adds ~1 s to every CLI start

    return KMeans(n_clusters=k, n_init=KMEANS_RESTARTS, random_state=seed).fit(reference_emb)


def cluster_histogram(km, emb: np.ndarray) -> np.ndarray:
    """Counts of ``emb`` rows per k-means cluster → ``(k,)``."""
    return np.bincount(km.predict(emb), minlength=km.n_clusters)


def cluster_jsd(km, reference_emb: np.ndarray, other_emb: np.ndarray) -> float:
    """JSD (bits) between the reference's and ``other``'s cluster histograms (the paper's metric)."""
    return jsd_bits(cluster_histogram(km, reference_emb), cluster_histogram(km, other_emb))


def jsd_bits_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise :func:`jsd_bits`: histograms ``(..., k)`` (normalised here, broadcast) → JSDs ``(...)``
    in bits."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p, q = np.broadcast_arrays(p / p.sum(-1, keepdims=True), q / q.sum(-1, keepdims=True))
    m = (p + q) / 2

    def kl(a):
        ratio = np.divide(a, m, out=np.ones_like(m), where=a > 0)
        return np.sum(a * np.log2(ratio), axis=-1)

    return np.maximum(0.0, (kl(p) + kl(q)) / 2)


def label_histogram(labels: np.ndarray, k: int) -> np.ndarray:
    """Cluster labels ``(n,)`` in ``0..k-1`` → counts ``(k,)``."""
    return np.bincount(np.asarray(labels), minlength=k)


def jsd_replicates(ref_hist: np.ndarray, other_hist: np.ndarray, seed: int,
                   n_boot: int = JSD_BOOTSTRAP_REPLICATES) -> np.ndarray:
    """Bootstrap replicates ``(n_boot,)`` of the JSD: both histograms ``(k,)`` redrawn multinomially
    from their own frequencies at their own sizes (resampling labels; the clusters stay fixed)."""
    rng = np.random.default_rng(seed)
    ref_hist, other_hist = np.asarray(ref_hist, dtype=np.float64), np.asarray(other_hist, dtype=np.float64)
    ref = rng.multinomial(int(ref_hist.sum()), ref_hist / ref_hist.sum(), size=n_boot)
    other = rng.multinomial(int(other_hist.sum()), other_hist / other_hist.sum(), size=n_boot)
    return jsd_bits_rows(ref, other)


def jsd_with_interval(ref_hist: np.ndarray, other_hist: np.ndarray, seed: int,
                      n_boot: int = JSD_BOOTSTRAP_REPLICATES, level: float = CI_LEVEL) -> dict:
    """Plug-in JSD of two histograms ``(k,)`` with a bias-aware bootstrap interval.

    The plug-in JSD is biased upwards (by about :func:`jsd_floor_analytic`), so a percentile interval
    of its replicates sits above the truth and never covers a JSD of 0. Here ``jsd_lo, jsd_hi`` is the
    *basic* bootstrap interval ``(2·J − q_hi, 2·J − q_lo)`` and ``jsd_bc = 2·J − mean(J*)`` the
    bias-corrected point, all clipped at 0. The plug-in ``jsd`` (the paper's number) may lie above
    the interval when the bias exceeds the sampling noise. Returns ``jsd, jsd_bc, jsd_lo, jsd_hi,
    jsd_interval`` (a description of the interval)."""
    estimate = float(jsd_bits(ref_hist, other_hist))
    reps = jsd_replicates(np.asarray(ref_hist), np.asarray(other_hist), seed, n_boot)
    lo, hi = basic_bootstrap_interval(estimate, reps, level, lower_bound=0.0)
    return {"jsd": estimate, "jsd_bc": bootstrap_bias_corrected(estimate, reps, lower_bound=0.0),
            "jsd_lo": lo, "jsd_hi": hi, "jsd_interval": JSD_INTERVAL_KIND.format(level=level)}


def bootstrap_jsd_ci(ref_hist: np.ndarray, other_hist: np.ndarray, seed: int,
                     n_boot: int = JSD_BOOTSTRAP_REPLICATES) -> tuple[float, float]:
    """The basic bootstrap 95% interval ``(lo, hi)`` of :func:`jsd_with_interval` (histograms ``(k,)``)."""
    out = jsd_with_interval(ref_hist, other_hist, seed, n_boot)
    return out["jsd_lo"], out["jsd_hi"]


def jsd_floor_analytic(k: int, n1: int, n2: int) -> float:
    """Leading-order expected plug-in JSD (bits) of two samples of sizes ``n1, n2`` from one
    distribution over ``k`` occupied bins: ``(k − 1)(1/n1 + 1/n2) / (8 ln 2)``."""
    return (k - 1) * (1 / n1 + 1 / n2) / (8 * np.log(2))


def jsd_noise_floor(ref_hist: np.ndarray, n_gen: int, seed: int, n_draws: int = FLOOR_DRAWS) -> float:
    """Expected plug-in JSD (bits) of a perfect generator at the sizes actually compared.

    Parametric bootstrap: ``n_gen`` and ``n_ref = ref_hist.sum()`` labels are drawn independently from
    the reference's cluster frequencies ``ref_hist`` ``(k,)`` and their JSD averaged over ``n_draws``.
    Both sides are redrawn because the reference is itself a finite sample of the true distribution.
    A permutation split of real sequences at these sizes is not possible with our data (reference
    500 + second draw 85 < 500 + 500), and a floor from smaller groups overstates it (it scales with
    ``1/n1 + 1/n2``). The clusters are held fixed, so k-means fitting to the reference itself is
    not included; the second-draw JSD (``jsd_reference2`` in :func:`score_sample`) checks that."""
    rng = np.random.default_rng(seed)
    freq = np.asarray(ref_hist, dtype=np.float64) / np.sum(ref_hist)
    ref = rng.multinomial(int(np.sum(ref_hist)), freq, size=n_draws)
    gen = rng.multinomial(int(n_gen), freq, size=n_draws)
    return float(np.mean(jsd_bits_rows(ref, gen)))


def _score(km, ref_emb: np.ndarray, gen_embs: Sequence[np.ndarray]) -> np.ndarray:
    """The JSD of each generated set ``(G_s, D)`` against the reference ``(R, D)`` in the clusters ``km``
    → ``(S,)``, exactly as :func:`cluster_jsd` (the tables' value)."""
    return np.array([cluster_jsd(km, ref_emb, g) for g in gen_embs])


def p_resolution(n_boot: int) -> float:
    """The smallest p ``n_boot`` bootstrap replicates resolve: ``1 / n_boot`` (a p below it, 0 included,
    is reported as ``p < 1/n_boot``, never as ``p = 0``)."""
    return 1.0 / n_boot


def p_text(p: float, n_boot: int | None) -> str:
    """A bootstrap p as printed: ``p=0.034``, or ``p<1/50`` below :func:`p_resolution` (``n_boot`` None:
    a row from before the resolution was recorded, printed as it was)."""
    return f"p<1/{int(n_boot)}" if n_boot and p < p_resolution(int(n_boot)) else f"p={p:.2g}"


def bootstrap_jsd_differences(ref_emb: np.ndarray, gen_embs: dict[str, np.ndarray], k: int, seed: int,
                              n_boot: int = DIFF_BOOTSTRAP_REPLICATES, level: float = CI_LEVEL, km=None) -> dict:
    """Differences of cluster JSD between samplers, with the whole metric bootstrapped.

    ``ref_emb`` ``(R, D)``; ``gen_embs`` maps sampler name → embeddings ``(G_s, D)``. In each of
    ``n_boot`` replicates the reference rows and each generated set's rows are resampled with
    replacement, k-means is refit on the resampled reference and every set's JSD recomputed, so the
    interval includes clustering and reference noise. The reference (and its k-means) is shared by all
    sets within a replicate, which pairs the comparison. Every fit is :func:`fit_clusters` (the tables'
    estimator, :data:`KMEANS_RESTARTS` restarts), and the point estimates are the tables' JSDs: those of
    the fitted clusters ``km`` when given (the table's own), else of ``fit_clusters(ref_emb, k, seed)``,
    so a contrast never disagrees with the table it contrasts. ``p_resolution`` (``1 / n_boot``) is the
    smallest p the replicates resolve.

    Returns ``{"jsd": {name: estimate}, "n_boot": B, "pairs": [...]}``, one pair per ``a`` before ``b``
    in ``gen_embs`` order with ``diff = JSD_a − JSD_b``, its basic bootstrap interval ``lo, hi`` and a
    two-sided bootstrap ``p_value`` (:func:`mdm_mi.evaluation.stats.bootstrap_p_value`)."""
    names = list(gen_embs)
    sets = [np.asarray(gen_embs[n]) for n in names]
    estimate = _score(fit_clusters(ref_emb, k, seed) if km is None else km, ref_emb, sets)
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(sets)))
    for b in range(n_boot):
        ref_b = ref_emb[rng.integers(0, len(ref_emb), len(ref_emb))]
        sets_b = [g[rng.integers(0, len(g), len(g))] for g in sets]
        reps[b] = _score(fit_clusters(ref_b, k, seed + 1 + b), ref_b, sets_b)
    pairs = []
    for i, j in combinations(range(len(names)), 2):
        diff, diff_reps = float(estimate[i] - estimate[j]), reps[:, i] - reps[:, j]
        lo, hi = basic_bootstrap_interval(diff, diff_reps, level)
        pairs.append({"a": names[i], "b": names[j], "diff": diff, "lo": lo, "hi": hi,
                      "p_value": bootstrap_p_value(diff, diff_reps)})
    return {"jsd": dict(zip(names, estimate.tolist())), "n_boot": n_boot, "p_resolution": p_resolution(n_boot),
            "pairs": pairs}


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
    """All protein metrics of ``generated`` against ``reference``.

    * ``jsd`` — cluster JSD (the paper's plug-in metric); ``jsd_bc``, ``jsd_lo``, ``jsd_hi`` — its
      bias-corrected value and basic bootstrap 95% interval (:func:`jsd_with_interval`); ``jsd_interval``
      says so.
    * ``jsd_noise_floor`` — expected JSD of a perfect generator at ``len(generated)`` vs
      ``len(reference)`` (:func:`jsd_noise_floor`, kind in ``jsd_floor_kind``); ``jsd_floor_analytic``
      — its leading-order value (:func:`jsd_floor_analytic`) as a check.
    * ``jsd_reference2`` — JSD of the second reference draw against the reference (sizes
      ``len(reference)`` vs ``n_reference2``, so not comparable to ``jsd`` when those differ);
      ``jsd_reference2_analytic`` — its expected value without k-means overfit.
    * the histograms, amino-acid composition JSD (and its second-draw floor), diversity, mean length."""
    ref_emb = embed(embedder, reference)
    km = fit_clusters(ref_emb, k, seed)
    ref_hist = cluster_histogram(km, ref_emb)
    gen_hist = cluster_histogram(km, embed(embedder, generated))
    ref2_hist = cluster_histogram(km, embed(embedder, reference2))
    occupied = int(np.count_nonzero(ref_hist))
    return {**jsd_with_interval(ref_hist, gen_hist, seed),
            "jsd_noise_floor": jsd_noise_floor(ref_hist, len(generated), seed), "jsd_floor_kind": JSD_FLOOR_KIND,
            "jsd_floor_analytic": jsd_floor_analytic(occupied, len(reference), len(generated)),
            "jsd_reference2": jsd_bits(ref_hist, ref2_hist), "n_reference2": len(reference2),
            "jsd_reference2_analytic": jsd_floor_analytic(occupied, len(reference), len(reference2)),
            "cluster_hist_reference": ref_hist.tolist(), "cluster_hist_generated": gen_hist.tolist(),
            "composition_jsd": jsd_bits(composition(reference), composition(generated)),
            "composition_jsd_floor": jsd_bits(composition(reference), composition(reference2)),
            "mean_length": float(np.mean([len(s) for s in generated])), **diversity(generated, seed)}
