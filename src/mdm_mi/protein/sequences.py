"""Protein sequences: validation against the 20 standard amino acids and a seeded reference sample
(reading and writing FASTA is :mod:`mdm_mi.infra.fasta`).

    reference = sample_reference(read_data_records("resources/data/protein/uniref50_len50-100.fasta"), 500, seed=0)
    validate_sequence("MKTAYIAK", min_len=5)
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS, Record
from mdm_mi.infra.reader import canonical, read_file_items

_AA_SET = frozenset(AMINO_ACIDS)


def read_reference(path) -> list[str]:
    """A reference FASTA's proteins (``generate --reference``, ``hf-compare``, ``protein-compare``), read by
    the one reader (:func:`mdm_mi.infra.reader.read_file_items`: case kept, line breaks dropped) and each
    checked for the 20 amino acids by record (a lowercase letter is refused, not upper-cased)."""
    return [validate_sequence(canonical(item.text, one_char=True), name=item.name)
            for item in read_file_items(Path(path), "reference")]


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
        case = "; case counts: write them in upper case" if any(c.upper() in _AA_SET for c in bad) else ""
        raise InputError(
            f"{what} has letters outside the 20 standard amino acids {AMINO_ACIDS}: {letters} "
            f"(first at position {first + 1}{case})"
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
