"""The verbs that bring a Hugging Face masked LM in: ``import-hf`` (mark a ``save_pretrained`` folder
as an ``hf`` model, or record it as a run's model) and ``hf-data`` (your sequences → the token files
that ``label`` masks into contexts, and the reference FASTA of ``protein-compare``; each ``{split}_contexts.json`` beside them records the
model's token fingerprint, which ``label`` checks, and the records' names in row order).

    python -m mdm_mi import-hf --weights my_model --alphabet protein             # writes my_model/meta.json
    python -m mdm_mi hf-data --model my_model --sequences seqs.fasta --out-dir data --heldout-fraction 0.2 --seed 0
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mdm_mi.core.backbone import check_backbone, check_output, token_fingerprint
from mdm_mi.core.hf_folder import DOMAIN, read_alphabet
from mdm_mi.infra.checkpoint import META
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import write_fasta
from mdm_mi.infra.flags import OutDir, SeedFlag, from_schema, h as _h
from mdm_mi.infra.validate import OUT_FOLDER, TEXT
from mdm_mi.infra.io import read_json, write_json, write_npy
from mdm_mi.infra.reader import MASK_CHAR, read_file_items
from mdm_mi.models.loading import FINGERPRINT, compute_fingerprint, load_model

SPLITS = ("train", "heldout")  # hf-data's token files: {split}_contexts.npy


@dataclass(frozen=True)
class ImportHfArgs:
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("hf",)

    weights: Path = field(metadata=_h("folder written by save_pretrained (config.json, weights, tokenizer files)"))
    out: Path | None = field(default=None, metadata=_h(
        "model folder to write meta.json into (referencing --weights); default: --weights itself", kind=OUT_FOLDER))
    alphabet: str = from_schema("hf.alphabet", (
        "allowed tokens: protein (the 20 amino acids), a file with one token per line, or a,b,c"), file_or_text=True)
    hidden_layer: int = from_schema("hf.hidden_layer", (
        "hidden_states index the MI head reads (Hugging Face numbering: 0 = embeddings, -1 = last layer)"))
    bf16: bool = from_schema("hf.bf16", "bf16 autocast on CUDA when decoding (labels stay fp32)")
    check: bool = field(default=True, metadata=_h("load the model once and check it against the Backbone rules"))


def import_hf(args: ImportHfArgs, tracker) -> None:
    """Write ``meta.json`` (domain ``hf``, with the model's fingerprint: its weights' sha256 and
    alphabet, :func:`mdm_mi.models.loading.compute_fingerprint`) and, with ``--check``, first load the model
    (refused when a weight, e.g. the masked-LM layer, would be newly initialised) and run one pass
    through :func:`mdm_mi.core.backbone.check_backbone` / :func:`~mdm_mi.core.backbone.check_output`."""
    weights = Path(args.weights)
    if not (weights / "config.json").is_file():
        raise InputError(f"{weights} has no config.json: give the folder written by save_pretrained")
    out = Path(args.out) if args.out is not None else weights
    config = read_json(weights / "config.json")
    arch = next(iter(config.get("architectures") or []), "Hugging Face masked LM")
    meta = {"domain": DOMAIN, "tokens": read_alphabet(args.alphabet), "alphabet": args.alphabet,
            "hidden_layer": args.hidden_layer, "bf16": args.bf16, "architecture": arch,
            "weights": os.path.relpath(weights.resolve(), out.resolve())}
    if args.check:  # every check before any write: a refused import leaves no meta.json (nor --out) behind
        _check_model(out, meta)
    meta[FINGERPRINT] = compute_fingerprint(out, meta)  # once: the labels and heads made on it carry it
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / META, meta)
    print(f"{out / META}: {arch}, {len(meta['tokens'])} tokens, hidden layer {args.hidden_layer}{_weights_note(weights)}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})


def _weights_note(weights: Path) -> str:
    """A note for a folder whose weights are only a pickle (``pytorch_model.bin``): transformers reads
    it with ``torch.load(weights_only=True)``, which unpickles tensors only, never code."""
    if any(weights.glob("*.safetensors")) or not any(weights.glob("*.bin")):
        return ""
    return "; weights from .bin (read with torch.load(weights_only=True): tensors only, no code)"


def _check_model(directory: Path, meta: dict) -> None:
    """Load the model ``meta`` (not written yet) describes and run one pass of a 3-token masked sequence
    through it, checked against the rules."""
    backbone, _ = load_model(directory, "cpu", DOMAIN, meta=meta)
    check_backbone(backbone)
    tokens = backbone.masked_sequence(3)[None]
    with torch.inference_mode():
        check_output(backbone, backbone(tokens), tokens)


@dataclass(frozen=True)
class HfDataArgs(OutDir, SeedFlag):
    """``hf-data``: ``--out-dir`` gets train_contexts.npy, heldout_contexts.npy, train.fasta and
    reference.fasta; ``--seed`` seeds the split."""

    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("hf",)

    model: Path = field(metadata=_h("hf model folder (its tokenizer encodes the sequences)"))
    sequences: Path = field(metadata=_h("your sequences: FASTA (.fasta/.fa/.faa) or one sequence per line", kind=TEXT))
    heldout_fraction: float = from_schema("hf.heldout_fraction", "share of the sequences held out (val/test labels, the reference)")


def read_sequences(path: Path) -> list[tuple[str, str]]:
    """``(name, sequence)`` of each record: a FASTA file's (name = the header's first word), or the
    non-empty lines of any other file (name = ``line k``), read by the one reader
    (:func:`mdm_mi.infra.reader.read_file_items`: case kept, spaces and a FASTA record's line breaks
    separating tokens) and split into tokens by the model, so a record means the same in either file."""
    return [(item.name, item.text) for item in read_file_items(Path(path), "sequence")]


def _encode_split(backbone, records: list[tuple[str, str]], source: Path):
    """One split's records → ``(S, N)`` ids, each record checked first and named in any error: no mask
    character (``_`` would be read as a masked position), tokens in the alphabet, within the positions."""
    for name, seq in records:
        if MASK_CHAR in seq:
            raise InputError(f"{source}: record {name} holds {MASK_CHAR!r}, the mask character; sequences must be "
                             "complete (remove it or replace it with a real token)")
    return backbone.encode([s for _, s in records], names=[f"{source}: record {n}" for n, _ in records])


def hf_data(args: HfDataArgs, tracker) -> None:
    """Split the sequences (seeded), encode each split with the model's tokenizer and write them."""
    records = read_sequences(Path(args.sequences))
    n_held = max(1, round(len(records) * args.heldout_fraction))
    if len(records) - n_held < 1:
        raise InputError(f"{args.sequences}: {len(records)} sequences are too few to hold {n_held} out")
    order = np.random.default_rng(args.seed).permutation(len(records))
    parts = {"heldout": [records[i] for i in order[:n_held]], "train": [records[i] for i in order[n_held:]]}
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    encoded = {split: _encode_split(backbone, parts[split], Path(args.sequences)).numpy() for split in SPLITS}
    out = Path(args.out_dir)  # every check passed: only now is anything written
    out.mkdir(parents=True, exist_ok=True)
    stamp = {"token_fingerprint": token_fingerprint(backbone), "model": str(args.model)}
    for split in SPLITS:
        write_npy(out / f"{split}_contexts.npy", encoded[split])
        write_json(out / f"{split}_contexts.json", stamp | {"records": [n for n, _ in parts[split]]})
    spelled = {split: backbone.decode_tokens(torch.as_tensor(encoded[split])) for split in SPLITS}  # a line a record
    write_fasta(out / "train.fasta", [(f"train{i}", s) for i, s in enumerate(spelled["train"])])
    write_fasta(out / "reference.fasta", [(f"heldout{i}", s) for i, s in enumerate(spelled["heldout"])])
    summary = {split: len(parts[split]) for split in SPLITS} | {"seed": args.seed}
    write_json(out / "summary.json", summary)
    print(f"{len(parts['train'])} train, {len(parts['heldout'])} held-out sequences -> {out}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})
