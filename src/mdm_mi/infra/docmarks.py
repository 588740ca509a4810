"""Docs held to their data: rendered blocks and the sources of every number in a page's prose.

A page says where its numbers come from in two ways (issue 47: "results are data"):

* a **rendered block**, written by one command from one committed data file::

      <!-- render: NAME PATH -->
      ...the renderer's output, never edited by hand...
      <!-- /render -->

  ``NAME`` picks a renderer (``mdm_mi.jobs.docs.RENDERERS``), ``PATH`` is the data file, relative to
  the repository root. ``mdm-mi render-docs`` rewrites every block; ``--check`` fails when one differs.
* a **sources line** for the numbers of the page's prose: ``<!-- sources: PATH [PATH ...] -->``.
  Every number outside code, links and rendered blocks must appear in one of those files
  (:func:`unbacked_numbers`), at the precision the page prints it.

Pages kept only as a record (``docs/record/``) carry :data:`RECORD_BANNER` instead: their numbers
come from runs whose files were not committed, and no front page may repeat them.

    blocks = render_blocks(Path("docs/answer.md").read_text())
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

BLOCK = re.compile(r"<!-- render: (?P<name>[\w-]+) (?P<path>\S+) -->\n(?P<body>.*?)<!-- /render -->", re.S)
SOURCES = re.compile(r"<!-- sources: (?P<paths>[^>]*?) -->")
RECORD_BANNER = "> **Record, not re-checkable.**"
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# a number as pages print it: optional sign (ASCII or U+2212), thousands commas, decimals
NUMBER = re.compile(r"(?<![\w.\-−])([+\-−]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b(?:19|20)\d{2}\b")
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
SOURCE_NUMBER = re.compile(r"[+\-−]?\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?")
SMALL = 10  # integers up to this are counts and ordinals of the prose (two runs, ÷4, Algorithm 1)
ISSUE_REF = re.compile(r"(?i)\b(?:issue|issues|stop|lease|step|item|items|PF)\s+\d+(?:\s*(?:,|and|–|-)\s*\d+)*")


@dataclass(frozen=True)
class RenderBlock:
    """One rendered block of a page: its renderer, its data file and the text it holds now."""

    name: str
    path: str
    body: str


def render_blocks(text: str) -> list[RenderBlock]:
    """The rendered blocks of a page, in order."""
    return [RenderBlock(m["name"], m["path"], m["body"]) for m in BLOCK.finditer(text)]


def rewrite_blocks(text: str, render) -> str:
    """``text`` with every block's body replaced by ``render(name, path)`` (ending in a newline)."""
    def body(m: re.Match) -> str:
        out = render(m["name"], m["path"])
        out = out if out.endswith("\n") else out + "\n"
        return f"<!-- render: {m['name']} {m['path']} -->\n{out}<!-- /render -->"
    return BLOCK.sub(body, text)


def declared_sources(text: str) -> list[str]:
    """The files a page's ``sources`` lines name."""
    return [p for m in SOURCES.finditer(text) for p in m["paths"].split()]


def prose(text: str) -> str:
    """The page without rendered blocks, code, link targets, comments, dates or issue references:
    what is left is the text whose numbers need a source."""
    for pattern in (BLOCK, FENCE, COMMENT, CODE_SPAN, LINK_TARGET, DATE, ISSUE_REF):
        text = pattern.sub(" ", text)
    return text


def _decimal(sign: str, whole: str, frac: str | None) -> Decimal:
    return Decimal(("-" if sign in "-−" and sign else "") + whole.replace(",", "") + (frac or ""))


def numbers_in(text: str) -> list[tuple[str, Decimal]]:
    """Every number of ``text`` as (how it is printed, its value)."""
    out = []
    for m in NUMBER.finditer(text):
        try:
            out.append((m.group(0), _decimal(m[1], m[2], m[3])))
        except InvalidOperation:
            continue
    return out


def _text_values(text: str) -> set[Decimal]:
    """The numbers of free text: ``1,000`` is one number (a thousands separator), as pages print it."""
    values: set[Decimal] = set()
    for m in SOURCE_NUMBER.finditer(THOUSANDS.sub("", text)):
        try:
            values.add(Decimal(m.group(0).replace("−", "-")))
        except InvalidOperation:
            continue
    return values


def _json_values(node) -> set[Decimal]:
    """The numbers of parsed JSON: each number as written, each string (keys too) read as free text."""
    if isinstance(node, bool) or node is None:
        return set()
    if isinstance(node, (int, float)):
        return {Decimal(repr(node))} if node == node and abs(node) != float("inf") else set()
    if isinstance(node, str):
        return _text_values(node)
    children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
    return set().union(*(_json_values(c) for c in children)) if children else set()


def file_values(path: Path) -> set[Decimal]:
    """Every number written in one file. A CSV is read cell by cell and a JSON file value by value,
    so the comma between two fields (``3.658,823``, ``[1,234]``) never joins them into one number;
    other text (YAML, Markdown, logs) is free text."""
    text = path.read_text(errors="replace")
    if path.suffix == ".csv":
        rows = csv.reader(io.StringIO(text))
        return set().union(set(), *(_text_values(cell) for row in rows for cell in row))
    if path.suffix == ".json":
        try:
            return _json_values(json.loads(text))
        except json.JSONDecodeError:
            pass  # not JSON after all: read it as text
    return _text_values(text)


def source_values(paths: list[Path]) -> set[Decimal]:
    """Every number written in the files ``paths`` (:func:`file_values`)."""
    return set().union(set(), *(file_values(p) for p in paths))


def backed(value: Decimal, printed: str, values: set[Decimal]) -> bool:
    """Whether ``value`` (printed with ``printed``'s decimals) is a rounding of a source number, of
    its magnitude (a sign the page adds), or of 100× it (a fraction the page prints in %)."""
    places = Decimal(1).scaleb(value.as_tuple().exponent) if value.as_tuple().exponent < 0 else Decimal(1)
    target = abs(value)
    for v in values:
        for candidate in (abs(v), abs(v) * 100):
            if abs(candidate - target) <= places / 2 + Decimal("1e-12"):
                return True
    return False


def unbacked_numbers(text: str, root: Path) -> list[str]:
    """The numbers of a page's prose that no declared source holds (small integers pass: they
    count things); an empty list means every number has a committed source."""
    values = source_values([root / p for p in declared_sources(text)])
    missing = []
    for printed, value in numbers_in(prose(text)):
        if value == value.to_integral_value() and abs(value) <= SMALL and "." not in printed:
            continue
        if not backed(value, printed, values):
            missing.append(printed)
    return missing
