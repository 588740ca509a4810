"""The protein-family verbs: one Pfam family (PF00014, Kunitz) as the protein data, and its scores.

    python -m mdm_mi prepare-family --a2m resources/data/protein/pf00014_kunitz_pfam_full.a2m --out-dir d \
        --identity 0.8 --n-train-contexts 2000 --n-heldout-contexts 200 --n-score 500 --seed 0
    python -m mdm_mi family-ardca --data-dir d --out d/ardca.fasta --fit d/ardca.json --seed 0
    python -m mdm_mi family-score --fasta eval/eb-g4.0.fasta --summary eval/eb-g4.0.json --row eb-g4.0 \
        --data-dir d --clusters 15 --seed 0 --out family/eb-g4.0.json
    python -m mdm_mi family-table --inputs family/*.json --out table.csv --markdown table.md

``prepare-family`` writes the files ``protein-data`` writes for the generic data, so pretraining,
labelling, generation and the comparisons run unchanged on the family:

* ``train.fasta`` — the train split's whole, unaligned sequences (the MDM trains on them uncropped);
* ``reference.fasta`` — the reference split: the JSD reference and the generated lengths;
* ``reference2.fasta`` — the validation split, a natural set cluster-disjoint from the reference
  (``generate``'s second reference);
* ``train_contexts.npy`` / ``heldout_contexts.npy`` — MI label contexts: distinct whole sequences of
  the train split / of the validation and reference splits, as token ids;
* ``train_column_contexts.npy`` / ``heldout_column_contexts.npy`` — the same for a column model
  (:mod:`~mdm_mi.protein.family.columns`): distinct aligned rows of the same pools, in its token ids;

and, for the family scores: ``{train,val,reference}.a2m`` (the splits' Pfam rows), ``floor.fasta`` and
``ceiling.fasta`` (the two reference rows of the family table, see :func:`prepare_family`),
``nonstandard.json`` (the records dropped for letters outside the 20 amino acids) and
``summary.json`` (split sizes, cluster count, the scored set size, the site-independent baselines).
``family-ardca`` adds the third reference row to the same folder: ``ardca.fasta``, the family's own
generator (:mod:`~mdm_mi.protein.family.ardca`) fitted to the train split, and ``ardca.json`` (its fit).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.core.backbone import ALIGNED, capabilities
from mdm_mi.models.domains import backbone_name
from mdm_mi.evaluation.budgets import read_csv, write_csv
from mdm_mi.evaluation.tables import setting_label, write_table
from mdm_mi.evaluation.verdicts import side_by_side
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import write_fasta
from mdm_mi.infra.reader import read_data_records
from mdm_mi.infra.flags import DeviceFlag, OutDir, TableOuts, from_schema, h as _h
from mdm_mi.infra.io import read_json, read_jsons, write_json, write_npy, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.models.loading import load_model
from mdm_mi.protein.compare import run_fasta
from mdm_mi.protein.data import write_contexts
from mdm_mi.protein.family.covariation import (FIELDS, METRICS, Reference, covariation_budgets, covariation_scale,
                                           covariation_markdown, covariation_stats, run_scores)
from mdm_mi.protein.masked_loss import MASK_RATES, masked_loss
from mdm_mi.protein.family.scores import (FAMILY_COLUMNS, family_markdown, family_rows, family_scores, hmm_frame,
                                          loss_lines, read_splits)
from mdm_mi.protein.flags import ProteinModelFlag
from mdm_mi.protein.sequences import sample_reference, validate_sequence


@dataclass(frozen=True)
class PrepareFamilyArgs(OutDir):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.data", "protein.family")

    # required though the schema names one: that path is relative to the workflow's folder (a default would name
    # no file where the verb runs elsewhere; tests/test_config.py REQUIRED_INPUTS)
    a2m: Path = field(metadata=_h("Pfam A2M alignment of the family (e.g. PF00014 Kunitz, full)"))
    identity: float = from_schema("protein.family.identity", "identity at which records join one cluster (clusters stay whole "
                                  "in a split)", kw_only=True)
    n_train_contexts: int = from_schema("protein.data.n_train_contexts", "distinct train sequences written for MI labelling",
                                        kw_only=True, low=1)
    n_heldout_contexts: int = from_schema("protein.data.n_heldout_contexts",
                                          "distinct validation/reference sequences written for MI labelling", kw_only=True,
                                          low=1)
    n_score: int = field(metadata=_h("sequences per scored set (floor, ceiling, generated); at most the training size",
                                     low=2))
    seed: int = from_schema("seed", "seed of the split and the draws", kw_only=True)


def _seqs(records) -> list[tuple[str, str]]:
    """FamilyRecords → FASTA records ``(name, whole unaligned sequence)``."""
    return [(r.name, r.sequence) for r in records]


def _distinct(records) -> list[str]:
    """The records' distinct sequences, in order (a family holds identical domains of different proteins)."""
    return list(dict.fromkeys(r.sequence for r in records))


