"""The verb ``figure-budgets-summary``: one figure of every calibrated family's quality against passes,
a panel per comparison, across domains (:mod:`mdm_mi.evaluation.summary_figure`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.evaluation.summary_figure import merge_panels, read_panel, summary_figure
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h


@dataclass(frozen=True)
class BudgetsSummaryArgs:
    runs: tuple[Path, ...] = field(metadata=h("runs.json of each comparison (sudoku-compare, antibody-compare, protein-compare), one panel each"))
    titles: tuple[str, ...] = field(metadata=h(
        "a panel title per runs.json, in order; files with the same title are one panel (e.g. one test set run at two lists of budgets)"))
    out: Path = field(metadata=h("output figure (.png, .pdf)"))


def figure_budgets_summary(args: BudgetsSummaryArgs, tracker) -> None:
    if len(args.titles) != len(args.runs):
        raise InputError(f"--titles needs one title per --runs file: {len(args.runs)} files, {len(args.titles)} titles")
    by_title: dict[str, list] = {}
    for path, title in zip(args.runs, args.titles):
        by_title.setdefault(title, []).append(read_panel(path, title))
    summary_figure([merge_panels(panels) for panels in by_title.values()], args.out)
    tracker.log_artifact(args.out)
