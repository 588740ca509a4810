"""The protein table and figure verbs; each reads results already computed.

    python -m mdm_mi protein-table --inputs results/x/protein/eval/*.json --model M --out t.csv --markdown t.md
    python -m mdm_mi protein-paper-table --table t.csv --model M --out paper.md
    python -m mdm_mi figure-protein-speed-quality --table t.csv --model M --out nfe_jsd.png
    python -m mdm_mi figure-protein-mi --model M --head H --generated g.fasta --test s0.safetensors --out mi.png
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from mdm_mi.core.backbone import ALIGNED, capabilities
from mdm_mi.models.domains import backbone_name
from mdm_mi.evaluation.tables import write_table
from mdm_mi.infra.reader import read_data_records
from mdm_mi.infra.flags import FigureOut, MarkdownOut, PaperOverlay, TableOuts, h as _h
from mdm_mi.infra.io import atomic_path, read_jsons, write_text
from mdm_mi.infra.runtime import resolve_device
from mdm_mi.models.loading import load_model_and_head, model_fingerprint
from mdm_mi.mi.contexts import load_label_shards
from mdm_mi.protein.flags import ProteinMiMapFlags, ProteinModelFlag
from mdm_mi.protein.report import (columns, distance_profile, matched_table, paper_table, protein_mi_figure,
                                   protein_rows, read_rows, speed_quality, to_markdown)


@dataclass(frozen=True)
class ProteinTableArgs(TableOuts):
    inputs: tuple[Path, ...] = field(metadata=_h("generation summary JSONs"))
    model: Path = field(metadata=_h("protein model folder (named in the table)"))


def protein_table(args: ProteinTableArgs, tracker) -> None:
    rows = protein_rows(read_jsons(args.inputs, "summary"))
    write_table(rows, columns(rows), args.out, to_markdown(rows, backbone_name(args.model)), args.markdown, tracker)


@dataclass(frozen=True)
class ProteinPaperTableArgs(MarkdownOut, ProteinModelFlag):
    table: Path = field(metadata=_h("protein table CSV"))


def protein_paper_table(args: ProteinPaperTableArgs, tracker) -> None:
    rows = read_rows(args.table)
    write_text(args.out, paper_table(rows, backbone_name(args.model)) + "\n" + matched_table(rows))
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class ProteinSpeedQualityArgs(FigureOut, PaperOverlay):
    table: Path = field(metadata=_h("protein table CSV"))
    model: Path = field(metadata=_h("protein model folder (named in the title)"))


def figure_protein_speed_quality(args: ProteinSpeedQualityArgs, tracker) -> None:
    speed_quality(read_rows(args.table), args.out, f"Proteins — {backbone_name(args.model)}", args.paper)
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class ProteinMiArgs(ProteinMiMapFlags):
    generated: Path = field(metadata=_h("FASTA of generated proteins (the first is mapped)"))
    test: tuple[Path, ...] = field(metadata=_h("test-split label shards (MI vs |i-j|)"))
    csv: Path = field(metadata=_h("output CSV: the mapped matrix and the distance profile"))
    mask_fraction: float = field(default=0.5, metadata=_h("fraction of the protein masked for the map",
                                                          low=0, above=True, high=1))
    max_distance: int = field(default=40, metadata=_h("largest |i-j| in the profile"))
    seed: int = field(default=0, metadata=_h("random seed of the mask"))


def figure_protein_mi(args: ProteinMiArgs, tracker) -> None:
    device = resolve_device(args.device)
    backbone, head = load_model_and_head(args.model, args.head, device, "protein")
    test = load_label_shards(args.test, backbone=backbone, fingerprint=model_fingerprint(args.model), model=args.model)
    if capabilities(backbone).frame == ALIGNED:  # the first test context, an aligned row (_ = masked)
        tokens = test["contexts"][0].to(device)
        seq = backbone.decode_rows(tokens[None].cpu())[0]
    else:
        seq = read_data_records(args.generated)[0][1]
        tokens = backbone.encode([seq])[0]
        gen = torch.Generator().manual_seed(args.seed)
        hide = torch.rand(len(seq), generator=gen) < args.mask_fraction
        tokens[1 : len(seq) + 1][hide.to(tokens.device)] = backbone.mask_id
    masked = tokens == backbone.mask_id
    with torch.inference_mode():
        pred = head(backbone(tokens[None]).hidden, masked[None])[0].cpu()
        test_pred = torch.cat([head(backbone(c.to(device)).hidden, m.to(device)).cpu()
                               for c, m in zip(test["contexts"].split(64), test["masked"].split(64))])
    inner = pred[1 : len(seq) + 1, 1 : len(seq) + 1].numpy()
    profile = distance_profile(test_pred, test["label"], test["masked"], args.max_distance)
    protein_mi_figure(inner, seq, profile, args.out, f"backbone: {backbone_name(args.model)}")
    with atomic_path(args.csv) as tmp:
        lines = ["kind,i,j,value"] + [f"map,{i},{j},{inner[i, j]:.6g}" for i in range(len(seq)) for j in range(len(seq))]
        lines += [f"profile_label,{d},,{v:.6g}" for d, v in zip(profile[0], profile[1])]
        lines += [f"profile_head,{d},,{v:.6g}" for d, v in zip(profile[0], profile[2])]
        tmp.write_text("\n".join(lines) + "\n")
    tracker.log_artifact(args.out)
    tracker.log_artifact(args.csv)
