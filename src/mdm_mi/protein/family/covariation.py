"""Co-variation at calibrated budgets: the runs of ``protein-compare`` (one FASTA per calibrated
setting) scored against a protein family, with intervals of the differences.

Every run is realigned to the training split's profile HMM (as the reference is) and scored on its
first ``n`` sequences: the Pearson r with the reference of the bias-corrected column-pair MI (the
metric that decoding dependent positions together should break), of the connected correlations
C_ij (20×20 residue pairs) and of the site frequencies f_i, and the HMM pass rate. At each budget,
``mi*`` (the MI-guided λ chosen on calibration JSD by ``protein-compare``) minus each baseline gets a
95% interval and a two-sided p from a paired grouped jackknife (:func:`set_stats`,
:func:`jackknife_difference`): every set's sequences fall into the same G groups by index (every sampler
generated sequence ``i`` at the ``i``-th test length), each r is recomputed without each group and
each two groups, and the difference's variance is the jackknife's less the second-order part it
counts twice, with Student's t. The tabled r's are the same estimates (same shuffles, same
reference), so a tabled difference is the reported one. The reference is held fixed: inference is
conditional on it (``benchmarks/family_inference.py`` measures size and coverage with it fixed and
redrawn).

    ref = Reference.of(reference_columns, seed=0)
    stats = covariation_stats(columns, ref, seed=0)        # run id → SetStats
    rows = covariation_budgets(runs, stats)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from mdm_mi.evaluation.budgets import (BEST_MI, OFF_TARGET, OFF_TARGET_NOTE, SEQUENTIAL, by_budget, contrast_pairs,
                                       off_budget)
from mdm_mi.evaluation.stats import jackknife_t, t_quantile, tost_t
from mdm_mi.evaluation.verdicts import Scale, classify, primary_sentences, role
from mdm_mi.infra.errors import InputError

METRICS = ("corrected_mi_r", "c_ij_r")  # with intervals; higher is better
PRIMARY_METRIC = "corrected_mi_r"  # mi* − EB in it is the table's primary contrast (verdicts.role)
EQUIVALENCE_MARGIN_R = 0.05  # "equivalent": the difference in r shown inside ±0.05 (TOST)
FIELDS = ["set", "divisor", "metric", "first", "second", "n", "passes_first", "passes_second", "value_first",
          "value_second", "diff", "lo", "hi", "p_value", "se", "df", "role", "family_size", "p_holm", "p_tost",
          "p_tost_holm", "verdict"]


@dataclass(frozen=True)
class Reference:
    """The reference's side of every comparison, computed once with the sets' own estimators: its
    realigned match columns, its bias-corrected residue MI ``(P,)`` (block shuffles of its own
    jackknife groups, :data:`~mdm_mi.protein.family.metrics.MI_SHUFFLES` of them) and its residue
    connected correlations ``(P·400,)``."""

    columns: list[str]
    mi: np.ndarray
    cij: np.ndarray

    @classmethod
    def of(cls, columns: list[str], seed: int) -> "Reference":
        from mdm_mi.protein.family import jackknife as jk# lazy: scipy (~1 s at every CLI start)
        from mdm_mi.protein.family.alignment import encode_columns  # lazy: scipy (~1 s at every CLI start)
        from mdm_mi.protein.family.metrics import MI_SHUFFLES  # lazy: pyhmmer, scipy (~1 s at every CLI start)

        codes = encode_columns(columns)
        mi = jk.block_corrected_mi(codes, jk.group_labels(len(codes), seed), seed, MI_SHUFFLES)
        return cls(columns, mi, jk.connected(codes))


@dataclass(frozen=True)
class SetStats:
    """One set's :data:`METRICS` against the reference: the value every table prints, the same
    without each jackknife group ``(G,)`` and without each two groups ``(G, G)``."""

    n: int
    value: dict[str, float]
    loo: dict[str, np.ndarray]
    loo2: dict[str, np.ndarray]


def set_stats(cols: list[str], ref: Reference, seed: int) -> SetStats:
    """:class:`SetStats` of one set of match-column strings: corrected-MI r (the MI corrected by
    ``MI_SHUFFLES`` shuffles within the groups, :func:`~mdm_mi.protein.family.jackknife.corrected_mi_jackknife`)
    and C_ij r, each with its leave-one-group-out and leave-two-groups-out replicates. Groups and
    shuffles depend on ``seed`` and the set's size only, so sets of one size are paired."""
    from mdm_mi.protein.family import jackknife as jk# lazy: scipy (~1 s at every CLI start)
    from mdm_mi.protein.family.alignment import encode_columns  # lazy: scipy (~1 s at every CLI start)
    from mdm_mi.protein.family.metrics import MI_SHUFFLES  # lazy: pyhmmer, scipy (~1 s at every CLI start)

    codes = encode_columns(cols)
    labels = jk.group_labels(len(codes), seed)
    counts = jk.PairCounts.of(codes, labels)
    mi, mi_loo, mi_loo2 = jk.corrected_mi_jackknife(codes, labels, seed, MI_SHUFFLES, counts)
    pairs = mi_loo2.shape[0] >= 4  # fewer groups: too few for the second-order correction (stats.jackknife_t)
    mi = [jk.pearson_rows(mi, ref.mi), jk.pearson_rows(mi_loo, ref.mi),
          jk.pearson_rows(mi_loo2, ref.mi) if pairs else np.full(mi_loo2.shape[:2], np.nan)]
    cij = jk.correlation_r_jackknife(codes, labels, ref.cij, counts)
    return SetStats(len(codes), {"corrected_mi_r": float(mi[0]), "c_ij_r": cij[0]},
                    {"corrected_mi_r": mi[1], "c_ij_r": cij[1]}, {"corrected_mi_r": mi[2], "c_ij_r": cij[2]})


