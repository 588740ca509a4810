"""The ``protein-compare`` verb: every parallel sampler calibrated to sequential's passes ÷ 2…10, then
as many proteins as the reference holds generated at each budget and compared by cluster JSD with a
whole-metric bootstrap (see :mod:`mdm_mi.protein.compare`).

    python -m mdm_mi protein-compare --model results/x/protein/model --head results/x/protein/head \
        --reference results/x/protein/data/reference.fasta --out-dir results/x/protein/budgets ...

Writes ``runs.json`` (settings, passes, JSD of every run), ``budgets.csv`` / ``budgets.md`` and the
generated sequences under ``fasta/``. The workflow splits the decoding into one job per part
(``protein-compare-part``: sequential, or one calibrated family) and merges them here:

    python -m mdm_mi protein-compare-part --part eb --model ... --out-dir results/x/protein/budgets/parts/eb ...
    python -m mdm_mi protein-compare --parts results/x/protein/budgets/parts/* --model ... --out-dir ...
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.core.backbone import embedder_of, for_decoding
from mdm_mi.core.sampler_table import (ATTENTION, SAMPLERS, TV_HEAD, ProteinSweptFlags, comparison_settings, refuse_quality,
                                      swept_settings)
from mdm_mi.evaluation.budgets import BEST_MI, OFF_TARGET, OFF_TARGET_NOTE, by_budget, off_budget, write_csv
from mdm_mi.evaluation.calibrate import comparison_families
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import write_fasta
from mdm_mi.infra.flags import ComparisonFlags, HeadFlag, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.io import write_json, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.models.loading import SEQUENCES, load_mi_head, load_model, load_model_and_head
from mdm_mi.mi.guided import head_pairwise_fn
from mdm_mi.evaluation.parts import PART_FILE, part_names, read_parts, write_part
from mdm_mi.protein.compare import (EMB_FILE, PART_ARRAYS, ProteinCompareSpec, SEQUENTIAL, Scorer, calibration_lengths,
                                    jsd_rows, run_fasta, run_part)
from mdm_mi.protein.decode_flags import DecodeFlags, GenerateFlags
from mdm_mi.protein.metrics import p_text
from mdm_mi.protein.generate import reference_lengths
from mdm_mi.protein.flags import ProteinDecodeJobFlags
from mdm_mi.protein.sequences import read_reference
from mdm_mi.sampling.registry import SAMPLER_CLASSES

ROW_FIELDS = ["set", "divisor", "first", "second", "passes_first", "passes_second", "jsd_first", "jsd_second", "diff",
              "lo", "hi", "p_value", "verdict", "n_boot"]
MAX_PROTEIN_TOKENS = 100  # longest generated protein (reference lengths 50-100): naive k's upper end


@dataclass(frozen=True, kw_only=True)
class ProteinCompareFlags(GenerateFlags, ComparisonFlags, ProteinSweptFlags):
    """What makes one comparison, given to each part and the merge, every flag with the schema's default:
    config ``protein.compare`` (but the merge's bootstrap), the MI-guided rule's ``protein.samplers``
    settings, ``protein.generate`` (inherited) and the swept settings (generated, ``ProteinSweptFlags``)."""

    n: int = from_schema("protein.generate.n", "sequences generated (per sampler setting)", low=2)
    calib_n: int = from_schema("protein.compare.calib_n", "calibration sequences (their lengths drawn apart from the test's)",
                               low=1)
    divisors: tuple[int, ...] = shared_from_schema(ComparisonFlags, "protein.compare.divisors")
    on_reject: str = shared_from_schema(ComparisonFlags, "protein.samplers.mi_on_reject", "on_reject")
    charge_first: bool = shared_from_schema(ComparisonFlags, "protein.samplers.mi_charge_first", "charge_first")


@dataclass(frozen=True)
class ProteinCompareBase(ProteinCompareFlags, ProteinDecodeJobFlags, HeadFlag):
    """The arguments of both verbs: the flags, the inputs and the output folder, seed and device."""

    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.compare", "protein.generate", "protein.samplers")

    reference: Path = field(metadata=_h("reference FASTA: lengths are drawn from it and JSD is taken against it"))
    embedder: Path | None = field(default=None, kw_only=True, metadata=_h(
        "model folder embedding for the JSD metric (default: --model; a column model needs one)"))
    calib_seed: int | None = field(default=None, kw_only=True, metadata=_h(
        "seed of the calibration lengths and decodes (default: --seed); a second value re-calibrates every "
        "sampler on the same test decodes' seed (the two-seed check)"))
    tv_head: Path | None = field(default=None, kw_only=True, metadata=_h(
        "TV head folder (train-head --target tv): needed by the families that read it (demask, mi-tv)"))


@dataclass(frozen=True)
class ProteinCompareArgs(ProteinCompareBase):
    bootstrap: int = from_schema("protein.compare.bootstrap", "whole-metric bootstrap replicates (k-means refit in each)",
                                 kw_only=True)
    parts: tuple[Path, ...] = field(default=(), metadata=_h(
        "protein-compare-part folders to merge (one per part: sequential and each family); none: decode every part here"))


@dataclass(frozen=True)
class HfCompareArgs(ProteinCompareArgs):
    """``hf-compare``: ``protein-compare``'s arguments, fed from the ``hf`` sections of the config."""

    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("hf.compare", "hf.generate", "hf.samplers")


@dataclass(frozen=True)
class ProteinComparePartArgs(ProteinCompareBase):
    part: str = field(kw_only=True, metadata=_h(
        "the part to run: 'sequential', or one calibrated family by its slug (naive, eb, threshold, mi-l1, ...)"))


def _check(args: ProteinCompareBase) -> list[str]:
    """One-line errors for bad arguments → the reference sequences."""
    if not Path(args.reference).is_file():
        raise InputError(f"reference FASTA not found: {args.reference}")
    return read_reference(args.reference)


def _spec(args: ProteinCompareBase):
    return ProteinCompareSpec(args.n, args.calib_n, tuple(args.divisors), DecodeFlags.of(args), args.clusters,
                              args.batch_size, args.seed, args.calib_seed)


def _families(args: ProteinCompareBase):
    refuse_quality(comparison_settings(args))
    families = comparison_families(MAX_PROTEIN_TOKENS, args, SAMPLER_CLASSES)
    tv = [f.label for f in families if SAMPLERS[f.sampler].pairwise == TV_HEAD]
    if tv and args.tv_head is None:
        raise InputError(f"families {', '.join(tv)} read the TV head: pass --tv-head (or no values for them)")
    return families


def _check_attention(backbone, families) -> None:
    """A family reading the attention (DAPD) needs a backbone that exposes it: one line otherwise."""
    dapd = [f.label for f in families if SAMPLERS[f.sampler].pairwise == ATTENTION]
    if dapd and not hasattr(backbone, "capture_attention"):
        raise InputError(f"families {', '.join(dapd)} read the attention, which {type(backbone).__name__} does not "
                         "expose (DAPD runs on ESM-C and Hugging Face models; docs/record/rivals.md)")


def comparison_parts(args: ProteinCompareBase) -> list[str]:
    """The parts of this comparison: sequential, then every calibrated family's slug."""
    return part_names(_families(args))


def _merged(args: ProteinCompareArgs) -> dict[str, dict]:
    """The runs of the ``--parts`` folders (passes as arrays, as one job keeps them)."""
    runs, _ = read_parts(args.parts, _part_key(args), comparison_parts(args), PART_ARRAYS, EMB_FILE, "protein-compare-part")
    return {k: r | {"passes": np.asarray(r["passes"])} for k, r in runs.items()}


def _load(args: ProteinCompareBase, reference: list[str]):
    """Backbone, the MI head's pairwise function, the JSD scorer (k-means fitted on the reference) and
    the TV head's pairwise function (None without ``--tv-head``)."""
    device = resolve_device(args.device)
    backbone, head = load_model_and_head(args.model, args.head, device, SEQUENCES)
    tv = load_mi_head(args.tv_head, device, backbone, args.model, target="tv") if args.tv_head else None
    source = backbone if args.embedder is None else load_model(args.embedder, device, SEQUENCES)[0]
    embedder = embedder_of(source, args.embed_layer)
    return (for_decoding(backbone, args.bf16), head_pairwise_fn(head), Scorer(embedder, reference, args.clusters, args.seed),
            head_pairwise_fn(tv) if tv is not None else None)


def _run_parts(args: ProteinCompareBase, names: list[str], reference: list[str], loaded) -> dict[str, dict]:
    """The runs of the named parts, decoded here with ``loaded`` (:func:`_load`'s four) → run id →
    run (see :func:`mdm_mi.protein.compare.run_part`)."""
    backbone, pairwise, scorer, tv_fn = loaded
    by_slug = {f.slug: f for f in _families(args)}
    families = [by_slug[n] for n in names if n != SEQUENTIAL]
    _check_attention(backbone, families)
    return run_part(backbone, pairwise, scorer, families, _spec(args), reference_lengths(backbone, reference),
                    sequential=SEQUENTIAL in names, tv_fn=tv_fn)


def protein_compare_part(args: ProteinComparePartArgs, tracker) -> None:
    """One part of a comparison, for ``protein-compare --parts``: ``part.json`` (settings, the runs'
    sequences, passes and JSD) and ``emb.npz`` (their embeddings, one array per run)."""
    setup(args.threads, args.seed)
    reference = _check(args)
    names = comparison_parts(args)
    if args.part not in names:
        raise InputError(f"unknown --part {args.part!r}; this comparison's parts: {', '.join(names)}")
    t0 = time.time()
    runs = _run_parts(args, [args.part], reference, _load(args, reference))
    out = Path(args.out_dir)
    write_part(out, runs, {"part": args.part, "spec": _part_key(args), "seconds": time.time() - t0}, PART_ARRAYS, EMB_FILE)
    tracker.log_params({"part": args.part, "n": args.n, "calib_n": args.calib_n})
    tracker.log_artifact(out / PART_FILE)


def protein_compare(args: ProteinCompareArgs, tracker) -> None:
    """Every part decoded here, or (``--parts``) the parts' runs read back; then the JSD bootstrap of
    every contender against every baseline, and the tables."""
    setup(args.threads, args.seed)
    reference = _check(args)
    t0 = time.time()
    merged = _merged(args) if args.parts else None  # checked before loading
    loaded = _load(args, reference)
    runs = merged if merged is not None else _run_parts(args, comparison_parts(args), reference, loaded)
    scorer, t1 = loaded[2], time.time()
    rows = jsd_rows(runs, scorer, args.bootstrap, args.seed)
    seq_passes = float(np.mean(calibration_lengths(reference_lengths(loaded[0], reference), _spec(args))))
    out = Path(args.out_dir)
    _write(out, runs, rows, {"sequential_passes_calib": seq_passes, "seconds": {
        "parts" if args.parts else "decoding": t1 - t0, "bootstrap": time.time() - t1}})
    tracker.log_params({"n": args.n, "calib_n": args.calib_n, "divisors": list(args.divisors)})
    tracker.log_metrics({f"{r['first']}-{r['second']}.1_{r['divisor']}.diff": r["diff"] for r in rows})
    tracker.log_artifact(out / "budgets.md")


# --- parts on disk ------------------------------------------------------------------------------------

# What makes parts one comparison: every ProteinCompareFlags setting a part's runs depend on, and the
# seed. Left out: how many sequences decode together, and the families' swept lists (λ, ε, θ, ...):
# a part is one value of one list, named by its slug, and its runs (calibration, test draws, seeds) do
# not change with the other values, so a comparison with one more ε decodes only that ε's part.
SWEPT_LISTS = frozenset(s.key for s in swept_settings())
PART_KEYS = (*(f.name for f in fields(ProteinCompareFlags) if f.name != "batch_size" and f.name not in SWEPT_LISTS),
             "seed")


def _part_key(args: ProteinCompareBase) -> dict:
    """The settings every part of one comparison shares (the model, head and reference are the rule's
    inputs); a calibration seed of its own joins them only when given (parts of the default are unchanged)."""
    key = {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(args, k)) for k in PART_KEYS)}
    return key | ({"calib_seed": args.calib_seed} if args.calib_seed is not None else {})


