"""Protein samplers compared at calibrated budgets (the Sudoku protocol of :mod:`mdm_mi.evaluation.calibrate`).

Every parallel sampler is calibrated on *calibration* lengths (drawn from the reference, seeded) to
sequential's mean passes ÷ each divisor; then each generates the *test* lengths (another draw, as
many as the reference holds). Generated sets are compared with the cluster JSD, and differences
between samplers by :func:`mdm_mi.protein.metrics.bootstrap_jsd_differences` (generated sequences and
reference resampled, k-means refit in every replicate). Lower JSD is better.

    runs = run_part(backbone, pairwise_fn, scorer, families, spec, reference_lengths, sequential=True)
    rows = jsd_rows(runs, scorer, n_boot=200, seed=0)

A comparison can be split into parts (:func:`run_part`: some families, or sequential) that run as
separate jobs and are merged before :func:`jsd_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL, by_budget, contrast_pairs
from mdm_mi.evaluation.calibrate import Family
from mdm_mi.evaluation.paired import ALPHA
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison
from mdm_mi.protein.decode_flags import DecodeFlags
from mdm_mi.protein.generate import draw_lengths, generate
from mdm_mi.protein.metrics import bootstrap_jsd_differences, cluster_histogram, embed, fit_clusters, jsd_with_interval
from mdm_mi.mi.pairwise import pairwise_source



@dataclass(frozen=True)
class ProteinCompareSpec:
    """n test sequences, calib_n calibration sequences, budgets, the decoding settings (handed to
    ``decode`` whole), k-means k, batch size, seed and the calibration's own seed (a second
    calibration seed re-calibrates every sampler without changing the test decodes' seed)."""

    n: int
    calib_n: int
    divisors: tuple[int, ...]
    decoding: DecodeFlags
    clusters: int
    batch_size: int
    seed: int
    calib_seed: int | None = None  # the calibration lengths' and decodes' seed (None: ``seed``); the test's stays ``seed``

    @property
    def calibration_seed(self) -> int:
        return self.seed if self.calib_seed is None else self.calib_seed


class Scorer:
    """Cluster JSD against the reference with one k-means fitted on the reference embeddings."""

    def __init__(self, embedder, reference: list[str], k: int, seed: int):
        self.embedder, self.k, self.seed = embedder, k, seed
        self.ref_emb = embed(embedder, reference)
        self.km = fit_clusters(self.ref_emb, k, seed)

    def embed(self, seqs: list[str]) -> np.ndarray:
        return embed(self.embedder, seqs)

    def jsd(self, emb: np.ndarray) -> dict:
        """Plug-in, bias-corrected and basic-bootstrap interval of one set's cluster JSD."""
        return jsd_with_interval(cluster_histogram(self.km, self.ref_emb), cluster_histogram(self.km, emb), self.seed)


def calibration_lengths(reference_lengths, spec: ProteinCompareSpec) -> np.ndarray:
    """The calibration split's lengths ``(calib_n,)``: a seeded draw apart from the test lengths."""
    return draw_lengths(reference_lengths, spec.calib_n, np.random.default_rng([spec.calibration_seed, 5]))


@dataclass
class ProteinTask(ComparisonTask):
    """The protein comparison for :func:`mdm_mi.evaluation.runner.run_comparison`: calibrated on the
    calibration lengths (the set's JSD kept: mi* picks λ by it), then each setting generates the test
    lengths (:meth:`test_lengths`; every run the same lengths in the same order with the same generator
    seed) → run {family, divisor, params, seqs, passes (n,), emb (n, D), jsd..., target, calib_passes,
    on_target, calib_jsd, calib_score}. ``pairwise_fn``: the MI head's Î, ``tv_fn``: the TV head's T̂
    (each sampler reads its own, :func:`pairwise_source`)."""

    backbone: object
    pairwise_fn: object
    scorer: Scorer
    spec: ProteinCompareSpec
    reference_lengths: object
    tv_fn: object = None

    def calibration_passes(self) -> float:
        return float(np.mean(calibration_lengths(self.reference_lengths, self.spec)))

    def measure(self, sampler) -> tuple[float, dict]:
        seqs, passes = self._generate(sampler, calibration_lengths(self.reference_lengths, self.spec),
                                      self.spec.calibration_seed)
        return float(passes.mean()), {"calib_jsd": self.scorer.jsd(self.scorer.embed(seqs))["jsd"]}

    def test_lengths(self) -> np.ndarray:
        return draw_lengths(self.reference_lengths, self.spec.n, np.random.default_rng([self.spec.seed, 6]))

    def reference_runs(self) -> dict[str, dict]:
        return {SEQUENTIAL: self._test_run(SEQUENTIAL, 1, Sequential("entropy"))}

    def test_run(self, budget: Budget) -> dict:
        point = budget.point
        return self._test_run(budget.family.label, budget.divisor, budget.sampler) | {
            "target": point.target, "calib_passes": point.passes, "on_target": point.on_target,
            "calib_jsd": point.extra["calib_jsd"], "calib_score": -point.extra["calib_jsd"]}

    def _test_run(self, family: str, divisor: int, sampler) -> dict:
        seqs, passes = self._generate(sampler, self.test_lengths(), self.spec.seed + 1)
        emb = self.scorer.embed(seqs)
        return {"family": family, "divisor": divisor, "params": sampler.params(), "seqs": seqs, "passes": passes,
                "emb": emb, **self.scorer.jsd(emb)}

    def _generate(self, sampler, lengths: np.ndarray, seed: int):
        with pairwise_source(self.backbone, sampler, self.pairwise_fn, self.tv_fn) as fn:
            return generate(self.backbone, lengths, sampler, seed, decoding=self.spec.decoding, pairwise_fn=fn,
                            batch_size=self.spec.batch_size)


