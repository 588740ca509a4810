"""The FASTA format every sequence domain reads and writes (protein, your own model, antibodies) and
the 20 standard amino acids their protein alphabets share; below the domains, so none imports another
for them. Headers are stored without the leading ``>``; sequences are upper-cased with whitespace
removed (or read as written: ``read_fasta(path, as_written=True)``).

    records = read_fasta("resources/data/protein/uniref50_len50-100.fasta")   # [(header, seq), ...]
    write_fasta("results/protein/reference.fasta", records[:500])
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, read_text_input

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard amino acids (ESM-C's logits in this order: protein.esmc)

Record = tuple[str, str]


def read_fasta(path: str | Path, as_written: bool = False) -> list[Record]:
    """Read ``path`` → ``[(header, sequence), ...]`` in file order.

    Sequences are upper-cased with whitespace removed (proteins), or with ``as_written`` kept as
    written: case kept and each line break a space, so a record reads like a line of text (tokens of
    several characters separated by spaces or line breaks: :func:`mdm_mi.hf.jobs.read_sequences`).
    Raises :class:`InputError` (one line) for a missing file, text before the first header, a record
    without sequence, or a file without records. Letters are not checked here (see
    :func:`mdm_mi.protein.sequences.validate_sequence`).
    """
    path = Path(path)
    text = read_text_input(path, "FASTA")
    records: list[Record] = []
    header: str | None = None
    chunks: list[str] = []

    def flush(line_no: int) -> None:
        if header is None:
            return
        seq = " ".join(chunks) if as_written else "".join(chunks).upper()
        if not seq:
            raise InputError(f"{path}: record {header!r} (before line {line_no}) has no sequence")
        records.append((header, seq))

    n_lines = 0
    for n_lines, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            flush(n_lines)
            header, chunks = line[1:].strip(), []
        elif header is None:
            raise InputError(f"{path}: line {n_lines} has sequence text before the first '>' header")
        else:
            chunks.append(" ".join(line.split()) if as_written else "".join(line.split()))
    flush(n_lines + 1)
    if not records:
        raise InputError(f"FASTA file has no records: {path}")
    return records


def write_fasta(path: str | Path, records: Iterable[Record], width: int | None = None) -> None:
    """Write ``records`` to ``path`` atomically; each sequence on one line, or wrapped at ``width``."""
    if width is not None and width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    lines: list[str] = []
    for header, seq in records:
        if "\n" in header or "\r" in header:
            raise InputError(f"FASTA header contains a line break: {header!r}")
        lines.append(f">{header}")
        if width is None:
            lines.append(seq)
        else:
            lines.extend(seq[i : i + width] for i in range(0, len(seq), width))
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + ("\n" if lines else ""))