def _split_family(args: PrepareFamilyArgs) -> tuple[dict, list[dict], int]:
    """The A2M's standard records split by identity clusters → ``(splits by name, dropped records,
    number of clusters)``; :class:`InputError` when a split would hold fewer than 2 records."""
    from mdm_mi.protein.family import alignment as fam# lazy: scipy (~1 s at every CLI start)

    kept, dropped = fam.drop_nonstandard(fam.parse_a2m(args.a2m))
    labels = fam.identity_clusters(fam.encode_columns([r.columns for r in kept]), args.identity)
    splits = dict(zip(fam.SPLIT_NAMES, fam.split_clusters(kept, labels, seed=args.seed)))
    n_clusters = int(labels.max()) + 1
    small = {k: len(v) for k, v in splits.items() if len(v) < 2}
    if small:
        raise InputError(f"{args.a2m}: too few identity clusters for an 80/5/15 split: {small} records")
    return splits, dropped, n_clusters


def _write_family_contexts(out: Path, splits: dict, args: PrepareFamilyArgs) -> dict:
    """MI label contexts (protein-data's format, one width for both files): seeded draws of distinct
    whole sequences of the train split and of the validation + reference splits → their counts."""
    width = max(len(r.sequence) for records in splits.values() for r in records) + 2
    pools = {"train": _distinct(splits["train"]), "heldout": _distinct(splits["val"] + splits["reference"])}
    counts = {}
    for name, k in (("train", args.n_train_contexts), ("heldout", args.n_heldout_contexts)):
        seqs = sample_reference(pools[name], min(k, len(pools[name])), args.seed)
        write_contexts(out / f"{name}_contexts.npy", seqs, width)
        counts[f"n_{name}_contexts"] = len(seqs)
    _write_column_contexts(out, splits, args)
    return counts


def _write_column_contexts(out: Path, splits: dict, args: PrepareFamilyArgs) -> None:
    """The column model's MI label contexts (its token ids, :func:`~mdm_mi.protein.family.columns.encode_rows`):
    seeded draws of distinct aligned rows of the same pools, ``{train,heldout}_column_contexts.npy``."""
    from mdm_mi.protein.family.columns import encode_rows  # lazy: scipy (~1 s at every CLI start)

    pools = {"train": splits["train"], "heldout": splits["val"] + splits["reference"]}
    for name, k in (("train", args.n_train_contexts), ("heldout", args.n_heldout_contexts)):
        rows = sorted({r.columns for r in pools[name]})
        picked = sample_reference([(row, row) for row in rows], min(k, len(rows)), args.seed)
        write_npy(out / f"{name}_column_contexts.npy", encode_rows([row for _, row in picked], len(rows[0])).numpy())