def run_part(backbone, pairwise_fn, scorer: Scorer, families: list[Family], spec: ProteinCompareSpec,
             reference_lengths, sequential: bool, log=print, tv_fn=None) -> dict[str, dict]:
    """One part of a comparison (a job of its own in the workflow): ``families`` calibrated and
    generated at every budget, and sequential on the test lengths when ``sequential`` → the runs of
    :class:`ProteinTask`. The parts of one comparison together make the runs of all of it: every
    part draws the same calibration and test lengths from ``spec``."""
    task = ProteinTask(backbone, pairwise_fn, scorer, spec, reference_lengths, tv_fn)
    return run_comparison(task, families, spec.divisors, sequential, log)[0]


def jsd_rows(runs: dict[str, dict], scorer: Scorer, n_boot: int, seed: int) -> list[dict]:
    """Per budget: every contender (``mi…``, ``mi*``) minus every baseline and ``mi*`` minus every other
    contender (:func:`mdm_mi.evaluation.budgets.contrast_pairs`) in cluster JSD, with the
    whole-metric bootstrap (basic 95% interval, two-sided p). Negative = the contender is closer to
    the reference."""
    rows = []
    for d, fams in by_budget(runs).items():
        sets = {f: r["emb"] for f, r in fams.items()} | {SEQUENTIAL: runs[SEQUENTIAL]["emb"]}
        result = bootstrap_jsd_differences(scorer.ref_emb, sets, scorer.k, seed, n_boot=n_boot,
                                           km=getattr(scorer, "km", None))  # the table's own clusters
        wanted = set(contrast_pairs(fams))
        for pair in result["pairs"]:
            a, b, sign = pair["a"], pair["b"], 1.0
            if (a, b) not in wanted:
                a, b, sign = b, a, -1.0
            if (a, b) not in wanted:
                continue
            diff, lo, hi = sign * pair["diff"], *sorted((sign * pair["lo"], sign * pair["hi"]))
            # a p below the replicates' resolution counts as that resolution: 20 replicates resolve no p < 0.05
            resolved = max(pair["p_value"], result["p_resolution"]) < ALPHA
            verdict = ("better" if diff < 0 else "worse") if resolved else "not resolved"
            rows.append({"set": "protein", "divisor": d, "first": a, "second": b,
                         "passes_first": float(np.mean(sets_passes(runs, fams, a))),
                         "passes_second": float(np.mean(sets_passes(runs, fams, b))),
                         "jsd_first": result["jsd"][a], "jsd_second": result["jsd"][b], "diff": diff, "lo": lo,
                         "hi": hi, "p_value": pair["p_value"], "verdict": verdict, "n_boot": n_boot})
    return rows


def sets_passes(runs: dict, fams: dict, name: str) -> np.ndarray:
    return runs[SEQUENTIAL]["passes"] if name == SEQUENTIAL else fams[name]["passes"]


# --- parts on disk (protein-compare-part writes them, protein-compare and the oracle read them:
# mdm_mi.evaluation.parts): part.json holds each run's sequences, passes and scores, EMB_FILE its embeddings

EMB_FILE = "emb.npz"
PART_ARRAYS = ("emb",)  # (n, D) embeddings of each run's sequences


def run_fasta(out: Path, run_id: str) -> Path:
    """Where the generated sequences of run ``run_id`` (e.g. ``mi λ=1@1/4``) are written."""
    return Path(out) / "fasta" / (run_id.replace("/", "_").replace(" ", "_").replace("=", "") + ".fasta")
