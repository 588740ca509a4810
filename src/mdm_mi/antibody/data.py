"""VH sequences with their IMGT regions, split by clonal lineage, and the CDR templates built from them.

The TSV (``resources/data/antibody/vh_public.tsv``, provenance in ``resources/data/PROVENANCE.md``)
has one VH per row: ``fw1 cdr1 fw2 cdr2 fw3 cdr3 fw4`` (IMGT regions, gaps removed; ``cdr3`` is IMGT
105–117, between Cys104, the last letter of ``fw3``, and Trp118, the first of ``fw4``), their
concatenation ``sequence`` and the ``lineage`` cluster. Near-copies share a lineage, so every split
here is by lineage, never by row.

    vh = read_vh("resources/data/antibody/vh_public.tsv")
    parts = split_by_lineage(vh, {"calibration": 0.1, "test": 0.2}, seed=0)   # name → rows; "labels" = the rest
    template(vh[0], ("cdr3",))                       # 'QVQL…YYC_____________WGQG…' (CDR-H3 masked)
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path

REGIONS = ("fw1", "cdr1", "fw2", "cdr2", "fw3", "cdr3", "fw4")
CDRS = ("cdr1", "cdr2", "cdr3")
TSV_COLUMNS = ("id", *REGIONS, "sequence", "lineage")
AMINO = frozenset("ACDEFGHIKLMNPQRSTVWY")
SETS = {"cdr3": ("cdr3",), "cdrs": CDRS}  # the comparison's sets: CDR-H3 alone (IMGT 105-117), all three CDRs
SCOPES = SETS | {"all": REGIONS}  # what a label context may mask: the sets' regions, or the whole VH (the paper's draw)
LABEL_PART = "labels"  # the lineages left after the named parts: the MI labels' training contexts
MASK = "_"


@dataclass(frozen=True)
class VH:
    """One heavy chain: ``id``, ``regions`` (name → letters, :data:`REGIONS` order), ``lineage``."""

    id: str
    regions: dict
    lineage: str

    @property
    def sequence(self) -> str:
        return "".join(self.regions[r] for r in REGIONS)

    def span(self, region: str) -> tuple[int, int]:
        """``[start, end)`` of ``region`` in :attr:`sequence` (0-based residue positions)."""
        start = 0
        for r in REGIONS:
            if r == region:
                return start, start + len(self.regions[r])
            start += len(self.regions[r])
        raise KeyError(region)

    def cys_pair(self) -> tuple[int, int]:
        """Residue positions of the invariant disulphide: Cys23 (the last C of FR1) and Cys104 (FR3's last)."""
        return self.regions["fw1"].rindex("C"), self.span("fw3")[1] - 1

    def salt_bridge(self) -> tuple[int, int]:
        """Kabat H94 and H101 (IMGT 106 and 116): CDR-H3's second residue and its second-to-last."""
        start, end = self.span("cdr3")
        return start + 1, end - 2


def read_vh(path: str | Path) -> list[VH]:
    """The TSV's rows, checked: every column present, regions of the 20 amino acids that concatenate
    to ``sequence``, CDR-H3 between Cys104 and a W; one-line :class:`InputError` naming the first bad row."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"antibody data not found: {path}")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = [c for c in TSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path} lacks the columns {missing}")
        rows = [VH(r["id"], {k: r[k] for k in REGIONS}, r["lineage"]) for r in reader]
    for i, vh in enumerate(rows):
        seq = vh.sequence
        if set(seq) - AMINO or not all(vh.regions[c] for c in CDRS):
            raise InputError(f"{path} row {i + 2} ({vh.id}): a region is empty or has letters outside the 20 amino acids")
        if not (vh.regions["fw3"].endswith("C") and vh.regions["fw4"].startswith("W")):
            raise InputError(f"{path} row {i + 2} ({vh.id}): CDR-H3 is not framed by Cys104 and Trp118")
    if not rows:
        raise InputError(f"{path} has no rows")
    return rows


def split_by_lineage(rows: list[VH], fractions: dict[str, float], seed: int) -> dict[str, list[VH]]:
    """Whole lineages (seeded order) to each named part until it holds ``fraction`` of the rows; the
    rest → :data:`LABEL_PART`. No lineage is in two parts."""
    total = sum(fractions.values())
    if not all(0 < f < 1 for f in fractions.values()) or total >= 1:
        raise InputError(f"split fractions must lie in (0, 1) and sum below 1, got {fractions}")
    lineages = sorted({r.lineage for r in rows})
    order = [lineages[i] for i in np.random.default_rng(seed).permutation(len(lineages))]
    by_lineage: dict[str, list[VH]] = {}
    for r in rows:
        by_lineage.setdefault(r.lineage, []).append(r)
    parts: dict[str, list[VH]] = {name: [] for name in fractions}
    parts[LABEL_PART] = []
    names = iter(fractions)
    current = next(names, None)
    for lin in order:
        while current is not None and len(parts[current]) >= fractions[current] * len(rows):
            current = next(names, None)
        parts[current if current is not None else LABEL_PART] += by_lineage[lin]
    return parts


def template(vh: VH, masked: tuple[str, ...]) -> str:
    """The VH with the regions ``masked`` written as ``_`` (one per residue: natural lengths)."""
    return "".join(MASK * len(vh.regions[r]) if r in masked else vh.regions[r] for r in REGIONS)


def assign_scopes(n_rows: int, scopes: tuple[str, ...], weights: tuple[float, ...], seed: int) -> list[str]:
    """A seeded draw of one of ``scopes`` (keys of :data:`SCOPES`) per row, with probabilities
    proportional to ``weights``; one-line error on an unknown scope or bad weights."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise InputError(f"label scopes must be among {', '.join(SCOPES)}, got {list(scopes)}")
    if len(weights) != len(scopes) or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise InputError(f"need one non-negative weight per label scope ({len(scopes)}), summing above 0; got {list(weights)}")
    p = np.asarray(weights, dtype=float) / sum(weights)
    return [scopes[i] for i in np.random.default_rng(seed).choice(len(scopes), size=n_rows, p=p)]


def write_vh(rows: list[VH], path: str | Path) -> None:
    """Rows back to the TSV format of :func:`read_vh`, written atomically."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(TSV_COLUMNS)
        for r in rows:
            w.writerow([r.id, *(r.regions[k] for k in REGIONS), r.sequence, r.lineage])
