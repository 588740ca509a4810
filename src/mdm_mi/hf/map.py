"""The input of ``mdm-mi mi-map`` for a Hugging Face model (domain ``hf``): a sequence over the
model's alphabet with ``_`` for masked tokens (characters, or whitespace-separated tokens for an
alphabet of longer tokens), drawn as bars over positions like a protein."""

from __future__ import annotations

from mdm_mi.infra.reader import MASK_CHAR
from mdm_mi.core.map_domain import MapDomain
from mdm_mi.evaluation.plotting import sequence_map_figure
from mdm_mi.infra.errors import InputError

MIN_MASKED = 2  # the MI map is between masked positions


def _positions(context: str) -> list[str]:
    """The context's tokens: whitespace-separated when it has spaces, else its characters."""
    return context.split() if " " in context.strip() else list(context.strip())


class HFMap(MapDomain):
    """A sequence with ``_`` for masked tokens; ``--cell`` is a 1-based token position (BOS is index 0,
    so position ``p`` is token index ``p``). The alphabet is checked by the backbone's ``encode``."""

    def check(self, text: str) -> str:
        context = " ".join(text.split()) if " " in text.strip() else "".join(text.split())
        if _positions(context).count(MASK_CHAR) < MIN_MASKED:
            raise InputError(f"the sequence has fewer than {MIN_MASKED} masked positions ({MASK_CHAR}); "
                             "the MI map is between masked positions")
        return context

    def tokens(self, context, backbone, device):
        return backbone.encode([context], device)[0]

    def parse_cell(self, spec: str | None, context) -> int:
        if spec is None:
            return -1
        toks = _positions(context)
        if not spec.strip().isdigit() or not 1 <= int(spec) <= len(toks):
            raise InputError(f"--cell must be a position 1..{len(toks)} of the sequence, got {spec!r}")
        if toks[int(spec) - 1] != MASK_CHAR:
            raise InputError(f"--cell {spec}: position {spec} is not masked ({MASK_CHAR}); choose a masked one")
        return int(spec)

    def name(self, i: int, context) -> str:
        return f"position {i}"

    def draw(self, context, pred, label, cell, out, backbone_name) -> None:
        sequence_map_figure(_positions(context), pred, label, cell, out, backbone_name)  # whole tokens as ticks
