"""The ``protein-oracle-ceiling`` verb: Algorithm 1 fed the certified probing MI (the oracle) in place
of the MI head, at mi*'s calibrated settings, on a small set of protein lengths drawn from the
reference; beside it the head and sequential decoding on the same lengths and seed.

Probing costs ``1 + |M|·20`` passes per sequence per step, so only a few dozen sequences are decoded:
too few for the set-level co-variation r. Each sequence is scored on its own instead, and the arms are
compared by paired differences (same length, same generator seed):
- the HMM bit score against the training split's profile HMM, and the pass rate at the 1st
  percentile of the validation split's scores;
- the pair log-odds score (:mod:`mdm_mi.protein.family.pair_score`), which site-independent sequences fail.
The ceiling (natural validation sequences: held out from the HMM and the pair frequencies, which the
family table's training-split ceiling is not) and floor (site-independent profile draws) rows are
scored the same way on as many sequences.

    python -m mdm_mi protein-oracle-ceiling --model results/x/protein/model --head results/x/protein/head \
        --budgets-dir results/x/protein/budgets --data-dir results/x/protein/data --divisors 4 --n 24 \
        --tol 1e-3 --batch-size 16 --out-dir results/x/protein/ceiling

Writes ``ceiling.json`` and ``ceiling.md``. The oracle's probing passes are not counted (as in
:mod:`mdm_mi.mi.guided`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.core.backbone import for_decoding
from mdm_mi.models.loading import load_model_and_head

from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.budgets import best_mi_run
from mdm_mi.evaluation.stats import mean_t_ci
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.reader import read_data_records
from mdm_mi.infra.flags import OracleCeilingFlags, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.io import read_json, write_json, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn
from mdm_mi.protein.decode_flags import DecodeFlags
from mdm_mi.protein.family.scores import hmm_threshold, read_splits
from mdm_mi.protein.generate import draw_lengths, generate, reference_lengths
from mdm_mi.evaluation.parts import PART_FILE
from mdm_mi.protein.flags import ProteinDecodeJobFlags
from mdm_mi.protein.sequences import sample_reference
from mdm_mi.sampling.registry import build_sampler

ARM_PAIRS = (("oracle", "head"), ("oracle", "sequential"), ("head", "sequential"))
PER_SEQUENCE = ("bit_score", "pair_score")  # per-sequence scores compared by paired differences
LENGTH_STREAM = 8  # rng stream of the lengths (protein-compare uses 5 and 6)


@dataclass(frozen=True)
class ProteinCeilingArgs(ProteinDecodeJobFlags, OracleCeilingFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.oracle", "protein.generate")

    head: Path = field(metadata=_h("MI head folder (train-head)"))
    data_dir: Path = field(metadata=_h("prepare-family's folder (splits, ceiling.fasta, floor.fasta)"))
    n: int = from_schema("protein.oracle.n", "sequences per arm (lengths drawn from the reference)", low=2)
    batch_size: int = from_schema("protein.oracle.batch_size", "sequences decoded together")
    budgets_dir: Path | None = field(default=None, metadata=_h("a protein-compare output folder (runs.json)"))
    parts: tuple[Path, ...] = field(default=(), metadata=_h(
        "instead of --budgets-dir: the MI-guided protein-compare-part folders (the oracle need not wait for the merge)"))
    divisors: tuple[int, ...] = shared_from_schema(OracleCeilingFlags, "protein.oracle.divisors")
    tol: float = shared_from_schema(OracleCeilingFlags, "protein.oracle.tol")


class SequenceScorer:
    """Per-sequence family scores: HMM bit score, pass at the threshold, pair log-odds score."""

    def __init__(self, train, val):
        from mdm_mi.protein.family.alignment import encode_columns  # lazy: scipy (~1 s at every CLI start)
        from mdm_mi.protein.family.pair_score import pair_weights  # lazy: scipy (~1 s at every CLI start)

        self.hmm, self.threshold = hmm_threshold(train, val)
        self.weights = pair_weights(encode_columns([r.columns for r in train]))

    def __call__(self, seqs: list[str]) -> dict[str, np.ndarray]:
        """→ ``bit_score``, ``pair_score`` ``(n,)`` float64 and ``passes_hmm`` ``(n,)`` bool."""
        from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)
        from mdm_mi.protein.family.alignment import encode_columns  # lazy: scipy (~1 s at every CLI start)
        from mdm_mi.protein.family.pair_score import pair_scores  # lazy: scipy (~1 s at every CLI start)

        bits = np.asarray(fm.hmm_scores(self.hmm, seqs), dtype=np.float64)
        pair = pair_scores(self.weights, encode_columns(fm.align_columns(self.hmm, seqs)))
        return {"bit_score": bits, "pair_score": pair, "passes_hmm": bits > self.threshold}


def arm_summary(scores: dict[str, np.ndarray], passes: np.ndarray | None) -> dict:
    """Means (with 95% t half-widths: a few sequences per arm) of one arm's per-sequence scores, its
    HMM pass rate and passes."""
    out = {"hmm_pass_rate": float(np.mean(scores["passes_hmm"]))}
    for key in PER_SEQUENCE:
        out[key], out[f"{key}_ci"] = mean_t_ci(scores[key][np.isfinite(scores[key])].tolist())
    if passes is not None:
        out["mean_passes"] = float(np.mean(passes))
    return out


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """Mean of ``a − b`` over sequences where both are finite, its 95% t interval (n − 1 degrees of
    freedom: at the default run's 8 sequences a normal interval is 17% too narrow) and n."""
    keep = np.isfinite(a) & np.isfinite(b)
    diff, half = mean_t_ci((a[keep] - b[keep]).tolist())
    return {"diff": diff, "lo": diff - half, "hi": diff + half, "n": int(keep.sum())}


def validation_draw(val, n: int, seed: int) -> list[str]:
    """A seeded draw of ``min(n, len(val))`` validation sequences (nested in ``n``)."""
    return [s for _, s in sample_reference([(r.name, r.sequence) for r in val], min(n, len(val)), seed)]


def comparison_runs(args: ProteinCeilingArgs) -> dict[str, dict]:
    """The calibrated runs the oracle copies its settings from: ``--budgets-dir``'s runs.json, or the
    runs of the ``--parts`` folders in the order given (:func:`mdm_mi.evaluation.budgets.best_mi_run` keeps the
    first of tied λ, as the merge does with the parts in the same order). One-line errors."""
    if (args.budgets_dir is None) == (not args.parts):
        raise InputError("give either --budgets-dir (a merged comparison) or --parts (its MI-guided parts)")
    if args.parts:
        runs: dict[str, dict] = {}
        for d in map(Path, args.parts):
            if not (d / PART_FILE).is_file():
                raise InputError(f"{d} is not a protein-compare-part output ({PART_FILE})")
            runs |= read_json(d / PART_FILE)["runs"]
        return runs
    runs_path = Path(args.budgets_dir) / "runs.json"
    if not runs_path.is_file():
        raise InputError(f"protein comparison output missing: {runs_path}")
    return read_json(runs_path)["runs"]


def protein_oracle_ceiling(args: ProteinCeilingArgs, tracker) -> None:
    setup(args.threads, args.seed)
    runs = comparison_runs(args)
    heads = {d: best_mi_run(runs, d) for d in args.divisors}  # fail on a missing budget before any decoding
    train, val, reference, _ = read_splits(args.data_dir)
    scorer = SequenceScorer(train, val)
    backbone, head = load_model_and_head(args.model, args.head, resolve_device(args.device), "protein")
    lengths = draw_lengths(reference_lengths(backbone, [r.sequence for r in reference]), args.n,
                           np.random.default_rng([args.seed, LENGTH_STREAM]))
    fns = {"head": head_pairwise_fn(head), "oracle": oracle_pairwise_fn(backbone, method="certified", tol=args.tol)}
    backbone = for_decoding(backbone, args.bf16)

    def run(sampler, fn):
        seqs, passes = generate(backbone, lengths, sampler, args.seed + 1, decoding=DecodeFlags.of(args), pairwise_fn=fn,
                                batch_size=args.batch_size)
        return passes, scorer(seqs)

    seq_passes, seq_scores = run(Sequential("entropy"), None)
    natural = {"ceiling": scorer(validation_draw(val, args.n, args.seed)),
               "floor": scorer([s for _, s in read_data_records(Path(args.data_dir) / "floor.fasta")][: args.n])}
    result = {"n": args.n, "tol": args.tol, "bf16": args.bf16, "hmm_threshold": scorer.threshold,
              "references": {k: arm_summary(v, None) for k, v in natural.items()},
              "sequential": arm_summary(seq_scores, seq_passes), "divisors": {}}
    for d, run_id in heads.items():
        params, t0 = runs[run_id]["params"], time.time()
        arms = {"sequential": (seq_passes, seq_scores)}
        for arm, name in (("head", "mi"), ("oracle", "mi-oracle")):
            arms[arm] = run(build_sampler(name, **params), fns[arm])
        result["divisors"][str(d)] = {
            "head_run": run_id, "params": params, "seconds": time.time() - t0,
            **{arm: arm_summary(s, p) for arm, (p, s) in arms.items() if arm != "sequential"},
            "differences": {f"{a}-{b}": {k: paired(arms[a][1][k], arms[b][1][k]) for k in PER_SEQUENCE}
                            for a, b in ARM_PAIRS}}
        print(f"1/{d}: oracle @ {np.mean(arms['oracle'][0]):.1f} passes, head @ {np.mean(arms['head'][0]):.1f}, "
              f"{time.time() - t0:.0f} s", flush=True)
    out = Path(args.out_dir)
    write_json(out / "ceiling.json", result)
    write_text(out / "ceiling.md", ceiling_markdown(result))
    tracker.log_metrics({f"1_{d}.{arm}.{k}": v for d, r in result["divisors"].items() for arm in ("head", "oracle")
                         for k, v in r[arm].items()})
    tracker.log_artifact(out / "ceiling.md")


def ceiling_markdown(result: dict) -> str:
    """One row per arm and budget (passes, HMM pass rate, bit score, pair score), then the paired
    differences of the per-sequence scores."""
    def row(name, s):
        passes = f"{s['mean_passes']:.1f}" if "mean_passes" in s else "—"
        return (f"| {name} | {passes} | {100 * s['hmm_pass_rate']:.0f}% | {s['bit_score']:.1f} ± {s['bit_score_ci']:.1f} "
                f"| {s['pair_score']:.4f} ± {s['pair_score_ci']:.4f} |")

    title = (f"**Protein MI oracle** ({result['n']} sequences per arm; oracle = certified probing MI, "
             f"±{result['tol']:g} nats; mean ± 95% t half-width)")
    lines = [title, "",
             "| arm | mean passes | HMM pass | bit score | pair score (nats) |", "|---|---|---|---|---|",
             row("ceiling (natural)", result["references"]["ceiling"]),
             row("floor (site-independent)", result["references"]["floor"]),
             row("sequential", result["sequential"])]
    for d, r in result["divisors"].items():
        lines += [row(f"MI head (mi*) 1/{d}", r["head"]), row(f"MI oracle 1/{d}", r["oracle"])]
    lines += ["", "| budget | pair | Δ bit score [95%] | Δ pair score [95%] |", "|---|---|---|---|"]
    for d, r in result["divisors"].items():
        for pair, x in r["differences"].items():
            b, p = x["bit_score"], x["pair_score"]
            lines.append(f"| 1/{d} | {pair} | {b['diff']:+.1f} [{b['lo']:+.1f}, {b['hi']:+.1f}] "
                         f"| {p['diff']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] |")
    return "\n".join(lines) + "\n"