def _write(out: Path, runs: dict, rows: list[dict], meta: dict) -> None:
    """runs.json, budgets.csv, budgets.md and one FASTA per run."""
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
    off = off_budget(by_budget(summary))
    if off:
        lines += ["", OFF_TARGET_NOTE]
    mine = [r for r in rows if r["first"] == BEST_MI]
    seconds = list(dict.fromkeys(r["second"] for r in mine))
    lines += ["", f"{BEST_MI} minus each baseline and each other contender in cluster JSD (bits; basic bootstrap 95%, "
              f"k-means refit; p; {OFF_TARGET}: that family is off its budget, so not at the same passes):", "",
              "| budget | " + " | ".join(seconds) + " |", "|---|" + "---|" * len(seconds)]
    for d in budgets:
        rs = {r["second"]: r for r in mine if r["divisor"] == d}
        lines.append(f"| 1/{d} | " + " | ".join(
            f"{rs[s]['diff']:+.3f} [{rs[s]['lo']:+.3f}, {rs[s]['hi']:+.3f}] {p_text(rs[s]['p_value'], rs[s].get('n_boot'))} "
            f"**{rs[s]['verdict']}**"
            + (OFF_TARGET if (d, s) in off else "") if s in rs else "" for s in seconds) + " |")
    return "\n".join(lines) + "\n"
