"""The protein verbs of the CLI: data, the small protein MDM, ESM-C 300M, generation + metrics.

    python -m mdm_mi protein-data --train-fasta train.fasta --reference-fasta ref.fasta --out-dir d ...
    python -m mdm_mi protein-pretrain --train d/train.fasta --out results/x/protein/model ...
    python -m mdm_mi protein-pretrain --train d/train.fasta --alignment d/train.a2m --reweight-identity 0.8 \
        --val d/reference2.fasta --eval-every 250 --dropout 0.1 ...        # a family: Neff weights, best step
    python -m mdm_mi download-esmc --dest resources/esmc
    python -m mdm_mi import-esmc --weights resources/esmc/esmc_300m_2024_12_v0.pth --out results/x/protein/model
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import write_fasta
from mdm_mi.infra.reader import read_data_records
from mdm_mi.infra.flags import ModelShapeFlags, OutDir, SeedFlag, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.validate import FILE, OUT_FOLDER
from mdm_mi.infra.io import write_json
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.infra.train_loop import DiffusionTrainFlags, RESUME, SNAPSHOTS, run_metrics
from mdm_mi.protein.data import PrepareConfig, crops_like, reference_pair, split_records, standard_only, write_contexts
from mdm_mi.protein.esmc import ESMC_300M_DIMS, ensure_esmc_300m, load_esmc
from mdm_mi.protein.sequences import validate_sequence
from mdm_mi.protein.model import save_trained, write_300m_meta
from mdm_mi.protein.train import ProteinTrainConfig, train_protein_mdm


@dataclass(frozen=True)
class PrepareProteinArgs(OutDir, SeedFlag):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.data",)

    train_fasta: Path = field(metadata=_h("training FASTA (UniRef50 + CATH, no length 50-100)"))
    reference_fasta: Path = field(metadata=_h("UniRef50 sequences of length 50-100"))
    n_reference: int = from_schema("protein.data.n_reference", "reference sequences per draw (paper: 500)")
    heldout_fraction: float = from_schema("protein.data.heldout_fraction", "training records kept out for held-out MI contexts")
    n_train_contexts: int = from_schema("protein.data.n_train_contexts", "crops written for MI labelling (train)")
    n_heldout_contexts: int = from_schema("protein.data.n_heldout_contexts", "crops written for MI labelling (held out)")
    min_length: int = from_schema("protein.data.min_length", "shortest reference/generated length")
    max_length: int = from_schema("protein.data.max_length", "longest reference/generated length")


def prepare_protein(args: PrepareProteinArgs, tracker) -> None:
    cfg = PrepareConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(PrepareConfig)})
    raw = read_data_records(args.train_fasta)
    train_all = standard_only(raw)
    ref, ref2 = reference_pair(read_data_records(args.reference_fasta), cfg.n_reference, cfg.seed,
                                        cfg.min_length, cfg.max_length)
    train, held = split_records(train_all, cfg.heldout_fraction, cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    lengths = np.array([len(s) for _, s in ref])
    out = Path(args.out_dir)
    for name, records, n in (("train", train, cfg.n_train_contexts), ("heldout", held, cfg.n_heldout_contexts)):
        write_contexts(out / f"{name}_contexts.npy", crops_like(records, lengths, n, rng), cfg.max_length + 2)
    write_fasta(out / "train.fasta", train)
    write_fasta(out / "heldout.fasta", held)
    write_fasta(out / "reference.fasta", ref)
    write_fasta(out / "reference2.fasta", ref2)
    summary = {"n_train_records": len(train), "n_heldout_records": len(held),
               "n_dropped_nonstandard": len(raw) - len(train_all), "n_reference": len(ref),
               "n_reference2": len(ref2), "reference_mean_length": float(lengths.mean())}
    write_json(out / "summary.json", summary)
    tracker.log_params(dataclasses.asdict(args))
    tracker.log_metrics(summary)


@dataclass(frozen=True)
class PretrainProteinArgs(DiffusionTrainFlags, ModelShapeFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein.model", "protein.train")

    train: Path = field(metadata=_h("training FASTA (train.fasta from protein-data)"))
    out: Path = field(metadata=_h("output model folder", kind=OUT_FOLDER))
    hidden_layer: int = from_schema("protein.model.hidden_layer", "block whose output the MI head reads (-1 = last)")
    crop_min: int = from_schema("protein.train.crop_min", "shortest training crop")
    crop_max: int = from_schema("protein.train.crop_max", "longest training crop")
    reweight_identity: float = from_schema("protein.train.reweight_identity", (
        "draw each sequence with weight 1 / (training sequences at >= this identity in --alignment, itself "
        "included); 0: uniform draws"), high=1)
    dropout: float = from_schema("protein.train.dropout", "dropout on every block's attention and feed-forward output (0: off)",
                                 high=1, below=True)
    eval_every: int = from_schema("protein.train.eval_every", (
        "steps between masked losses of --val at t = 0.15, 0.5, 0.9; the model saved is the step with the "
        "lowest mean (0: off, the last step)"))
    whole_sequences: bool = field(default=False, metadata=_h(
        "train on whole sequences, never cropped (a protein family); --crop-min/--crop-max are then unused"))
    alignment: Path | None = field(default=None, metadata=_h(
        "the training sequences aligned (train.a2m from prepare-family, same records in the same order): "
        "the identities of --reweight-identity"))
    val: Path | None = field(default=None, metadata=_h(
        "validation FASTA of --eval-every (a family: reference2.fasta, the validation split)"))
    # the flags both domains share, with the protein model's defaults
    d_model: int = shared_from_schema(ModelShapeFlags, "protein.model.d_model")
    n_heads: int = shared_from_schema(ModelShapeFlags, "protein.model.n_heads")
    n_layers: int = shared_from_schema(ModelShapeFlags, "protein.model.n_layers")
    steps: int = shared_from_schema(DiffusionTrainFlags, "protein.train.steps")
    batch_size: int = shared_from_schema(DiffusionTrainFlags, "protein.train.batch_size")
    lr: float = shared_from_schema(DiffusionTrainFlags, "protein.train.lr")
    warmup: int = shared_from_schema(DiffusionTrainFlags, "protein.train.warmup")
    weight_decay: float = shared_from_schema(DiffusionTrainFlags, "protein.train.weight_decay")
    t_min: float = shared_from_schema(DiffusionTrainFlags, "protein.train.t_min")
    t_max: float = shared_from_schema(DiffusionTrainFlags, "protein.train.t_max")
    loss_weight: str = shared_from_schema(DiffusionTrainFlags, "protein.train.loss_weight")
    grad_clip: float = shared_from_schema(DiffusionTrainFlags, "protein.train.grad_clip")
    log_every: int = shared_from_schema(DiffusionTrainFlags, "protein.train.log_every")
    ema: float = shared_from_schema(DiffusionTrainFlags, "protein.train.ema")
    save_every: int = shared_from_schema(DiffusionTrainFlags, "protein.train.save_every")
    snapshot_every: int = shared_from_schema(DiffusionTrainFlags, "protein.train.snapshot_every")


def _train_weights(args: PretrainProteinArgs, seqs: list[str]):
    """The training sequences' drawing weights (None: uniform), from their alignment's match columns.

    The weights are computed here, from ``train.a2m`` beside ``train.fasta``, rather than written by
    prepare-family: the identity threshold is a training setting, and the check that the alignment
    holds exactly the FASTA's sequences makes a stale or foreign alignment an error."""
    from mdm_mi.protein.family.alignment import encode_columns, parse_a2m, sequence_weights  # lazy: scipy (~1 s at every CLI start)

    if not args.reweight_identity:
        return None
    if args.alignment is None:
        raise InputError("--reweight-identity needs --alignment (the training sequences aligned; a family only)")
    records = parse_a2m(args.alignment)
    if [r.sequence for r in records] != seqs:
        raise InputError(f"{args.alignment} does not hold the sequences of {args.train} in the same order")
    return sequence_weights(encode_columns([r.columns for r in records]), args.reweight_identity)


