"""The one reader of what a user hands a verb: sequences, templates and puzzles, from a positional
argument, standard input (``-``) or ``--file`` (FASTA, a table, or text lines), read the same way for
every verb:

- **where**: the argument is one item (its line breaks are spaces); ``-`` reads standard input, one
  item per non-empty line; a ``--file`` with a FASTA suffix gives one item per record (named by the
  header's first word), a ``.tsv``/``.csv`` one per row (column ``template``, ``sequence``, or
  ``sequence`` + ``mask``), any other file one per non-empty line;
- **case** is kept: ``m`` is not ``M`` (the model's alphabet refuses a token it lacks, in one line);
- **spaces and line breaks** separate tokens; with a one-character alphabet (proteins, Sudoku digits)
  they carry no meaning and are dropped (:func:`positions`), so ``MKTA _ _ QRQ`` is ``MKTA__QRQ``;
- **the mask character** ``_`` is one masked position wherever it stands (a character of its own, or a
  whitespace-separated token for an alphabet of longer tokens).

    items = read_items(args.template, args.file, "template")   # [Item("template1", "MK__A"), ...]
    positions("MK _ _A", one_char=True)                          # ['M', 'K', '_', '_', 'A']

Label token files (``.npy``, ids, not text) are read by ``mi.contexts.read_token_file``; the workflow's
own protein FASTA files (UniRef, families, generated proteins) by :func:`read_data_records`, upper-cased.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import read_fasta
from mdm_mi.infra.io import read_text_input

MASK_CHAR = "_"  # a masked position, for every verb and domain
FASTA_SUFFIXES = (".fasta", ".fa", ".faa")  # a --file read as FASTA records
TABLE_SUFFIXES = (".tsv", ".csv")
STDIN = "-"


@dataclass(frozen=True)
class Item:
    """One sequence, template or puzzle as the user wrote it: ``name`` (a FASTA id, ``line 3``, ``row 2``,
    ``template1``) and ``text`` (case kept; each line break of a FASTA record a space)."""

    name: str
    text: str


def read_items(argument: str | None, file: Path | str | None, what: str) -> list[Item]:
    """The items of a positional ``argument`` (``-``: standard input) or of ``--file``, exactly one of
    the two given; ``what`` names them in errors (``"template"``). One-line :class:`InputError` for
    both, neither, or nothing read."""
    if argument is not None and file is not None:
        raise InputError(f"give either the {what} argument or --file, not both")
    if argument is None and file is None:
        raise InputError(f"no {what} given: pass it as the argument, --file PATH, or - to read stdin")
    if file is not None:
        items = read_file_items(Path(file), what)
    elif argument == STDIN:
        items = _lines(read_text_input(STDIN, what), "stdin line")
    else:
        items = [Item(f"{what}1", " ".join(argument.split()))]
    if not items or not any(item.text for item in items):
        raise InputError(f"{'stdin' if argument == STDIN else file or 'the argument'}: no {what} (the input is empty)")
    return items


def read_file_items(path: Path, what: str) -> list[Item]:
    """A file's items (:func:`read_items`' ``--file``): FASTA records, table rows, or text lines."""
    suffix = path.suffix.lower()
    if suffix in FASTA_SUFFIXES:
        return [Item((header.split() or [f"record {k}"])[0], seq)
                for k, (header, seq) in enumerate(read_fasta(path, as_written=True), start=1)]
    if suffix in TABLE_SUFFIXES:
        return _table_items(path, what)
    return _lines(read_text_input(path, what), "line")


def read_data_records(path: Path | str) -> list[tuple[str, str]]:
    """A protein FASTA of the workflow's own data (UniRef references, a family's sequences, the proteins
    a comparison generated), never a user's template → ``[(header, sequence), ...]``: the one reading that
    does not keep case, as those databases write residues upper-case (whitespace dropped)."""
    return read_fasta(path)


def read_file_text(path: Path | str, what: str) -> str:
    """A whole text file (a puzzle CSV, a table a domain parses itself), one-line errors as every input."""
    return read_text_input(path, what)


def _lines(text: str, label: str) -> list[Item]:
    return [Item(f"{label} {k}", " ".join(line.split())) for k, line in enumerate(text.splitlines(), start=1)
            if line.strip()]


def _table_items(path: Path, what: str) -> list[Item]:
    """A TSV (or CSV) with a ``template`` or ``sequence`` column, or ``sequence`` + ``mask`` (``_``/``1`` =
    masked); ``id`` names a row."""
    text = read_text_input(path, f"{what} table")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="," if path.suffix.lower() == ".csv" else "\t"))
    if not rows:
        raise InputError(f"{path}: no rows")
    cols = set(rows[0])
    out = []
    for i, r in enumerate(rows):
        name = (r.get("id") or "").strip() or f"row {i + 2}"
        if {"sequence", "mask"} <= cols:
            seq, mask = r["sequence"].strip(), r["mask"].strip()
            if len(seq) != len(mask):
                raise InputError(f"{path} row {i + 2}: mask has {len(mask)} characters, sequence {len(seq)}")
            out.append(Item(name, "".join(MASK_CHAR if m in "_1" else s for s, m in zip(seq, mask))))
        elif cols & {"template", "sequence"}:
            out.append(Item(name, " ".join((r.get("template") or r.get("sequence") or "").split())))
        else:
            raise InputError(f"{path}: needs a 'template' or 'sequence' column, or 'sequence' and 'mask' columns")
    return out


def positions(text: str, one_char: bool) -> list[str]:
    """An item's tokens: its characters with every space and line break dropped (``one_char``: an
    alphabet of one-character tokens), else its whitespace-separated words. Case is kept."""
    return list("".join(text.split())) if one_char else text.split()


def canonical(text: str, one_char: bool) -> str:
    """An item written the one way every domain reads it: characters run together (``one_char``), or
    tokens separated by single spaces."""
    return ("" if one_char else " ").join(positions(text, one_char))


def masked_count(text: str, one_char: bool) -> int:
    """How many positions of an item are masked (:data:`MASK_CHAR`)."""
    return positions(text, one_char).count(MASK_CHAR)
