"""The Backbone protocol: the only view of a masked diffusion model that the rest of the code has.

A backbone maps token ids ``(B, N)`` to logits over the domain's vocabulary ``(B, N, V)`` and the
hidden states of one chosen layer ``(B, N, D)``. Positions holding ``mask_id`` are the masked ones;
every other position is fixed (clues, BOS/EOS, pads) and is never rewritten by a sampler.

The token-id convention, stated once. Input ids are the model's own (its tokenizer's) ids; they need
not start at 0. The V *vocabulary* tokens are the values a masked position may take:
``vocab_token_ids[k]`` is the input id of logit index ``k``, so ``logits[..., k]`` scores the token
``vocab_token_ids[k]``. The mask id and every special token (BOS/EOS, pad, unknown, ...) lie outside
``vocab_token_ids``: they are never probed (:mod:`mdm_mi.mi.probe` sets ``X_i`` to vocabulary tokens
only), never masked (contexts mask vocabulary tokens only) and never sampled (a decode writes
``vocab_token_ids[argmax]``). The Sudoku MDM uses ids 0..8 for the digits 1..9 (mask 9); ESM-C's 20 amino
acids are ids 4..23 of its 33-token tokenizer (mask 32); a Hugging Face masked LM
(:mod:`mdm_mi.hf`) uses its tokenizer's ids for the tokens of its alphabet.

:func:`check_backbone` (the ids), :func:`check_output` (the first pass's shapes) and
:func:`check_frame` (no masked BOS/EOS) enforce these rules where a backbone enters the library
(probing, the MI head's features, :func:`mdm_mi.core.samplers.decode`), once per call, each broken rule
one line of :class:`~mdm_mi.infra.errors.BackboneError`. The Sudoku MDM (:mod:`mdm_mi.sudoku.model`), the ESM-C adapter
(:mod:`mdm_mi.protein.esmc`) and the Hugging Face adapter implement the protocol.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

import torch

from mdm_mi.infra.errors import BackboneError, InputError

FINGERPRINT_CHARS = 16  # hex characters kept of a fingerprint's sha256 (token_fingerprint, a model's)


@dataclass(frozen=True)
class BackboneOutput:
    """One forward pass.

    logits: ``(B, N, V)`` unnormalised scores over the V vocabulary tokens, in ``vocab_token_ids``
            order (the mask and the special tokens are not among them).
    hidden: ``(B, N, D)`` hidden states of the backbone's chosen layer.
    """

    logits: torch.Tensor
    hidden: torch.Tensor


@runtime_checkable
class Backbone(Protocol):
    """Tokens in, logits over the vocabulary and hidden states of a chosen layer out.

    Required by every part of the library (probing, MI head, samplers, metrics):

    vocab_size:      V, the number of vocabulary tokens (= the logits' last width).
    mask_id:         input id of the mask token; not in ``vocab_token_ids``.
    hidden_dim:      D, the width of the returned hidden states.
    vocab_token_ids: ``(V,)`` long, distinct: the input id of each logit index.
    __call__(tokens (B, N) long) → :class:`BackboneOutput`.

    Optional (read with ``getattr``, absent = not applicable):

    pad_id:      input id of padding, which comes after a sequence's content; probing skips trailing
                 pads (:func:`mdm_mi.mi.probe.content_width`).
    special_ids: input ids of every other fixed token (BOS/EOS, unknown, ...), checked to lie
                 outside ``vocab_token_ids``.
    bf16:        run the forward under bf16 autocast (decoding only; labels switch it off).

    Sequence backbones (:class:`SequenceBackbone`: proteins, a Hugging Face model with an alphabet)
    also turn strings into ids and back, for the ``generate``/``protein-compare``/``mi-map`` verbs.
    """

    vocab_size: int
    mask_id: int
    hidden_dim: int
    vocab_token_ids: torch.Tensor

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        """tokens ``(B, N)`` long → :class:`BackboneOutput`."""
        ...


@runtime_checkable
class SequenceBackbone(Backbone, Protocol):
    """A backbone over strings of single-character tokens (``_`` = masked), framed by BOS/EOS.

    pad_id, bos_id, eos_id: input ids of padding and the two framing tokens.
    encode(seqs, device) → ``(B, max len + 2)`` long: BOS + tokens + EOS, pads after.
    decode_tokens(tokens (B, N)) → strings, BOS/EOS/pads dropped, mask shown as ``_``.
    masked_sequence(length, device) → ``(length + 2,)``: BOS, ``length`` masks, EOS.
    residues(tokens (B, N)) → ``(B, N)`` bool: positions that are not BOS/EOS/pad.
    at_layer(layer) → the same model reading hidden states at ``layer`` (the metrics' embedder).
    """

    pad_id: int
    bos_id: int
    eos_id: int

    def encode(self, seqs: Sequence[str], device=None) -> torch.Tensor: ...

    def decode_tokens(self, tokens: torch.Tensor) -> list[str]: ...

    def masked_sequence(self, length: int, device=None) -> torch.Tensor: ...

    def residues(self, tokens: torch.Tensor) -> torch.Tensor: ...

    def at_layer(self, layer: int | None): ...


ALIGNED, SEQUENCE, GRID = "aligned", "sequence", "grid"  # a backbone's frame: what one row of tokens is


@dataclass(frozen=True)
class Capabilities:
    """What a backbone can do, which callers ask (:func:`capabilities`) instead of branching on which
    model it is. ``frame``: one row of tokens is ``aligned`` (BOS + the family's L match columns +
    EOS: a context is a row, ``decode_tokens`` drops gaps), a ``sequence`` (BOS + residues + EOS, any
    length) or a Sudoku ``grid``; ``fixed_length``: the positions every row has (L columns, 81 cells;
    ``None``: any length, generation draws lengths); ``embeds``: whether it embeds proteins for the
    metrics (``at_layer``; otherwise the verbs take ``--embedder``). The alphabet is the protocol's
    ``vocab_token_ids``."""

    frame: str = SEQUENCE
    fixed_length: int | None = None
    embeds: bool = True


def capabilities(backbone) -> Capabilities:
    """The capabilities ``backbone`` declares (its ``capabilities`` attribute; a bf16 wrapper passes
    its model's on), else those of a sequence model of any length that embeds when it has
    ``at_layer``."""
    inner = probe_backbone(backbone)
    declared = getattr(inner, "capabilities", None)
    return declared if isinstance(declared, Capabilities) else Capabilities(embeds=hasattr(inner, "at_layer"))


def _fixed_ids(backbone) -> list[int]:
    """The backbone's declared fixed ids: ``pad_id``, ``bos_id``, ``eos_id`` and ``special_ids``."""
    ids = [getattr(backbone, name, None) for name in ("pad_id", "bos_id", "eos_id")]
    return [int(i) for i in ids if i is not None] + [int(i) for i in getattr(backbone, "special_ids", ())]


def check_backbone(backbone) -> None:
    """Check the token-id rules of the module docstring that need no forward pass (cheap: run once per
    probe, feature extraction or decode); each broken rule → one-line :class:`BackboneError`."""
    for name in ("vocab_size", "mask_id", "hidden_dim", "vocab_token_ids"):
        if not hasattr(backbone, name):
            raise BackboneError(f"backbone rule 'attributes': {type(backbone).__name__} has no {name!r} "
                                "(see mdm_mi.core.backbone.Backbone)")
    ids = torch.as_tensor(backbone.vocab_token_ids)
    if ids.ndim != 1 or len(ids) != int(backbone.vocab_size):
        raise BackboneError(f"backbone rule 'vocab_token_ids': shape {tuple(ids.shape)} is not (vocab_size,) = "
                            f"({int(backbone.vocab_size)},)")
    if len(ids.unique()) != len(ids):
        raise BackboneError("backbone rule 'vocab_token_ids': ids repeat; each logit index needs its own token")
    if bool((ids == int(backbone.mask_id)).any()):
        raise BackboneError(f"backbone rule 'mask outside vocabulary': mask id {int(backbone.mask_id)} is in "
                            "vocab_token_ids, so it could be probed or sampled; cut the logits to the real tokens")
    clash = sorted(set(_fixed_ids(backbone)) & set(ids.tolist()))
    if clash:
        raise BackboneError(f"backbone rule 'specials outside vocabulary': special ids {clash} are in "
                            "vocab_token_ids, so they could be masked, probed or sampled")


def check_frame(backbone, tokens: torch.Tensor) -> None:
    """For a backbone that frames sequences (declares ``bos_id`` / ``eos_id``): every row of ``tokens
    (..., N)`` starts with BOS and holds an EOS. A row without them had its BOS or EOS masked (a context
    drawn without ``vocab_ids``) → one-line :class:`BackboneError`."""
    bos, eos = getattr(backbone, "bos_id", None), getattr(backbone, "eos_id", None)
    rows = tokens.reshape(-1, tokens.shape[-1])
    if len(rows) == 0 or rows.shape[1] == 0:
        return
    if (bos is not None and not bool((rows[:, 0] == bos).all())) or (eos is not None and not bool((rows == eos).any(-1).all())):
        raise BackboneError("backbone rule 'specials never masked': a row lacks its BOS at position 0 or an EOS, so a "
                            "special token was masked; draw contexts with mask_contexts(..., vocab_ids=vocab_token_ids)")


def token_fingerprint(backbone) -> str:
    """A short hash of how the backbone reads input ids (``vocab_token_ids``, ``mask_id`` and the
    declared fixed ids): token files encoded for it carry it, and ``label`` refuses files whose
    fingerprint differs (contexts encoded for another model)."""
    ids = {"vocab": torch.as_tensor(backbone.vocab_token_ids).tolist(), "mask": int(backbone.mask_id),
           "fixed": _fixed_ids(backbone)}
    return hashlib.sha256(json.dumps(ids, sort_keys=True).encode()).hexdigest()[:FINGERPRINT_CHARS]


def check_known_ids(backbone, tokens: torch.Tensor, source: str) -> None:
    """Every id in ``tokens`` is one the backbone reads (its vocabulary, mask or a declared fixed id);
    one-line :class:`InputError` naming ``source`` and the first unknown id otherwise."""
    known = torch.tensor([*torch.as_tensor(backbone.vocab_token_ids).tolist(), int(backbone.mask_id),
                          *_fixed_ids(backbone)])
    unknown = torch.as_tensor(tokens)[~torch.isin(torch.as_tensor(tokens), known)]
    if len(unknown):
        raise InputError(f"{source} holds token id {int(unknown.max())}, which this model does not read: was it "
                         "encoded for another model?")


def logit_index(vocab_token_ids: torch.Tensor, tokens: torch.Tensor, missing: int = -1) -> torch.Tensor:
    """``tokens (...)`` input ids → ``(...)`` long, each token's logit index (its place in
    ``vocab_token_ids``), ``missing`` for the mask and every special token."""
    vocab = torch.as_tensor(vocab_token_ids).to(tokens.device)
    index = torch.full((int(max(tokens.max(), vocab.max())) + 1,), missing, dtype=torch.long, device=tokens.device)
    index[vocab] = torch.arange(len(vocab), device=tokens.device)
    return index[tokens]


def check_output(backbone, out: BackboneOutput, tokens: torch.Tensor) -> None:
    """Check one forward pass of ``tokens (B, N)``: logits ``(B, N, vocab_size)``, hidden
    ``(B, N, hidden_dim)``; one-line :class:`BackboneError` naming the broken rule."""
    want = (*tokens.shape, int(backbone.vocab_size))
    if tuple(out.logits.shape) != want:
        raise BackboneError(f"backbone rule 'logits width': logits have shape {tuple(out.logits.shape)}, "
                            f"expected {want} (vocab_size logits in vocab_token_ids order)")
    want = (*tokens.shape, int(backbone.hidden_dim))
    if tuple(out.hidden.shape) != want:
        raise BackboneError(f"backbone rule 'hidden width': hidden states have shape {tuple(out.hidden.shape)}, "
                            f"expected {want}")


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
    is computed on its own, so the result equals the single call (bitwise on the shipped models at the
    chunk sizes used, ``benchmarks/bench_chunk.py``; the Kunitz column model rounds a batch of only 1-3
    rows differently, ~1e-5), while a chunk's activations stay in cache: a 1,000-puzzle Sudoku pass
    runs ~1.5× faster in chunks.
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


def embedder_of(backbone, layer: int | None):
    """The metrics' embedder: ``backbone.at_layer(layer)`` (a sequence model read at another layer;
    a bf16 wrapper's fp32 backbone). A backbone without ``at_layer`` — a column model, which reads
    aligned rows rather than proteins — cannot embed proteins: one-line :class:`InputError` asking for
    ``--embedder``."""
    inner = probe_backbone(backbone)
    if not capabilities(inner).embeds:
        raise InputError(f"the model ({type(inner).__name__}) cannot embed proteins for the cluster-JSD metric: "
                         "give --embedder, a sequence model folder (e.g. resources/pretrained/protein-kunitz)")
    return inner.at_layer(layer)