def prepare_family(args: PrepareFamilyArgs, tracker) -> None:
    """Parse, drop non-standard records, split by identity clusters (80/5/15, seeded) and write the
    files of the module docstring. The two reference rows of the family table are drawn here once:
    the *ceiling* is ``n`` natural training sequences (cluster-disjoint from the reference, like the
    validation split, which holds too few to score sets of the reference's size), the *floor* ``n``
    site-independent draws from the training column profile
    (:func:`~mdm_mi.protein.family.sample_profile`), with ``n = min(n_score, training size)``."""
    from mdm_mi.protein.family import alignment as fam# lazy: scipy (~1 s at every CLI start)

    splits, dropped, n_clusters = _split_family(args)
    train, val, reference = (splits[name] for name in fam.SPLIT_NAMES)
    out, n = Path(args.out_dir), min(args.n_score, len(train))
    for name, records in splits.items():
        write_fasta(out / f"{name}.a2m", [(r.name, fam.a2m_row(r)) for r in records])
    for name, records in (("train", train), ("reference", reference), ("reference2", val)):
        write_fasta(out / f"{name}.fasta", _seqs(records))
    write_fasta(out / "ceiling.fasta", sample_reference(_seqs(train), n, args.seed))
    floor = fam.sample_profile(fam.column_profile(train), n, np.random.default_rng(args.seed))
    write_fasta(out / "floor.fasta", _seqs(floor))
    contexts = _write_family_contexts(out, splits, args)
    write_json(out / "nonstandard.json", dropped)
    summary = {"source": "family", "a2m": str(args.a2m), "n_records": sum(map(len, splits.values())) + len(dropped),
               "n_dropped_nonstandard": len(dropped), "n_clusters": n_clusters, "identity": args.identity,
               **{f"n_{k}": len(v) for k, v in splits.items()}, "n_score": n, **contexts,
               "reference_mean_length": float(np.mean([len(r.sequence) for r in reference])),
               "baselines": fam.baseline_losses(train, reference)}
    write_json(out / "summary.json", summary)
    tracker.log_params(dataclasses.asdict(args))
    tracker.log_metrics({k: v for k, v in summary.items() if isinstance(v, (int, float))} | summary["baselines"])


@dataclass(frozen=True)
class FamilyArdcaArgs:
    data_dir: Path = field(metadata=_h("prepare-family's folder (train.a2m, summary.json with n_score)"))
    out: Path = field(metadata=_h("output FASTA: the family table's ardca row"))
    fit: Path = field(metadata=_h("output JSON: the fit (λ, sequences, effective sequences, seconds)"))
    seed: int = field(metadata=_h("seed of the draws"))


def family_ardca(args: FamilyArdcaArgs, tracker) -> None:
    """The third reference row of the family table: ArDCA (Trinquier et al. 2021) fitted to the train
    split with the paper's 80%-identity sequence weights, then ``n_score`` autoregressive draws (the
    size of every row), written like the floor (:func:`prepare_family`), so ``family-score`` reads them
    the same way."""
    from mdm_mi.protein.family import ardca# lazy: scipy, threadpoolctl (~1 s at every CLI start)
    from mdm_mi.protein.family.alignment import encode_columns  # lazy: scipy (~1 s at every CLI start)

    train, _, _, summary = read_splits(args.data_dir)
    codes = encode_columns([r.columns for r in train])
    weights = ardca.identity_weights(codes)
    clocks = [(time.perf_counter(), time.process_time())]  # wall and CPU: a shared machine slows the first
    model = ardca.fit(codes, weights)
    clocks.append((time.perf_counter(), time.process_time()))
    records = ardca.sample(model, summary["n_score"], np.random.default_rng(args.seed))
    clocks.append((time.perf_counter(), time.process_time()))
    write_fasta(args.out, _seqs(records))
    (fit_wall, fit_cpu), (sample_wall, sample_cpu) = (np.subtract(b, a) for a, b in zip(clocks, clocks[1:]))
    fit = {"lambda_j": ardca.LAMBDA_J, "reweight_identity": ardca.REWEIGHT_IDENTITY, "n_train": len(train),
           "n_effective": float(weights.sum()), "n": len(records), "fit_seconds": float(fit_wall),
           "fit_cpu_seconds": float(fit_cpu), "sample_seconds": float(sample_wall), "sample_cpu_seconds": float(sample_cpu)}
    write_json(args.fit, fit)
    print(f"ardca: fit {fit_wall:.1f} s (CPU {fit_cpu:.1f} s) on {len(train)} sequences ({weights.sum():.0f} "
          f"effective), {len(records)} sampled in {sample_wall:.2f} s (CPU {sample_cpu:.2f} s)", flush=True)
    tracker.log_params({"seed": args.seed, "lambda_j": ardca.LAMBDA_J, "reweight_identity": ardca.REWEIGHT_IDENTITY})
    tracker.log_metrics({k: v for k, v in fit.items() if k not in ("lambda_j", "reweight_identity")})
    tracker.log_artifact(args.fit)


