"""Co-variation at calibrated budgets: the runs of ``protein-compare`` (one FASTA per calibrated
setting) scored against a protein family, with bootstrap intervals of the differences.

Every run is realigned to the training split's profile HMM (as the reference is) and scored on its
first ``n`` sequences: the Pearson r with the reference of the bias-corrected column-pair MI (the
metric that decoding dependent positions together should break), of the connected correlations
C_ij (20×20 residue pairs) and of the site frequencies f_i, and the HMM pass rate. At each budget,
``mi*`` (the MI-guided λ chosen on calibration JSD by ``protein-compare``) minus each baseline gets a
95% interval and a two-sided p from paired half-samples: every generated set is halved at the same
test lengths (every sampler generated sequence ``i`` at the ``i``-th length); the reference is held
fixed (see :func:`half_sample_metrics`, :func:`paired_difference`).

    rows = covariation_budgets(runs, columns, Reference.of(reference_columns, seed=0), n_boot=100, seed=0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdm_mi.budgets import BEST_MI, SEQUENTIAL, by_budget, is_contender
from mdm_mi.errors import InputError
from mdm_mi.paired import ALPHA

METRICS = ("corrected_mi_r", "c_ij_r")  # bootstrapped; higher is better
BOOT_SHUFFLES = 1  # shuffles per bootstrap replicate for the MI bias correction (3 for point estimates)
FIELDS = ["set", "divisor", "metric", "first", "second", "n", "passes_first", "passes_second", "value_first",
          "value_second", "diff", "lo", "hi", "p_value", "verdict"]


@dataclass(frozen=True)
class Reference:
    """The reference's side of every comparison, computed once: its realigned match columns, its
    residue corrected MI at the bootstrap's and at the point estimates' shuffle counts, and its
    residue connected correlations."""

    columns: list[str]
    mi_boot: np.ndarray
    mi_point: np.ndarray
    cij: np.ndarray

    @classmethod
    def of(cls, columns: list[str], seed: int) -> "Reference":
        from mdm_mi.protein.family import metrics as fm

        return cls(columns, fm.corrected_mi(columns, seed, BOOT_SHUFFLES, residues_only=True),
                   fm.corrected_mi(columns, seed, fm.MI_SHUFFLES, residues_only=True),
                   fm.residue_correlations(columns))


def metric_values(cols: list[str], ref: Reference, seed: int) -> dict[str, float]:
    """The bootstrapped metrics of one set of match-column strings against the reference."""
    from mdm_mi.protein.family import metrics as fm

    return {"corrected_mi_r": fm.pearson(fm.corrected_mi(cols, seed, BOOT_SHUFFLES, residues_only=True), ref.mi_boot),
            "c_ij_r": fm.pearson(fm.residue_correlations(cols), ref.cij)}


def run_id(run: dict) -> str:
    """protein-compare's id of a calibrated run (``mi*`` is the run of the λ it chose)."""
    return f"{run['family']}@1/{run['divisor']}"


