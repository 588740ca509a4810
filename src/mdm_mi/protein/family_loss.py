"""Has the family model learned more than a column profile? Its held-out masked-token loss at fixed
mask rates t, beside the two site-independent baselines of :func:`mdm_mi.protein.family.baseline_losses`.

Each residue of each reference sequence is masked with probability t (seeded; BOS/EOS never), the
model sees the rest, and the loss is the mean cross-entropy (nats) of its 20 amino-acid logits over
all masked residues. The baselines ignore the context: amino-acid composition, and the alignment's
column profile (a residue scored by its match column's frequencies; insertions by composition). A
model that has learned the family's couplings beats the profile at small t, where most of the
context is visible.

    mdm-mi family-loss --model results/x/protein/model --data-dir results/x/protein/data --out loss.json
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mdm_mi.errors import InputError
from mdm_mi.flags import h
from mdm_mi.io import read_json, write_json

MASK_RATES = (0.15, 0.5, 0.9)
LOSS_BATCH = 64


@torch.inference_mode()
def masked_loss(backbone, seqs: list[str], t: float, seed: int, batch_size: int = LOSS_BATCH) -> tuple[float, int]:
    """Mean cross-entropy (nats) over residues masked at rate ``t`` → (loss, masked residues)."""
    from mdm_mi.protein.esmc import AMINO_ACIDS, MASK_CHAR

    rng = np.random.default_rng([seed, round(1000 * t)])
    masks = [rng.random(len(s)) < t for s in seqs]
    total, count = 0.0, 0
    for start in range(0, len(seqs), batch_size):
        part, mparts = seqs[start:start + batch_size], masks[start:start + batch_size]
        shown = ["".join(MASK_CHAR if m else c for c, m in zip(s, mk)) for s, mk in zip(part, mparts)]
        logp = torch.log_softmax(backbone(backbone.encode(shown)).logits, dim=-1)  # (B, N, 20)
        for b, (s, mk) in enumerate(zip(part, mparts)):
            pos = np.flatnonzero(mk)
            if len(pos):
                target = torch.tensor([AMINO_ACIDS.index(s[i]) for i in pos])
                total -= float(logp[b, torch.as_tensor(pos) + 1, target].sum())  # +1: BOS
                count += len(pos)
    return (total / count if count else math.nan), count


@dataclass(frozen=True)
class FamilyLossArgs:
    model: Path = field(metadata=h("protein model folder"))
    data_dir: Path = field(metadata=h("prepare-family output (reference.fasta, summary.json with the baselines)"))
    out: Path = field(metadata=h("output JSON"))
    rates: tuple[float, ...] = field(default=MASK_RATES, metadata=h("mask rates t"))
    seed: int = field(default=0, metadata=h("seed of the masks"))
    device: str = field(default="auto", metadata=h("auto | cpu | cuda"))
    threads: int = field(default=0, metadata=h("CPU threads (0 = torch's default)"))


def family_loss(args: FamilyLossArgs, tracker) -> None:
    from mdm_mi.domain import load_backbone
    from mdm_mi.protein.fasta import read_fasta, validate_sequence
    from mdm_mi.runtime import resolve_device, setup

    data = Path(args.data_dir)
    if not (data / "summary.json").is_file() or not (data / "reference.fasta").is_file():
        raise InputError(f"{data} lacks summary.json or reference.fasta: run prepare-family first")
    if not args.rates or not all(0 < t <= 1 for t in args.rates):
        raise InputError(f"--rates must lie in (0, 1], got {args.rates}")
    setup(args.threads, args.seed)
    seqs = [validate_sequence(s, name=n) for n, s in read_fasta(data / "reference.fasta")]
    backbone, _ = load_backbone(args.model, resolve_device(args.device), domain="protein")
    backbone.eval()
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
