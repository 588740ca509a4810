"""FASTA reading/writing, sequence validation and a seeded reference sample.

    records = read_fasta("resources/data/protein/uniref50_len50-100.fasta")   # [(header, seq), ...]
    reference = sample_reference(records, 500, seed=0)
    write_fasta("results/protein/reference.fasta", reference)

Headers are stored without the leading ``>``; sequences are upper-cased with whitespace removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, read_text_input

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard amino acids (same as mdm_mi.protein.esmc)
_AA_SET = frozenset(AMINO_ACIDS)

Record = tuple[str, str]


def read_fasta(path: str | Path) -> list[Record]:
    """Read ``path`` → ``[(header, sequence), ...]`` in file order.

    Raises :class:`InputError` (one line) for a missing file, text before the first header, a record
    without sequence, or a file without records. Letters are not checked here (see
    :func:`validate_sequence`).
    """
    path = Path(path)
    text = read_text_input(path, "FASTA")
    records: list[Record] = []
    header: str | None = None
    chunks: list[str] = []

    def flush(line_no: int) -> None:
        if header is None:
            return
        seq = "".join(chunks).upper()
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
            chunks.append("".join(line.split()))
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


def validate_sequence(
    seq: str, min_len: int | None = None, max_len: int | None = None, name: str | None = None
) -> str:
    """Return ``seq`` if it uses only the 20 standard amino acids (upper case) and its length lies in
    ``[min_len, max_len]``; otherwise raise :class:`InputError` naming the bad letters or the length."""
    what = f"sequence {name!r}" if name else "sequence"
    if not isinstance(seq, str):
        raise InputError(f"{what} is not a string: {type(seq).__name__}")
    bad = sorted(set(seq) - _AA_SET)
    if bad:
        first = next(i for i, c in enumerate(seq) if c not in _AA_SET)
        letters = ", ".join(repr(c) for c in bad[:10]) + (" ..." if len(bad) > 10 else "")
        raise InputError(
            f"{what} has letters outside the 20 standard amino acids {AMINO_ACIDS}: {letters} "
            f"(first at position {first + 1})"
        )
    if min_len is not None and len(seq) < min_len:
        raise InputError(f"{what} has length {len(seq)}, shorter than the minimum {min_len}")
    if max_len is not None and len(seq) > max_len:
        raise InputError(f"{what} has length {len(seq)}, longer than the maximum {max_len}")
    if not seq:
        raise InputError(f"{what} is empty")
    return seq


def sample_reference(records: Sequence[Record], n: int, seed: int) -> list[Record]:
    """``n`` distinct records drawn without replacement by a seeded permutation.

    Deterministic for a given ``(records, seed)``, and nested: the sample of size ``n`` is a prefix of
    the sample of size ``n + 1``. Raises :class:`InputError` if ``n`` exceeds the number of records.
    """
    if n < 0:
        raise InputError(f"reference size must be >= 0, got {n}")
    if n > len(records):
        raise InputError(f"cannot sample {n} reference sequences from only {len(records)} records")
    order = np.random.default_rng(seed).permutation(len(records))[:n]
    return [records[int(i)] for i in order]
