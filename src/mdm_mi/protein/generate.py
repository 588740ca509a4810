"""Unconditional protein generation with any sampler (the paper's protein protocol).

Every sequence starts fully masked — ``BOS + L × mask + EOS`` — with L drawn from the reference
length distribution; BOS, EOS and pads are never masked, so no sampler touches them. Sequences are
decoded in batches of similar length (sorted, padded after EOS); ESM-C attends only to non-pad
tokens, so padding does not change a sequence's logits.

    lengths = draw_lengths(reference_lengths, 500, rng)
    seqs, passes = generate(backbone, lengths, build_sampler("eb", gamma=4.0), 0, decoding=DecodeFlags())
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from mdm_mi.core.backbone import capabilities
from mdm_mi.core.samplers import PairwiseFn, Sampler, decode
from mdm_mi.core.streams import RowStreams, row_keys
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import Decoding
from mdm_mi.protein.decode_flags import DecodeFlags


DEFAULT_DECODING = DecodeFlags()  # config protein.generate's defaults: temperature 1


def draw_lengths(reference_lengths: Sequence[int], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` lengths drawn with replacement from the reference lengths → ``(n,)`` int."""
    if n < 1:
        raise InputError(f"number of sequences must be >= 1, got {n}")
    if len(reference_lengths) == 0:
        raise InputError("no reference lengths to draw from")
    return rng.choice(np.asarray(reference_lengths, dtype=np.int64), size=n, replace=True)


def reference_lengths(backbone, reference: Sequence[str]) -> list[int]:
    """The lengths generation draws from: the reference's, or, for a column model (``fixed_length``),
    its L columns for every entry (its rows are aligned; gaps are dropped from the generated rows)."""
    fixed = capabilities(backbone).fixed_length
    return [fixed] * len(reference) if fixed is not None else [len(s) for s in reference]


def uniform_lengths(min_len: int, max_len: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` lengths uniform in ``[min_len, max_len]`` (when no reference is given)."""
    if not 1 <= min_len <= max_len:
        raise InputError(f"length range must satisfy 1 <= min <= max, got {min_len}..{max_len}")
    return rng.integers(min_len, max_len + 1, size=n)


def masked_batch(backbone, lengths: Sequence[int], device) -> torch.Tensor:
    """Fully masked sequences ``(B, max(lengths) + 2)``: BOS, L masks, EOS, then pads."""
    width = int(max(lengths)) + 2
    tokens = torch.full((len(lengths), width), backbone.pad_id, dtype=torch.long)
    for b, length in enumerate(lengths):
        tokens[b, : length + 2] = backbone.masked_sequence(int(length), device="cpu")
    return tokens.to(device)


def generate(
    backbone,
    lengths: Sequence[int],
    sampler: Sampler,
    seed: int,
    *,
    decoding: Decoding = DEFAULT_DECODING,
    pairwise_fn: PairwiseFn | None = None,
    batch_size: int = 128,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[str], np.ndarray]:
    """Decode one sequence per entry of ``lengths`` → (sequences in input order, passes ``(n,)``).

    ``decoding``: the verb's decoding settings (:class:`DecodeFlags`, default the schema's), handed to
    :func:`mdm_mi.core.samplers.decode` whole. Passes are counted per sequence by ``decode`` (one per
    forward pass the sequence took part in). ``progress(k)`` is called with the number finished after each batch.
    Sequence ``j`` draws from its own keyed stream (``seed``, ``j``, the sampler and its setting:
    :func:`mdm_mi.core.streams.row_keys`), so it does not depend on the batch size or on the other lengths.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    device = backbone.vocab_token_ids.device
    seqs: list[str] = [""] * len(lengths)
    passes = np.zeros(len(lengths), dtype=np.int64)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        tokens = masked_batch(backbone, lengths[idx], device)
        streams = RowStreams(row_keys(seed, torch.as_tensor(idx), 0, sampler.stream_tag()))
        res = decode(backbone, tokens, sampler, streams, decoding=decoding, pairwise_fn=pairwise_fn)
        for j, seq in zip(idx, backbone.decode_tokens(res.tokens.cpu())):
            seqs[int(j)] = seq
        passes[idx] = res.passes.cpu().numpy()
        if progress is not None:
            progress(min(start + batch_size, len(order)))
    return seqs, passes
