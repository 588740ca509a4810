"""The ``protein-compare`` verb: every parallel sampler calibrated to sequential's passes ÷ 2…10, then
as many proteins as the reference holds generated at each budget and compared by cluster JSD with a
whole-metric bootstrap (see :mod:`mdm_mi.protein.compare`).

    python -m mdm_mi protein-compare --model results/x/protein/model --head results/x/protein/head \
        --reference results/x/protein/data/reference.fasta --out-dir results/x/protein/budgets ...

Writes ``runs.json`` (settings, passes, JSD of every run), ``budgets.csv`` / ``budgets.md`` and the
generated sequences under ``fasta/``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdm_mi.calibrate import DIVISORS, standard_families
from mdm_mi.flags import h as _h
from mdm_mi.errors import InputError
from mdm_mi.io import write_json, write_text
from mdm_mi.runtime import resolve_device, setup

ROW_FIELDS = ["set", "divisor", "first", "second", "passes_first", "passes_second", "jsd_first", "jsd_second", "diff",
              "lo", "hi", "p_value", "verdict"]
MAX_PROTEIN_TOKENS = 100  # longest generated protein (reference lengths 50-100): naive k's upper end


@dataclass(frozen=True)
class ProteinCompareArgs:
    model: Path = field(metadata=_h("protein backbone checkpoint folder"))
    head: Path = field(metadata=_h("MI head checkpoint folder"))
    reference: Path = field(metadata=_h("reference FASTA: lengths are drawn from it and JSD is taken against it"))
    out_dir: Path = field(metadata=_h("output folder"))
    n: int = field(default=500, metadata=_h("test sequences per sampler setting"))
    calib_n: int = field(default=100, metadata=_h("calibration sequences (their lengths drawn apart from the test's)"))
    divisors: tuple[int, ...] = field(default=DIVISORS, metadata=_h("budgets: sequential's passes ÷ each"))
    mi_lambda: tuple[float, ...] = field(default=(1.0,), metadata=_h("MI-guided λ values"))
    mi_on_reject: str = field(default="skip", metadata=_h("MI-guided: skip | stop"))
    mi_charge_first: bool = field(default=False, metadata=_h("MI-guided: charge the first token"))
    indep_tau: tuple[float, ...] = field(default=(), metadata=_h("mi-indep: pair caps τ (nats)"))
    two_budget_delta: tuple[float, ...] = field(default=(), metadata=_h("mi-2b: dependence budgets δ (nats)"))
    temperature: float = field(default=1.0, metadata=_h("sampling temperature"))
    clusters: int = field(default=15, metadata=_h("k-means clusters of the JSD (paper: 15)"))
    embed_layer: int | None = field(default=None, metadata=_h("embedder block mean-pooled for the metric (default: its output after the final norm)"))
    bootstrap: int = field(default=200, metadata=_h("whole-metric bootstrap replicates (k-means refit in each)"))
    batch_size: int = field(default=128, metadata=_h("sequences decoded together"))
    seed: int = field(default=0, metadata=_h("random seed"))
    device: str = field(default="auto", metadata=_h("auto | cpu | cuda"))
    threads: int = field(default=1, metadata=_h("torch CPU threads"))


def protein_compare(args: ProteinCompareArgs, tracker) -> None:
    from mdm_mi.mi.guided import head_pairwise_fn
    from mdm_mi.mi.head import load_head
    from mdm_mi.domain import load_backbone
    from mdm_mi.protein.compare import ProteinCompareSpec, Scorer, calibrate_proteins, generate_test, jsd_rows
    from mdm_mi.protein.esmc import ESMCBackbone
    from mdm_mi.protein.fasta import read_fasta, validate_sequence

    setup(args.threads, args.seed)
    if args.n < 2 or args.calib_n < 1 or not args.divisors or min(args.divisors) < 1:
        raise InputError(f"need --n >= 2, --calib-n >= 1 and divisors >= 1, got {args.n}, {args.calib_n}, {args.divisors}")
    if not Path(args.reference).is_file():
        raise InputError(f"reference FASTA not found: {args.reference}")
    reference = [validate_sequence(s, name=h) for h, s in read_fasta(args.reference)]
    spec = ProteinCompareSpec(args.n, args.calib_n, tuple(args.divisors), args.temperature, args.clusters,
                              args.bootstrap, args.batch_size, args.seed)
    device = resolve_device(args.device)
    backbone, _ = load_backbone(args.model, device, domain="protein")
    head, _ = load_head(args.head, device)
    embedder = ESMCBackbone(backbone.model, args.embed_layer, backbone.bf16).to(device).eval()
    scorer = Scorer(embedder, reference, args.clusters, args.seed)
    families = standard_families(MAX_PROTEIN_TOKENS, args.mi_lambda, args.mi_on_reject, args.mi_charge_first,
                                 args.indep_tau, args.two_budget_delta)
    pairwise = head_pairwise_fn(head)
    lengths = [len(s) for s in reference]
    t0 = time.time()
    seq_passes, points = calibrate_proteins(backbone, pairwise, scorer, families, spec, lengths)
    t1 = time.time()
    runs = generate_test(backbone, pairwise, scorer, families, points, spec, lengths)
    t2 = time.time()
    rows = jsd_rows(runs, scorer, args.bootstrap, args.seed)
    out = Path(args.out_dir)
    _write(out, runs, rows, {"sequential_passes_calib": seq_passes, "seconds": {
        "calibration": t1 - t0, "generation": t2 - t1, "bootstrap": time.time() - t2}})
    tracker.log_params({"n": args.n, "calib_n": args.calib_n, "divisors": list(args.divisors)})
    tracker.log_metrics({f"{r['first']}-{r['second']}.1_{r['divisor']}.diff": r["diff"] for r in rows})
    tracker.log_artifact(out / "budgets.md")


def run_fasta(out: Path, run_id: str) -> Path:
    """Where the generated sequences of run ``run_id`` (e.g. ``mi λ=1@1/4``) are written."""
    return Path(out) / "fasta" / (run_id.replace("/", "_").replace(" ", "_").replace("=", "") + ".fasta")


def _write(out: Path, runs: dict, rows: list[dict], meta: dict) -> None:
    """runs.json, budgets.csv, budgets.md and one FASTA per run."""
    from mdm_mi.budgets import write_csv
    from mdm_mi.protein.fasta import write_fasta

    summary = {k: {f: v for f, v in r.items() if f not in ("seqs", "passes", "emb")}
               | {"mean_passes": float(np.mean(r["passes"])), "n": len(r["seqs"])} for k, r in runs.items()}
    write_json(out / "runs.json", meta | {"runs": summary})
    for name, r in runs.items():
        write_fasta(run_fasta(out, name),
                    [(f"gen{i} passes={p}", s) for i, (s, p) in enumerate(zip(r["seqs"], r["passes"]))])
    write_csv(rows, out / "budgets.csv", ROW_FIELDS)
    write_text(out / "budgets.md", protein_markdown(summary, rows))


def protein_markdown(summary: dict, rows: list[dict]) -> str:
    """Cluster JSD (bits; plug-in [basic 95%]) @ mean passes of every family at each budget, then
    ``mi*`` minus each baseline (whole-metric bootstrap; negative = closer to the reference)."""
    from mdm_mi.budgets import BEST_MI, OFF_TARGET, OFF_TARGET_NOTE

    def cell(r):
        mark = "" if r.get("on_target", True) else OFF_TARGET
        return f"{r['jsd']:.3f} [{r['jsd_lo']:.3f}, {r['jsd_hi']:.3f}] @ {r['mean_passes']:.1f}{mark}"

    budgets = sorted({r["divisor"] for r in summary.values() if r["family"] != "sequential"})
    families = list(dict.fromkeys(r["family"] for r in summary.values() if r["family"] != "sequential"))
    seq = summary["sequential"]
    lines = [f"**protein** ({seq['n']} sequences per setting; sequential {cell(seq)})", "",
             "| budget (target passes) | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for d in budgets:
        at = {r["family"]: r for r in summary.values() if r["divisor"] == d}
        target = next(iter(at.values()))["target"]
        lines.append(f"| 1/{d} ({target:.1f}) | " + " | ".join(cell(at[f]) if f in at else "" for f in families) + " |")
    if any(not r.get("on_target", True) for r in summary.values()):
        lines += ["", OFF_TARGET_NOTE]
    mine = [r for r in rows if r["first"] == BEST_MI]
    seconds = list(dict.fromkeys(r["second"] for r in mine))
    lines += ["", f"{BEST_MI} minus each baseline in cluster JSD (bits; basic bootstrap 95%, k-means refit; p):", "",
              "| budget | " + " | ".join(seconds) + " |", "|---|" + "---|" * len(seconds)]
    for d in budgets:
        rs = {r["second"]: r for r in mine if r["divisor"] == d}
        lines.append(f"| 1/{d} | " + " | ".join(
            f"{rs[s]['diff']:+.3f} [{rs[s]['lo']:+.3f}, {rs[s]['hi']:+.3f}] p={rs[s]['p_value']:.2g} **{rs[s]['verdict']}**"
            if s in rs else "" for s in seconds) + " |")
    return "\n".join(lines) + "\n"