@dataclass(frozen=True)
class FamilyScoreArgs:
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.generate",)

    fasta: Path = field(metadata=_h("sequences to score: generated, or floor.fasta / ceiling.fasta / ardca.fasta"))
    data_dir: Path = field(metadata=_h("prepare-family's folder (the splits' .a2m files, summary.json)"))
    row: str = field(metadata=_h("row name in the family table: a sampler run, ceiling, ardca or floor"))
    out: Path = field(metadata=_h("score JSON"))
    clusters: int = from_schema("protein.generate.clusters", "k-means k of the cluster JSD (fit on the reference, paper 15)",
                                kw_only=True)
    seed: int = from_schema("seed", "seed of k-means and the MI shuffles", kw_only=True)
    summary: Path | None = field(default=None, metadata=_h(
        "generate's summary JSON: the row's sampler, setting and mean passes"))


def _scored_sequences(fasta: Path, n: int) -> list[str]:
    """The first ``n`` sequences of ``fasta`` (every row of the table is scored at the same size)."""
    seqs = [validate_sequence(s, name=h) for h, s in read_data_records(fasta)]
    if len(seqs) < n:
        raise InputError(f"{fasta} has {len(seqs)} sequences; the family rows are scored at {n} (summary.json n_score)")
    return seqs[:n]


def _row_labels(row: str, summary: Path | None) -> dict:
    """Sampler, setting, params and mean passes of a row: from generate's summary, or the row name."""
    if summary is None:
        return {"row": row, "sampler": row, "setting": "", "params": {}, "mean_passes": None}
    if not Path(summary).is_file():
        raise InputError(f"generation summary not found: {summary}")
    s = read_json(summary)
    return {"row": row, "sampler": s["sampler"], "setting": setting_label(s["params"]), "params": s["params"],
            "mean_passes": s["mean_passes"]}


def family_score(args: FamilyScoreArgs, tracker) -> None:
    train, val, reference, summary = read_splits(args.data_dir)
    if args.clusters > len(reference):  # the lower bound, 2, is the validator's (BY_NAME)
        raise InputError(f"--clusters must lie in 2..{len(reference)} (the reference size), got {args.clusters}")
    seqs = _scored_sequences(args.fasta, summary["n_score"])
    labels = _row_labels(args.row, args.summary)
    scores = family_scores(seqs, train, val, reference, args.clusters, args.seed)
    write_json(args.out, labels | {"fasta": str(args.fasta)} | scores)
    print(f"{args.row}: " + ", ".join(f"{k} {v:.3f}" for k, v in scores.items() if k != "n"), flush=True)
    tracker.log_params({"row": args.row, "fasta": str(args.fasta), "clusters": args.clusters, "seed": args.seed})
    tracker.log_metrics({k: v for k, v in scores.items() if math.isfinite(v)})


# --- the family table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FamilyTableArgs(TableOuts):
    inputs: tuple[Path, ...] = field(metadata=_h("family-score JSONs (sampler runs, ceiling, ardca, floor)"))
    model: Path | None = field(default=None, metadata=_h("protein model folder (named in the table)"))
    loss: Path | None = field(default=None, metadata=_h("family-loss JSON: the held-out losses, stated under the table"))


