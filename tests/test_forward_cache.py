"""Properties of :mod:`mdm_mi.core.forward_cache`: a cached decode is the uncached one (tokens and
passes, on the tiny real Sudoku MDM with and without the MI head), rows are computed once, the cache
stays within its bytes and drops the most-decoded rows first, and what must not be cached is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.samplers import EntropyBounded, NaiveTopK, Sequential, decode
from mdm_mi.infra.errors import BackboneError
from mdm_mi.mi.dapd import Dapd, attention_source
from mdm_mi.mi.guided import MIGuided, head_pairwise_fn
from mdm_mi.mi.head import HeadConfig, MIHead
from mdm_mi.sudoku.grid import MASK_ID
from conftest import MockBackbone, seeded_logits

N, V = 6, 4  # the mock backbone's width and vocabulary (ids 1..4, mask 0)


def _mock(cls=MockBackbone) -> MockBackbone:
    return cls(seeded_logits(N, V), mask_id=0, offset=1)


class Counting:
    """A backbone wrapper that counts the rows it computes."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __call__(self, tokens):
        self.rows += tokens.shape[0]
        return self.inner(tokens)


def _blanked(easy_puzzles, extra: int = 20, n: int = 8) -> torch.Tensor:
    """``(n, 81)`` easy puzzles with ``extra`` more givens blanked: room for the settings to differ."""
    puzzles = torch.as_tensor(easy_puzzles[0][:n]).clone()
    gen = torch.Generator().manual_seed(0)
    for row in puzzles:
        given = (row != MASK_ID).nonzero().squeeze(1)
        row[given[torch.randperm(len(given), generator=gen)[:extra]]] = MASK_ID
    return puzzles


SETTINGS = [EntropyBounded(0.05), EntropyBounded(0.3), EntropyBounded(1.0), NaiveTopK(3), Sequential("entropy")]


def test_cached_decodes_equal_the_uncached_ones(tiny_model, easy_puzzles):
    puzzles = _blanked(easy_puzzles)
    cache, counting = ForwardCache(), Counting(tiny_model)
    for sampler in SETTINGS:
        plain = decode(tiny_model, puzzles, sampler)
        cached = decode(counting, puzzles, sampler, cache=cache)
        assert torch.equal(plain.tokens, cached.tokens) and torch.equal(plain.passes, cached.passes)
    total = sum(int(decode(tiny_model, puzzles, s).passes.sum()) for s in SETTINGS)
    assert cache.hits + cache.computed == total  # every pass is still charged
    assert cache.computed < total  # the shared first pass (at least) was computed once
    assert counting.rows == cache.computed + cache.verified and cache.verified == min(cache.hits, cache.verify_rows)
    assert cache.off is None  # the tiny MDM's rows do not depend on their neighbours


def test_cached_mi_guided_decodes_equal_the_uncached_ones(tiny_model, easy_puzzles):
    puzzles = _blanked(easy_puzzles)
    torch.manual_seed(0)
    fn = head_pairwise_fn(MIHead(tiny_model.hidden_dim, HeadConfig(hidden=8, heads=2, rank=2, unary=True)))
    cache = ForwardCache()
    decode(tiny_model, puzzles, EntropyBounded(0.3), cache=cache)  # rows kept without hidden states
    assert cache.stats()["bytes"] == len(cache) * 81 * tiny_model.vocab_size * 4
    for gamma in (0.3, 0.5, 2.0):
        sampler = MIGuided(gamma, 1.0, "skip", False)
        plain = decode(tiny_model, puzzles, sampler, pairwise_fn=fn)
        cached = decode(tiny_model, puzzles, sampler, pairwise_fn=fn, cache=cache)
        assert torch.equal(plain.tokens, cached.tokens) and torch.equal(plain.passes, cached.passes)


def test_equal_rows_of_one_call_are_computed_once():
    bb = Counting(_mock())
    tokens = torch.full((5, bb.inner.logits.shape[0]), bb.mask_id)
    cache = ForwardCache()
    out = cache.forward(bb, tokens)
    assert bb.rows == 1 and cache.hits == 4 and len(cache) == 1
    torch.testing.assert_close(out.logits, bb.inner(tokens).logits, rtol=0, atol=0)
    assert out.hidden.shape == (5, tokens.shape[1], bb.inner.hidden_dim)


def test_rows_without_hidden_states_are_computed_again_for_a_caller_that_needs_them():
    bb = Counting(_mock())
    tokens = torch.full((2, bb.inner.logits.shape[0]), bb.mask_id)
    tokens[1, 0] = bb.inner.vocab_token_ids[0]
    cache = ForwardCache(verify_rows=0)  # rows counted as computed or handed back, none verified
    assert cache.forward(bb, tokens, hidden=False).hidden.shape == (2, tokens.shape[1], 0)
    cache.forward(bb, tokens, hidden=False)
    assert bb.rows == 2
    out = cache.forward(bb, tokens, hidden=True)
    assert bb.rows == 4 and len(cache) == 2
    assert torch.equal(out.hidden, bb.inner(tokens).hidden)
    cache.forward(bb, tokens, hidden=False)  # the rows with hidden states serve a logits-only call too
    assert bb.rows == 4


