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

from mdm_mi.cli import verb
from mdm_mi.errors import InputError
from mdm_mi.io import atomic_path, write_json
from mdm_mi.runtime import resolve_device, setup


def _h(text: str) -> dict:
    return {"help": text}


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


def draw_contexts(sequences: np.ndarray, n_contexts: int, mask_id: int, seed: int):
    """The fixed draw: ``n_contexts`` sequences (with replacement if needed) masked at t ~ U[0,1]
    (paper: contexts masked at t ~ U[0, 1]) → contexts ``(C, N)`` and t ``(C,)``."""
    from mdm_mi.mi.probe import mask_contexts

    gen = torch.Generator().manual_seed(seed)
    replace = n_contexts > len(sequences)
    idx = torch.randperm(len(sequences), generator=gen)[:n_contexts] if not replace else \
        torch.randint(len(sequences), (n_contexts,), generator=gen)
    return mask_contexts(torch.as_tensor(sequences[idx.numpy()], dtype=torch.long), mask_id, gen)


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
    backbone, _ = load_backbone(args.model, device)
    if not Path(args.sequences).is_file():
        raise InputError(f"sequence file not found: {args.sequences}")
    contexts, t = draw_contexts(np.load(args.sequences, allow_pickle=False), args.n_contexts,
                                backbone.mask_id, args.seed)
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