def family_table(args: FamilyTableArgs, tracker) -> None:
    rows = family_rows(read_jsons(args.inputs, "family score"))
    text = family_markdown(rows, backbone_name(args.model) if args.model else "not named")
    if args.loss is not None:
        text += "\n" + loss_lines(read_jsons([args.loss], "family loss")[0])
    write_table(rows, FAMILY_COLUMNS, args.out, text, args.markdown, tracker)


# --- co-variation at calibrated budgets ---------------------------------------------------------------


@dataclass(frozen=True)
class FamilyCompareArgs:
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.family",)

    budgets_dir: Path = field(metadata=_h("protein-compare output (runs.json and fasta/)"))
    data_dir: Path = field(metadata=_h("prepare-family output (the splits' .a2m and summary.json)"))
    out_dir: Path = field(metadata=_h("output folder (covariation.csv, covariation.md, scores.json)"))
    seed: int = field(default=0, metadata=_h("seed of the jackknife groups and the MI shuffles"))
    threads: int = field(default=1, metadata=_h("worker processes of the sets' jackknife (same numbers as one)", low=1))


def family_compare(args: FamilyCompareArgs, tracker) -> None:
    """Realign every calibrated run of protein-compare and the reference to the training HMM, score
    them and write the co-variation budgets table (see :mod:`mdm_mi.protein.family.covariation`)."""
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)

    budgets = Path(args.budgets_dir)
    if not (budgets / "runs.json").is_file():
        raise InputError(f"{budgets / 'runs.json'} not found: run protein-compare first")
    train, val, reference, summary = read_splits(args.data_dir)
    runs, n = read_json(budgets / "runs.json")["runs"], summary["n_score"]
    hmm, threshold, ref_cols = hmm_frame(train, val, reference)
    ref = Reference.of(ref_cols, args.seed)
    columns, hmm_scores = {}, {}
    for run_id in runs:
        seqs = _scored_sequences(run_fasta(budgets, run_id), n)
        columns[run_id], hmm_scores[run_id] = fm.align_columns(hmm, seqs), fm.hmm_scores(hmm, seqs)
    stats = covariation_stats(columns, ref, args.seed, args.threads)
    scores = {k: run_scores(stats[k], columns[k], ref, hmm_scores[k], threshold) for k in runs}
    rows = covariation_budgets(runs, stats)
    out = Path(args.out_dir)
    write_json(out / "scores.json", {"n": n, "hmm_threshold": threshold, "scores": scores})
    write_csv(rows, out / "covariation.csv", FIELDS)
    write_text(out / "covariation.md", covariation_markdown(runs, scores, rows, n))
    tracker.log_params({"n": n})
    tracker.log_artifact(out / "covariation.md")


@dataclass(frozen=True)
class FamilyVerdictsArgs:
    runs: tuple[Path, ...] = field(metadata=_h("two or more family-compare folders, each with covariation.csv "
                                                "(e.g. results/x/protein/family and results/x/protein/family_calib1)",
                                                min_items=2))
    out: Path = field(metadata=_h("output markdown: the runs' co-variation verdicts side by side"))
    names: tuple[str, ...] = field(default=(), metadata=_h("a column name per run (default: the folder names)"))
    metric: str = field(default="corrected_mi_r", metadata=_h("corrected_mi_r (the primary metric) or c_ij_r"))