def _set_stats_task(task: tuple) -> SetStats:
    """:func:`set_stats` of one (columns, reference, seed) task (a worker's)."""
    return set_stats(*task)


def run_id(run: dict) -> str:
    """protein-compare's id of a calibrated run (``mi*`` is the run of the λ it chose)."""
    return f"{run['family']}@1/{run['divisor']}"


BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _map(fn, tasks: list, workers: int) -> list:
    """``[fn(t) for t in tasks]``, in ``workers`` spawned processes when > 1; BLAS runs one thread
    either way, so the sums (and the statistics, to the last bit) do not depend on ``workers``."""
    if workers <= 1 or len(tasks) <= 1:
        from threadpoolctl import threadpool_limits  # scikit-learn's dependency

        with threadpool_limits(1):
            return [fn(t) for t in tasks]
    import multiprocessing  # lazy: multiprocessing adds ~1 s to every CLI start
    from concurrent.futures import ProcessPoolExecutor  # lazy: concurrent.futures adds ~1 s to every CLI start

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


def covariation_stats(sets: dict[str, list[str]], ref: Reference, seed: int, workers: int = 1) -> dict[str, SetStats]:
    """Set name → :func:`set_stats`, each set once however many comparisons use it, in ``workers``
    processes (the same numbers as one). :class:`InputError` when the sets differ in size (the
    pairing is by index)."""
    sizes = {len(v) for v in sets.values()}
    if len(sizes) != 1:
        raise InputError(f"paired comparisons need sets of one size, got sizes {sorted(sizes)}")
    if sizes.pop() < 2:
        raise InputError("paired comparisons need at least 2 sequences per set")
    return dict(zip(sets, _map(_set_stats_task, [(v, ref, seed) for v in sets.values()], workers)))


def jackknife_difference(stats: dict[str, SetStats], a: str, b: str) -> dict[str, dict]:
    """metric → {value_first, value_second, diff, lo, hi, p_value} of set ``a`` minus set ``b``.

    ``diff`` is the difference of the two sets' tabled values. Its variance is the paired grouped
    jackknife's: the difference recomputed without each group (the same test lengths left out of
    both sets), SE² = (G − 1)/G · Σ (d₍g₎ − d̄)², less the second-order part that the jackknife
    counts twice, measured by leaving out two groups (:func:`mdm_mi.evaluation.stats.jackknife_t`); interval
    ``diff ± t·SE`` and p from Student's t. No replicate duplicates a sequence, which would read as
    coupling. ``benchmarks/family_inference.py`` measures size and coverage, against paired
    half-samples."""
    out = {}
    for m in METRICS:
        first, second = stats[a].value[m], stats[b].value[m]
        diff = first - second
        r = jackknife_t(diff, stats[a].loo[m] - stats[b].loo[m], stats[a].loo2[m] - stats[b].loo2[m])
        out[m] = {"value_first": first, "value_second": second, "diff": diff,
                  "lo": r["lo"], "hi": r["hi"], "p_value": r["p_value"], "se": r["se"], "df": r["df"]}
    return out


def jackknife_differences(sets: dict[str, list[str]], ref: Reference, pairs: list[tuple[str, str]],
                          seed: int) -> dict[tuple[str, str], dict[str, dict]]:
    """(first, second) → :func:`jackknife_difference` of the sets the pairs name."""
    names = {n for pair in pairs for n in pair}
    stats = covariation_stats({n: sets[n] for n in names}, ref, seed)
    return {(a, b): jackknife_difference(stats, a, b) for a, b in pairs}


def covariation_budgets(runs: dict[str, dict], stats: dict[str, SetStats]) -> list[dict]:
    """Per budget of ``runs`` (protein-compare's runs.json entries; ``stats``: run id →
    :class:`SetStats`, from :func:`covariation_stats`): ``mi*`` and every other contender minus every
    baseline and sequential, and ``mi*`` minus every other contender (:func:`contrast_pairs`), for each metric of :data:`METRICS`. Positive diff = the contender's
    co-variation is closer to the reference's. Verdicts as :func:`covariation_verdicts` gives them."""
    rows = []
    for d, fams in sorted(by_budget(runs).items()):
        run_of = {f: run_id(r) for f, r in fams.items()} | {SEQUENTIAL: SEQUENTIAL}
        for a, b in contrast_pairs(fams):
            for m, r in jackknife_difference(stats, run_of[a], run_of[b]).items():
                rows.append({"set": "family", "divisor": d, "metric": m, "first": a, "second": b,
                             "n": stats[run_of[a]].n, "passes_first": runs[run_of[a]]["mean_passes"],
                             "passes_second": runs[run_of[b]]["mean_passes"], **r})
    return covariation_verdicts(rows)


