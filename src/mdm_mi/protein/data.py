"""Protein data for the default run: the MDM's training set, the reference sets and MI contexts.

    prepared = prepare(train_records, reference_records, PrepareConfig(...))

- ``train`` / ``heldout``: the training FASTA (UniRef50 + CATH S20, no sequence of length 50–100)
  restricted to the 20 standard amino acids and split by a seeded permutation; the MDM trains on
  random crops of ``train``; ``heldout`` is never trained on and gives held-out MI contexts.
- ``reference`` / ``reference2``: a seeded draw of ``n_reference`` UniRef50 sequences of length
  50–100 (the paper's reference set) and a disjoint second draw that measures the JSD noise floor.
- MI contexts: crops of train/held-out sequences with lengths drawn from the reference lengths,
  encoded as ``(S, max_len + 2)`` token ids (BOS, residues, EOS, pads) for the probing labeller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS, Record
from mdm_mi.infra.io import write_npy
from mdm_mi.protein.sequences import sample_reference
from mdm_mi.protein.tokens import protein_tokens

_AA = frozenset(AMINO_ACIDS)


@dataclass(frozen=True)
class PrepareConfig:
    n_reference: int
    heldout_fraction: float
    n_train_contexts: int
    n_heldout_contexts: int
    min_length: int
    max_length: int
    seed: int


def standard_only(records: Sequence[Record]) -> list[Record]:
    """The records whose sequences use only the 20 standard amino acids."""
    return [(h, s) for h, s in records if s and set(s) <= _AA]


def split_records(records: Sequence[Record], heldout_fraction: float, seed: int) -> tuple[list, list]:
    """Seeded split → (train, heldout); heldout gets ``round(fraction · n)`` records (at least 1)."""
    if not 0 < heldout_fraction < 1:
        raise InputError(f"heldout_fraction must lie in (0, 1), got {heldout_fraction}")
    order = np.random.default_rng(seed).permutation(len(records))
    n_held = max(1, round(heldout_fraction * len(records)))
    held = [records[int(i)] for i in order[:n_held]]
    train = [records[int(i)] for i in order[n_held:]]
    return train, held


def random_crop(seq: str, length: int, rng: np.random.Generator) -> str:
    """A uniformly placed window of ``length`` residues (the whole sequence if shorter)."""
    if len(seq) <= length:
        return seq
    start = int(rng.integers(0, len(seq) - length + 1))
    return seq[start : start + length]


def crops_like(records: Sequence[Record], lengths: np.ndarray, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` crops of random records, each crop's length drawn from ``lengths`` (the reference's)."""
    seqs = [s for _, s in records]
    picks = rng.integers(0, len(seqs), n)
    return [random_crop(seqs[int(i)], int(rng.choice(lengths)), rng) for i in picks]


def reference_pair(records: Sequence[Record], n: int, seed: int, min_len: int, max_len: int):
    """The reference (a seeded draw of ``n`` records of length in [min_len, max_len]) and a second,
    independent draw of up to ``n`` records from those left over (disjoint from the first).

    With the bundled 585 UniRef50 sequences the second draw has only 85 sequences; its JSD against
    the reference is then an upper estimate of the metric's noise floor at n = 500.
    """
    pool = [r for r in standard_only(records) if min_len <= len(r[1]) <= max_len]
    if len(pool) < n + 1:
        raise InputError(f"only {len(pool)} reference sequences of length {min_len}-{max_len}; "
                         f"{n} + at least 1 for the second draw requested")
    first = sample_reference(pool, n, seed)
    taken = {id(r) for r in first}
    rest = [r for r in pool if id(r) not in taken]
    return first, sample_reference(rest, min(n, len(rest)), seed + 1)


def write_contexts(path: Path, seqs: list[str], width: int) -> None:
    """MI label contexts: ``(S, width)`` token ids (BOS, residues, EOS, pads), the ``--sequences`` of
    ``label``."""
    write_npy(path, protein_tokens().encode_batch(seqs, width).numpy())
