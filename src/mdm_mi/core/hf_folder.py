"""What marks a Hugging Face masked-LM folder as a model of the ``hf`` domain: the domain name its
``meta.json`` records, the character of a masked position, and its alphabet (the allowed tokens). The
``hf`` domain loads such a folder (:mod:`mdm_mi.hf.model`); others write one (``import-hf``, the
antibody domain's ``import-antiberty``), so these few facts sit below every domain.

    meta = {"domain": DOMAIN, "tokens": read_alphabet("protein"), "alphabet": "protein", "hidden_layer": -1}
"""

from __future__ import annotations

from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS
from mdm_mi.infra.reader import MASK_CHAR  # masked in encode / decode_tokens: no alphabet token may hold it

DOMAIN = "hf"
MIN_TOKENS = 2  # an alphabet's fewest tokens


def protein_alphabet() -> list[str]:
    """The 20 standard amino acids, one token each (``--alphabet protein``)."""
    return list(AMINO_ACIDS)


def read_alphabet(spec: str) -> list[str]:
    """``protein`` (20 amino acids), a file with one token per line, or comma-separated tokens → the
    allowed tokens in order (logit index ``k`` ↔ token ``k``), checked by :func:`check_tokens`."""
    if spec == "protein":
        return protein_alphabet()
    path = Path(spec)
    tokens = path.read_text().split() if path.is_file() else [t.strip() for t in spec.split(",") if t.strip()]
    return check_tokens(tokens, f"alphabet {spec!r}")


def check_tokens(tokens, source: str) -> list[str]:
    """An alphabet's tokens, refused (one-line :class:`InputError` naming ``source``) when there are
    fewer than :data:`MIN_TOKENS`, one repeats, or one holds :data:`MASK_CHAR` (a sequence could then
    never spell it: ``_`` is read as a masked position)."""
    tokens = list(tokens)
    if not all(isinstance(t, str) and t for t in tokens):
        raise InputError(f"{source}: every token must be a non-empty string")
    repeated = sorted({t for t in tokens if tokens.count(t) > 1})
    if repeated:
        raise InputError(f"{source} repeats the token(s) {', '.join(map(repr, repeated[:10]))}: list each token once")
    masked = [t for t in tokens if MASK_CHAR in t]
    if masked:
        raise InputError(f"{source} has token(s) {', '.join(map(repr, masked[:10]))} holding {MASK_CHAR!r}, the mask "
                         f"character of every sequence: tokens must not contain {MASK_CHAR!r}; leave them out")
    if len(tokens) < MIN_TOKENS:
        raise InputError(f"{source} names {len(tokens)} token(s); an alphabet needs at least {MIN_TOKENS} "
                         "(protein, a file with one token per line, or a,b,c)")
    return tokens