def test_the_cache_stays_within_its_bytes_and_drops_the_most_decoded_rows_first():
    bb = _mock()
    n = bb.logits.shape[0]
    row_bytes = n * (bb.vocab_size + bb.hidden_dim) * 4
    cache = ForwardCache(max_bytes=3 * row_bytes, verify_rows=0)
    tokens = torch.full((n + 1, n), bb.mask_id)
    for i in range(1, n + 1):  # row i has i positions given: n − i masks
        tokens[i, :i] = bb.vocab_token_ids[0]
    order = [0, n, 1, n - 1, 2]  # masks: n, 0, n − 1, 1, n − 2
    for i in order:
        cache.forward(bb, tokens[i : i + 1])
        assert cache.bytes <= cache.max_bytes
    counting = Counting(bb)
    cache.forward(counting, tokens[[0, 1, 2]])  # the three rows with the most masks are the ones kept
    assert counting.rows == 0 and len(cache) == 3
    with pytest.raises(ValueError):
        ForwardCache(max_bytes=-1)
    with pytest.raises(ValueError):
        ForwardCache(verify_rows=-1)


class Neighbourly(MockBackbone):
    """A backbone whose rows depend on the rows beside them (here: on the batch's size, by 1e-6)."""

    def __call__(self, tokens):
        out = super().__call__(tokens)
        return BackboneOutput(logits=out.logits + 1e-6 * tokens.shape[0], hidden=out.hidden)


def test_a_backbone_whose_rows_depend_on_their_neighbours_turns_the_cache_off():
    """The first rows the cache would hand back are computed again: a difference in the last bits
    turns it off with a warning, and from then on every row is computed as without it."""
    bb = _mock(Neighbourly)
    n = bb.logits.shape[0]
    tokens = torch.full((4, n), bb.mask_id)
    tokens[:, 0] = bb.vocab_token_ids[torch.arange(4) % bb.vocab_size]
    cache = ForwardCache()
    cache.forward(bb, tokens)  # 4 rows computed in a batch of 4
    with pytest.warns(RuntimeWarning, match="Neighbourly.*depend on their neighbours.*cache is off"):
        out = cache.forward(bb, tokens[:2])  # found, computed again in a batch of 2: not equal
    assert torch.equal(out.logits, bb(tokens[:2]).logits) and cache.off is not None
    assert len(cache) == 0 and cache.stats()["bytes"] == 0 and cache.stats()["off"] == cache.off
    calls = len(bb.calls)
    assert torch.equal(cache.forward(bb, tokens).logits, bb(tokens).logits) and len(bb.calls) == calls + 2
    assert cache.hits == 0


def test_rows_are_verified_up_to_verify_rows_only():
    bb = Counting(_mock())
    n = bb.inner.logits.shape[0]
    tokens = torch.full((3, n), bb.mask_id)
    tokens[:, 0] = bb.inner.vocab_token_ids[:3]
    cache = ForwardCache(verify_rows=2)
    cache.forward(bb, tokens)
    cache.forward(bb, tokens)  # 3 found: 2 verified (computed again), 1 handed back as is
    assert (cache.hits, cache.verified, bb.rows) == (3, 2, 5)
    cache.forward(bb, tokens)
    assert (cache.hits, cache.verified, bb.rows) == (6, 2, 5) and cache.off is None


def test_a_broken_backbone_is_refused_with_the_cache():
    class Narrow(MockBackbone):
        def __call__(self, tokens):
            out = super().__call__(tokens)
            return BackboneOutput(logits=out.logits[..., :-1], hidden=out.hidden)

    bb = _mock(Narrow)
    tokens = torch.full((2, bb.logits.shape[0]), bb.mask_id)
    with pytest.raises(BackboneError, match="logits width"):
        decode(bb, tokens, EntropyBounded(0.3), cache=ForwardCache())


def test_a_sampler_reading_the_attention_of_the_pass_is_never_cached(tiny_model, easy_puzzles):
    puzzles = _blanked(easy_puzzles, n=4)
    cache = ForwardCache()
    with attention_source(tiny_model) as fn:
        plain = decode(tiny_model, puzzles, Dapd(gamma=0.5, theta=1.0), pairwise_fn=fn)
        cached = decode(tiny_model, puzzles, Dapd(gamma=0.5, theta=1.0), pairwise_fn=fn, cache=cache)
    assert torch.equal(plain.tokens, cached.tokens) and len(cache) == 0 and cache.hits == 0
    assert np.array_equal(plain.passes.numpy(), cached.passes.numpy())


def test_fills_drawn_at_temperature_one_are_the_same_with_the_cache(tiny_model, easy_puzzles):
    from mdm_mi.evaluation.infill import Filler

    puzzles = _blanked(easy_puzzles, n=6)
    cache = ForwardCache()
    for sampler in (EntropyBounded(0.5), EntropyBounded(1.5)):
        plain = Filler(tiny_model, seed=3, batch_size=4)(puzzles, sampler, 2)
        cached = Filler(tiny_model, seed=3, batch_size=4, cache=cache)(puzzles, sampler, 2)
        assert torch.equal(plain.tokens, cached.tokens) and torch.equal(plain.passes, cached.passes)
    assert cache.hits >= 6 * 3  # each puzzle's first pass: computed once for both fills of both settings
