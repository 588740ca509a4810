"""The Sudoku report verbs: ``sudoku-table``, ``paper-table``, ``figure-speed-quality`` and
``figure-mi-map``; each reads results already computed and writes one table or figure.

    python -m mdm_mi figure-speed-quality --table results/x/sudoku/table.csv --set hard --out f.png
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from mdm_mi.models.domains import backbone_name
from mdm_mi.evaluation.tables import write_table
from mdm_mi.infra.errors import InputError
from mdm_mi.models.loading import load_model_and_head
from mdm_mi.infra.flags import (BackboneFlag, DeviceFlag, FigureOut, HeadFlag, MarkdownOut, PaperOverlay, TidyCsvOut,
                                h as _h)
from mdm_mi.infra.io import read_json, write_text
from mdm_mi.infra.runtime import resolve_device
from mdm_mi.mi.figures import mi_matrices, pick_cell, write_matrix_csv
from mdm_mi.sudoku.data import load_puzzle_csv
from mdm_mi.sudoku.report import (columns, matched_table, mi_map_figure, paper_table, read_rows, speed_quality,
                                  tidy_rows, to_markdown)


@dataclass(frozen=True)
class SpeedQualityArgs(FigureOut, PaperOverlay):
    table: Path = field(metadata=_h("tidy table CSV from sudoku-table"))
    set: str = field(metadata=_h("evaluation set to plot"))
    model: Path = field(metadata=_h("backbone checkpoint folder (named in the title)"))


def figure_speed_quality(args: SpeedQualityArgs, tracker) -> None:
    title = f"Sudoku '{args.set}' set — {backbone_name(args.model)}"
    speed_quality(read_rows(args.table), args.set, args.out, title, args.paper)
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class PaperTableArgs(MarkdownOut):
    table: Path = field(metadata=_h("tidy table CSV from sudoku-table"))
    set: str = field(metadata=_h("evaluation set"))
    model: Path = field(metadata=_h("backbone checkpoint folder (named in the caption)"))


def paper_table_job(args: PaperTableArgs, tracker) -> None:
    caption = (f"Sudoku, set '{args.set}', backbone: {backbone_name(args.model)}; paper: 1000 hard puzzles, "
               "4.16M-parameter MDM.")
    rows = read_rows(args.table)
    write_text(args.out, paper_table(rows, args.set, caption) + "\n" + matched_table(rows, args.set))
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class FigureMiMapArgs(BackboneFlag, HeadFlag, FigureOut, DeviceFlag):
    puzzles: Path = field(metadata=_h("puzzle CSV"))
    csv: Path = field(metadata=_h("output CSV of the full matrices"))
    index: int = field(default=0, metadata=_h("row of the puzzle in the CSV"))
    cell: int = field(default=-1, metadata=_h("cell 0..80 to map; -1 = the blank with most total MI", low=-1, high=80))
    exact: bool = field(default=True, metadata=_h("also compute the exact probing MI"))


def figure_mi_map(args: FigureMiMapArgs, tracker) -> None:
    device = resolve_device(args.device)
    backbone, head = load_model_and_head(args.model, args.head, device, "sudoku")
    ps = load_puzzle_csv(args.puzzles)
    if args.index >= len(ps):  # >= 0: the validator's
        raise InputError(f"--index {args.index} is outside the {len(ps)} puzzles of {args.puzzles}")
    tokens = torch.as_tensor(ps.puzzles[args.index], device=device)
    pred, label = mi_matrices(backbone, head, tokens, args.exact)
    cell = pick_cell(pred, tokens == backbone.mask_id, args.cell)
    mi_map_figure(ps.puzzles[args.index], pred, label, cell, args.out, backbone_name(args.model))
    write_matrix_csv(args.csv, pred, label)
    tracker.log_artifact(args.out)
    tracker.log_artifact(args.csv)


@dataclass(frozen=True)
class GatherArgs(TidyCsvOut):
    inputs: tuple[Path, ...] = field(metadata=_h("evaluation summary JSONs"))
    markdown: Path = field(metadata=_h("Markdown table of the 'all' rows"))


def gather(args: GatherArgs, tracker) -> None:
    rows = tidy_rows([read_json(p) for p in args.inputs])
    write_table(rows, columns(rows), args.out, to_markdown(rows), args.markdown, tracker)
    tracker.log_metrics({"n_rows": len(rows)})
