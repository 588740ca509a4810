"""One protein family (Pfam PF00014, Kunitz/BPTI) as aligned records: parsing, splits, baselines.

    records = parse_a2m("resources/data/protein/pf00014_kunitz_pfam_full.a2m")
    kept, report = drop_nonstandard(records)                 # report: records with X, B, Z, U, O, ...
    train, val, reference = cluster_split(kept, identity=0.8, seed=0)
    profile = column_profile(train, pseudocount=0.5)         # (53, 21) incl. gap
    weights = sequence_weights(encode_columns([r.columns for r in train]), 0.8)   # Neff = weights.sum()
    losses = baseline_losses(train, reference, pseudocount=0.5)
    floor = sample_profile(profile, 1000, np.random.default_rng(0))

A2M rows: upper-case letters and ``-`` are the family's match columns (``-`` = a deleted column),
lower-case letters are insertions, ``.`` pads insertions. The protein sequence is the row without ``.``
and ``-``, upper-cased. A :class:`FamilyRecord` keeps the sequence, the match-column string and the
unpadded row (for building a profile HMM with insertions).

Identity between two records (:func:`pairwise_identity`) is computed on match columns only:
identical residues over the columns where both have a residue (gap = gap does not count), with that
count floored at half the shorter record's residues, so that fragments sharing a few columns are not
called identical while a record is always identical to itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import coo_matrix  # scipy comes with scikit-learn
from scipy.sparse.csgraph import connected_components

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS
from mdm_mi.infra.io import read_text_input

GAP = "-"
PAD = "."
COLUMN_ALPHABET = AMINO_ACIDS + GAP  # 21 letters of a match column; index 20 is the gap
GAP_INDEX = len(AMINO_ACIDS)
N_LETTERS = len(COLUMN_ALPHABET)
KUNITZ_MATCH_COLUMNS = 53  # match columns of the PF00014 alignment shipped in resources/data
SPLIT_NAMES = ("train", "val", "reference")
DEFAULT_FRACTIONS = (0.80, 0.05, 0.15)
MIN_OVERLAP_FRACTION = 0.5  # identity denominator floor, as a fraction of the shorter record's residues
IDENTITY_BLOCK = 512  # rows per block of the pairwise identity matrix (memory ~ block x n floats)

_CODE = np.full(256, -1, dtype=np.int16)
_CODE[np.frombuffer(COLUMN_ALPHABET.encode(), dtype=np.uint8)] = np.arange(N_LETTERS)


@dataclass(frozen=True)
class FamilyRecord:
    """One aligned family member: ``sequence`` (protein, upper case), ``columns`` (one letter of
    :data:`COLUMN_ALPHABET` per match column; residues outside the 20 are kept here, see
    :func:`drop_nonstandard`) and ``row``, the A2M row without ``.`` padding (insertions in lower
    case where they sit). ``row=None`` means no insertions are known: :func:`a2m_row` gives ``columns``."""

    name: str
    sequence: str
    columns: str
    row: str | None = None


def a2m_row(rec: FamilyRecord) -> str:
    """The record's unpadded A2M row: ``rec.row``, or ``rec.columns`` when that is unknown."""
    return rec.columns if rec.row is None else rec.row


# --- parsing ------------------------------------------------------------------------------------------


