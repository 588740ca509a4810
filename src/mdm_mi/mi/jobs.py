"""The MI verbs of the CLI: ``label`` (one shard of ground-truth probing labels) and ``train-head``.

A shard is a slice of a fixed, seeded draw of contexts, so the labels do not depend on how many
shards (jobs, GPUs, cluster nodes) share the work. The labels come in three splits: ``train`` (the
whole draw from the training sequences, ``--split all``) and the two evaluation splits ``val``
(choosing the head's size, steps and number of contexts) and ``test`` (only the reported fidelity).
Val and test are the two parts of one seeded draw of distinct contexts from distinct held-out
sequences, val the first ``--val-contexts`` of it, so the two share no sequence and no context.

    python -m mdm_mi label --model results/x/sudoku/model --sequences train_solutions.npy \
        --n-contexts 600 --shard 0 --n-shards 4 --method certified --out shard0.safetensors ...
    python -m mdm_mi label --model results/x/sudoku/model --sequences heldout_solutions.npy \
        --n-contexts 100 --split test --val-contexts 50 --shard 0 --n-shards 2 --method exact ...
    python -m mdm_mi train-head --model M --labels train/shard*.safetensors \
        --val val/shard*.safetensors --test test/shard*.safetensors --out head --fidelity f.json ...
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mdm_mi.core.backbone import check_frame, check_known_ids, full_precision, token_fingerprint
from mdm_mi.models.domains import backbone_name, get_domain
from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT, read_meta
from mdm_mi.infra.errors import BackboneError, InputError
from mdm_mi.infra.flags import BackboneFlag, FigureOut, SeededTrainRunFlags, TrainRunFlags, from_schema, h as _h
from mdm_mi.infra.schema import schema_default
from mdm_mi.infra.validate import OUT_FILE, OUT_FOLDER, TEXT, check_writable, fits_in_memory
from mdm_mi.infra.progress import Progress
from mdm_mi.infra.io import read_json, write_json, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.models.loading import head_stamp, load_mi_head, load_model, model_fingerprint
from mdm_mi.mi.contexts import (TOKEN_FILE_HINT, ContextDraw, draw_evaluation, draw_training,
                               load_label_shards, read_maskable, read_token_file, save_label_shard, shard_slice,
                               split_part)
from mdm_mi.mi.fidelity import bootstrap_over_contexts, fidelity, masked_pairs
from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, count_params, save_head, train_head
from mdm_mi.mi.labeller import check_settings, label_contexts, recorded_k
from mdm_mi.mi.figures import scatter_figure


@dataclass(frozen=True)
class LabelArgs(BackboneFlag, TrainRunFlags):
    sequences: Path = field(metadata=_h(".npy (S, N) complete token sequences to mask into contexts"))
    out: Path = field(metadata=_h("output .safetensors shard"))
    n_contexts: int | None = field(default=None, metadata=_h(
        "contexts in the whole draw (all shards; with --split val|test, val's, skipped and test's together); "
        "default: the schema's <domain>.mi train_contexts, or val_contexts + skip_contexts + test_contexts"))
    shard: int = field(default=0, metadata=_h("this shard's index, 0-based"))
    n_shards: int = field(default=1, metadata=_h("number of shards"))
    method: str | None = field(default=None, metadata=_h(
        "exact (1 + |M| V passes) | certified (fewer, error <= --tol) | topk (1 + |M| k passes, for large "
        "vocabularies; its proven bound is written beside the labels); default: the schema's <domain>.mi "
        "train_method, or eval_method with --split val|test"))
    tol: float | None = field(default=None, metadata=_h(
        "certified max abs error (nats); default: the schema's <domain>.mi.tol"))
    batch_size: int | None = field(default=None, metadata=_h(
        "sequences per backbone call; default: the schema's <domain>.mi.label_batch_size"))
    seed: int = from_schema("seed", "seed of the context draw")
    split: str = field(default="all", metadata=_h(
        "all: the whole draw, sequences drawn with replacement if too few (training labels); val | test: "
        "the first --val-contexts | the rest of one draw of distinct contexts from distinct sequences"))
    val_contexts: int | None = field(default=None, metadata=_h(
        "with --split val|test: contexts of the draw that go to val; default: the schema's <domain>.mi.val_contexts"))
    skip_contexts: int = field(default=0, metadata=_h(
        "with --split val|test: contexts after val that go to neither (spent on earlier choices)"))
    k: int | None = field(default=None, metadata=_h(
        "with --method topk: values probed per masked position (>= 1; default: the schema's <domain>.mi.topk_k; "
        "exact and certified ignore it, and their JSON records k as null)"))


MI_SECTIONS = {"sudoku": "sudoku.mi", "protein": "protein.mi"}  # a model's domain → its labels' and head's section
OTHER_MI_SECTION = "hf.mi"  # every other domain (hf, a registered one) is sized like a Hugging Face model


def mi_default(domain: str, key: str):
    """The schema's default of ``key`` (``"tol"``, ``"head.hidden"``) for a model of ``domain``: what the
    workflow passes that model's ``label`` and ``train-head`` jobs."""
    return schema_default(f"{MI_SECTIONS.get(domain, OTHER_MI_SECTION)}.{key}")


