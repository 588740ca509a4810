"""The Backbone protocol: the only view of a masked diffusion model that the rest of the code has.

A backbone maps token ids ``(B, N)`` to logits over the domain's vocabulary ``(B, N, V)`` and the
hidden states of one chosen layer ``(B, N, D)``. Positions holding ``mask_id`` are the masked ones;
every other position is fixed (clues, BOS/EOS) and is never rewritten by a sampler.

The Sudoku MDM (:mod:`mdm_mi.sudoku.model`) and the ESM-C adapter both implement it; labelling, the
MI head, samplers and metrics only use this protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class BackboneOutput:
    """One forward pass.

    logits: ``(B, N, V)`` unnormalised scores over the V domain tokens (the mask is not one of them).
    hidden: ``(B, N, D)`` hidden states of the backbone's chosen layer.
    """

    logits: torch.Tensor
    hidden: torch.Tensor


@runtime_checkable
class Backbone(Protocol):
    """Tokens in, logits over the domain vocabulary and hidden states of a chosen layer out."""

    vocab_size: int  # V: number of real tokens; ids 0..V-1 are the domain's tokens
    mask_id: int  # id of the mask token in the input (outside 0..V-1 for Sudoku)
    hidden_dim: int  # D of the returned hidden states
    vocab_token_ids: torch.Tensor  # (V,) long: input id of each vocabulary entry (logit index → token)

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        """tokens ``(B, N)`` long → :class:`BackboneOutput`."""
        ...


CPU_CHUNK_TOKENS = 8192  # tokens per backbone call on a CPU with ≥ 2 threads (benchmarks/bench_chunk.py)
CPU_CHUNK_TOKENS_ONE_THREAD = 1024  # with one thread (the workflow's jobs run two at a time on 2 cores)


def cpu_chunk_tokens() -> int:
    """Tokens per backbone call on a CPU for this process's thread count: one-thread jobs that share
    the machine ran 1.13–1.17× faster in 1,024-token chunks than in 8,192-token ones, while a job
    with two threads alone ran fastest at 8,192 (``benchmarks/bench_chunk.py``, docs/benchmarks.md)."""
    return CPU_CHUNK_TOKENS_ONE_THREAD if torch.get_num_threads() == 1 else CPU_CHUNK_TOKENS


def forward_chunked(backbone, tokens: torch.Tensor, max_tokens: int | None = None) -> BackboneOutput:
    """``backbone(tokens (B, N))`` run in row chunks of at most ``max_tokens`` tokens on a CPU
    (default :func:`cpu_chunk_tokens`), outputs concatenated; one call on any other device. Every row
    is computed on its own, so the result equals the single call (bitwise on the shipped models,
    ``benchmarks/bench_chunk.py``), while a chunk's activations stay in cache: a 1,000-puzzle Sudoku
    pass runs ~1.5× faster in chunks.
    """
    max_tokens = cpu_chunk_tokens() if max_tokens is None else max_tokens
    rows = max(1, max_tokens // max(1, tokens.shape[1]))
    if tokens.device.type != "cpu" or tokens.shape[0] <= rows:
        return backbone(tokens)
    outs = [backbone(chunk) for chunk in tokens.split(rows)]
    return BackboneOutput(logits=torch.cat([o.logits for o in outs]), hidden=torch.cat([o.hidden for o in outs]))


class Bf16Backbone:
    """A backbone run under bf16 autocast, its outputs returned in fp32 (decoding only: labels stay
    fp32, since bf16 noise between the base pass and the probe passes biases KL-based labels).

    On a CPU with AMX-BF16 the Sudoku MDM's decode pass is ~1.7× faster this way (batch 500, one
    thread, ``benchmarks/bench_bf16.py``); the marginals move by up to ~0.1 in probability, so results
    are checked against fp32 by that benchmark rather than assumed equal.
    """

    def __init__(self, backbone):
        self.inner = backbone

    def __getattr__(self, name):  # vocab_size, mask_id, hidden_dim, vocab_token_ids, eval, ...
        return getattr(self.inner, name)

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        with torch.autocast(device_type=tokens.device.type, dtype=torch.bfloat16):
            out = self.inner(tokens)
        return BackboneOutput(logits=out.logits.float(), hidden=out.hidden.float())


def for_decoding(backbone, bf16: bool):
    """``backbone`` as the decoders run it: under :class:`Bf16Backbone` when ``bf16`` (on a CPU with
    AMX-BF16 a protein pass runs ~1.6× faster, ``benchmarks/bench_bf16.py``), else itself. The MI
    oracle's probes and the labels still run in fp32 (:func:`full_precision`, :func:`probe_backbone`)."""
    return Bf16Backbone(backbone) if bf16 else backbone


def probe_backbone(backbone):
    """The fp32 backbone under a :class:`Bf16Backbone` wrapper (for the MI oracle's probing passes,
    which must not mix precisions with each other), or ``backbone`` itself; nothing is mutated."""
    return backbone.inner if isinstance(backbone, Bf16Backbone) else backbone


def full_precision(backbone):
    """``backbone`` with any bf16 autocast switched off, for MI labelling: bf16 noise between the base
    pass and the probe passes biases the KL-based labels upwards and voids the certified bound. A
    backbone configured for bf16 (ESM-C 300M on CUDA, ``bf16: true`` in its meta.json) keeps it for
    generation and training only."""
    inner = backbone.inner if isinstance(backbone, Bf16Backbone) else backbone
    if getattr(inner, "bf16", False):
        inner.bf16 = False
    return inner