def _val_sequences(args: PretrainProteinArgs) -> list[str] | None:
    if not args.eval_every:
        return None
    if args.val is None:
        raise InputError("--eval-every needs --val (the validation FASTA)")
    seqs = [validate_sequence(s, name=n) for n, s in read_data_records(args.val)]
    if not seqs:
        raise InputError(f"validation FASTA has no sequences: {args.val}")
    return seqs


def pretrain_protein(args: PretrainProteinArgs, tracker) -> None:
    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    seqs = [s for _, s in read_data_records(args.train)]
    weights, val = _train_weights(args, seqs), _val_sequences(args)
    dims = {"d_model": args.d_model, "n_heads": args.n_heads, "n_layers": args.n_layers}
    cfg = ProteinTrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ProteinTrainConfig)})
    if args.whole_sequences:  # a crop as long as the longest sequence is every sequence whole
        longest = max(map(len, seqs))
        cfg = dataclasses.replace(cfg, crop_min=longest, crop_max=longest)
    tracker.log_params(dataclasses.asdict(args))
    out = Path(args.out)

    def snapshot(step: int, model) -> None:
        save_trained(model, out / SNAPSHOTS / f"step-{step}", dims, args.hidden_layer,
                     {"train": dataclasses.asdict(cfg), "step": step})

    backbone, history, best = train_protein_mdm(seqs, dims, args.hidden_layer, cfg, device,
                                                log=lambda m: print(m, flush=True), resume_dir=out / RESUME,
                                                snapshot=snapshot, weights=weights, val=val)
    metrics, extra = run_metrics(history, best, weights, n_params=sum(p.numel() for p in backbone.parameters()),
                                 device=device)
    save_trained(backbone.model, args.out, dims, args.hidden_layer,
                 {"train": dataclasses.asdict(cfg), "metrics": metrics, "history": history} | extra)
    for rec in history:
        tracker.log_metrics({"loss": rec["loss"]}, step=rec["step"])
    for rec in best.history if best is not None else []:
        tracker.log_metrics({k: v for k, v in rec.items() if k != "step"}, step=rec["step"])
    tracker.log_metrics(metrics)
    tracker.log_artifact(Path(args.out) / "meta.json")


