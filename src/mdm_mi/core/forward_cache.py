"""A memo of backbone rows for decodes that revisit the same states.

A calibrated comparison decodes the same puzzles with many settings of one sampler (a bisection of
γ on the calibration items, then two bracketing settings per budget on the test items). Every decode
starts from the same grids, and two settings that admit the same positions at a pass reach the same
state: on 200 hard test puzzles, the 14 EB decodes of the CPU default's comparison asked the
backbone for 37,088 rows of which 17,272 were distinct (47%). A backbone's output for a row depends
on that row's tokens alone (every row is computed on its own: :func:`mdm_mi.core.backbone.forward_chunked`),
so such a row's logits and hidden states can be kept and handed back instead of recomputed.

The cache changes no pass count: :func:`mdm_mi.core.samplers.decode` still charges every sequence one
forward pass for each pass it takes part in, whether its row came from the backbone or from here
(the pass count is the sampler's cost, not this process's work). It changes no token either where a
row's output does not depend, to the bit, on the rows computed beside it: so on the Sudoku MDM (the
whole hard and graded comparisons of the main job came out byte-identical with it) and AntiBERTy
(fills checked equal with and without it), whose rows are ≥ 81 tokens each. The Kunitz column model
is not such a backbone: a batch of 1-3 rows rounds differently (~1e-5 in the logits), which moved one
of 2,520 generated sequences in one setting, so the protein comparison does not use the cache.
Callers use it where the equality was checked (``tests/test_forward_cache.py``), and the cache checks
it too: the first :data:`VERIFY_ROWS` rows it would hand back are computed again, beside the rows of
the call that asks for them, and must equal the kept ones to the bit. If one differs, the backbone's
rows depend on their neighbours; the cache then turns itself off for good (every row computed, as
without it, and a ``RuntimeWarning`` says why), so it never hands back a row the backbone would not
have given.

Not for a pairwise source that reads what the forward pass does beside its outputs (DAPD's attention
maps, captured by hooks during the call): a cached row makes no call. Callers leave the cache out for
such samplers (:class:`mdm_mi.sudoku.compare.Decoder`).

    cache = ForwardCache()
    result = decode(model, puzzles, EntropyBounded(gamma=0.2), cache=cache)   # later decodes reuse rows
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass

import torch

from mdm_mi.core.backbone import BackboneOutput, check_output, forward_chunked

VERIFY_ROWS = 32  # rows handed back only after being computed again and found equal to the bit
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB of kept rows: ~370,000 Sudoku rows of logits, ~24,000 with the hidden states
BLOCK_BYTES = 16 << 20  # rows are stored in blocks of ~16 MB, allocated once and reused


class _Blocks:
    """Rows of one shape and dtype in preallocated blocks, each slot reused once freed: a cache of
    many small rows then makes no allocation per row (tens of thousands of small tensors, freed in
    another order than made, fragment a heap that keeps freed memory: :mod:`mdm_mi.infra.memory`)."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device):
        self.shape, self.dtype, self.device = shape, dtype, device
        self.row_bytes = max(1, torch.Size(shape).numel()) * dtype.itemsize
        self.per_block = max(1, BLOCK_BYTES // self.row_bytes)
        self.blocks: list[torch.Tensor] = []
        self.free: list[int] = []

    def put(self, row: torch.Tensor) -> int:
        """Copy ``row`` into a free slot → the slot."""
        if not self.free:
            base = len(self.blocks) * self.per_block
            self.blocks.append(torch.empty((self.per_block, *self.shape), dtype=self.dtype, device=self.device))
            self.free.extend(range(base + self.per_block - 1, base - 1, -1))
        slot = self.free.pop()
        self.get(slot).copy_(row)
        return slot

    def get(self, slot: int) -> torch.Tensor:
        """The row in ``slot`` (a view: copy it before the slot is freed)."""
        return self.blocks[slot // self.per_block][slot % self.per_block]


@dataclass(frozen=True)
class _Row:
    masks: int  # the row's masked positions
    logits: tuple[_Blocks, int]  # where its logits sit
    hidden: tuple[_Blocks, int] | None  # where its hidden states sit, or None when kept without


class ForwardCache:
    """Backbone outputs by the exact tokens of their row, kept up to ``max_bytes``.

    A row keeps its logits ``(N, V)`` and, when the decode that computed it needed them (a sampler
    that reads a pairwise matrix from the hidden states), its hidden states ``(N, D)``; a row kept
    without hidden states is computed again for a decode that needs them. Rows of one call that are
    equal are computed once. ``hits`` and ``computed`` count rows handed back and rows computed;
    ``bytes`` is what the kept rows hold (the blocks they sit in hold up to one block more per shape).

    Once full, the rows with the fewest masks go first (least recently used first among them): the
    settings of one sampler part ways a few passes into a decode, so the early, many-masked states are
    the ones the next decode reaches again.

    The first ``verify_rows`` rows found are computed again and compared to the bit (``verified``
    counts them: the backbone computed ``computed + verified`` rows); a difference turns the cache off
    (``off`` holds why): see the module's docstring.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, verify_rows: int = VERIFY_ROWS):
        if max_bytes < 0 or verify_rows < 0:
            raise ValueError(f"max_bytes and verify_rows must be >= 0, got {max_bytes} and {verify_rows}")
        self.max_bytes, self.verify_rows = max_bytes, verify_rows
        self.bytes = 0
        self.hits = 0
        self.computed = 0
        self.verified = 0
        self.off: str | None = None  # why the cache turned itself off, once it has
        self._rows: dict[bytes, _Row] = {}
        self._by_masks: dict[int, OrderedDict[bytes, None]] = {}  # masks → row keys, least recently used first
        self._blocks: dict[tuple, _Blocks] = {}  # (kind, shape, dtype, device) → blocks (each width its own)

    def __len__(self) -> int:
        return len(self._rows)

    def forward(self, backbone, tokens: torch.Tensor, hidden: bool = True) -> BackboneOutput:
        """``backbone(tokens (B, N))`` as :func:`forward_chunked` gives it, rows seen before taken from
        the cache. With ``hidden`` False the returned hidden states are ``(B, N, 0)``: for a caller
        that reads the logits only."""
        if self.off is not None:
            return self._computed(backbone, tokens, hidden)
        rows = tokens.cpu().numpy()
        keys = [row.tobytes() for row in rows]
        found = [self._get(k, hidden) for k in keys]
        todo: dict[bytes, int] = {}  # distinct keys to compute → their first row
        for i, (k, f) in enumerate(zip(keys, found)):
            if f is None:
                todo.setdefault(k, i)
        check: dict[bytes, int] = {}  # found rows computed again to verify them → their first row
        for i, (k, f) in enumerate(zip(keys, found)):
            if f is not None and k not in check and self.verified + len(check) < self.verify_rows:
                check[k] = i
        out = None
        if todo or check:
            index = [*todo.values(), *check.values()]
            sub = tokens[torch.as_tensor(index, device=tokens.device)]
            out = forward_chunked(backbone, sub)
            check_output(backbone, out, sub)  # shapes only: a broken backbone is refused as without the cache
            if check and not self._same(backbone, out, len(todo), [found[i] for i in check.values()], hidden):
                return self._computed(backbone, tokens, hidden)
        index = list(todo.values())
        at = {k: j for j, k in enumerate(todo)}
        logits = torch.stack([out.logits[at[k]] if f is None else _view(f.logits) for k, f in zip(keys, found)])
        states = (torch.stack([out.hidden[at[k]] if f is None else _view(f.hidden) for k, f in zip(keys, found)])
                  if hidden else logits.new_empty((*tokens.shape, 0)))
        if out is not None:  # kept only now: a row kept here may take the slot of a row handed back above
            masks = (rows[index] == backbone.mask_id).sum(1).tolist()
            for j, (k, m) in enumerate(zip(todo, masks)):
                self._put(k, m, out.logits[j], out.hidden[j] if hidden else None)
        self.computed += len(todo)
        self.hits += len(keys) - len(todo)
        return BackboneOutput(logits=logits, hidden=states)

    def _same(self, backbone, out: BackboneOutput, first: int, rows: list[_Row], hidden: bool) -> bool:
        """Whether ``out``'s rows from ``first`` on equal the kept ``rows`` to the bit; if not, the
        cache turns itself off (:attr:`off`) with a ``RuntimeWarning``."""
        pairs = [(out.logits[j], _view(row.logits)) for j, row in enumerate(rows, start=first)]
        if hidden:
            pairs += [(out.hidden[j], _view(row.hidden)) for j, row in enumerate(rows, start=first)]
        gaps = [(new.float() - kept.float()).abs().max().item() for new, kept in pairs if not torch.equal(new, kept)]
        self.verified += len(rows)
        if not gaps:
            return True
        self.off = (f"{type(backbone).__name__} gave a row other outputs beside other rows (max |difference| "
                    f"{max(gaps):.3g}): its rows depend on their neighbours, so the row cache is off")
        warnings.warn(f"ForwardCache: {self.off}", RuntimeWarning, stacklevel=3)
        self.bytes = 0  # the kept rows are dropped; the counts so far stand (every row handed back was verified)
        self._rows.clear()
        self._by_masks.clear()
        self._blocks.clear()
        return False

    def _computed(self, backbone, tokens: torch.Tensor, hidden: bool) -> BackboneOutput:
        """Every row of ``tokens`` computed, as without a cache (once it is off)."""
        out = forward_chunked(backbone, tokens)
        check_output(backbone, out, tokens)
        self.computed += len(tokens)
        return out if hidden else BackboneOutput(logits=out.logits, hidden=out.logits.new_empty((*tokens.shape, 0)))

    def _get(self, key: bytes, hidden: bool) -> _Row | None:
        row = self._rows.get(key)
        if row is None or (hidden and row.hidden is None):
            return None
        self._by_masks[row.masks].move_to_end(key)
        return row

    def _store(self, kind: str, row: torch.Tensor) -> tuple[_Blocks, int]:
        """``row`` copied into the blocks of its kind and shape → (the blocks, its slot)."""
        spec = (kind, tuple(row.shape), row.dtype, row.device)
        blocks = self._blocks.get(spec)
        if blocks is None:
            blocks = self._blocks[spec] = _Blocks(*spec[1:])
        self.bytes += blocks.row_bytes
        return blocks, blocks.put(row)

    def _put(self, key: bytes, masks: int, logits: torch.Tensor, hidden: torch.Tensor | None) -> None:
        """Keep one row, then drop rows while the cache holds more than ``max_bytes``."""
        if key in self._rows:  # kept without hidden states, computed again with them
            self._drop(key)
        row = _Row(masks, self._store("logits", logits), None if hidden is None else self._store("hidden", hidden))
        self._rows[key] = row
        self._by_masks.setdefault(masks, OrderedDict())[key] = None
        while self.bytes > self.max_bytes and self._rows:
            fewest = min(m for m, bucket in self._by_masks.items() if bucket)
            self._drop(next(iter(self._by_masks[fewest])))

    def _drop(self, key: bytes) -> None:
        row = self._rows.pop(key)
        del self._by_masks[row.masks][key]
        for where in (row.logits, row.hidden):
            if where is not None:
                blocks, slot = where
                blocks.free.append(slot)
                self.bytes -= blocks.row_bytes

    def stats(self) -> dict:
        """Rows handed back, computed and verified, rows kept and their bytes, and why the cache is off
        (``None`` while it is on)."""
        return {"hits": self.hits, "computed": self.computed, "verified": self.verified, "rows": len(self._rows),
                "bytes": self.bytes, "off": self.off}


def _view(where: tuple[_Blocks, int]) -> torch.Tensor:
    blocks, slot = where
    return blocks.get(slot)
