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
from typing import ClassVar

import numpy as np

from mdm_mi.core.backbone import capabilities, embedder_of, for_decoding
from mdm_mi.core.sampler_table import SamplerFlags
from mdm_mi.evaluation.stats import mean_ci
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import write_fasta
from mdm_mi.infra.flags import h as _h
from mdm_mi.infra.validate import OUT_FILE
from mdm_mi.infra.io import write_json
from mdm_mi.models.loading import SEQUENCES, load_model
from mdm_mi.protein.decode_flags import DecodeFlags, GenerateFlags
from mdm_mi.protein.generate import draw_lengths, generate, reference_lengths, uniform_lengths
from mdm_mi.protein.metrics import score_sample
from mdm_mi.protein.sequences import read_reference
from mdm_mi.models.run import (ModelFlags, calibrated_for, check_outputs, load_backbone_for, pairwise_from_args,
                                progress, start)
from mdm_mi.sampling.registry import sampler_from_args


@dataclass(frozen=True)
class GenerateArgs(SamplerFlags, GenerateFlags, ModelFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.generate", "protein.samplers")

    out: Path = field(default=Path("generated.fasta"), metadata=_h("output FASTA"))
    min_length: int = field(default=50, metadata=_h("shortest length (without --reference)",
                                                    high=lambda a: a.max_length if a.reference is None else None))
    max_length: int = field(default=100, metadata=_h("longest length (without --reference)"))
    reference: Path | None = field(default=None, metadata=_h("FASTA: draw lengths from it and score against it"))
    reference2: Path | None = field(default=None, metadata=_h("second reference draw: JSD/composition check"))
    embedder: Path | None = field(default=None, metadata=_h("model folder embedding for the metric (default: --model)"))
    summary: Path | None = field(default=None, metadata=_h("summary JSON (passes and metrics)", kind=OUT_FILE))
    seed: int = field(default=0, metadata=_h("random seed"))


GENERATE_EXAMPLES = """examples:
  mdm-mi generate --n 20 --out proteins.fasta                       # model found in results/
  mdm-mi generate --n 50 --sampler mi --gamma 8 --min-length 60 --max-length 80 --out mi.fasta
  mdm-mi generate --n 500 --reference ref.fasta --summary scores.json   # lengths from ref, JSD vs ref"""


def _check_lengths(args: GenerateArgs, backbone, reference_lengths: list[int] | None, fixed: int | None) -> None:
    """The lengths to generate fit the model's positions (``max_length``: a learned position table's,
    less BOS and EOS): one line naming the flag that asks for more otherwise."""
    limit = getattr(backbone, "max_length", None)
    if limit is None or fixed is not None:
        return
    if reference_lengths is not None and max(reference_lengths) > limit:
        raise InputError(f"--reference {args.reference} has sequences of {max(reference_lengths)} tokens, but the "
                         f"model's positions hold at most {limit} (BOS and EOS take two): give a reference of shorter "
                         "sequences")
    if reference_lengths is None and args.max_length > limit:
        raise InputError(f"--max-length {args.max_length} is too long: the model's positions hold at most {limit} "
                         f"tokens (BOS and EOS take two); give --max-length {limit} or less")


def _reference(path: Path | None):
    if path is None:
        return None
    return read_reference(path)


def generate_sampler(args: GenerateArgs):
    """The sampler of ``--sampler``; omitted parameters are the model's calibrated values (its
    MANIFEST.json: :mod:`mdm_mi.core.fallbacks`)."""
    return sampler_from_args(args, calibrated=calibrated_for(args, "protein"))


def generate_jobs(args: GenerateArgs, tracker) -> None:
    sampler = generate_sampler(args)
    check_outputs(args.out, args.summary)
    reference, reference2 = _reference(args.reference), _reference(args.reference2)
    device = start(args, args.seed)
    backbone, model_dir, domain = load_backbone_for(args, SEQUENCES, device)  # protein or hf
    decoding = DecodeFlags.of(args)
    backbone = for_decoding(backbone, decoding.bf16)
    rng = np.random.default_rng(args.seed)
    fixed = capabilities(backbone).fixed_length  # an aligned model's L columns: no lengths to draw
    _check_lengths(args, backbone, reference_lengths(backbone, reference) if reference else None, fixed)
    lengths = (draw_lengths(reference_lengths(backbone, reference), args.n, rng) if reference
               else np.full(args.n, fixed) if fixed is not None
               else uniform_lengths(args.min_length, args.max_length, args.n, rng))
    begin = time.time()
    with (pairwise_from_args(args, backbone, model_dir, domain, device) as pairwise,
          progress(args.n, f"generate {sampler.name}", args.quiet, unit="seq") as bar):
        seqs, passes = generate(backbone, lengths, sampler, args.seed, decoding=decoding, pairwise_fn=pairwise,
                                batch_size=args.batch_size, progress=lambda done: bar.update(done - bar.n))
    mean, ci = mean_ci(passes.tolist())
    summary = {"sampler": sampler.name, "params": sampler.params(), "set": "protein", "n": args.n,
               **dataclasses.asdict(decoding), "mean_passes": mean, "passes_ci": ci,
               "seconds": time.time() - begin, "model": str(model_dir)}
    if reference:
        summary |= _scores(args, backbone, seqs, reference, reference2, device)
    write_fasta(args.out, [(f"gen{i} length={_n_tokens(backbone, s)} passes={p}", s)
                           for i, (s, p) in enumerate(zip(seqs, passes))])
    if args.summary is not None:
        write_json(args.summary, summary)
    print(f"{args.n} sequences -> {args.out}; mean passes {mean:.1f}"
          + (f"; JSD {summary['jsd']:.3f} (bias-corrected {summary['jsd_bc']:.3f} [{summary['jsd_lo']:.3f}, "
             f"{summary['jsd_hi']:.3f}], noise floor {summary['jsd_noise_floor']:.3f})" if reference else ""))
    tracker.log_params({"sampler": sampler.name, **sampler.params(), "n": args.n, "temperature": args.temperature})
    tracker.log_metrics({k: v for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    tracker.log_artifact(args.out)


def _n_tokens(backbone, seq: str) -> int:
    """A decoded sequence's length in tokens: the backbone's own split (tokens of several characters
    are space-separated), else one token per character."""
    split = getattr(backbone, "split", None)
    return len(split(seq)) if split is not None else len(seq)


def _scores(args: GenerateArgs, backbone, seqs, reference, reference2, device) -> dict:
    """The protein metrics of ``seqs``; the embedder is ``--embedder`` or the backbone itself, read at
    block ``--embed-layer``. The JSD noise floor (``jsd_noise_floor``, ``jsd_floor_analytic``) needs only
    the reference; without a second reference its second-draw comparisons are left out."""
    source = backbone if args.embedder is None else load_model(args.embedder, device, SEQUENCES)[0]
    embedder = embedder_of(source, args.embed_layer)
    scores = score_sample(seqs, reference, reference2 or reference, embedder, args.clusters, args.seed)
    if reference2 is None:
        for key in ("jsd_reference2", "jsd_reference2_analytic", "composition_jsd_floor", "n_reference2"):
            scores.pop(key)
    return scores
