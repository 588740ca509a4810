"""Protein token ids (the ESM-C tokenizer's), without building a model: the one encoder of amino-acid
strings (:meth:`ESMCBackbone.encode <mdm_mi.protein.esmc.ESMCBackbone.encode>` calls it).

    tok = protein_tokens()
    ids = tok.encode_batch(["MKT", "ACDEF"])   # (2, 7) long: BOS + residues + EOS, pad after EOS

The ids come from ``esm``'s tokenizer, never from literals, so a tokenizer change cannot silently
shift them. :class:`~mdm_mi.protein.esmc.ESMCBackbone` uses the same tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS
from mdm_mi.infra.reader import MASK_CHAR  # masked in ProteinTokens.encode_batch (masks=True) and decoded strings


@dataclass(frozen=True)
class ProteinTokens:
    """Special ids and the 20 amino-acid ids (``aa_ids[i]`` ↔ ``AMINO_ACIDS[i]``)."""

    aa_ids: tuple[int, ...]
    mask: int
    pad: int
    bos: int
    eos: int

    def encode_batch(self, seqs: Sequence[str], width: int | None = None, masks: bool = False) -> torch.Tensor:
        """``B`` amino-acid strings → ``(B, width)`` long ids (``width`` default: longest + 2);
        each row ``BOS + residues + EOS`` then pads. ``masks``: :data:`MASK_CHAR` is a masked position.
        Any other letter raises :class:`InputError` naming it."""
        lut = np.full(128, -1, dtype=np.int64)
        lut[np.frombuffer(AMINO_ACIDS.encode(), dtype=np.uint8)] = self.aa_ids
        if masks:
            lut[ord(MASK_CHAR)] = self.mask
        width = width if width is not None else max(len(s) for s in seqs) + 2
        out = np.full((len(seqs), width), self.pad, dtype=np.int64)
        for b, seq in enumerate(seqs):
            if len(seq) + 2 > width:
                raise InputError(f"sequence {b} of length {len(seq)} does not fit width {width}")
            codes = np.frombuffer(seq.encode("ascii", "replace"), dtype=np.uint8)
            ids = lut[np.minimum(codes, 127)]
            if (ids < 0).any():
                bad = sorted({c for c, i in zip(seq, ids) if i < 0})
                raise InputError(f"sequence {b} has letters outside the 20 standard amino acids: "
                                 f"{', '.join(map(repr, bad))}")
            out[b, 0], out[b, 1 : len(seq) + 1], out[b, len(seq) + 1] = self.bos, ids, self.eos
        return torch.from_numpy(out)

    def decode_batch(self, tokens: torch.Tensor) -> list[str]:
        """``(B, N)`` ids → residue strings (specials dropped; a mask shows as ``_``)."""
        chars = {i: a for i, a in zip(self.aa_ids, AMINO_ACIDS)} | {self.mask: "_"}
        return ["".join(chars.get(i, "") for i in row) for row in tokens.tolist()]

    def residues(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` ids → ``(B, N)`` bool: positions holding a residue or a mask (not BOS/EOS/pad)."""
        specials = torch.tensor([self.pad, self.bos, self.eos], device=tokens.device)
        return ~torch.isin(tokens, specials)


def esmc_tokenizer():
    """The ESM-C sequence tokenizer (``esm.tokenization.EsmSequenceTokenizer``)."""
    from esm.tokenization import get_esmc_model_tokenizers  # lazy: esm adds ~1 s to every CLI start

    return get_esmc_model_tokenizers()


@lru_cache(maxsize=1)
def protein_tokens() -> ProteinTokens:
    """The ids of the ESM-C sequence tokenizer (imports ``esm`` once, lazily)."""
    tok = esmc_tokenizer()
    aa = tuple(int(tok.convert_tokens_to_ids(a)) for a in AMINO_ACIDS)
    return ProteinTokens(aa, int(tok.mask_token_id), int(tok.pad_token_id), int(tok.cls_token_id),
                         int(tok.eos_token_id))
