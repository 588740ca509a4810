"""The column model's verbs: ``column-pretrain`` (a masked diffusion model over a family's alignment
columns) and ``figure-column-contacts`` (its MI map beside ArDCA's couplings and the disulphide bonds).

    python -m mdm_mi column-pretrain --alignment results/x/protein/data/train.a2m \
        --val results/x/protein/data/val.a2m --out results/x/protein/model --d-model 64 --n-heads 4 \
        --n-layers 2 --lambda-j 0.01 --reweight-identity 0.8 --steps 3000 ...

The model is :class:`~mdm_mi.protein.family.columns.ColumnMDM` (Potts term + small transformer);
training is :func:`~mdm_mi.protein.family.column_train.train_column_mdm`. A killed run resumes from
``OUT/resume`` (``--save-every``). The folder is a protein model (``meta.json`` kind ``columns``) that
every protein verb loads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdm_mi.core.backbone import ALIGNED, capabilities
from mdm_mi.models.domains import backbone_name
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import FigureOut, ModelShapeFlags, h as _h
from mdm_mi.infra.validate import OUT_FOLDER
from mdm_mi.infra.io import write_json
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.infra.train_loop import DiffusionTrainFlags, RESUME, run_metrics
from mdm_mi.models.loading import load_model
from mdm_mi.protein.family.scores import read_splits


@dataclass(frozen=True)
class ColumnPretrainArgs(DiffusionTrainFlags, ModelShapeFlags):
    """The column model's flags; ``--n-layers 0`` keeps only the Potts term and the mask-rate-aware
    column fields (``--d-model`` is then the column embeddings' width)."""

    alignment: Path = field(metadata=_h("the training split aligned (train.a2m from prepare-family)"))
    out: Path = field(metadata=_h("output model folder", kind=OUT_FOLDER))
    mean_field: int = field(metadata=_h("mean-field iterations: masked columns couple through their predicted "
                                        "marginals (0: only visible columns couple)"))
    lambda_j: float = field(metadata=_h("L2 strength on the Potts couplings (per column, plmDCA's scaling)"))
    reweight_identity: float = field(metadata=_h(
        "draw each row with weight 1 / (training rows at >= this identity, itself included); 0: uniform", high=1))
    eval_every: int = field(metadata=_h(
        "steps between masked losses of --val at t = 0.15, 0.5, 0.9; the model saved is the step with the "
        "lowest mean (0: off, the last step)"))
    val: Path | None = field(default=None, metadata=_h("validation alignment of --eval-every (val.a2m)"))
    n_layers: int = field(kw_only=True, metadata=_h("transformer blocks (0: the Potts term and the column fields only)",
                                                    low=0))


@dataclass(frozen=True)
class ColumnContactsArgs(FigureOut):
    """``figure-column-contacts``: the model, prepare-family's folder and the summary JSON."""

    model: Path = field(metadata=_h("a column model folder (column-pretrain)"))
    data_dir: Path = field(metadata=_h("prepare-family's folder (train.a2m: ArDCA and the cysteine columns)"))
    json: Path = field(metadata=_h("output JSON: map r, top-L overlap, the disulphide pairs' ranks"))


def _codes(path: Path) -> np.ndarray:
    from mdm_mi.protein.family.alignment import encode_columns, parse_a2m  # lazy: scipy (~1 s at every CLI start)

    codes = encode_columns([r.columns for r in parse_a2m(path)])
    if not len(codes):
        raise InputError(f"alignment has no rows: {path}")
    return codes


def _check(args: ColumnPretrainArgs) -> None:
    """What no one flag's check (the CLI's validator, infra/validate.py) can see: flags that go together."""
    if args.d_model % args.n_heads:
        raise InputError(f"--d-model ({args.d_model}) must be a positive multiple of --n-heads ({args.n_heads})")
    if args.eval_every and args.val is None:
        raise InputError("--eval-every needs --val (the validation alignment, val.a2m)")


def column_pretrain(args: ColumnPretrainArgs, tracker) -> None:
    from mdm_mi.protein.family.ardca import identity_weights  # lazy: scipy, threadpoolctl (~1 s at every CLI start)
    from mdm_mi.protein.family.column_train import ColumnTrainConfig, train_column_mdm  # lazy: scipy (~1 s at every CLI start)
    from mdm_mi.protein.family.columns import ColumnDims, n_params, save_column_model  # lazy: scipy (~1 s at every CLI start)

    _check(args)
    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    codes = _codes(args.alignment)
    val = _codes(args.val) if args.eval_every else None
    if val is not None and val.shape[1] != codes.shape[1]:
        raise InputError(f"{args.val} has {val.shape[1]} match columns, {args.alignment} has {codes.shape[1]}")
    weights = identity_weights(codes, args.reweight_identity) if args.reweight_identity else None
    dims = ColumnDims(length=codes.shape[1], d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
                      mean_field=args.mean_field)
    cfg = ColumnTrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(ColumnTrainConfig)})
    tracker.log_params(dataclasses.asdict(args))
    backbone, history, best = train_column_mdm(codes, weights, dims, cfg, device, log=lambda m: print(m, flush=True),
                                               resume_dir=Path(args.out) / RESUME, val_codes=val)
    metrics, extra = run_metrics(history, best, weights, n_params=n_params(backbone.model), n_train=len(codes),
                                 device=device)
    save_column_model(backbone.model.cpu(), args.out, -1,
                      {"train": dataclasses.asdict(cfg), "metrics": metrics, "history": history} | extra)
    for rec in history:
        tracker.log_metrics({"loss": rec["loss"]}, step=rec["step"])
    tracker.log_metrics({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
    tracker.log_artifact(Path(args.out) / "meta.json")


def figure_column_contacts(args: ColumnContactsArgs, tracker) -> None:
    """The column model's exact MI at the empty row beside ArDCA's couplings and the disulphide bonds."""
    from mdm_mi.protein.family import ardca, contacts# lazy: scipy, threadpoolctl (~1 s at every CLI start)
    from mdm_mi.protein.family.alignment import column_profile, encode_columns  # lazy: scipy (~1 s at every CLI start)

    backbone, _ = load_model(args.model, "cpu", "protein")
    if capabilities(backbone).frame != ALIGNED:
        raise InputError(f"{args.model} is not a column model (figure-column-contacts needs one)")
    train, _, _, _ = read_splits(args.data_dir)
    codes = encode_columns([r.columns for r in train])
    if codes.shape[1] != backbone.fixed_length:
        raise InputError(f"{args.data_dir} has {codes.shape[1]} match columns, the model {backbone.fixed_length}")
    mi = contacts.empty_context_mi(backbone)
    dca = contacts.ardca_scores(ardca.fit(codes, ardca.identity_weights(codes)))
    bonds = contacts.disulphide_pairs(column_profile(train))
    length = len(mi)
    summary = {"map_r": contacts.map_r(mi, dca), "top_l_overlap": contacts.top_overlap(mi, dca, length),
               "top_l_overlap_sep6": contacts.top_overlap(mi, dca, length, min_separation=6),
               "disulphide_pairs": [[a + 1, b + 1] for a, b in bonds],
               "disulphide_rank_mi": contacts.pair_ranks(mi, bonds), "disulphide_rank_ardca": contacts.pair_ranks(dca, bonds),
               "n_pairs": length * (length - 1) // 2}
    title = (f"{backbone_name(args.model)}: MI map vs ArDCA couplings (r {summary['map_r']:.2f}; top-{length} overlap "
             f"{summary['top_l_overlap']:.0%}); disulphide ranks: MI {summary['disulphide_rank_mi']}, "
             f"ArDCA {summary['disulphide_rank_ardca']} of {summary['n_pairs']}")
    contacts.contacts_figure(mi, dca, bonds, args.out, title)
    write_json(args.json, summary)
    tracker.log_metrics({k: v for k, v in summary.items() if isinstance(v, float)})
    tracker.log_artifact(args.out)
