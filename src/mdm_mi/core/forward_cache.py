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
Callers use it where the equality was checked (``tests/test_forward_cache.py``).

Not for a pairwise source that reads what the forward pass does beside its outputs (DAPD's attention
maps, captured by hooks during the call): a cached row makes no call. Callers leave the cache out for
such samplers (:class:`mdm_mi.sudoku.compare.Decoder`).

    cache = ForwardCache()
    result = decode(model, puzzles, EntropyBounded(gamma=0.2), cache=cache)   # later decodes reuse rows
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from mdm_mi.core.backbone import BackboneOutput, check_output, forward_chunked

DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB of kept rows: ~370,000 Sudoku rows of logits, ~24,000 with the hidden states

Row = tuple[torch.Tensor, "torch.Tensor | None"]  # logits (N, V), hidden (N, D) or None


class ForwardCache:
    """Backbone outputs by the exact tokens of their row, kept up to ``max_bytes``.

    A row keeps its logits ``(N, V)`` and, when the decode that computed it needed them (a sampler
    that reads a pairwise matrix from the hidden states), its hidden states ``(N, D)``; a row kept
    without hidden states is computed again for a decode that needs them. Rows of one call that are
    equal are computed once. ``hits`` and ``computed`` count rows handed back and rows computed.

    Once full, the rows with the fewest masks go first (least recently used first among them): the
    settings of one sampler part ways a few passes into a decode, so the early, many-masked states are
    the ones the next decode reaches again.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.computed = 0
        self._masks: dict[bytes, int] = {}  # row key → its number of masks
        self._by_masks: dict[int, OrderedDict[bytes, Row]] = {}  # masks → rows, least recently used first

    def __len__(self) -> int:
        return len(self._masks)

    def forward(self, backbone, tokens: torch.Tensor, hidden: bool = True) -> BackboneOutput:
        """``backbone(tokens (B, N))`` as :func:`forward_chunked` gives it, rows seen before taken from
        the cache. With ``hidden`` False the returned hidden states are ``(B, N, 0)``: for a caller
        that reads the logits only."""
        rows = tokens.cpu().numpy()
        keys = [row.tobytes() for row in rows]
        found = [self._get(k, hidden) for k in keys]
        todo: dict[bytes, int] = {}  # distinct keys to compute → their first row
        for i, (k, f) in enumerate(zip(keys, found)):
            if f is None:
                todo.setdefault(k, i)
        if todo:
            index = list(todo.values())
            sub = tokens[torch.as_tensor(index, device=tokens.device)]
            out = forward_chunked(backbone, sub)
            check_output(backbone, out, sub)  # shapes only: a broken backbone is refused as without the cache
            masks = (rows[index] == backbone.mask_id).sum(1).tolist()
            computed = {k: self._put(k, m, out.logits[j], out.hidden[j] if hidden else None)
                        for j, (k, m) in enumerate(zip(todo, masks))}
            found = [f if f is not None else computed[k] for k, f in zip(keys, found)]
            self.computed += len(todo)
        self.hits += len(keys) - len(todo)
        logits = torch.stack([f[0] for f in found])
        states = torch.stack([f[1] for f in found]) if hidden else logits.new_empty((*tokens.shape, 0))
        return BackboneOutput(logits=logits, hidden=states)

    def _get(self, key: bytes, hidden: bool) -> Row | None:
        masks = self._masks.get(key)
        if masks is None:
            return None
        bucket = self._by_masks[masks]
        row = bucket[key]
        if hidden and row[1] is None:
            return None
        bucket.move_to_end(key)
        return row

    def _put(self, key: bytes, masks: int, logits: torch.Tensor, hidden: torch.Tensor | None) -> Row:
        """Keep a copy of one row (not a view that would hold its whole batch), then drop rows while the
        cache holds more than ``max_bytes``; returns the row."""
        row = (logits.clone(), None if hidden is None else hidden.clone())
        if key in self._masks:  # kept without hidden states, computed again with them
            self._drop(key)
        self._masks[key] = masks
        self._by_masks.setdefault(masks, OrderedDict())[key] = row
        self.bytes += _nbytes(row)
        while self.bytes > self.max_bytes and self._masks:
            fewest = min(m for m, bucket in self._by_masks.items() if bucket)
            self._drop(next(iter(self._by_masks[fewest])))
        return row

    def _drop(self, key: bytes) -> None:
        self.bytes -= _nbytes(self._by_masks[self._masks.pop(key)].pop(key))

    def stats(self) -> dict:
        """Rows handed back and computed, rows kept and their bytes."""
        return {"hits": self.hits, "computed": self.computed, "rows": len(self._masks), "bytes": self.bytes}


def _nbytes(row: Row) -> int:
    return sum(t.numel() * t.element_size() for t in row if t is not None)
