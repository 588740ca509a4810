"""The verb ``render-docs``: every rendered block of README.md and docs/ rewritten from its data file.

:data:`RENDERERS` is the one table of renderers: name → function(path) → Markdown. A page's block
``<!-- render: NAME PATH -->`` … ``<!-- /render -->`` (:mod:`mdm_mi.infra.docmarks`) holds exactly
what ``RENDERERS[NAME](PATH)`` returns; ``--check`` exits 1 naming each block that differs (the doc
test runs it), without it the blocks are rewritten in place.

    mdm-mi render-docs            # rewrite
    mdm-mi render-docs --check    # fail when a page and its data disagree
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mdm_mi.antibody import report as antibody_report
from mdm_mi.evaluation import doc_tables
from mdm_mi.sudoku import report as sudoku_report
from mdm_mi.testbed import report as testbed_report
from mdm_mi.infra.docmarks import rewrite_blocks
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h
from mdm_mi.infra.io import write_text

PAGES = ("README.md", "docs")  # the pages held to their data: README and every docs/ page outside docs/record/
RECORD = "docs/record"

RENDERERS: dict[str, Callable[[Path], str]] = {  # name → renderer(data file) → Markdown
    "prereg-design": doc_tables.preregistration_design,
    "provenance": doc_tables.provenance_table,
    "sudoku-budgets": doc_tables.sudoku_budgets,
    "primary": doc_tables.primary_contrast,
    "prereg-sudoku": doc_tables.prereg_sudoku,
    "prereg-antibody": doc_tables.prereg_antibody,
    "fidelity": doc_tables.fidelity_table,
    "primary-csv": doc_tables.primary_rows_csv,
    "answer-lines": doc_tables.answer_lines,
    "same-baseline": doc_tables.same_baseline,
    "float-sensitivity": doc_tables.float_sensitivity,
    "job-times": doc_tables.job_times,
    "test-durations": doc_tables.durations_table,
    "test-command": doc_tables.test_command_summary,
    "testbed": testbed_report.render_table,
    "testbed-remask": testbed_report.render_remask_table,
    "placement": testbed_report.render_placement,
    "oracle-ceiling": sudoku_report.ceiling_block,
    "dev-screen": sudoku_report.screen_block,
    "confirm-63": sudoku_report.confirm_block,
    "antibody-pass-adjusted": antibody_report.pass_adjusted_block,
    "antibody-second-scorer": antibody_report.second_scorer_block,
    "antibody-oracle": antibody_report.oracle_block,
}


def checked_pages(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/ but docs/record/ (kept as history)."""
    pages = [root / "README.md"]
    pages += sorted(p for p in (root / "docs").rglob("*.md") if RECORD not in p.relative_to(root).as_posix())
    return pages


def render(root: Path, name: str, path: str) -> str:
    """One block's text: ``RENDERERS[name]`` on ``root / path``; one-line error when either is unknown."""
    if name not in RENDERERS:
        raise InputError(f"unknown renderer {name!r} (known: {', '.join(sorted(RENDERERS))})")
    if not (root / path).exists():
        raise InputError(f"render: {path} does not exist (a rendered block names a committed data file)")
    return RENDERERS[name](root / path)


def fresh_pages(root: Path) -> list[tuple[Path, str]]:
    """Each checked page whose rendered blocks differ from what their renderers write now, with
    the page's text as it should be."""
    out = []
    for page in checked_pages(root):
        text = page.read_text()
        fresh = rewrite_blocks(text, lambda n, p: render(root, n, p))
        if fresh != text:
            out.append((page, fresh))
    return out


def stale_blocks(root: Path) -> list[str]:
    """The checked pages (relative to ``root``) whose rendered blocks are stale."""
    return [str(page.relative_to(root)) for page, _ in fresh_pages(root)]


@dataclass(frozen=True)
class RenderDocsArgs:
    check: bool = field(default=False, metadata=h("do not write: exit 1 naming each page whose rendered blocks "
                                                  "differ from their data"))
    root: Path = field(default=Path("."), metadata=h("the repository root"))


def render_docs(args: RenderDocsArgs, tracker=None) -> int | None:
    """Rewrite (or, with ``--check``, verify) every rendered block of the checked pages."""
    root = Path(args.root)
    if args.check:
        stale = stale_blocks(root)
        for page in stale:
            print(f"stale: {page} (run: mdm-mi render-docs)", file=sys.stderr)
        return 1 if stale else None
    for page, fresh in fresh_pages(root):
        write_text(page, fresh)  # atomically: a page is never left half-rendered
        print(f"rendered {page.relative_to(root)}")
    return None