@dataclass(frozen=True)
class DownloadEsmcArgs:
    dest: Path = field(metadata=_h("folder for esmc_300m_2024_12_v0.pth (e.g. resources/esmc)"))


def download_esmc(args: DownloadEsmcArgs, tracker) -> None:
    path = ensure_esmc_300m(args.dest)
    print(f"ESM-C 300M weights at {path}", flush=True)
    tracker.log_params({"weights": str(path)})


@dataclass(frozen=True)
class ImportEsmcArgs:
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("protein", "protein.model")

    weights: Path = field(metadata=_h("ESM-C 300M weights file (.pth or .safetensors)", kind=FILE))
    out: Path = field(metadata=_h("model folder to write (meta.json referencing the weights)", kind=OUT_FOLDER))
    hidden_layer: int = from_schema("protein.model.hidden_layer", "block whose output the MI head reads")
    esmc_bf16: bool = from_schema("protein.esmc_bf16", "ESM-C's own precision: bf16 autocast on CUDA (CPU stays fp32)")
    check: bool = field(default=True, metadata=_h("load the weights once to check them"))


def import_esmc(args: ImportEsmcArgs, tracker) -> None:
    if not Path(args.weights).is_file():
        raise InputError(f"ESM-C weights file not found: {args.weights} (protein.esmc_weights)")
    if args.check:
        load_esmc(args.weights, **ESMC_300M_DIMS)  # one-line CheckpointError if wrong
    write_300m_meta(args.out, args.weights, args.hidden_layer, args.esmc_bf16)
    tracker.log_params(dataclasses.asdict(args))
