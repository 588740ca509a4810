"""The protein input of ``mdm-mi mi-map``: a sequence with ``_`` for masked residues, drawn as bars."""

from __future__ import annotations

import torch

from mdm_mi.core.map_domain import MapDomain
from mdm_mi.evaluation.plotting import sequence_map_figure
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.reader import canonical
from mdm_mi.protein.sequences import validate_sequence

PROTEIN_MASK = "_"
PROTEIN_MIN_LEN = 2
PROTEIN_MAX_LEN = 2046  # ESM-C's 2048-token context minus BOS and EOS


class ProteinMap(MapDomain):
    """A sequence with ``_`` for masked residues, drawn as bars over positions; ``--cell`` is a
    1-based residue position. The backbone must offer ``encode([seq])`` (BOS + residues + EOS)."""

    def check(self, text: str) -> str:
        seq = canonical(text, one_char=True)  # case kept: a lowercase residue is refused by name
        residues = seq.replace(PROTEIN_MASK, "").replace("-", "")  # '-': a gap column of an aligned row (column model)
        if residues:
            validate_sequence(residues)  # names letters outside the 20 amino acids
        if not PROTEIN_MIN_LEN <= len(seq) <= PROTEIN_MAX_LEN:
            raise InputError(f"sequence has length {len(seq)}, outside {PROTEIN_MIN_LEN}..{PROTEIN_MAX_LEN}")
        if seq.count(PROTEIN_MASK) < 2:
            raise InputError(f"the sequence has fewer than 2 masked positions ({PROTEIN_MASK}); "
                             "the MI map is between masked positions")
        return seq

    def tokens(self, context, backbone, device) -> torch.Tensor:
        if not hasattr(backbone, "encode"):
            raise InputError("this protein model cannot encode sequences (no encode method)")
        return backbone.encode([context], device)[0]

    def parse_cell(self, spec: str | None, context) -> int:
        if spec is None:
            return -1
        if not spec.strip().isdigit() or not 1 <= int(spec) <= len(context):
            raise InputError(f"--cell must be a position 1..{len(context)} of the sequence, got {spec!r}")
        if context[int(spec) - 1] != PROTEIN_MASK:
            raise InputError(f"--cell {spec}: position {spec} is not masked ({PROTEIN_MASK}); choose a masked one")
        return int(spec)  # token index: BOS comes first

    def name(self, i: int, context) -> str:
        return f"position {i}"

    def draw(self, context, pred, label, cell, out, backbone_name) -> None:
        sequence_map_figure(context, pred, label, cell, out, backbone_name)
