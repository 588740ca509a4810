"""The MI verbs of the CLI: ``label`` (one shard of ground-truth probing labels).

A shard is a slice of a fixed, seeded draw of contexts, so the labels do not depend on how many
shards (jobs, GPUs, cluster nodes) share the work.

    python -m mdm_mi label --model results/x/sudoku/model --sequences train_solutions.npy \
        --n-contexts 600 --shard 0 --n-shards 4 --method certified --out shard0.safetensors ...
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mdm_mi.cli import h as _h, verb
from mdm_mi.errors import InputError
from mdm_mi.io import atomic_path, write_json, write_text
from mdm_mi.runtime import resolve_device, setup


@dataclass(frozen=True)
class LabelArgs:
    model: Path = field(metadata=_h("backbone checkpoint folder"))
    sequences: Path = field(metadata=_h(".npy (S, N) complete token sequences to mask into contexts"))
    out: Path = field(metadata=_h("output .safetensors shard"))
    n_contexts: int = field(metadata=_h("contexts in the whole draw (all shards)"))
    shard: int = field(metadata=_h("this shard's index, 0-based"))
    n_shards: int = field(metadata=_h("number of shards"))
    method: str = field(metadata=_h("exact | certified"))
    tol: float = field(metadata=_h("certified max abs error (nats)"))
    batch_size: int = field(metadata=_h("sequences per backbone call"))
    seed: int = field(metadata=_h("seed of the context draw"))
    device: str = field(metadata=_h("auto | cpu | cuda"))
    threads: int = field(metadata=_h("torch CPU threads"))


def draw_contexts(sequences: np.ndarray, n_contexts: int, mask_id: int, seed: int, vocab_ids=None):
    """The fixed draw: ``n_contexts`` sequences (with replacement if needed) masked at t ~ U[0,1]
    (paper: contexts masked at t ~ U[0, 1]) → contexts ``(C, N)`` and t ``(C,)``.

    With ``vocab_ids`` (the backbone's ``vocab_token_ids``) only those tokens are maskable: BOS, EOS
    and pads of protein sequences stay fixed."""
    from mdm_mi.mi.probe import mask_contexts

    gen = torch.Generator().manual_seed(seed)
    replace = n_contexts > len(sequences)
    idx = torch.randperm(len(sequences), generator=gen)[:n_contexts] if not replace else \
        torch.randint(len(sequences), (n_contexts,), generator=gen)
    seqs = torch.as_tensor(sequences[idx.numpy()], dtype=torch.long)
    fixed = None if vocab_ids is None else ~torch.isin(seqs, torch.as_tensor(vocab_ids).cpu())
    return mask_contexts(seqs, mask_id, gen, fixed)


def shard_slice(n: int, shard: int, n_shards: int) -> slice:
    """Contiguous, near-equal slice of ``range(n)`` for ``shard`` of ``n_shards``."""
    if not 0 <= shard < n_shards:
        raise InputError(f"shard {shard} is outside 0..{n_shards - 1}")
    return slice(n * shard // n_shards, n * (shard + 1) // n_shards)


@verb("label", LabelArgs, "label one shard of contexts with ground-truth probing MI")
def label(args: LabelArgs, tracker) -> None:
    from safetensors.torch import save_file

    from mdm_mi.mi.probe import label_contexts
    from mdm_mi.models import load_backbone

    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    if not Path(args.sequences).is_file():
        raise InputError(f"sequence file not found: {args.sequences}")
    backbone, _ = load_backbone(args.model, device)
    contexts, t = draw_contexts(np.load(args.sequences, allow_pickle=False), args.n_contexts,
                                backbone.mask_id, args.seed, backbone.vocab_token_ids)
    part = shard_slice(len(contexts), args.shard, args.n_shards)
    start = time.time()
    out = label_contexts(backbone, contexts[part].to(device), args.method, args.tol, args.batch_size,
                         progress=lambda d, n: print(f"context {d}/{n}", flush=True))
    tensors = {k: v.cpu().contiguous() for k, v in out.items()} | {"contexts": contexts[part], "t": t[part]}
    with atomic_path(args.out) as tmp:
        save_file(tensors, str(tmp))
    stats = {"contexts": int(part.stop - part.start), "seconds": time.time() - start,
             "passes_total": int(out["passes"].sum()), "max_bound": float(out["bound"].max()) if len(out["bound"]) else 0.0,
             "gap_mean": float(out["gap_mean"].mean()) if len(out["gap_mean"]) else 0.0}
    write_json(Path(args.out).with_suffix(".json"), stats)
    tracker.log_params(dataclasses.asdict(args))
    tracker.log_metrics(stats)


@dataclass(frozen=True)
class TrainHeadArgs:
    model: Path = field(metadata=_h("frozen backbone checkpoint folder"))
    labels: tuple[Path, ...] = field(metadata=_h("training label shards (.safetensors)"))
    heldout: tuple[Path, ...] = field(metadata=_h("held-out label shards for fidelity"))
    out: Path = field(metadata=_h("output head checkpoint folder"))
    fidelity: Path = field(metadata=_h("fidelity JSON on the held-out contexts"))
    pairs: Path = field(metadata=_h("CSV of held-out (label, prediction) pairs for the scatter figure"))
    hidden: int = field(metadata=_h("head MLP width"))
    heads: int = field(metadata=_h("bilinear heads"))
    rank: int = field(metadata=_h("rank of each bilinear head"))
    unary: bool = field(metadata=_h("add the per-position term u_i + u_j"))
    steps: int = field(metadata=_h("optimiser steps"))
    batch_size: int = field(metadata=_h("contexts per step"))
    lr: float = field(metadata=_h("learning rate"))
    weight_decay: float = field(metadata=_h("AdamW weight decay"))
    seed: int = field(metadata=_h("random seed"))
    device: str = field(metadata=_h("auto | cpu | cuda"))
    threads: int = field(metadata=_h("torch CPU threads"))
    distance_buckets: int = field(default=0, metadata=_h("learned score per separation |i-j| < K (0 = none)"))


MAX_SCATTER_PAIRS = 20000  # held-out pairs written for the scatter figure


def load_label_shards(paths) -> dict[str, torch.Tensor]:
    """Concatenate label shards → ``contexts (C, N)``, ``label (C, N, N)``, ``masked (C, N)``."""
    from safetensors.torch import load_file

    parts = []
    for p in paths:
        if not Path(p).is_file():
            raise InputError(f"label shard not found: {p}")
        parts.append(load_file(str(p)))
    return {k: torch.cat([part[k] for part in parts]) for k in ("contexts", "label", "masked")}


def structure_matrix(domain: str) -> torch.Tensor | None:
    """Known dependency structure used to score the head: Sudoku's same row/column/box pairs."""
    if domain == "sudoku":
        from mdm_mi.sudoku.grid import peer_matrix

        return torch.as_tensor(peer_matrix())
    return None


def _write_pairs(path, pred, label, masked, seed: int) -> None:
    """A seeded sample of held-out masked pairs i < j as CSV (label, prediction)."""
    from mdm_mi.mi.fidelity import masked_pairs

    sel = masked_pairs(masked)
    lab, prd = label[sel], pred[sel]
    idx = torch.randperm(len(lab), generator=torch.Generator().manual_seed(seed))[:MAX_SCATTER_PAIRS]
    lines = ["label,prediction"] + [f"{a:.6g},{b:.6g}" for a, b in zip(lab[idx].tolist(), prd[idx].tolist())]
    write_text(path, "\n".join(lines) + "\n")


@verb("train-head", TrainHeadArgs, "train the MI head on probing labels and report its fidelity")
def train_head_job(args: TrainHeadArgs, tracker) -> None:
    from mdm_mi.mi.fidelity import fidelity
    from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, count_params, save_head, train_head
    from mdm_mi.models import load_backbone

    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    backbone, meta = load_backbone(args.model, device)
    train, held = load_label_shards(args.labels), load_label_shards(args.heldout)
    feats = backbone_features(backbone, train["contexts"].to(device), 512).clone()
    hfeats = backbone_features(backbone, held["contexts"].to(device), 512).clone()
    head_cfg = HeadConfig(args.hidden, args.heads, args.rank, args.unary, args.distance_buckets)
    train_cfg = HeadTrainConfig(args.steps, args.batch_size, args.lr, args.weight_decay, args.seed)
    tracker.log_params(dataclasses.asdict(args))
    start = time.time()
    head, history = train_head(feats, train["label"], train["masked"], train_cfg, head_cfg,
                               val=(hfeats, held["label"], held["masked"]), log=lambda m: print(m, flush=True))
    with torch.inference_mode():
        pred = torch.cat([head(f, m) for f, m in zip(hfeats.split(256), held["masked"].to(device).split(256))]).cpu()
    fid = fidelity(pred, held["label"], held["masked"], structure_matrix(meta["domain"]))
    fid |= {"n_params": count_params(head), "train_contexts": len(feats), "heldout_contexts": len(hfeats),
            "train_minutes": (time.time() - start) / 60, "backbone_domain": meta["domain"]}
    save_head(head, args.out, {"backbone": str(args.model), "history": history, "fidelity": fid})
    write_json(args.fidelity, fid)
    _write_pairs(args.pairs, pred, held["label"], held["masked"], args.seed)
    for row in history:
        tracker.log_metrics({k: v for k, v in row.items() if k != "step"}, step=row["step"])
    tracker.log_metrics({k: v for k, v in fid.items() if isinstance(v, (int, float))})
    tracker.log_artifact(args.fidelity)
