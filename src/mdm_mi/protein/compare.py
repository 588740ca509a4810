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
from mdm_mi.evaluation.budgets import BEST_MI, by_budget, contrast_pairs
from mdm_mi.evaluation.calibrate import Family, calibrate_grid
from mdm_mi.evaluation.paired import ALPHA
from mdm_mi.protein.decode_flags import DecodeFlags
from mdm_mi.protein.generate import draw_lengths, generate
from mdm_mi.protein.metrics import bootstrap_jsd_differences, cluster_histogram, embed, fit_clusters, jsd_with_interval
from mdm_mi.mi.dapd import pairwise_source

SEQUENTIAL = "sequential"


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


def calibrate_proteins(backbone, pairwise_fn, scorer: Scorer, families: list[Family], spec: ProteinCompareSpec,
                       reference_lengths, log=print, tv_fn=None):
    """Sequential's passes on the calibration lengths (one per residue) and each family's point at
    every budget; ``extra`` holds the calibration set's JSD (mi* picks λ by it). ``pairwise_fn``: the MI
    head's Î, ``tv_fn``: the TV head's T̂ (families reading it), each family's by :func:`pairwise_source`."""
    lengths = calibration_lengths(reference_lengths, spec)
    seq_passes = float(np.mean(lengths))

    def measure(sampler):
        with pairwise_source(backbone, sampler, pairwise_fn, tv_fn) as fn:
            seqs, passes = generate(backbone, lengths, sampler, spec.calibration_seed,
                                    decoding=spec.decoding, pairwise_fn=fn, batch_size=spec.batch_size)
        return float(passes.mean()), {"calib_jsd": scorer.jsd(scorer.embed(seqs))["jsd"]}

    return seq_passes, calibrate_grid(families, seq_passes, spec.divisors, measure, log)


def generate_test(backbone, pairwise_fn, scorer: Scorer, families: list[Family], points, spec: ProteinCompareSpec,
                  reference_lengths, sequential: bool = True, tv_fn=None) -> dict[str, dict]:
    """Generate the test lengths with every calibrated point (and sequential, unless ``sequential`` is
    false) → run id → {family, divisor, params, seqs, passes (n,), emb (n, D), jsd...}. Every run
    decodes the same lengths in the same order with the same generator seed."""
    lengths = draw_lengths(reference_lengths, spec.n, np.random.default_rng([spec.seed, 6]))
    by_label = {f.label: f for f in families}
    settings = [(SEQUENTIAL, SEQUENTIAL, 1, Sequential("entropy"), None)] if sequential else []
    settings += [(f"{p.family}@1/{p.extra['divisor']}", p.family, p.extra["divisor"], by_label[p.family].build(p.value), p)
                 for p in points]
    runs = {}
    for run_id, family, d, sampler, point in settings:
        with pairwise_source(backbone, sampler, pairwise_fn, tv_fn) as fn:
            seqs, passes = generate(backbone, lengths, sampler, spec.seed + 1,
                                    decoding=spec.decoding, pairwise_fn=fn, batch_size=spec.batch_size)
        emb = scorer.embed(seqs)
        run = {"family": family, "divisor": d, "params": sampler.params(), "seqs": seqs, "passes": passes,
               "emb": emb, **scorer.jsd(emb)}
        if point is not None:
            run |= {"target": point.target, "calib_passes": point.passes, "on_target": point.on_target,
                    "calib_jsd": point.extra["calib_jsd"], "calib_score": -point.extra["calib_jsd"]}
        runs[run_id] = run
    return runs


def run_part(backbone, pairwise_fn, scorer: Scorer, families: list[Family], spec: ProteinCompareSpec,
             reference_lengths, sequential: bool, log=print, tv_fn=None) -> dict[str, dict]:
    """One part of a comparison (a job of its own in the workflow): ``families`` calibrated and
    generated at every budget, and sequential on the test lengths when ``sequential`` → the runs of
    :func:`generate_test`. The parts of one comparison together make the runs of all of it: every
    part draws the same calibration and test lengths from ``spec``."""
    points = (calibrate_proteins(backbone, pairwise_fn, scorer, families, spec, reference_lengths, log, tv_fn)[1]
              if families else [])
    return generate_test(backbone, pairwise_fn, scorer, families, points, spec, reference_lengths, sequential, tv_fn)


def jsd_rows(runs: dict[str, dict], scorer: Scorer, n_boot: int, seed: int) -> list[dict]:
    """Per budget: every contender (``mi…``, ``mi*``) minus every baseline and ``mi*`` minus every other
    contender (:func:`mdm_mi.evaluation.budgets.contrast_pairs`) in cluster JSD, with the
    whole-metric bootstrap (basic 95% interval, two-sided p). Negative = the contender is closer to
    the reference."""
    rows = []
    for d, fams in by_budget(runs).items():
        sets = {f: r["emb"] for f, r in fams.items()} | {SEQUENTIAL: runs[SEQUENTIAL]["emb"]}
        result = bootstrap_jsd_differences(scorer.ref_emb, sets, scorer.k, seed, n_boot=n_boot)
        wanted = set(contrast_pairs(fams))
        for pair in result["pairs"]:
            a, b, sign = pair["a"], pair["b"], 1.0
            if (a, b) not in wanted:
                a, b, sign = b, a, -1.0
            if (a, b) not in wanted:
                continue
            diff, lo, hi = sign * pair["diff"], *sorted((sign * pair["lo"], sign * pair["hi"]))
            verdict = "not resolved" if pair["p_value"] >= ALPHA else ("better" if diff < 0 else "worse")
            rows.append({"set": "protein", "divisor": d, "first": a, "second": b,
                         "passes_first": float(np.mean(sets_passes(runs, fams, a))),
                         "passes_second": float(np.mean(sets_passes(runs, fams, b))),
                         "jsd_first": result["jsd"][a], "jsd_second": result["jsd"][b], "diff": diff, "lo": lo,
                         "hi": hi, "p_value": pair["p_value"], "verdict": verdict})
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
