"""The ``generate`` verb: unconditional proteins to FASTA with any sampler, optionally scored.

    mdm-mi generate --n 20 --sampler eb --gamma 4 --out proteins.fasta
    python -m mdm_mi generate --model results/x/protein/model --reference ref.fasta --reference2 ref2.fasta \
        --n 500 --sampler mi --gamma 4 --lam 1 --head results/x/protein/head --out gen.fasta --summary gen.json
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
from mdm_mi.io import write_json
from mdm_mi.runtime import resolve_device, setup


@dataclass(frozen=True)
class GenerateArgs:
    out: Path = field(default=Path("generated.fasta"), metadata=_h("output FASTA"))
    model: Path | None = field(default=None, metadata=_h("protein model folder (default: found in results/)"))
    n: int = field(default=10, metadata=_h("number of sequences"))
    min_length: int = field(default=50, metadata=_h("shortest length (without --reference)"))
    max_length: int = field(default=100, metadata=_h("longest length (without --reference)"))
    reference: Path | None = field(default=None, metadata=_h("FASTA: draw lengths from it and score against it"))
    reference2: Path | None = field(default=None, metadata=_h("second reference draw: the JSD noise floor"))
    clusters: int = field(default=15, metadata=_h("k-means clusters of the JSD metric (paper: 15)"))
    embed_layer: int = field(default=-1, metadata=_h("embedder block mean-pooled for the metric"))
    embedder: Path | None = field(default=None, metadata=_h("model folder embedding for the metric (default: --model)"))
    summary: Path | None = field(default=None, metadata=_h("summary JSON (passes and metrics)"))
    sampler: str = field(default="sequential", metadata=_h("sequential | naive | eb | mi | mi-oracle"))
    order: str = field(default="entropy", metadata=_h("sequential: entropy | margin"))
    k: int = field(default=0, metadata=_h("naive: tokens per pass"))
    gamma: float = field(default=0.0, metadata=_h("eb, mi: budget γ (nats)"))
    lam: float = field(default=1.0, metadata=_h("mi: weight λ of the pairwise MI"))
    on_reject: str = field(default="skip", metadata=_h("mi: skip | stop at a rejected candidate"))
    charge_first: bool = field(default=False, metadata=_h("mi: charge the first token's entropy to γ"))
    head: Path | None = field(default=None, metadata=_h("mi: MI head folder (default: found in results/)"))
    oracle_tol: float = field(default=1e-3, metadata=_h("mi-oracle: certified probing tolerance (nats)"))
    temperature: float = field(default=1.0, metadata=_h("sampling temperature (0 = argmax)"))
    batch_size: int = field(default=128, metadata=_h("sequences decoded together"))
    seed: int = field(default=0, metadata=_h("random seed"))
    device: str = field(default="auto", metadata=_h("auto | cpu | cuda"))
    threads: int = field(default=2, metadata=_h("torch CPU threads"))
    progress: bool = field(default=True, metadata=_h("show a progress bar on stderr"))


def _check(args: GenerateArgs) -> None:
    if args.n < 1:
        raise InputError(f"--n must be >= 1, got {args.n}")
    if args.temperature < 0:
        raise InputError(f"--temperature must be >= 0, got {args.temperature}")
    if args.batch_size < 1:
        raise InputError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.clusters < 2:
        raise InputError(f"--clusters must be >= 2, got {args.clusters}")


def _default(path: Path | None, kind: str) -> Path:
    """``path`` or the newest model/head of the protein domain in the workflow's results."""
    if path is not None:
        return path
    from mdm_mi import locate

    return locate.find_head("protein") if kind == "head" else locate.find_model("protein")


def _reference(path: Path | None):
    from mdm_mi.protein.fasta import read_fasta, validate_sequence

    if path is None:
        return None
    return [validate_sequence(s, name=h) for h, s in read_fasta(path)]


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    bar = tqdm(total=total, unit="seq", desc="generate", disable=not enabled, leave=False)
    return bar, lambda done: bar.update(done - bar.n)


@verb("generate", GenerateArgs, "generate proteins from fully masked sequences with a sampler")
def generate_job(args: GenerateArgs, tracker) -> None:
    from mdm_mi.models import load_backbone
    from mdm_mi.protein.generate import draw_lengths, generate, uniform_lengths
    from mdm_mi.protein.fasta import write_fasta
    from mdm_mi.sampler_args import pairwise_from_args, sampler_from_args
    from mdm_mi.stats import mean_ci

    _check(args)
    setup(args.threads, args.seed)
    sampler = sampler_from_args(args)
    reference, reference2 = _reference(args.reference), _reference(args.reference2)
    device = resolve_device(args.device)
    model_dir = _default(args.model, "model")
    backbone, meta = load_backbone(model_dir, device, domain="protein")
    head_dir = _default(args.head, "head") if args.sampler == "mi" else None
    pairwise = pairwise_from_args(args, backbone, device, head_dir)
    rng = np.random.default_rng(args.seed)
    lengths = (draw_lengths([len(s) for s in reference], args.n, rng) if reference
               else uniform_lengths(args.min_length, args.max_length, args.n, rng))
    gen = torch.Generator(device=device).manual_seed(args.seed)
    bar, progress = _progress_bar(args.n, args.progress)
    start = time.time()
    seqs, passes = generate(backbone, lengths, sampler, gen, temperature=args.temperature,
                            pairwise_fn=pairwise, batch_size=args.batch_size, progress=progress)
    bar.close()
    seconds = time.time() - start
    mean, ci = mean_ci(passes.tolist())
    write_fasta(args.out, [(f"gen{i} length={len(s)} passes={p}", s) for i, (s, p) in enumerate(zip(seqs, passes))])
    summary = {"sampler": sampler.name, "params": sampler.params(), "set": "protein", "n": args.n,
               "temperature": args.temperature, "mean_passes": mean, "passes_ci": ci, "seconds": seconds,
               "backbone": meta.get("kind", "?")}
    if reference:
        from mdm_mi.protein.metrics import score_sample

        embedder = backbone if args.embedder is None else load_backbone(args.embedder, device, domain="protein")[0]
        embedder = type(embedder)(embedder.model, args.embed_layer, embedder.bf16).to(device).eval()
        summary |= score_sample(seqs, reference, reference2 or reference, embedder, args.clusters, args.seed)
        if reference2 is None:
            for key in ("jsd_noise_floor", "composition_jsd_floor", "n_reference2"):
                summary.pop(key)
    print(f"{args.n} sequences → {args.out}; mean passes {mean:.1f}"
          + (f"; JSD {summary['jsd']:.3f}" if "jsd" in summary else ""), flush=True)
    if args.summary is not None:
        write_json(args.summary, summary)
    tracker.log_params({"sampler": sampler.name, **sampler.params(), "n": args.n, "temperature": args.temperature})
    tracker.log_metrics({k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    tracker.log_artifact(args.out)