def family_verdicts(args: FamilyVerdictsArgs, tracker) -> None:
    """The verdicts of several family-compare runs (e.g. two calibration seeds) side by side, in r."""
    if args.names and len(args.names) != len(args.runs):
        raise InputError(f"--names needs one name per --runs folder: {len(args.runs)} folders, {len(args.names)} names")
    if args.metric not in METRICS:
        raise InputError(f"--metric must be one of {', '.join(METRICS)}, got {args.metric!r}")
    tables = {}
    for name, root in zip(list(args.names) or [str(r) for r in args.runs], args.runs):
        path = Path(root) / "covariation.csv"
        if not path.is_file():
            raise InputError(f"{path} not found: run family-compare first")
        tables[name] = [r for r in read_csv(path) if r["metric"] == args.metric]
    write_text(args.out, f"Metric: {args.metric}.\n\n" + side_by_side(tables, scale=covariation_scale()))
    tracker.log_artifact(args.out)


# --- the held-out masked loss ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FamilyLossArgs(ProteinModelFlag, DeviceFlag):
    data_dir: Path = field(metadata=_h("prepare-family output (reference.fasta, summary.json with the baselines)"))
    out: Path = field(metadata=_h("output JSON"))
    rates: tuple[float, ...] = field(default=MASK_RATES, metadata=_h("mask rates t", low=0, above=True, min_items=1))
    seed: int = field(default=0, metadata=_h("seed of the masks"))
    threads: int = field(default=0, metadata=_h("CPU threads (0 = torch's default)"))


def family_loss(args: FamilyLossArgs, tracker) -> None:
    data = Path(args.data_dir)
    if not (data / "summary.json").is_file() or not (data / "reference.fasta").is_file():
        raise InputError(f"{data} lacks summary.json or reference.fasta: run prepare-family first")
    setup(args.threads, args.seed)
    seqs = [validate_sequence(s, name=n) for n, s in read_data_records(data / "reference.fasta")]
    backbone, _ = load_model(args.model, resolve_device(args.device), "protein")
    backbone.eval()
    if capabilities(backbone).frame == ALIGNED:  # masked loss per match column
        return _column_loss(args, backbone, tracker)
    base = read_json(data / "summary.json")["baselines"]
    losses = {}
    for t in args.rates:
        loss, n = masked_loss(backbone, seqs, t, args.seed)
        losses[f"{t:g}"] = {"loss_nats": loss, "masked_residues": n, "vs_profile": loss - base["profile_nats"],
                            "vs_composition": loss - base["composition_nats"]}
        print(f"t={t:g}: {loss:.4f} nats over {n} residues (profile {base['profile_nats']:.4f}, "
              f"composition {base['composition_nats']:.4f})", flush=True)
    write_json(args.out, {"reference_sequences": len(seqs), "baselines": base, "losses": losses})
    tracker.log_metrics({f"loss_t{t}": v["loss_nats"] for t, v in losses.items()})


def _column_loss(args: FamilyLossArgs, backbone, tracker) -> None:
    """family-loss of a column model: its masked loss per column (21 letters, gap included) on the
    reference split's aligned rows, beside the training column profile on the same masks
    (:func:`~mdm_mi.protein.family.column_train.masked_column_loss`)."""
    from mdm_mi.protein.family.alignment import column_profile, encode_columns  # lazy: scipy (~1 s at every CLI start)
    from mdm_mi.protein.family.column_train import fixed_masks, masked_column_loss, profile_column_loss  # lazy: scipy (~1 s at every CLI start)

    train, _, reference, _ = read_splits(args.data_dir)
    codes, profile = encode_columns([r.columns for r in reference]), column_profile(train)
    losses = {}
    for t in args.rates:
        masked = fixed_masks(*codes.shape, t, args.seed)
        model, base = masked_column_loss(backbone, codes, masked), profile_column_loss(profile, codes, masked)
        losses[f"{t:g}"] = {"loss_nats": model, "profile_nats": base, "vs_profile": model - base,
                            "masked_columns": int(masked.sum())}
    for t, row in losses.items():
        print(f"t={t}: {row['loss_nats']:.4f} nats per masked column (profile {row['profile_nats']:.4f})", flush=True)
    write_json(args.out, {"space": "columns", "reference_rows": len(codes), "losses": losses})
    tracker.log_metrics({f"loss_t{t}": v["loss_nats"] for t, v in losses.items()})
