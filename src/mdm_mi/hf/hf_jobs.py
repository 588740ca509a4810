"""The verbs that bring a Hugging Face masked LM in: ``import-hf`` (mark a ``save_pretrained`` folder
as an ``hf`` model, or record it as a run's model) and ``hf-data`` (your sequences → the token files
that ``label`` masks into contexts, and the reference FASTA of ``protein-compare``).

    python -m mdm_mi import-hf --weights my_model --alphabet protein             # writes my_model/meta.json
    python -m mdm_mi hf-data --model my_model --sequences seqs.fasta --out-dir data --heldout-fraction 0.2 --seed 0
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import OutDir, SeedFlag, h as _h
from mdm_mi.infra.io import write_json

SPLITS = ("train", "heldout")  # hf-data's token files: {split}_contexts.npy


@dataclass(frozen=True)
class ImportHfArgs:
    weights: Path = field(metadata=_h("folder written by save_pretrained (config.json, weights, tokenizer files)"))
    out: Path | None = field(default=None, metadata=_h(
        "model folder to write meta.json into (referencing --weights); default: --weights itself"))
    alphabet: str = field(default="protein", metadata=_h(
        "allowed tokens: protein (the 20 amino acids), a file with one token per line, or a,b,c"))
    hidden_layer: int = field(default=-1, metadata=_h(
        "hidden_states index the MI head reads (Hugging Face numbering: 0 = embeddings, -1 = last layer)"))
    bf16: bool = field(default=False, metadata=_h("bf16 autocast on CUDA when decoding (labels stay fp32)"))
    check: bool = field(default=True, metadata=_h("load the model once and check it against the Backbone rules"))


def import_hf(args: ImportHfArgs, tracker) -> None:
    """Write ``meta.json`` (domain ``hf``) and, with ``--check``, load the model and run one pass
    through :func:`mdm_mi.core.backbone.check_backbone` / :func:`~mdm_mi.core.backbone.check_output`."""
    from mdm_mi.hf.backbone import DOMAIN, read_alphabet
    from mdm_mi.infra.checkpoint import META

    weights = Path(args.weights)
    if not (weights / "config.json").is_file():
        raise InputError(f"{weights} has no config.json: give the folder written by save_pretrained")
    out = Path(args.out) if args.out is not None else weights
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((weights / "config.json").read_text())
    arch = next(iter(config.get("architectures") or []), "Hugging Face masked LM")
    meta = {"domain": DOMAIN, "tokens": read_alphabet(args.alphabet), "alphabet": args.alphabet,
            "hidden_layer": args.hidden_layer, "bf16": args.bf16, "architecture": arch,
            "weights": os.path.relpath(weights.resolve(), out.resolve())}
    write_json(out / META, meta)
    if args.check:
        _check_model(out)
    print(f"{out / META}: {arch}, {len(meta['tokens'])} tokens, hidden layer {args.hidden_layer}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})


def _check_model(directory: Path) -> None:
    """One pass of a 3-token masked sequence through the loaded model, checked against the rules."""
    import torch

    from mdm_mi.core.backbone import check_backbone, check_output
    from mdm_mi.core.loading import load_model
    from mdm_mi.hf.backbone import DOMAIN

    backbone, _ = load_model(directory, "cpu", DOMAIN)
    check_backbone(backbone)
    tokens = backbone.masked_sequence(3)[None]
    with torch.inference_mode():
        check_output(backbone, backbone(tokens), tokens)


@dataclass(frozen=True)
class HfDataArgs(OutDir, SeedFlag):
    """``hf-data``: ``--out-dir`` gets train_contexts.npy, heldout_contexts.npy, train.fasta and
    reference.fasta; ``--seed`` seeds the split."""

    model: Path = field(metadata=_h("hf model folder (its tokenizer encodes the sequences)"))
    sequences: Path = field(metadata=_h("your sequences: FASTA (.fasta/.fa/.faa) or one sequence per line"))
    heldout_fraction: float = field(metadata=_h("share of the sequences held out (val/test labels, the reference)"))


def read_sequences(path: Path) -> list[str]:
    """A FASTA file's sequences, or the non-empty lines of any other file."""
    from mdm_mi.core.domain import FASTA_SUFFIXES
    from mdm_mi.infra.io import read_text_input
    from mdm_mi.protein.fasta import read_fasta

    if Path(path).suffix.lower() in FASTA_SUFFIXES:
        return [s for _, s in read_fasta(path)]
    return [line.strip() for line in read_text_input(path, "sequence").splitlines() if line.strip()]


def hf_data(args: HfDataArgs, tracker) -> None:
    """Split the sequences (seeded), encode each split with the model's tokenizer and write them."""
    from mdm_mi.core.loading import load_model
    from mdm_mi.hf.backbone import DOMAIN
    from mdm_mi.protein.fasta import write_fasta

    if not 0 < args.heldout_fraction < 1:
        raise InputError(f"--heldout-fraction must lie in (0, 1), got {args.heldout_fraction}")
    seqs = read_sequences(Path(args.sequences))
    n_held = max(1, round(len(seqs) * args.heldout_fraction))
    if len(seqs) - n_held < 1:
        raise InputError(f"{args.sequences}: {len(seqs)} sequences are too few to hold {n_held} out")
    order = np.random.default_rng(args.seed).permutation(len(seqs))
    parts = {"heldout": [seqs[i] for i in order[:n_held]], "train": [seqs[i] for i in order[n_held:]]}
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        np.save(out / f"{split}_contexts.npy", backbone.encode(parts[split]).numpy())
    write_fasta(out / "train.fasta", [(f"train{i}", s) for i, s in enumerate(parts["train"])])
    write_fasta(out / "reference.fasta", [(f"heldout{i}", s) for i, s in enumerate(parts["heldout"])])
    summary = {split: len(parts[split]) for split in SPLITS} | {"seed": args.seed}
    write_json(out / "summary.json", summary)
    print(f"{len(parts['train'])} train, {len(parts['heldout'])} held-out sequences -> {out}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})
