"""What marks a Hugging Face masked-LM folder as a model of the ``hf`` domain: the domain name its
``meta.json`` records, the character of a masked position, and its alphabet (the allowed tokens). The
``hf`` domain loads such a folder (:mod:`mdm_mi.hf.backbone`); others write one (``import-hf``, the
antibody domain's ``import-antiberty``), so these few facts sit below every domain.

    meta = {"domain": DOMAIN, "tokens": read_alphabet("protein"), "alphabet": "protein", "hidden_layer": -1}
"""

from __future__ import annotations

from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS

DOMAIN = "hf"
MASK_CHAR = "_"  # a masked position in encode / decode_tokens


def protein_alphabet() -> list[str]:
    """The 20 standard amino acids, one token each (``--alphabet protein``)."""
    return list(AMINO_ACIDS)


def read_alphabet(spec: str) -> list[str]:
    """``protein`` (20 amino acids), a file with one token per line, or comma-separated tokens → the
    allowed tokens in order (logit index ``k`` ↔ token ``k``)."""
    if spec == "protein":
        return protein_alphabet()
    path = Path(spec)
    tokens = path.read_text().split() if path.is_file() else [t.strip() for t in spec.split(",") if t.strip()]
    if len(tokens) < 2 or len(set(tokens)) != len(tokens):
        raise InputError(f"alphabet {spec!r} must name at least 2 distinct tokens (protein, a file, or a,b,c)")
    return tokens