def schema_filled(args, domain: str, keys: dict[str, str]):
    """``args`` with each flag left out (None) of ``keys`` (flag → config key under the domain's ``mi``
    section) set to the schema's default for ``domain``; one line names what was filled."""
    filled = {name: mi_default(domain, key) for name, key in keys.items() if getattr(args, name) is None}
    if filled:
        words = " ".join(f"--{n.replace('_', '-')} {v}" if not isinstance(v, bool) else
                         f"--{'' if v else 'no-'}{n.replace('_', '-')}" for n, v in filled.items())
        print(f"defaults of {MI_SECTIONS.get(domain, OTHER_MI_SECTION)} (the schema's): {words}", flush=True)
    return dataclasses.replace(args, **filled)


def label_settings(args: LabelArgs, domain: str) -> LabelArgs:
    """``args`` with the flags left out set as the workflow sets them for a model of ``domain``
    (``label_options`` in workflow/rules/common.smk): the training draw's size and method, or val's,
    skipped and test's parts of the held-out draw, and the labeller's tolerance, batch and top-k k."""
    held_out = args.split != "all"
    keys = {"method": "eval_method" if held_out else "train_method", "tol": "tol", "batch_size": "label_batch_size"}
    keys |= {"val_contexts": "val_contexts"} if held_out else {}
    args = schema_filled(args, domain, keys)
    if not held_out:
        args = dataclasses.replace(args, val_contexts=args.val_contexts or 0)
    if args.n_contexts is None:
        n = (args.val_contexts + args.skip_contexts + mi_default(domain, "test_contexts") if held_out
             else mi_default(domain, "train_contexts"))
        print(f"--n-contexts {n} (the schema's {'val + skip + test' if held_out else 'train'} contexts)", flush=True)
        args = dataclasses.replace(args, n_contexts=n)
    return schema_filled(args, domain, {"k": "topk_k"}) if args.method == "topk" else args


def draw_split(args: LabelArgs, sequences: np.ndarray, mask_id: int, vocab_ids=None,
               maskable: np.ndarray | None = None) -> ContextDraw:
    """``args.split``'s part of its seeded draw (before sharding): the whole training draw, or val's
    or test's part of the evaluation draw (the same draw in both jobs); ``maskable`` as in
    :func:`mdm_mi.mi.contexts.draw_training`."""
    part = split_part(args.split, args.n_contexts, args.val_contexts, args.skip_contexts)
    if args.split == "all":
        return draw_training(sequences, args.n_contexts, mask_id, args.seed, vocab_ids, maskable)
    return draw_evaluation(sequences, args.n_contexts, mask_id, args.seed, vocab_ids, maskable).part(part)


TOKEN_STAMP_KEYS = ("token_fingerprint", "model_fingerprint")  # a token file's stamp: hf-data's key, its old name


def check_encoded_for(backbone, path: Path, sequences: np.ndarray) -> None:
    """The token file was encoded for this model: its ``.json`` stamp (``hf-data`` writes one) names
    this model's token fingerprint, every id in it is one the model reads, and every row is a whole
    encoded sequence (BOS first, an EOS); one line naming the file otherwise."""
    stamp = path.with_suffix(".json")
    data = read_json(stamp) if stamp.is_file() else {}
    found = next((data[k] for k in TOKEN_STAMP_KEYS if k in data), None) if isinstance(data, dict) else None
    if found is not None and found != token_fingerprint(backbone):
        raise InputError(f"{path} was encoded for another model (token fingerprint {found}, this model's "
                         f"{token_fingerprint(backbone)}; see {stamp}): encode it with hf-data --model for this model")
    check_known_ids(backbone, torch.as_tensor(sequences), str(path))
    try:
        check_frame(backbone, torch.as_tensor(sequences))
    except BackboneError:
        raise InputError(f"{path} has rows that do not start with the model's BOS or hold no EOS: a token file holds "
                         f"whole encoded sequences (BOS, tokens, EOS, pads); {TOKEN_FILE_HINT}") from None