def covariation_role(row: dict) -> str:
    """``primary``: mi* − EB in corrected-MI r; ``secondary``: mi*'s other contrasts in it and all of
    mi*'s in C_ij r; ``exploratory``: every other row."""
    base = role(row)
    return "secondary" if base == "primary" and row["metric"] != PRIMARY_METRIC else base


def covariation_verdicts(rows: list[dict]) -> list[dict]:
    """``rows`` with role, Holm-adjusted p within (set, role), Student TOST p at ±0.05 r (raw and
    Holm) and the verdict word: better / worse / equivalent / not resolved (:mod:`mdm_mi.evaluation.verdicts`)."""
    return classify(rows, role_of=covariation_role,
                    equivalence_p=lambda r: tost_t(r["diff"], r["se"], r["df"], EQUIVALENCE_MARGIN_R))


def covariation_scale():
    """How co-variation contrasts are written (:class:`mdm_mi.evaluation.verdicts.Scale`): r to three places,
    the band ±0.05 r, the 90% Student interval of the jackknife (the TOST's)."""
    def interval90(r: dict) -> tuple[float, float]:
        half = t_quantile(r["df"], 0.90) * r["se"]
        return r["diff"] - half, r["diff"] + half

    return Scale(lambda x: f"{x:+.3f}", "", " in corrected-MI r", f"±{EQUIVALENCE_MARGIN_R:g}", interval90)


def run_scores(stats: SetStats, cols: list[str], ref: Reference, scores: np.ndarray, threshold: float) -> dict:
    """One run's scores: its co-variation r's exactly as :func:`covariation_budgets` compares them
    (``stats``), f_i r and the HMM pass rate."""
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)

    return {**{m: stats.value[m] for m in METRICS}, "f_i_r": fm.frequency_r(cols, ref.columns),
            "hmm_pass_rate": fm.pass_rate(scores, threshold)}


def covariation_markdown(runs: dict[str, dict], scores: dict[str, dict], rows: list[dict], n: int) -> str:
    """Every family's corrected-MI r / C_ij r / HMM pass % @ mean passes at each budget, then ``mi*``
    minus each baseline in corrected-MI r and C_ij r (paired grouped jackknife 95%, p, verdict): the
    differences of the first table's values."""
    def cell(run_id):
        s, r = scores[run_id], runs[run_id]
        return (f"{s['corrected_mi_r']:.3f} / {s['c_ij_r']:.3f} / {100 * s['hmm_pass_rate']:.0f}% "
                f"@ {r['mean_passes']:.1f}" + ("" if r.get("on_target", True) else OFF_TARGET))

    table = by_budget(runs)
    families = list(dict.fromkeys(f for fams in table.values() for f in fams))
    lines = [f"**family** ({n} sequences per setting, realigned to the training HMM; corrected-MI r / C_ij r / "
             f"HMM pass % @ mean passes; sequential: {cell(SEQUENTIAL)})", "",
             "| budget | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for d, fams in sorted(table.items()):
        lines.append(f"| 1/{d} | " + " | ".join(cell(run_id(fams[f])) if f in fams else "" for f in families) + " |")
    off = off_budget(table)
    if off:
        lines += ["", OFF_TARGET_NOTE + "; mi*'s contrasts with it are not at the same passes"]
    mine = [r for r in rows if r["first"] == BEST_MI]
    seconds = list(dict.fromkeys(r["second"] for r in mine))
    for metric in METRICS:
        lines += ["", f"{BEST_MI} minus each baseline and each other contender in {metric} (the first table's values; "
                      "paired grouped jackknife 95%, t, p; positive = closer to the reference's co-variation):", "",
                  "| budget | " + " | ".join(seconds) + " |", "|---|" + "---|" * len(seconds)]
        for d in sorted({r["divisor"] for r in mine}):
            at = {r["second"]: r for r in mine if r["divisor"] == d and r["metric"] == metric}
            lines.append(f"| 1/{d} | " + " | ".join(
                f"{at[s]['diff']:+.3f} [{at[s]['lo']:+.3f}, {at[s]['hi']:+.3f}] p={at[s]['p_value']:.2g} "
                f"**{at[s]['verdict']}**" + (OFF_TARGET if (d, s) in off else "") if s in at else "" for s in seconds) + " |")
    lines += ["", f"Primary contrast, {BEST_MI} − eb in corrected-MI r (Holm over the budgets; the other {BEST_MI} "
                  f"contrasts are Holm-corrected as one secondary family; equivalence: TOST at ±{EQUIVALENCE_MARGIN_R:g}):", ""]
    lines += [f"- {x}" for x in primary_sentences(rows, covariation_scale())]
    return "\n".join(lines) + "\n"
