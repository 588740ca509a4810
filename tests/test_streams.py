"""Keyed random streams (issue 47): a fill's tokens depend only on (item, fill, sampler, setting)."""

from __future__ import annotations

import torch

from conftest import MockBackbone, seeded_logits
from mdm_mi.core.samplers import EntropyBounded, NaiveTopK, choose_tokens, decode
from mdm_mi.core.streams import RowStreams, mix64, row_keys
from mdm_mi.evaluation.infill import fill
from mdm_mi.infra.flags import Decoding

N, V = 12, 5


def _templates(b: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(V, (b, N), generator=gen)
    tokens[torch.rand(b, N, generator=gen) < 0.7] = V  # V is the mask
    tokens[:, 0] = V
    return tokens


def test_uniforms_are_a_function_of_key_step_position_and_value_only():
    keys = row_keys(0, torch.arange(6), 0, "eb {}")
    whole = RowStreams(keys).uniform(3, (N, V))
    part = RowStreams(keys).rows(torch.tensor([4, 1])).uniform(3, (N, V))
    assert torch.equal(part, whole[[4, 1]])
    assert whole.dtype == torch.float64 and 0 < float(whole.min()) and float(whole.max()) < 1
    assert not torch.equal(whole, RowStreams(keys).uniform(4, (N, V)))  # another pass, other draws
    assert torch.equal(RowStreams(keys).uniform(3, (N + 3, V))[:, :N], whole)  # longer rows keep their prefix


def test_keys_differ_by_item_fill_tag_and_seed():
    items = torch.arange(50)
    variants = [row_keys(0, items, 0, "eb {}"), row_keys(1, items, 0, "eb {}"),
                row_keys(0, items, 1, "eb {}"), row_keys(0, items, 0, "naive {}")]
    all_keys = torch.cat(variants)
    assert len(set(all_keys.tolist())) == len(all_keys)


def test_the_hash_is_uniform_enough_for_sampling():
    u = RowStreams(row_keys(0, torch.arange(400), 0, "x")).uniform(0, (10, 25)).flatten()
    counts = torch.histc(u.float(), bins=10, min=0, max=1)
    expected = len(u) / 10
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 30  # 9 degrees of freedom: p < 1e-3 beyond 27.9
    assert abs(float(u.mean()) - 0.5) < 0.01
    assert len(torch.unique(mix64(torch.arange(10_000)))) == 10_000  # a bijection on its inputs


def test_keyed_gumbel_max_samples_the_softmax():
    logits = torch.tensor([[[2.0, 0.0, -1.0, 1.0]]]).expand(20_000, 1, 4)
    idx = choose_tokens(logits, 1.0, RowStreams(row_keys(3, torch.arange(20_000), 0, "t")), step=0)
    freq = torch.bincount(idx.flatten(), minlength=4).double() / 20_000
    assert torch.allclose(freq, logits[0, 0].softmax(-1).double(), atol=0.01)


def test_a_fill_is_the_same_whatever_batch_size_neighbours_or_set_size():
    backbone = MockBackbone(seeded_logits(N, V, seed=1), mask_id=V)
    tokens = _templates(9)
    sampler = EntropyBounded(gamma=0.7)
    a = fill(backbone, tokens, sampler, n=2, seed=5, batch_size=9)
    b = fill(backbone, tokens, sampler, n=2, seed=5, batch_size=2)
    prefix = fill(backbone, tokens[:4], sampler, n=2, seed=5, batch_size=3)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passes, b.passes)
    rows = torch.tensor([0, 1, 2, 3, 9, 10, 11, 12])  # fills 0 and 1 of the first four templates
    assert torch.equal(prefix.tokens, a.tokens[rows])
    fill(backbone, tokens, NaiveTopK(k=3), n=1, seed=5)  # another sampler in between changes nothing
    assert torch.equal(fill(backbone, tokens, sampler, n=2, seed=5).tokens, a.tokens)
    other = fill(backbone, tokens, EntropyBounded(gamma=0.8), n=2, seed=5)
    assert not torch.equal(other.tokens, a.tokens)  # the setting is part of the key


def test_decode_with_row_streams_matches_rows_decoded_alone():
    backbone = MockBackbone(seeded_logits(N, V, seed=2), mask_id=V)
    tokens = _templates(5, seed=3)
    keys = row_keys(0, torch.arange(5), 0, "eb")
    hot = Decoding(temperature=1.0)
    together = decode(backbone, tokens, EntropyBounded(gamma=0.5), RowStreams(keys), decoding=hot)
    for b in range(5):
        alone = decode(backbone, tokens[b : b + 1], EntropyBounded(gamma=0.5), RowStreams(keys[b : b + 1]), decoding=hot)
        assert torch.equal(alone.tokens[0], together.tokens[b]) and alone.passes[0] == together.passes[b]