def context_bytes(length: int, n_shards: int) -> int:
    """Memory one context of ``length`` tokens takes while labelling: the draw's tokens, mask and time
    (every context) and, for the share one shard holds, its label, bound and mask matrices."""
    return 24 * length + -(-12 * length * length // n_shards)


def _mean_over_pairs(values: torch.Tensor, masked: torch.Tensor) -> float:
    """Mean of ``values (C, N, N)`` over the shard's masked pairs ``i != j`` (``masked (C, N)``); 0 if none."""
    off = ~torch.eye(masked.shape[1], dtype=torch.bool, device=masked.device)
    pairs = masked[:, :, None] & masked[:, None] & off
    return float(values[pairs].double().mean()) if pairs.any() else 0.0


BOUND_SHARE_WARN = 0.25  # a top-k bound above this share of the mean label: the labels are mostly slack


def bound_note(args: LabelArgs, stats: dict) -> dict:
    """Top-k's verdict on its own labels: ``bound_share``, the mean bound's share of the mean label (the
    label is the certified lower bound plus the bound, so the share is the part of each label that the
    backbone never certified), and ``bound_warning`` when it exceeds :data:`BOUND_SHARE_WARN`, printed as
    one warning line; nothing for the other methods (their bound is at most ``--tol``, which the user chose)."""
    if args.method != "topk":
        return {}
    bound, label = stats["mean_bound"], stats["mean_label"]
    share = bound / label if label > 0 else (1.0 if bound > 0 else 0.0)
    warn = share > BOUND_SHARE_WARN
    if warn:
        print(f"warning: label --method topk --k {args.k}: the bound is {share:.0%} of the mean label ({bound:.3g} of "
              f"{label:.3g} nats; only {max(label - bound, 0):.3g} certified), so these labels say little about the "
              "MI; raise --k or use --method certified", file=sys.stderr, flush=True)
    return {"bound_share": share, "bound_warning": warn}


def label(args: LabelArgs, tracker) -> None:
    """Label one shard; the shard (its metadata) and its JSON carry the labelling model's fingerprint."""
    setup(args.threads, args.seed)
    args = label_settings(args, read_meta(args.model).get("domain", ""))
    split_part(args.split, args.n_contexts, args.val_contexts, args.skip_contexts)  # bad split flags fail before any loading
    check_settings(args.method, args.k, args.tol, args.batch_size)
    device = resolve_device(args.device)
    sequences = read_token_file(Path(args.sequences))
    fits_in_memory("--n-contexts", args.n_contexts, context_bytes(sequences.shape[-1], args.n_shards))
    model, meta = load_model(args.model, device)
    backbone = full_precision(model)
    check_encoded_for(backbone, Path(args.sequences), sequences)
    stamp = {MODEL_FINGERPRINT: model_fingerprint(args.model, meta), "model": str(args.model)}
    maskable = read_maskable(Path(args.sequences), sequences)  # None: every vocabulary token is maskable
    draw = draw_split(args, sequences, backbone.mask_id, backbone.vocab_token_ids, maskable)
    shard = draw.part(shard_slice(len(draw.contexts), args.shard, args.n_shards))
    start = time.time()
    line = Progress(f"labels ({args.split} shard {args.shard}): context", len(shard.contexts))
    out = label_contexts(backbone, shard.contexts.to(device), args.method, args.tol, args.batch_size,
                         progress=lambda d, n: print(line(d), flush=True), k=args.k)
    tensors = {k: v.cpu().contiguous() for k, v in out.items()}
    tensors |= {"contexts": shard.contexts, "t": shard.t, "sequence_row": shard.rows.contiguous()}
    save_label_shard(Path(args.out), tensors, stamp)
    stats = {"split": args.split, "method": args.method, "k": recorded_k(args.method, args.k),
             "contexts": len(shard.contexts), "seconds": time.time() - start, "passes_total": int(out["passes"].sum()),
             "max_bound": float(out["bound"].max()) if len(out["bound"]) else 0.0,
             "mean_bound": _mean_over_pairs(out["bound"], out["masked"]),
             "mean_label": _mean_over_pairs(out["label"], out["masked"]),
             "gap_mean": float(out["gap_mean"].mean()) if len(out["gap_mean"]) else 0.0}
    stats |= bound_note(args, stats) | stamp
    write_json(Path(args.out).with_suffix(".json"), stats)
    tracker.log_params(dataclasses.asdict(args))
    tracker.log_metrics({k: v for k, v in stats.items()
                         if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "k"})


@dataclass(frozen=True)
class TrainHeadArgs(SeededTrainRunFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = (
        "sudoku.mi.head", "sudoku.mi.head_train", "protein.mi.head", "protein.mi.head_train", "hf.mi.head", "hf.mi.head_train")

    model: Path = field(metadata=_h("frozen backbone checkpoint folder"))
    labels: tuple[Path, ...] = field(metadata=_h("training label shards (.safetensors)"))
    out: Path = field(metadata=_h("output head checkpoint folder", kind=OUT_FOLDER))
    val: tuple[Path, ...] = field(default=(), metadata=_h(
        "validation label shards: the history's val_mse and the val fidelity (for choosing the head); optional"))
    test: tuple[Path, ...] = field(default=(), metadata=_h(
        "test label shards: the reported fidelity and the pairs CSV; optional (without them val is reported, "
        "without either the fidelity is in-sample only)"))
    fidelity: Path | None = field(default=None, metadata=_h(
        "fidelity JSON: 'test' (the reported numbers) and 'val'; default: beside the head, <out>_fidelity.json",
        kind=OUT_FILE))
    pairs: Path | None = field(default=None, metadata=_h(
        "CSV of held-out (label, prediction) pairs for the scatter figure; default: beside the head, <out>_pairs.csv",
        kind=OUT_FILE))
    hidden: int | None = field(default=None, metadata=_h("head MLP width; default: the schema's <domain>.mi.head.hidden"))
    heads: int | None = field(default=None, metadata=_h("bilinear heads; default: the schema's <domain>.mi.head.heads"))
    rank: int | None = field(default=None, metadata=_h(
        "rank of each bilinear head; default: the schema's <domain>.mi.head.rank"))
    unary: bool | None = field(default=None, metadata=_h(
        "add the per-position term u_i + u_j; default: the schema's <domain>.mi.head.unary"))
    steps: int | None = field(default=None, metadata=_h("optimiser steps; default: the schema's <domain>.mi.head_train.steps"))
    batch_size: int | None = field(default=None, metadata=_h(
        "contexts per step; default: the schema's <domain>.mi.head_train.batch_size"))
    lr: float | None = field(default=None, metadata=_h("learning rate; default: the schema's <domain>.mi.head_train.lr"))
    weight_decay: float | None = field(default=None, metadata=_h(
        "AdamW weight decay; default: the schema's <domain>.mi.head_train.weight_decay"))
    distance_buckets: int | None = field(default=None, metadata=_h(
        "learned score per separation |i-j| < K (0 = none); default: the schema's <domain>.mi.head.distance_buckets"))
    target: str = field(default="mi", metadata=_h(
        "mi: the MI labels | tv: DEMASK's TV target from the same shards, symmetrised (docs/record/rivals.md)"))


MAX_SCATTER_PAIRS = 20000  # test pairs written for the scatter figure
REPORTED_SPLIT = "test"  # the fidelity JSON's reported split; "val" is for choosing the head
EVAL_SPLITS = ("val", "test")  # the fidelity JSON's per-split entries
PREDICT_BATCH = 256  # contexts per head call when predicting a split
FEATURE_BATCH = 512  # contexts per backbone call when extracting features


def _write_pairs(path, pred, label, masked, seed: int) -> None:
    """A seeded sample of (test) masked pairs i < j as CSV (label, prediction)."""
    sel = masked_pairs(masked)
    lab, prd = label[sel], pred[sel]
    idx = torch.randperm(len(lab), generator=torch.Generator().manual_seed(seed))[:MAX_SCATTER_PAIRS]
    lines = ["label,prediction"] + [f"{a:.6g},{b:.6g}" for a, b in zip(lab[idx].tolist(), prd[idx].tolist())]
    write_text(path, "\n".join(lines) + "\n")


def _predict(head, feats: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """The head's ``(C, N, N)`` prediction for features ``(C, N, D)``, on the CPU."""
    with torch.inference_mode():
        return torch.cat([head(f, m) for f, m in zip(feats.split(PREDICT_BATCH),
                                                     masked.to(feats.device).split(PREDICT_BATCH))]).cpu()


def load_splits(backbone, paths: dict[str, tuple[Path, ...]], target: str, fingerprint: str, model: Path,
                device) -> tuple[dict[str, dict], dict[str, torch.Tensor]]:
    """Each split's label shards (checked against the model's ``fingerprint``) and the backbone's
    features of its contexts ``(C, N, D)``, by split name."""
    splits = {name: load_label_shards(p, target, backbone, fingerprint, model) for name, p in paths.items()}
    feats = {name: backbone_features(backbone, split["contexts"].to(device), FEATURE_BATCH).clone()
             for name, split in splits.items()}
    return splits, feats


def split_fidelity(head, feats: torch.Tensor, split: dict, structure) -> tuple[torch.Tensor, dict]:
    """The head's prediction on one split's contexts and its fidelity there (plus ``contexts`` and
    bootstrap intervals over contexts of Pearson and Spearman)."""
    pred = _predict(head, feats, split["masked"])
    stats = fidelity(pred, split["label"], split["masked"], structure) | {"contexts": len(feats)}
    return pred, stats | bootstrap_over_contexts(pred, split["label"], split["masked"])


def flat_metrics(fid: dict) -> dict[str, float]:
    """The fidelity JSON's numbers as flat tracker metrics (``test_pearson``, ``val_mae``, ``n_params``...)."""
    splits = [name for name in (*EVAL_SPLITS, "train") if isinstance(fid.get(name), dict)]
    flat = {f"{name}_{k}": v for name in splits for k, v in fid[name].items()}
    flat |= {k: v for k, v in fid.items() if k not in splits}
    return {k: v for k, v in flat.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


HEAD_KEYS = {"hidden": "head.hidden", "heads": "head.heads", "rank": "head.rank", "unary": "head.unary",
             "distance_buckets": "head.distance_buckets", "steps": "head_train.steps",
             "batch_size": "head_train.batch_size", "lr": "head_train.lr", "weight_decay": "head_train.weight_decay"}


def train_head_settings(args: TrainHeadArgs, domain: str) -> TrainHeadArgs:
    """``args`` with the head's and training's sizes left out set to the schema's for a model of ``domain``
    (``<domain>.mi.head`` and ``.head_train``, as the workflow passes them), and the fidelity JSON and
    pairs CSV beside the head folder (``<out>_fidelity.json``, ``<out>_pairs.csv``, the workflow's names)."""
    args = schema_filled(args, domain, HEAD_KEYS)
    out = Path(args.out)
    return dataclasses.replace(args, fidelity=args.fidelity or out.with_name(out.name + "_fidelity.json"),
                               pairs=args.pairs or out.with_name(out.name + "_pairs.csv"))


def held_out_splits(args: TrainHeadArgs) -> dict[str, tuple[Path, ...]]:
    """The held-out splits given (val, test: both optional), by name; a warning line when the reported
    split (test) is missing: val is reported instead, or, without either, no held-out fidelity at all."""
    given = {name: paths for name, paths in (("val", args.val), ("test", args.test)) if paths}
    if REPORTED_SPLIT not in given:
        what = ("the val fidelity is reported instead: val chose the head, so it flatters it" if given else
                "the fidelity is measured on the training contexts only (in-sample), not on held-out ones")
        print(f"warning: train-head without --test labels: {what}; label held-out contexts with "
              "label --split test (docs/your_model.md)", file=sys.stderr, flush=True)
    return given


def train_head_job(args: TrainHeadArgs, tracker) -> None:
    """Train on ``--labels``; the history's val_mse and the ``val`` fidelity come from ``--val`` (the
    only held-out data any choice may look at), the reported ``test`` fidelity and the pairs CSV from
    ``--test``. Without held-out labels the head is still trained and saved, and its fidelity (in-sample,
    ``"reported": "train"``) says so."""
    setup(args.threads, args.seed)
    args = train_head_settings(args, read_meta(args.model).get("domain", ""))
    for flag, path in (("--fidelity", args.fidelity), ("--pairs", args.pairs)):
        check_writable(flag, Path(path))
    held_out = held_out_splits(args)
    head_cfg = HeadConfig(args.hidden, args.heads, args.rank, args.unary, args.distance_buckets)
    train_cfg = HeadTrainConfig(args.steps, args.batch_size, args.lr, args.weight_decay, args.seed)
    device = resolve_device(args.device)
    backbone, meta = load_model(args.model, device)
    fingerprint = model_fingerprint(args.model, meta)
    splits, feats = load_splits(backbone, {"train": args.labels} | held_out, args.target, fingerprint, args.model,
                                device)
    tracker.log_params(dataclasses.asdict(args))
    start = time.time()
    train, val = splits["train"], splits.get("val")
    head, history = train_head(feats["train"], train["label"], train["masked"], train_cfg, head_cfg,
                               val=None if val is None else (feats["val"], val["label"], val["masked"]),
                               log=lambda m: print(m, flush=True))
    minutes = (time.time() - start) / 60
    structure = get_domain(meta["domain"]).structure()
    reported = next((name for name in (REPORTED_SPLIT, "val") if name in held_out), "train")
    fid: dict = {"reported": reported}
    preds = {}
    for name in (*(n for n in EVAL_SPLITS if n in held_out), *(("train",) if reported == "train" else ())):
        preds[name], fid[name] = split_fidelity(head, feats[name], splits[name], structure)
    fid |= {"n_params": count_params(head), "train_contexts": len(feats["train"]), "train_minutes": minutes,
            "backbone_domain": meta["domain"], "target": args.target}
    save_head(head, args.out, {"backbone": str(args.model), "history": history, "fidelity": fid, "target": args.target}
              | head_stamp(args.model, meta))
    write_json(args.fidelity, fid)
    shown = splits[reported]
    _write_pairs(args.pairs, preds[reported], shown["label"], shown["masked"], args.seed)
    print(f"head: {args.out}; fidelity ({reported}): {args.fidelity}; pairs: {args.pairs}", flush=True)
    for row in history:
        tracker.log_metrics({k: v for k, v in row.items() if k != "step"}, step=row["step"])
    tracker.log_metrics(flat_metrics(fid))
    tracker.log_artifact(args.fidelity)


@dataclass(frozen=True)
class HeadFidelityArgs(TrainRunFlags):
    model: Path = field(metadata=_h("the backbone checkpoint folder the head was trained on"))
    head: Path = field(metadata=_h("MI head checkpoint folder"))
    val: tuple[Path, ...] = field(metadata=_h("validation label shards"))
    test: tuple[Path, ...] = field(metadata=_h("test label shards (the reported split)"))
    out: Path = field(metadata=_h("fidelity JSON to write ('test', 'val'; each with bootstrap intervals)"))
    target: str = field(default="mi", metadata=_h("mi | tv: what the head learned"))


def head_fidelity(args: HeadFidelityArgs, tracker) -> None:
    """An existing head's fidelity on label shards, in train-head's JSON format, with bootstrap
    intervals over contexts (a head trained before intervals existed gets them without retraining)."""
    setup(args.threads, 0)
    device = resolve_device(args.device)
    backbone, meta = load_model(args.model, device)
    head = load_mi_head(args.head, device, backbone, args.model, target=args.target)
    fingerprint = model_fingerprint(args.model, meta)
    structure = get_domain(meta["domain"]).structure()
    fid: dict = {"reported": REPORTED_SPLIT, "head": str(args.head), "backbone_domain": meta["domain"],
                 "n_params": count_params(head), "target": args.target}
    splits, feats = load_splits(backbone, {"val": args.val, "test": args.test}, args.target, fingerprint,
                                args.model, device)
    for name in EVAL_SPLITS:
        _, fid[name] = split_fidelity(head, feats[name], splits[name], structure)
    write_json(args.out, fid)
    tracker.log_metrics(flat_metrics(fid))


@dataclass(frozen=True)
class ScatterArgs(FigureOut):
    pairs: Path = field(metadata=_h("test (label, prediction) CSV from train-head", kind=TEXT))
    fidelity: Path = field(metadata=_h("fidelity JSON from train-head", kind=TEXT))
    model: Path = field(metadata=_h("backbone checkpoint folder (named in the title)"))


def figure_scatter(args: ScatterArgs, tracker) -> None:
    scatter_figure(args.pairs, read_json(args.fidelity), args.out, backbone_name(args.model))
    tracker.log_artifact(args.out)