def half_samples(n: int, n_boot: int, seed: int) -> list[np.ndarray]:
    """``n_boot`` seeded halves (``n // 2`` indices without replacement) of ``range(n)``, shared by
    every set of a comparison."""
    rng = np.random.default_rng([seed, 11])
    return [rng.choice(n, size=n // 2, replace=False) for _ in range(n_boot)]


def _replicates(task: tuple) -> list[dict]:
    """One set's :func:`metric_values` on each half (a worker's task: columns, reference, halves, seed)."""
    cols, ref, halves, seed = task
    return [metric_values([cols[i] for i in idx], ref, seed) for idx in halves]


BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _map(fn, tasks: list, workers: int) -> list:
    """``[fn(t) for t in tasks]``, in ``workers`` spawned processes (BLAS one thread each) when > 1."""
    if workers <= 1 or len(tasks) <= 1:
        return [fn(t) for t in tasks]
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    saved = {k: os.environ.get(k) for k in BLAS_THREAD_VARS}
    os.environ.update({k: "1" for k in BLAS_THREAD_VARS})  # inherited by the spawned workers
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(fn, tasks))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def half_sample_metrics(sets: dict[str, list[str]], ref: Reference, n_boot: int,
                        seed: int, workers: int = 1) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """Set name → its :func:`metric_values`, and → the same on each of :func:`half_samples`'s halves.

    Every set is halved at the **same** indices: sequence ``i`` of every generated set was drawn at
    the ``i``-th test length, so a half of the lengths is the resampling unit and the differences are
    paired. Each set's replicates are computed once, however many comparisons use it, in ``workers``
    processes (the same numbers as one). :class:`InputError` when the sets differ in size."""
    sizes = {len(v) for v in sets.values()}
    if len(sizes) != 1:
        raise InputError(f"paired half-samples need sets of one size, got sizes {sorted(sizes)}")
    halves = half_samples(sizes.pop(), n_boot, seed)
    point = {k: metric_values(v, ref, seed) for k, v in sets.items()}
    reps = dict(zip(sets, _map(_replicates, [(v, ref, halves, seed) for v in sets.values()], workers)))
    return point, reps


def paired_difference(point: dict[str, dict], reps: dict[str, list[dict]], a: str, b: str) -> dict[str, dict]:
    """metric → {value_first, value_second, diff, lo, hi, p_value} of set ``a`` minus set ``b``.

    A with-replacement bootstrap is wrong here: duplicated sequences are a dependence that the
    shuffle correction removes from the null but not from the data, so every resampled set looks
    coupled (site-independent draws reach r ≈ 0.8). Half-samples without replacement have no
    duplicates, and for a smooth statistic their variance, (1/m − 1/n)σ² with m = n/2, equals the
    full set's σ²/n. The replicate differences are centred on their mean (half-samples are noisier,
    which shifts r), the interval is ``diff − quantiles(centred)`` and p is the share of centred
    replicates at least as far from 0 as ``diff``."""
    out = {}
    for m in METRICS:
        diff = point[a][m] - point[b][m]
        boot = np.array([ra[m] - rb[m] for ra, rb in zip(reps[a], reps[b])])
        centred = boot - boot.mean()
        q_lo, q_hi = np.quantile(centred, [ALPHA / 2, 1 - ALPHA / 2])
        p = float(np.mean(np.abs(centred) >= abs(diff))) if diff != 0 else 1.0
        out[m] = {"value_first": point[a][m], "value_second": point[b][m], "diff": diff,
                  "lo": diff - q_hi, "hi": diff - q_lo, "p_value": p}
    return out


def bootstrap_differences(sets: dict[str, list[str]], ref: Reference, pairs: list[tuple[str, str]],
                          n_boot: int, seed: int) -> dict[tuple[str, str], dict[str, dict]]:
    """(first, second) → :func:`paired_difference` of the full sets, from paired half-samples
    (:func:`half_sample_metrics`) of the sets the pairs name."""
    names = {n for pair in pairs for n in pair}
    point, reps = half_sample_metrics({n: sets[n] for n in names}, ref, n_boot, seed)
    return {(a, b): paired_difference(point, reps, a, b) for a, b in pairs}


def covariation_budgets(runs: dict[str, dict], columns: dict[str, list[str]], ref: Reference, n_boot: int,
                        seed: int, workers: int = 1) -> list[dict]:
    """Per budget of ``runs`` (protein-compare's runs.json entries; ``columns``: run id → realigned
    match columns, one size for all): ``mi*`` and every other contender minus every baseline and
    sequential, for each metric of :data:`METRICS`, from one set of paired half-samples of every
    run. Positive diff = the contender's co-variation is closer to the reference's; verdict at
    p < 0.05."""
    point, reps = half_sample_metrics(columns, ref, n_boot, seed, workers)
    rows = []
    for d, fams in sorted(by_budget(runs).items()):
        run_of = {f: run_id(r) for f, r in fams.items()} | {SEQUENTIAL: SEQUENTIAL}
        firsts = [f for f in fams if is_contender(f) or f == BEST_MI]
        seconds = [f for f in fams if f not in firsts] + [SEQUENTIAL]
        for a, b in ((a, b) for a in firsts for b in seconds):
            for m, r in paired_difference(point, reps, run_of[a], run_of[b]).items():
                verdict = "equal" if r["p_value"] >= ALPHA else ("better" if r["diff"] > 0 else "worse")
                rows.append({"set": "family", "divisor": d, "metric": m, "first": a, "second": b,
                             "n": len(columns[run_of[a]]), "passes_first": runs[run_of[a]]["mean_passes"],
                             "passes_second": runs[run_of[b]]["mean_passes"], **r, "verdict": verdict})
    return rows


def run_scores(cols: list[str], ref: Reference, scores: np.ndarray, threshold: float, seed: int) -> dict:
    """Point estimates of one run: co-variation r's (3 shuffles for the MI correction), f_i r, HMM pass rate."""
    from mdm_mi.protein.family import metrics as fm

    return {"corrected_mi_r": fm.pearson(fm.corrected_mi(cols, seed, fm.MI_SHUFFLES, residues_only=True), ref.mi_point),
            "c_ij_r": fm.pearson(fm.residue_correlations(cols), ref.cij), "f_i_r": fm.frequency_r(cols, ref.columns),
            "hmm_pass_rate": fm.pass_rate(scores, threshold)}


def markdown(runs: dict[str, dict], scores: dict[str, dict], rows: list[dict], n: int) -> str:
    """Every family's corrected-MI r / C_ij r / HMM pass % @ mean passes at each budget, then ``mi*``
    minus each baseline in corrected-MI r and C_ij r (basic bootstrap 95%, p, verdict)."""
    def cell(run_id):
        s, r = scores[run_id], runs[run_id]
        return (f"{s['corrected_mi_r']:.3f} / {s['c_ij_r']:.3f} / {100 * s['hmm_pass_rate']:.0f}% "
                f"@ {r['mean_passes']:.1f}")

    table = by_budget(runs)
    families = list(dict.fromkeys(f for fams in table.values() for f in fams))
    lines = [f"**family** ({n} sequences per setting, realigned to the training HMM; corrected-MI r / C_ij r / "
             f"HMM pass % @ mean passes; sequential: {cell(SEQUENTIAL)})", "",
             "| budget | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for d, fams in sorted(table.items()):
        lines.append(f"| 1/{d} | " + " | ".join(cell(run_id(fams[f])) if f in fams else "" for f in families) + " |")
    mine = [r for r in rows if r["first"] == BEST_MI]
    seconds = list(dict.fromkeys(r["second"] for r in mine))
    for metric in METRICS:
        lines += ["", f"{BEST_MI} minus each baseline in {metric} (paired half-samples 95%, p; positive = closer to "
                      "the reference's co-variation):", "",
                  "| budget | " + " | ".join(seconds) + " |", "|---|" + "---|" * len(seconds)]
        for d in sorted({r["divisor"] for r in mine}):
            at = {r["second"]: r for r in mine if r["divisor"] == d and r["metric"] == metric}
            lines.append(f"| 1/{d} | " + " | ".join(
                f"{at[s]['diff']:+.3f} [{at[s]['lo']:+.3f}, {at[s]['hi']:+.3f}] p={at[s]['p_value']:.2g} "
                f"**{at[s]['verdict']}**" if s in at else "" for s in seconds) + " |")
    return "\n".join(lines) + "\n"