def _a2m_rows(text: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """Yield ``(name, aligned row, header line number)`` of FASTA-like ``text`` read from ``path``; the
    name is the header's first word and the row is the record's lines joined."""
    name, chunks, header_line = None, [], 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith(">"):
            if name is not None:
                yield name, "".join(chunks), header_line
            words = line[1:].split(maxsplit=1)
            name, chunks, header_line = (words[0] if words else ""), [], line_no
        elif name is None:
            raise InputError(f"{path}: line {line_no} has alignment text before the first '>' header")
        else:
            chunks.append(line)
    if name is not None:
        yield name, "".join(chunks), header_line


def record_from_row(name: str, row: str, where: str = "") -> FamilyRecord:
    """One A2M row → :class:`FamilyRecord`; :class:`InputError` naming ``where`` and the record on a
    letter outside ``A-Z a-z - .`` or a row without residues."""
    bad = sorted({c for c in row if not (c.isascii() and (c.isalpha() or c in GAP + PAD))})
    if bad:
        raise InputError(f"{where}record {name!r} has characters outside A-Z, a-z, '-', '.': {bad[:5]}")
    columns = "".join(c for c in row if c.isupper() or c == GAP)
    sequence = "".join(c for c in row if c.isalpha()).upper()
    if not sequence:
        raise InputError(f"{where}record {name!r} has no residues")
    return FamilyRecord(name, sequence, columns, row.replace(PAD, ""))


def parse_a2m(path: str | Path) -> list[FamilyRecord]:
    """Read an A2M alignment → records in file order, all with the same number of match columns.

    Raises :class:`InputError` (one line, naming the file and record) for a missing file, text before
    the first header, an empty name, a bad character, a row without residues, a record whose number of
    match columns differs from the first record's, or a file without records."""
    path = Path(path)
    text = read_text_input(path, "A2M")
    records: list[FamilyRecord] = []
    for name, row, line_no in _a2m_rows(text, path):
        if not name:
            raise InputError(f"{path}: line {line_no}: record header has no name")
        rec = record_from_row(name, row, where=f"{path}: line {line_no}: ")
        if records and len(rec.columns) != len(records[0].columns):
            raise InputError(f"{path}: line {line_no}: record {name!r} has {len(rec.columns)} match columns, "
                             f"the first record {records[0].name!r} has {len(records[0].columns)}")
        records.append(rec)
    if not records:
        raise InputError(f"A2M file has no records: {path}")
    return records


def _split_row(row: str) -> tuple[list[str], list[str]]:
    """Unpadded A2M row → (match letters ``L``, insertion runs ``L + 1``: before, between, after)."""
    matches, inserts, run = [], [], []
    for c in row:
        if c.islower():
            run.append(c)
        else:
            matches.append(c)
            inserts.append("".join(run))
            run = []
    return matches, inserts + ["".join(run)]


def pad_insertions(rows: Sequence[str]) -> tuple[list[str], str]:
    """Unpadded A2M rows (same number of match columns) → equal-length aligned rows and their
    reference line (``x`` = match column, ``.`` = insert column). Every insertion run is widened to
    the longest run at that place with ``-`` on its right, as Stockholm/easel expect."""
    split = [_split_row(r) for r in rows]
    widths = np.max([[len(run) for run in inserts] for _, inserts in split], axis=0)
    padded = []
    for matches, inserts in split:
        parts = [inserts[0].ljust(widths[0], GAP)]
        for m, run, w in zip(matches, inserts[1:], widths[1:]):
            parts += [m, run.ljust(w, GAP)]
        padded.append("".join(parts))
    reference = "." * widths[0] + "".join("x" + "." * w for w in widths[1:])
    return padded, reference


def drop_nonstandard(records: Sequence[FamilyRecord]) -> tuple[list[FamilyRecord], list[dict]]:
    """Policy for letters outside the 20 standard amino acids (X, B, Z, U, O, ...): drop the record.

    They are rare in Pfam (ambiguity codes and selenocysteine) and no model or metric here has a
    token for them, so the whole record goes rather than a guessed substitution. Returns ``(kept,
    report)``: kept records in input order, and one ``{"name", "letters", "positions"}`` per dropped
    record (letters sorted, positions 1-based in the protein sequence) for the caller to write."""
    standard = frozenset(AMINO_ACIDS)
    kept, report = [], []
    for rec in records:
        positions = [i + 1 for i, c in enumerate(rec.sequence) if c not in standard]
        if positions:
            letters = sorted({rec.sequence[p - 1] for p in positions})
            report.append({"name": rec.name, "letters": "".join(letters), "positions": positions})
        else:
            kept.append(rec)
    return kept, report


# --- identity and clustering --------------------------------------------------------------------------


def encode_columns(columns: Sequence[str]) -> np.ndarray:
    """Match-column strings (all the same length L, letters of :data:`COLUMN_ALPHABET`) → ``(n, L)``
    int64 codes, gap = :data:`GAP_INDEX`. Raises :class:`InputError` on other letters or lengths."""
    if not columns:
        return np.zeros((0, 0), dtype=np.int64)
    lengths = {len(c) for c in columns}
    if len(lengths) != 1:
        raise InputError(f"match-column strings have different lengths: {sorted(lengths)[:5]}")
    raw = np.frombuffer("".join(columns).encode("ascii", errors="replace"), dtype=np.uint8)
    codes = _CODE[raw].reshape(len(columns), lengths.pop()).astype(np.int64)
    if (codes < 0).any():
        row = int(np.argwhere(codes < 0)[0, 0])
        raise InputError(f"match-column string {row} has letters outside {COLUMN_ALPHABET!r}: "
                         f"{columns[row]!r}")
    return codes


def residue_one_hot(codes: np.ndarray) -> np.ndarray:
    """Codes ``(n, L)`` → float32 ``(n, L*20)`` one-hot of residues; a gap is all zeros."""
    n, length = codes.shape
    out = np.zeros((n, length, N_LETTERS), dtype=np.float32)
    np.put_along_axis(out, codes[..., None], 1.0, axis=2)
    return out[..., :GAP_INDEX].reshape(n, length * GAP_INDEX)


def _identity_factors(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``(n, L)`` → residue one-hot ``(n, L*20)`` and non-gap mask ``(n, L)``, both float32."""
    return residue_one_hot(codes), (codes != GAP_INDEX).astype(np.float32)


def _identity(fa: tuple[np.ndarray, np.ndarray], fb: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    same, both = fa[0] @ fb[0].T, fa[1] @ fb[1].T
    shorter = np.minimum(fa[1].sum(1)[:, None], fb[1].sum(1)[None, :])
    return same / np.maximum(both, np.maximum(MIN_OVERLAP_FRACTION * shorter, 1))


def pairwise_identity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Identity ``(n_a, n_b)`` between code arrays ``(n_a, L)`` and ``(n_b, L)`` on match columns:
    the number of columns where both have the same residue, divided by the number where both have a
    residue, that count floored at ``MIN_OVERLAP_FRACTION`` × the shorter record's residue count.
    Gaps never count as identical; the floor keeps two fragments that share a few columns from
    reaching high identity, and a record's identity to itself is 1."""
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[1], (a.shape, b.shape)
    return _identity(_identity_factors(a), _identity_factors(b))


def identity_blocks(a: np.ndarray, b: np.ndarray,
                    block: int = IDENTITY_BLOCK) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(start, pairwise_identity(a[start:start+block], b))``; memory stays ``block × n_b``."""
    fb = _identity_factors(b)
    for start in range(0, len(a), block):
        yield start, _identity(_identity_factors(a[start : start + block]), fb)


def identity_clusters(codes: np.ndarray, identity: float) -> np.ndarray:
    """Single-linkage clusters: connected components of the graph with an edge wherever
    :func:`pairwise_identity` ``≥ identity``. Codes ``(n, L)`` → labels ``(n,)`` in ``0..k-1``.

    Single linkage (not greedy centroids as in CD-HIT) guarantees that records in different clusters
    are all below ``identity`` to each other, so whole-cluster splits leave no near-duplicate across."""
    if not 0 < identity <= 1:
        raise InputError(f"cluster identity must lie in (0, 1], got {identity}")
    rows, cols = [], []
    for start, block in identity_blocks(codes, codes):
        r, c = np.nonzero(block >= identity)
        rows.append(r + start)
        cols.append(c)
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(len(codes), len(codes)))
    return connected_components(graph, directed=False)[1]


def sequence_weights(codes: np.ndarray, identity: float, block: int = IDENTITY_BLOCK) -> np.ndarray:
    """The family-model literature's sequence weights: ``w_i = 1 / #{j : identity(i, j) ≥ identity}``,
    record ``i`` itself always counted. Codes ``(n, L)`` → float64 ``(n,)``; ``w.sum()`` is the
    effective number of sequences ``Neff`` (plmDCA, ArDCA and EVcouplings use ``identity = 0.8``).

    Identity is :func:`pairwise_identity` on the aligned match columns: the same measure that builds
    the cluster split, so "within 80%" means the same thing in the split and in the weights. Gaps never
    count as matches, which makes a fragment similar to the full-length records it overlaps only when
    it shares at least half its residues with them. Blocked one-hot matmuls: memory ``block × n``."""
    if not 0 < identity <= 1:
        raise InputError(f"reweighting identity must lie in (0, 1], got {identity}")
    counts = np.zeros(len(codes), dtype=np.int64)
    for start, ident in identity_blocks(codes, codes, block):
        close = ident >= identity
        rows = np.arange(len(close))
        close[rows, start + rows] = True  # itself, even a record with no match-column residue
        counts[start:start + len(close)] = close.sum(1)
    return 1.0 / counts


def assign_clusters(sizes: np.ndarray, fractions: Sequence[float], seed: int) -> np.ndarray:
    """Whole clusters to splits: clusters in a seeded random order, each to the split furthest below
    its target count (target − current, ties to the earlier split). ``sizes`` ``(k,)`` → split index
    ``(k,)``. The first cluster goes to the largest split, so with the default fractions a giant
    cluster drawn early lands in train; overshoot is at most one cluster per split."""
    targets = np.asarray(fractions, dtype=np.float64) * sizes.sum()
    counts = np.zeros(len(targets))
    split = np.empty(len(sizes), dtype=np.int64)
    for k in np.random.default_rng(seed).permutation(len(sizes)):
        split[k] = int(np.argmax(targets - counts))
        counts[split[k]] += sizes[k]
    return split


def cluster_split(records: Sequence[FamilyRecord], identity: float = 0.8,
                  fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: int = 0
                  ) -> tuple[list[FamilyRecord], list[FamilyRecord], list[FamilyRecord]]:
    """Split records into ``(train, val, reference)`` with every :func:`identity_clusters` cluster
    whole (so no pair across splits has identity ``≥ identity``), sizes close to ``fractions`` of
    ``len(records)``. Deterministic for ``(records, identity, fractions, seed)``; input order kept
    within each split."""
    return split_clusters(records, identity_clusters(encode_columns([r.columns for r in records]), identity),
                          fractions, seed)


def split_clusters(records: Sequence[FamilyRecord], labels: np.ndarray, fractions: Sequence[float] = DEFAULT_FRACTIONS,
                   seed: int = 0) -> tuple[list[FamilyRecord], list[FamilyRecord], list[FamilyRecord]]:
    """:func:`cluster_split` with the cluster ``labels`` ``(n,)`` already computed (for a caller that
    also reports them)."""
    if len(fractions) != len(SPLIT_NAMES) or min(fractions) < 0 or not np.isclose(sum(fractions), 1.0):
        raise InputError(f"split fractions must be 3 non-negative numbers summing to 1, "
                         f"got {tuple(fractions)}")
    split_of_record = assign_clusters(np.bincount(labels), fractions, seed)[labels]
    return tuple([r for r, s in zip(records, split_of_record) if s == k] for k in range(len(SPLIT_NAMES)))


# --- site-independent baselines -----------------------------------------------------------------------


def column_counts(codes: np.ndarray) -> np.ndarray:
    """Codes ``(n, L)`` → letter counts per column ``(L, 21)`` (gap last)."""
    length = codes.shape[1]
    flat = codes + N_LETTERS * np.arange(length)
    counts = np.bincount(flat.ravel(), minlength=length * N_LETTERS)
    return counts.reshape(length, N_LETTERS).astype(np.float64)


def column_profile(records: Sequence[FamilyRecord], pseudocount: float = 0.5) -> np.ndarray:
    """Per-column letter frequencies incl. gap ``(L, 21)``, rows summing to 1: ``(count + pc) / (n + 21 pc)``
    with ``pc = pseudocount`` added to every letter of every column (records unweighted)."""
    counts = column_counts(encode_columns([r.columns for r in records]))
    return (counts + pseudocount) / (counts.sum(1, keepdims=True) + N_LETTERS * pseudocount)


def residue_composition(records: Sequence[FamilyRecord], pseudocount: float = 0.5) -> np.ndarray:
    """Amino-acid frequencies ``(20,)`` over all residues of the records' protein sequences (match
    and insertion residues), ``(count + pc) / (total + 20 pc)``."""
    counts = Counter("".join(r.sequence for r in records))
    raw = np.array([counts[a] for a in AMINO_ACIDS], dtype=np.float64)
    return (raw + pseudocount) / (raw.sum() + len(AMINO_ACIDS) * pseudocount)


def _insertion_residues(rec: FamilyRecord) -> Counter:
    """The record's insertion residues as a multiset: the sequence minus its match-column residues."""
    return Counter(rec.sequence) - Counter(rec.columns.replace(GAP, ""))


def composition_loss(comp: np.ndarray, heldout: Sequence[FamilyRecord]) -> float:
    """Mean over every residue of the held-out protein sequences of ``−ln comp[a]`` (nats per token)."""
    counts = Counter("".join(r.sequence for r in heldout))
    n = np.array([counts[a] for a in AMINO_ACIDS], dtype=np.float64)
    return float(-(n * np.log(comp)).sum() / n.sum())


def profile_loss(profile: np.ndarray, comp: np.ndarray, heldout: Sequence[FamilyRecord]) -> float:
    """Mean over every residue of the held-out sequences of ``−ln p(a)`` (nats per token), where a
    residue in match column ``i`` has ``p(a) = profile[i, a] / (1 − profile[i, gap])`` (the column's
    amino-acid distribution: the position is known to hold a residue) and an insertion residue has
    ``p(a) = comp[a]``. ``profile`` ``(L, 21)``, ``comp`` ``(20,)``. Columns are the records' own
    (Pfam's) alignment."""
    residue_probs = profile[:, :GAP_INDEX] / (1 - profile[:, GAP_INDEX : GAP_INDEX + 1])
    codes = encode_columns([r.columns for r in heldout])  # (n, L)
    probs = np.take_along_axis(residue_probs, codes.T.clip(max=GAP_INDEX - 1), axis=1).T  # (n, L)
    match_nll = -np.log(probs[codes != GAP_INDEX]).sum()
    inserts = sum((_insertion_residues(r) for r in heldout), Counter())
    insert_nll = -sum(n * np.log(comp[AMINO_ACIDS.index(a)]) for a, n in inserts.items())
    return float((match_nll + insert_nll) / sum(len(r.sequence) for r in heldout))


def baseline_losses(train: Sequence[FamilyRecord], heldout: Sequence[FamilyRecord],
                    pseudocount: float = 0.5) -> dict:
    """Held-out masked-token cross-entropy (nats per residue) of the two site-independent baselines.

    Both average ``−ln p(true residue)`` over every residue of every held-out protein sequence, the
    same tokens an MDM's masked-token loss on the unaligned sequences averages over (BOS/EOS and pads
    excluded), so an MDM that beats ``profile_nats`` uses context beyond the residue's own column:

    * ``composition_nats``: ``p`` = the training sequences' amino-acid composition;
    * ``profile_nats``: ``p`` = the training column profile at the residue's match column,
      renormalised over the 20 amino acids; insertion residues use the composition. The profile knows
      each residue's alignment column, which an MDM has to infer from context."""
    comp = residue_composition(train, pseudocount)
    return {"composition_nats": composition_loss(comp, heldout),
            "profile_nats": profile_loss(column_profile(train, pseudocount), comp, heldout),
            "n_tokens": sum(len(r.sequence) for r in heldout),
            "n_insertion_tokens": sum(len(r.sequence) - len(r.columns.replace(GAP, "")) for r in heldout)}


def sample_profile(profile: np.ndarray, n: int, rng: np.random.Generator) -> list[FamilyRecord]:
    """``n`` site-independent draws from ``profile`` ``(L, 21)``: each column's letter (gap included)
    drawn independently (the "floor" set: right single-site statistics, no pairwise dependencies).
    Returned as records named ``profile_<k>`` whose sequence is the draw without gaps (no insertions);
    a draw that is all gaps is redrawn."""
    assert profile.ndim == 2 and profile.shape[1] == N_LETTERS, profile.shape
    cdf = np.cumsum(profile / profile.sum(1, keepdims=True), axis=1)
    codes = np.empty((0, profile.shape[0]), dtype=np.int64)
    while len(codes) < n:
        u = rng.random((n - len(codes), profile.shape[0], 1))
        draw = np.minimum((u > cdf[None]).sum(-1), N_LETTERS - 1)
        codes = np.concatenate([codes, draw[(draw != GAP_INDEX).any(1)]])
    return records_from_codes(codes, "profile")


def records_from_codes(codes: np.ndarray, prefix: str) -> list[FamilyRecord]:
    """Drawn codes ``(n, L)`` → records named ``<prefix>_<k>`` whose sequence is the draw without gaps
    (no insertions: the row is the match columns)."""
    letters = np.array(list(COLUMN_ALPHABET))
    columns = ["".join(row) for row in letters[codes]]
    return [FamilyRecord(f"{prefix}_{k}", c.replace(GAP, ""), c, c) for k, c in enumerate(columns)]
