"""Docs held to committed data (issue 47): rendered blocks equal their renderer's output, a changed
digit in a data file fails the check, every number of a checked page's prose has a declared source,
record pages say they are records, and relative links resolve."""

from __future__ import annotations

import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from mdm_mi.jobs.docs import RENDERERS, checked_pages, render, stale_blocks
from mdm_mi.infra.docmarks import (
    FENCE,
    MARKED,
    RECORD_BANNER,
    VALUE,
    declared_sources,
    is_bound_page,
    render_blocks,
    rewrite_blocks,
    source_values,
    unbacked_numbers,
    unbound_numbers,
)

ROOT = Path(__file__).resolve().parents[1]
PAGES = checked_pages(ROOT)
BLOCKS = sorted({(b.name, b.path) for page in PAGES for b in render_blocks(page.read_text())})


def _id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_every_rendered_block_is_what_its_data_file_renders():
    assert stale_blocks(ROOT) == [], "run: mdm-mi render-docs"


NUMBER = re.compile(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?")
MAX_TRIES = 2000  # digits tried per data file (a value shown once may sit after many repeats of it)


def _spread(positions: list[int], per_pass: int = 40) -> list[int]:
    """``positions`` reordered to sweep the file: ``per_pass`` of them spread over it, then the ones beside..."""
    stride = max(1, len(positions) // per_pass)
    return [positions[i] for offset in range(stride) for i in range(offset, len(positions), stride)]


def _shown_digits(text: str, rendered: str) -> list[int]:
    """The digit positions of ``text`` worth mutating, in order: the first significant digit of each number
    that ``rendered`` shows (at some rounding, or ×100 as a percentage), then the first significant digit
    of every other number (a renderer may show only what it computes from them, e.g. a mixture's
    weights), then every other digit, each group spread over the file."""
    shown, leading = [], []
    on_page = {n.lstrip("-+") for n in NUMBER.findall(rendered)}  # whole numbers only: "0.8" is not in "0.88"
    for m in NUMBER.finditer(text):
        first = next((i for i, ch in enumerate(m.group()) if ch in "123456789"), None)
        if first is None:
            continue
        try:
            value = float(m.group())
        except ValueError:
            continue
        forms = {f"{value:.{d}f}" for d in range(5)} | {f"{100 * value:.1f}", f"{value:.4g}", f"{value:,.0f}"}
        (shown if any(len(f) > 2 and f.lstrip("-") in on_page for f in forms) else leading).append(m.start() + first)
    taken = set(shown) | set(leading)
    rest = [m.start() for m in re.finditer(r"\d", text) if m.start() not in taken]
    return _spread(shown) + _spread(leading) + _spread(rest)


@pytest.mark.parametrize(("name", "path"), BLOCKS, ids=[f"{n}:{p}" for n, p in BLOCKS])
def test_a_changed_digit_in_a_data_file_makes_its_page_stale(tmp_path, name, path):
    """In a copy of README.md and docs/, change one digit of ``path`` that its block shows: the
    check must name a page."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")  # fresh: test_every_rendered_block_is_what_its_data_file_renders
    data = tmp_path / path
    original = data.read_text()
    before = render(tmp_path, name, path)
    for pos in _shown_digits(original, before)[:MAX_TRIES]:
        data.write_text(original[:pos] + str((int(original[pos]) + 1) % 10) + original[pos + 1:])
        try:
            after = render(tmp_path, name, path)
        except Exception:  # a digit inside a key or a structure: not a number the page shows
            continue
        if after != before:
            assert stale_blocks(tmp_path), f"{path}: a changed digit left every page unchanged"
            return
    pytest.fail(f"no single digit of {path} changes what {name} renders")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_number_of_a_checked_page_has_a_committed_source(page):
    text = page.read_text()
    for source in declared_sources(text):
        assert (ROOT / source).is_file(), f"{_id(page)} names {source}, which is not a committed file"
    for block in render_blocks(text):
        assert block.name in RENDERERS and (ROOT / block.path).is_file(), (block.name, block.path)
    missing = unbacked_numbers(text, ROOT)
    assert not missing, (f"{_id(page)}: numbers with no source among {declared_sources(text)} "
                         f"(render them from a data file, or name the file in a sources line): {missing}")


def test_record_pages_say_they_are_not_re_checkable():
    record = sorted((ROOT / "docs" / "record").glob("*.md"))
    assert record, "docs/record/ holds the history"
    for page in record:
        assert RECORD_BANNER in page.read_text(), _id(page)


def test_rewriting_blocks_keeps_the_markers_and_the_text_around_them():
    text = "a\n<!-- render: x f.json -->\nold\n<!-- /render -->\nb\n"
    assert rewrite_blocks(text, lambda n, p: f"{n} {p}") == "a\n<!-- render: x f.json -->\nx f.json\n<!-- /render -->\nb\n"


def test_unbacked_numbers_finds_a_number_no_source_holds(tmp_path):
    (tmp_path / "d.json").write_text('{"acc": 0.2761, "n": 1000}')
    page = "<!-- sources: d.json -->\nSolves 27.6% of 1,000 puzzles in 2 runs (`--seed 42`), see [x](y-123.md)."
    assert unbacked_numbers(page, tmp_path) == []
    assert unbacked_numbers(page.replace("27.6", "27.9"), tmp_path) == ["27.9"]



def test_a_field_separator_never_joins_two_source_numbers(tmp_path):
    """A CSV row's ``3.658,823`` is two cells and a JSON ``[1,234]`` two values, never 3658823 or 1234;
    a quoted CSV cell or a JSON string keeps its thousands separator (``"1,379"`` is 1379)."""
    (tmp_path / "t.csv").write_text('rule,minutes,peak_mb,note\nx,3.658,823,"1,379 passed"\n')
    (tmp_path / "d.json").write_text('{"ab": [1,234], "n": "1,379 passed", "0.5": true}')
    values = source_values([tmp_path / "t.csv", tmp_path / "d.json"])
    assert {Decimal("3.658"), Decimal(823), Decimal(1), Decimal(234), Decimal(1379), Decimal("0.5")} <= values
    assert not {Decimal(3658823), Decimal(1234)} & values
    page = "<!-- sources: t.csv -->\nPeak 823 MB after 3.658 minutes."
    assert unbacked_numbers(page, tmp_path) == []
    assert unbacked_numbers("<!-- sources: t.csv -->\n3,658,823 bytes.", tmp_path) == ["3,658,823"]

LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))], ids=_id)
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        path = target.split("#")[0]
        if re.match(r"^[a-z]+:", target) or not path:
            continue
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, broken


# ---- prose numbers bound to their own field (issue 64, item 5) -------------------------------------------------

NOT_YET_BOUND: set[str] = set()  # checked pages whose prose numbers are still held only by their sources line (shrink it)
BOUND = [p for p in PAGES if is_bound_page(p.read_text())]


def test_every_checked_page_binds_its_prose_numbers_or_is_listed_as_not_yet():
    loose = {_id(p) for p in PAGES if not is_bound_page(p.read_text())}
    assert loose <= NOT_YET_BOUND, f"bind these pages' prose numbers (<!-- value: ... -->): {sorted(loose - NOT_YET_BOUND)}"
    assert {"README.md", "docs/answer.md", "docs/preregistration.md"} <= {_id(p) for p in BOUND}


@pytest.mark.parametrize("page", BOUND, ids=_id)
def test_every_result_number_of_a_bound_page_is_its_fields_value(page):
    problems = unbound_numbers(page.read_text(), ROOT)
    assert not problems, f"{_id(page)}: {problems}"


@pytest.mark.parametrize("old, new", [("[+1.1<!-- value: h24#divisor=10,first=mi*,second=eb|lo *100 -->, +4.0",
                                       "[+1.1<!-- value: h24#divisor=10,first=mi*,second=eb|lo *100 -->, +4.7"),
                                      ("Holm p 0.0021", "Holm p 0.0093")])
def test_the_issues_two_prose_mutations_fail(tmp_path, old, new):
    """Issue 64: answer.md's "+2.5 pp [+1.1, +4.0], Holm p 0.0021" changed to "[+1.1, +4.7]" or to
    "Holm p 0.0093" passed the sources check; in a copy of the page it now fails."""
    copy = tmp_path / "answer.md"
    text = (ROOT / "docs/answer.md").read_text()
    assert text.count(old) == 1, old
    copy.write_text(text.replace(old, new))
    assert unbacked_numbers(copy.read_text(), ROOT) == []  # the old check let it through
    assert unbound_numbers(copy.read_text(), ROOT), f"{new!r} passed"




def _value_spots(text: str) -> list[re.Match]:
    """The value-marked numbers of a page's prose (not those of a fenced example)."""
    fences = [m.span() for m in FENCE.finditer(text)]
    return [m for m in MARKED.finditer(text) if VALUE.fullmatch(m["marker"])
            and not any(a <= m.start() < b for a, b in fences)]


BOUND_WITH_VALUES = [p for p in BOUND if _value_spots(p.read_text())]


@pytest.mark.parametrize("page", BOUND_WITH_VALUES, ids=_id)
def test_a_changed_digit_of_any_bound_number_fails(page):
    """Every value-marked number of the page, its last digit changed by one: the check names it."""
    text = page.read_text()
    for m in _value_spots(text):
        end = m.start("marker") - (1 if text[m.start("marker") - 1] == "%" else 0)
        last = max(i for i in range(m.start(), end) if text[i].isdigit())
        mutated = text[:last] + str((int(text[last]) + 1) % 10) + text[last + 1:]
        assert unbound_numbers(mutated, ROOT), f"{_id(page)}: {text[m.start():end]!r} changed, still passed"


def test_a_binding_reads_json_csv_and_text_fields_and_flags_an_unmarked_decimal(tmp_path):
    (tmp_path / "d.json").write_text('{"acc": 0.2761, "ci": [0.25, 0.31], "p": 1.55e-05}')
    (tmp_path / "t.csv").write_text("budget,first,diff\n4,mi,-0.0064\n8,mi,0.013\n")
    (tmp_path / "log.txt").write_text("peak 1.56 GB after 856 s\n")
    page = ("<!-- data: d=d.json -->\n<!-- numbers: bound -->\n"
            "Solves 27.6%<!-- value: d#acc *100 --> [25.0<!-- value: d#ci.0 *100 -->, 0.31<!-- value: d#ci.1 -->], p "
            "1.5e-05<!-- value: d#p -->; −0.64<!-- value: t.csv#budget=4,first=mi|diff *100 --> pp; 1.56<!-- value: log.txt#~peak -->"
            " GB; Python 3.11<!-- given: a version -->; 2,000 puzzles on 2026-12-06.")
    assert unbound_numbers(page, tmp_path) == []
    assert unbound_numbers(page.replace("27.6%", "27.9%"), tmp_path) == ["27.9 (its field d#acc *100 is 27.61)"]
    assert unbound_numbers(page.replace("−0.64", "+0.64"), tmp_path)  # a printed sign is checked
    assert unbound_numbers(page + " Then 0.3 more.", tmp_path) == ["0.3 (no value marker)"]
    assert unbound_numbers(page.replace("budget=4", "budget=5"), tmp_path)  # no such row
    assert unbound_numbers(page.replace("−0.64", "−0.0"), tmp_path)  # *100 is the only scale: −0.0064 is not −0.0 pp
