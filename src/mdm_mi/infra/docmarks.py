"""Docs held to their data: rendered blocks and the sources of every number in a page's prose.

A page says where its numbers come from in two ways ("results are data"):

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
DATE = re.compile(r"(?<![\d.])\d{4}-\d{2}-\d{2}\b|(?<![\d.,])(?:19|20)\d{2}\b(?!\.\d)")  # never the digits of a decimal
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


# ---- prose numbers bound to their own field ------------------------------------------------------------------
#
# A page that holds BOUND_PAGE binds every result number of its prose to one field of one data file:
#
#     +2.5<!-- value: h24#divisor=10,first=mi*,second=eb|diff --> pp
#
# The marker follows the number (a ``%`` may sit between them). ``h24`` is an alias the page declares
# once (``<!-- data: h24=docs/data/x/budgets.csv -->``), or the path itself. The field is a JSON path
# (``a.b.0``) or, in a CSV, ``col=value,col=value|column`` (the one row whose cells match), or in any
# file ``~text``: the first number after that literal text (a log line, a string field). The number
# must be the field's value rounded to the digits printed (``<!-- value: x#diff *100 -->``: 100× it, a
# fraction printed in % or pp; an unsigned number may print a negative value's magnitude). Numbers that are not results pass by
# kind: integers (counts, sizes, section numbers: the sources line still holds them), dates, issue
# references, code and links; any other is marked ``<!-- given: why -->`` (a setting, a version).

BOUND_PAGE = "<!-- numbers: bound -->"
ALIASES = re.compile(r"<!-- data: (?P<pairs>[^>]*?) -->")
VALUE = re.compile(r"<!-- value: (?P<ref>.+?) -->")
GIVEN = re.compile(r"<!-- given: [^>]*? -->")
PERCENT = " *100"  # a marker ending so: the page prints the field × 100 (a fraction in % or pp)
VALUE_OR_GIVEN = re.compile(r"<!-- (?:value|given): .+? -->")
DOTTED_VERSION = re.compile(r"\b\d+\.\d+\.\d+\b")
# a number as prose prints it, with an exponent (1.5e-05), and what may follow it before a marker
PROSE_NUMBER = re.compile(r"(?<![\w.\-−])[+\-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+\-−]?\d+)?(?![\w])")
MARKED = re.compile(PROSE_NUMBER.pattern + r"%?(?P<marker><!-- (?:value|given): .+? -->)")


def is_bound_page(text: str) -> bool:
    """Whether a page binds its prose numbers (holds :data:`BOUND_PAGE`)."""
    return BOUND_PAGE in text


def _aliases(text: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for m in ALIASES.finditer(text) for pair in m["pairs"].split())


def field_value(root: Path, ref: str, aliases: dict[str, str]) -> float:
    """The number ``ref`` (``FILE#FIELD``, FILE an alias or a path under ``root``) names; KeyError or
    ValueError saying what is missing."""
    name, _, path = ref.partition("#")
    file = root / aliases.get(name, name)
    if path.startswith("~"):  # a log or a string field: the first number after the literal text
        text = file.read_text()
        at = text.find(path[1:])
        found = SOURCE_NUMBER.search(text, at + len(path) - 1) if at >= 0 else None
        if found is None:
            raise KeyError(f"{ref}: no number after {path[1:]!r} in {file.name}")
        return float(found.group(0).replace("−", "-"))
    if file.suffix == ".csv":
        match, _, column = path.rpartition("|")
        want = dict(cell.split("=", 1) for cell in match.split(","))
        with file.open(newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if all(r.get(k) == v for k, v in want.items())]
        if len(rows) != 1:
            raise KeyError(f"{ref}: {len(rows)} rows of {file.name} match {want}")
        return float(rows[0][column])
    node = json.loads(file.read_text())
    for key in path.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise ValueError(f"{ref}: not a number ({node!r})")
    return float(node)


def _prints(printed: str, value: float) -> bool:
    """Whether ``printed`` is ``value`` rounded to its digits (unsigned: its magnitude may be)."""
    shown = Decimal(printed.replace("−", "-").replace(",", ""))
    unit = Decimal(1).scaleb(min(shown.as_tuple().exponent, 0))
    half = unit / 2 + unit * Decimal("1e-9")  # float round-off at the boundary, relative to the digits shown
    target = Decimal(repr(value))
    if printed[0] not in "+-−":
        shown, target = abs(shown), abs(target)
    return abs(shown - target) <= half


def _bound_prose(text: str) -> str:
    """The prose :func:`unbound_numbers` reads: what :func:`prose` keeps, less dotted versions
    (``2.13.0``), with the value and given markers left in place, untouched (every other comment removed)."""
    text = BLOCK.sub(" ", text)
    markers = VALUE_OR_GIVEN.findall(text)
    text = VALUE_OR_GIVEN.sub("\x00", text)  # the markers' own digits and dates are not prose
    for pattern in (FENCE, COMMENT, CODE_SPAN, LINK_TARGET, DATE, ISSUE_REF, DOTTED_VERSION):
        text = pattern.sub(" ", text)
    parts = text.split("\x00")
    return "".join(part + (markers[i] if i < len(markers) else "") for i, part in enumerate(parts))


def unbound_numbers(text: str, root: Path) -> list[str]:
    """The prose numbers of a bound page that break the binding: a decimal with no marker, a marker
    whose field is missing, or a number that is not its field's value; empty when all hold."""
    aliases, problems = _aliases(text), []
    body = _bound_prose(text)
    marked = set()
    for m in MARKED.finditer(body):
        marked.add(m.start())
        ref = VALUE.fullmatch(m["marker"])
        if ref is None:
            continue  # given: not a result
        printed = m.group(0)[: m.start("marker") - m.start()].rstrip("%")
        field, percent = ref["ref"].removesuffix(PERCENT), ref["ref"].endswith(PERCENT)
        try:
            value = field_value(root, field, aliases) * (100 if percent else 1)
        except (KeyError, ValueError, IndexError, OSError) as err:
            problems.append(f"{printed} ({err})")
            continue
        if not _prints(printed, value):
            problems.append(f"{printed} (its field {ref['ref']} is {value:.6g})")
    blank = lambda m: " " * len(m.group(0))  # noqa: E731  (keeps positions: the markers' own digits are not prose)
    for m in PROSE_NUMBER.finditer(VALUE.sub(blank, GIVEN.sub(blank, body))):
        if m.start() not in marked and re.search(r"[.e]", m.group(0)):
            problems.append(f"{m.group(0)} (no value marker)")
    return problems
