"""The family co-variation metrics (`family-compare`'s inner loop) against the full-matrix form they
replaced, measured in one run: seconds per call of the residue corrected MI plus the residue C_ij on
a set of the given sizes, the speed-up, and the largest difference (0 = bitwise equal).

The full-matrix form (kept below as the reference) builds every ``(L, L, 20, 20)`` block, the
diagonal and both triangles, and takes ``Σ f ln(f / f_i f_j)`` with masked divisions; the library
counts only the ``i < j`` pairs (float32 products, exact below 2^24 sequences) and takes
``H_i + H_j − H_ij``.

    python benchmarks/bench_family_metrics.py --sizes 105 250 500
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family import metrics as fm

A2M = "resources/data/protein/pf00014_kunitz_pfam_full.a2m"


def full_residue_mi(codes: np.ndarray) -> np.ndarray:
    """The replaced form: plug-in residue MI of every column pair as an ``(L, L)`` matrix."""
    n, length = codes.shape
    x = fm._one_hot(codes).reshape(n, length, fam.N_LETTERS)[:, :, : fm.GAP_INDEX].reshape(n, -1)
    counts = (x.T @ x).reshape(length, fm.GAP_INDEX, length, fm.GAP_INDEX).transpose(0, 2, 1, 3)
    n_ij = counts.sum((2, 3), keepdims=True)
    f = np.divide(counts, n_ij, out=np.zeros_like(counts), where=n_ij > 0)
    indep = f.sum(3, keepdims=True) * f.sum(2, keepdims=True)
    ratio = np.divide(f, indep, out=np.ones_like(f), where=f > 0)
    return (f * np.log(ratio)).sum((2, 3))


def full_correlations(codes: np.ndarray) -> np.ndarray:
    """The replaced form: C_ij over all 21 letters as ``(L, L, 21, 21)``, then the pairs ``i < j`` and
    the 20 × 20 residue block."""
    x = fm._one_hot(codes)
    f_i = x.mean(0).reshape(-1, fam.N_LETTERS)
    c = fm._pair_frequencies(x) - f_i[:, None, :, None] * f_i[None, :, None, :]
    i, j = np.triu_indices(len(f_i), k=1)
    return c[i, j][:, : fm.GAP_INDEX, : fm.GAP_INDEX]


def full_metrics(columns: list[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The replaced corrected MI (one shuffle) and residue C_ij, pairs ``i < j``."""
    codes = fam.encode_columns(columns)
    i, j = np.triu_indices(codes.shape[1], k=1)
    null = full_residue_mi(np.random.default_rng(seed).permuted(codes, axis=0))
    return (full_residue_mi(codes) - null)[i, j], full_correlations(codes)


def library_metrics(columns: list[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    return fm.corrected_mi(columns, seed, 1, residues_only=True), fm.residue_correlations(columns)


def median_seconds(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[105, 250, 500])
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    records, _ = fam.drop_nonstandard(fam.parse_a2m(A2M))
    columns = [r.columns for r in records]
    print("| sequences | full-matrix s/call | library s/call | speed-up | max |Δ corrected MI| | max |Δ C_ij| |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        cols = columns[:n]
        (mi_a, c_a), (mi_b, c_b) = full_metrics(cols, 0), library_metrics(cols, 0)
        t_full = median_seconds(lambda: full_metrics(cols, 0), args.reps)
        t_lib = median_seconds(lambda: library_metrics(cols, 0), args.reps)
        print(f"| {n} | {t_full:.4f} | {t_lib:.4f} | ×{t_full / t_lib:.2f} | {np.abs(mi_a - mi_b).max():.1e} | "
              f"{np.abs(c_a - c_b).max():.1e} |")


if __name__ == "__main__":
    main()
