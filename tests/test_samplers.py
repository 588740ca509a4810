"""Properties of :mod:`mdm_mi.core.samplers`: the decode loop (clues, completion, seeding, pass counting)
and each policy's choice, on a mock backbone with known logits and on a tiny real Sudoku MDM."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mdm_mi.core.sampler_table import SAMPLERS
from mdm_mi.infra.flags import Decoding
from mdm_mi.core.samplers import (
    eb_prefix,
    INF,
    EntropyBounded,
    Sampler,
    Sequential,
    StepView,
    NaiveTopK,
    choose_tokens,
    decode,
)
from mdm_mi.sampling.registry import build_sampler
from mdm_mi.sudoku.grid import MASK_ID, consistent_with_clues
from conftest import MockBackbone, seeded_logits

N, V, OFFSET, MASK = 12, 5, 1, 0  # token ids 1..5, mask 0: exercises vocab_token_ids
MASK_COUNTS = [0, 1, 3, 5, 8, 12]  # masks per sequence in the mixed batch

SPECS = [
    ("sequential", {"order": "entropy"}),
    ("sequential", {"order": "margin"}),
    ("naive", {"k": 1}),
    ("naive", {"k": 3}),
    ("eb", {"gamma": 0.0}),
    ("eb", {"gamma": 0.5}),
    ("eb", {"gamma": 100.0}),
    ("naive", {"k": 2.5}),
    ("threshold", {"tau": 0.0}),
    ("threshold", {"tau": 0.5}),
    ("threshold", {"tau": 1.0}),
]
SPEC_IDS = [f"{name}-{next(iter(p.values()))}" for name, p in SPECS]


def mixed_batch(logits: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """``(len(MASK_COUNTS), N)`` tokens; row i has MASK_COUNTS[i] masks at random positions and its
    clues differ from the greedy choice, so an overwritten clue shows."""
    gen = torch.Generator().manual_seed(seed)
    greedy = logits.argmax(-1)
    clues = (greedy + 1) % V + OFFSET  # never the argmax token
    rows = []
    for m in MASK_COUNTS:
        row = clues.clone()
        row[torch.randperm(N, generator=gen)[:m]] = MASK
        rows.append(row)
    return torch.stack(rows)


def masks_per_row(tokens: torch.Tensor, mask_id: int = MASK) -> torch.Tensor:
    return (tokens == mask_id).sum(1)


def view_from_entropy(entropy, masked=None) -> StepView:
    """A StepView with the given ``(B, N)`` entropies (+inf where not masked) and zero margins."""
    h = torch.as_tensor(entropy, dtype=torch.float32)
    if h.ndim == 1:
        h = h.unsqueeze(0)
    masked = torch.isfinite(h) if masked is None else torch.as_tensor(masked)
    return StepView(
        masked=masked,
        entropy=h.masked_fill(~masked, INF),
        margin=torch.zeros_like(h).masked_fill(~masked, -INF),
    )


# --- the decode loop -------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize(("name", "params"), SPECS, ids=SPEC_IDS)
def test_clues_never_overwritten(name, params, temperature):
    logits = seeded_logits(N, V)
    model = MockBackbone(logits, MASK, OFFSET)
    tokens = mixed_batch(logits)
    out = decode(model, tokens, build_sampler(name, **params), torch.Generator().manual_seed(0),
                 decoding=Decoding(temperature=temperature))
    given = tokens != MASK
    assert torch.equal(out.tokens[given], tokens[given])


@pytest.mark.parametrize(("name", "params"), SPECS, ids=SPEC_IDS)
def test_no_mask_left_after_decode(name, params):
    logits = seeded_logits(N, V, seed=1)
    model = MockBackbone(logits, MASK, OFFSET)
    tokens = mixed_batch(logits, seed=1)
    out = decode(model, tokens, build_sampler(name, **params), torch.Generator().manual_seed(0),
                 decoding=Decoding(temperature=1.0))
    assert not (out.tokens == MASK).any()
    assert ((out.tokens >= OFFSET) & (out.tokens < OFFSET + V)).all()  # only vocabulary ids written


def test_decode_does_not_modify_its_input():
    logits = seeded_logits(N, V)
    tokens = mixed_batch(logits)
    before = tokens.clone()
    decode(MockBackbone(logits, MASK, OFFSET), tokens, NaiveTopK(2))
    assert torch.equal(tokens, before)


@pytest.mark.parametrize(("name", "params"), SPECS, ids=SPEC_IDS)
def test_greedy_writes_argmax_token_through_vocab_ids(name, params):
    logits = seeded_logits(N, V, seed=2)
    model = MockBackbone(logits, MASK, OFFSET)
    tokens = mixed_batch(logits, seed=2)
    out = decode(model, tokens, build_sampler(name, **params))
    expected = (logits.argmax(-1) + OFFSET).expand_as(tokens)
    masked = tokens == MASK
    assert torch.equal(out.tokens[masked], expected[masked])


@pytest.mark.parametrize(("name", "params"), SPECS, ids=SPEC_IDS)
def test_same_seed_same_output_with_temperature(name, params):
    logits = seeded_logits(N, V, seed=3) / 3  # flat enough that sampling varies
    tokens = mixed_batch(logits, seed=3)
    runs = [
        decode(MockBackbone(logits, MASK, OFFSET), tokens, build_sampler(name, **params),
               torch.Generator().manual_seed(7), decoding=Decoding(temperature=1.0))
        for _ in range(2)
    ]
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert torch.equal(runs[0].passes, runs[1].passes)


def test_different_seeds_give_different_samples():
    logits = seeded_logits(N, V, seed=3) / 3
    tokens = mixed_batch(logits, seed=3)
    runs = [
        decode(MockBackbone(logits, MASK, OFFSET), tokens, NaiveTopK(2), torch.Generator().manual_seed(seed),
               decoding=Decoding(temperature=1.0)).tokens
        for seed in (7, 8)
    ]
    assert not torch.equal(runs[0], runs[1])


def test_greedy_is_deterministic_regardless_of_generator():
    logits = seeded_logits(N, V, seed=4)
    tokens = mixed_batch(logits, seed=4)
    outs = [
        decode(MockBackbone(logits, MASK, OFFSET), tokens, EntropyBounded(0.3), gen, decoding=Decoding(temperature=0.0)).tokens
        for gen in (None, torch.Generator().manual_seed(1), torch.Generator().manual_seed(2))
    ]
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_temperature_sampling_follows_softmax_of_scaled_logits():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 0.5]])
    temperature, b = 0.7, 20000
    tokens = torch.full((b, 1), MASK)
    out = decode(MockBackbone(logits, MASK, OFFSET), tokens, NaiveTopK(1), torch.Generator().manual_seed(0),
                 decoding=Decoding(temperature=temperature))
    freq = torch.bincount(out.tokens[:, 0] - OFFSET, minlength=V).float() / b
    expected = torch.softmax(logits[0] / temperature, -1)
    assert torch.allclose(freq, expected, atol=0.015), (freq, expected)


def test_choose_tokens_greedy_is_argmax():
    logits = seeded_logits(N, V, seed=5).unsqueeze(0)
    assert torch.equal(choose_tokens(logits, 0.0, None), logits.argmax(-1))


def test_choose_tokens_with_temperature_has_no_nan_noise():
    """With a peaked distribution the sample is its mode, whatever the noise: index 3 here."""
    logits = torch.full((1, 50, V), -30.0)
    logits[..., 3] = 30.0
    assert (choose_tokens(logits, 1.0, torch.Generator().manual_seed(0)) == 3).all()


# --- pass counting ---------------------------------------------------------------------------------


def test_sequential_takes_one_pass_per_mask_and_batch_shrinks():
    logits = seeded_logits(N, V)
    model = MockBackbone(logits, MASK, OFFSET)
    tokens = mixed_batch(logits)
    out = decode(model, tokens, Sequential())
    counts = masks_per_row(tokens)
    assert out.passes.tolist() == counts.tolist()
    # pass j only runs the sequences that still had a mask: completed ones leave the batch
    assert model.calls == [int((counts > j).sum()) for j in range(int(counts.max()))]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 12, 20])
def test_naive_k_takes_ceil_masks_over_k_passes(k):
    logits = seeded_logits(N, V)
    model = MockBackbone(logits, MASK, OFFSET)
    tokens = mixed_batch(logits)
    out = decode(model, tokens, NaiveTopK(k))
    expected = [math.ceil(m / k) for m in masks_per_row(tokens).tolist()]
    assert out.passes.tolist() == expected
    assert model.calls == [sum(e > j for e in expected) for j in range(max(expected))]


def test_eb_with_huge_budget_takes_one_pass_per_incomplete_sequence():
    logits = seeded_logits(N, V)
    tokens = mixed_batch(logits)
    out = decode(MockBackbone(logits, MASK, OFFSET), tokens, EntropyBounded(1e9))
    assert out.passes.tolist() == [int(m > 0) for m in MASK_COUNTS]


def test_passes_equal_backbone_calls_each_sequence_took_part_in():
    """Every sampler is charged through the same loop: Σ passes = Σ batch sizes of the calls."""
    logits = seeded_logits(N, V, seed=6)
    tokens = mixed_batch(logits, seed=6)
    for name, params in SPECS:
        model = MockBackbone(logits, MASK, OFFSET)
        out = decode(model, tokens, build_sampler(name, **params))
        assert int(out.passes.sum()) == sum(model.calls), name
        assert out.passes[0] == 0  # the row without a mask costs nothing


def test_complete_batch_makes_no_forward_pass():
    logits = seeded_logits(N, V)
    tokens = mixed_batch(logits)[:1]  # the row with no mask
    model = MockBackbone(logits, MASK, OFFSET)
    out = decode(model, tokens, Sequential())
    assert model.calls == [] and out.passes.tolist() == [0] and torch.equal(out.tokens, tokens)


def test_max_passes_caps_the_loop():
    logits = seeded_logits(N, V)
    tokens = mixed_batch(logits)
    out = decode(MockBackbone(logits, MASK, OFFSET), tokens, Sequential(), max_passes=2)
    assert out.passes.max() == 2
    assert masks_per_row(out.tokens).tolist() == [max(0, m - 2) for m in MASK_COUNTS]


# --- the policies on hand-made views ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("entropy", "gamma", "expected"),
    [
        # Σ_U H − max_U H over the sorted prefixes: 0, 0.1, 0.3, 0.6
        ([0.1, 0.2, 0.3, 5.0], 0.35, [0, 1, 2]),
        ([0.1, 0.2, 0.3, 5.0], 0.0, [0]),
        ([0.1, 0.2, 0.3, 5.0], 0.15, [0, 1]),
        ([0.1, 0.2, 0.3, 5.0], 0.65, [0, 1, 2, 3]),
        # order and unmasked (+inf) positions do not matter
        ([INF, 5.0, 0.3, 0.1, INF, 0.2], 0.35, [2, 3, 5]),
        # always at least one, however large the entropies
        ([7.0, 8.0, 9.0], 0.0, [0]),
        # ties: prefixes 0, 0.2, 0.4 + 0.2 ...
        ([0.2, 0.2, 0.9], 0.1, [0]),
        # the max is free: two certain tokens and one uncertain one cost 0
        ([0.0, 0.0, 0.7, 0.8], 0.0, [0, 1, 2]),
    ],
)
def test_eb_selects_largest_prefix_within_budget(entropy, gamma, expected):
    chosen = EntropyBounded(gamma).select(view_from_entropy(entropy))
    assert chosen[0].nonzero().squeeze(1).tolist() == expected


def _eb_reference(h: np.ndarray, masked: np.ndarray, gamma: float) -> set[int]:
    """Brute force: the lowest-entropy prefix U of largest size with Σ_U H − max_U H ≤ γ."""
    idx = np.flatnonzero(masked)
    if len(idx) == 0:
        return set()
    order = idx[np.argsort(h[idx], kind="stable")]
    best = 1
    for k in range(1, len(order) + 1):
        u = h[order[:k]].astype(np.float64)
        if u.sum() - u.max() <= gamma:
            best = k
    return set(order[:best].tolist())


@pytest.mark.parametrize("gamma", [0.0, 0.05, 0.3, 1.0, 3.0])
def test_eb_matches_brute_force_on_random_entropies(gamma):
    rng = np.random.default_rng(0)
    h = rng.exponential(0.4, size=(64, 20)).astype(np.float32)
    masked = rng.random((64, 20)) < 0.6
    masked[0] = False  # a complete row selects nothing
    chosen = EntropyBounded(gamma).select(view_from_entropy(torch.as_tensor(h), torch.as_tensor(masked)))
    for row in range(64):
        assert set(chosen[row].nonzero().squeeze(1).tolist()) == _eb_reference(h[row], masked[row], gamma)
        if masked[row].any():
            assert chosen[row].any()


def test_eb_never_selects_unmasked_positions():
    h = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    masked = torch.tensor([[False, True, False, True]])
    chosen = EntropyBounded(10.0).select(view_from_entropy(h, masked))
    assert chosen.tolist() == masked.tolist()


def test_topk_selects_k_lowest_entropy_masked():
    view = view_from_entropy([[0.5, INF, 0.1, 0.9, 0.3, INF]])
    assert NaiveTopK(2).select(view)[0].nonzero().squeeze(1).tolist() == [2, 4]
    assert NaiveTopK(10).select(view)[0].nonzero().squeeze(1).tolist() == [0, 2, 3, 4]


def test_sequential_entropy_picks_lowest_entropy():
    view = view_from_entropy([[0.5, INF, 0.4, 0.9]])
    assert Sequential("entropy").select(view)[0].nonzero().squeeze(1).tolist() == [2]


def test_sequential_margin_picks_largest_top1_minus_top2():
    masked = torch.tensor([[False, True, True, True]])
    view = StepView(
        masked=masked,
        entropy=torch.tensor([[INF, 0.1, 0.5, 0.3]]),
        margin=torch.tensor([[-INF, 0.2, 0.7, 0.4]]),
    )
    assert Sequential("margin").select(view)[0].nonzero().squeeze(1).tolist() == [2]


def test_margin_and_entropy_orders_differ_on_crafted_logits():
    """Position 0: p = (.5, .5, 0) → H ≈ 0.69, margin 0; position 1: p = (.7, .15, .15) → H ≈ 0.82,
    margin 0.55; position 2 is a clue. Entropy picks 0, margin picks 1."""
    probs = torch.tensor([[0.5, 0.5, 1e-9], [0.7, 0.15, 0.15], [0.9, 0.05, 0.05]])
    logits = probs.log()
    masked = torch.tensor([[True, True, False]])
    view = StepView.from_logits(logits.unsqueeze(0), masked)
    assert view.entropy[0, 0] < view.entropy[0, 1]
    assert torch.allclose(view.margin[0, :2], torch.tensor([0.0, 0.55]), atol=1e-5)
    assert view.entropy[0, 2] == INF and view.margin[0, 2] == -INF
    assert Sequential("entropy").select(view)[0].tolist() == [True, False, False]
    assert Sequential("margin").select(view)[0].tolist() == [False, True, False]
    # and through decode: one pass fills exactly the largest-margin cell
    model = MockBackbone(logits, mask_id=3)
    out = decode(model, torch.tensor([[3, 3, 0]]), Sequential("margin"), max_passes=1)
    assert out.tokens.tolist() == [[3, 0, 0]]


def test_view_entropy_is_the_shannon_entropy_of_the_logits():
    logits = seeded_logits(N, V, seed=9).unsqueeze(0)
    masked = torch.ones(1, N, dtype=torch.bool)
    p = torch.softmax(logits.double(), dim=-1)
    want = -(p * p.log()).sum(-1)
    assert torch.allclose(StepView.from_logits(logits, masked).entropy.double(), want, atol=1e-6)
    uniform = StepView.from_logits(torch.zeros(1, 3, V), torch.ones(1, 3, dtype=torch.bool))
    assert torch.allclose(uniform.entropy, torch.full((1, 3), math.log(V)))


# --- contract violations and the registry ----------------------------------------------------------


class _Nothing(Sampler):
    name = "nothing"

    def select(self, view):
        return torch.zeros_like(view.masked)


class _OnlyClues(Sampler):
    name = "only-clues"

    def select(self, view):
        return ~view.masked


@pytest.mark.parametrize("sampler", [_Nothing(), _OnlyClues()], ids=["empty", "clues-only"])
def test_sampler_choosing_no_masked_position_makes_decode_raise(sampler):
    logits = seeded_logits(N, V)
    with pytest.raises(RuntimeError, match="chose no position"):
        decode(MockBackbone(logits, MASK, OFFSET), mixed_batch(logits), sampler)


class _PairwiseTopOne(Sampler):
    name = "pairwise-top1"
    uses_pairwise = True

    def select(self, view):
        assert view.pairwise is not None and view.pairwise.shape[1:] == (N, N)
        return NaiveTopK(1).select(view)


def test_pairwise_sampler_needs_a_pairwise_fn_and_adds_no_pass():
    logits = seeded_logits(N, V)
    tokens = mixed_batch(logits)
    with pytest.raises(ValueError, match="pairwise"):
        decode(MockBackbone(logits, MASK, OFFSET), tokens, _PairwiseTopOne())
    seen = []

    def pairwise_fn(output, masked, *rest):  # rest: the tokens the pass saw, in newer versions
        assert output.logits.shape[:2] == masked.shape
        seen.append(masked.shape[0])
        return torch.zeros(masked.shape[0], N, N)

    model = MockBackbone(logits, MASK, OFFSET)
    out = decode(model, tokens, _PairwiseTopOne(), pairwise_fn=pairwise_fn)
    assert seen == model.calls  # one pairwise matrix per forward pass, on the same sub-batch
    assert out.passes.tolist() == masks_per_row(tokens).tolist()


def test_registry_holds_the_baselines():
    assert {"sequential", "naive", "eb"} <= set(SAMPLERS)
    for name, params in SPECS:
        sampler = build_sampler(name, **params)
        assert sampler.name == name
        assert build_sampler(name, **sampler.params()).params() == sampler.params()


def test_build_sampler_rejects_unknown_name():
    with pytest.raises(ValueError, match=r"unknown sampler 'beam'.*eb.*naive.*sequential"):
        build_sampler("beam")


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("naive", {"k": 0}, "k must be >= 1"),
        ("eb", {"gamma": -0.1}, "gamma must be >= 0"),
        ("sequential", {"order": "random"}, "order must be"),
    ],
)
def test_build_sampler_rejects_bad_values(name, params, match):
    with pytest.raises(ValueError, match=match):
        build_sampler(name, **params)


@pytest.mark.parametrize(("name", "params"), [("naive", {}), ("eb", {"k": 2}), ("sequential", {"gamma": 1})])
def test_build_sampler_rejects_missing_or_foreign_params(name, params):
    with pytest.raises(TypeError):
        build_sampler(name, **params)


# --- a tiny real model -----------------------------------------------------------------------------


REAL_SPECS = [SPECS[0], SPECS[1], SPECS[3], SPECS[5]]  # sequential ×2, naive k=3, eb γ=0.5


@pytest.mark.parametrize(("name", "params"), REAL_SPECS, ids=[f"{n}-{next(iter(p.values()))}" for n, p in REAL_SPECS])
def test_real_model_decode_keeps_clues_and_completes(tiny_model, easy_puzzles, name, params):
    puzzles = torch.as_tensor(easy_puzzles[0][:8])
    out = decode(tiny_model, puzzles, build_sampler(name, **params), torch.Generator().manual_seed(0),
                 decoding=Decoding(temperature=1.0))
    assert not (out.tokens == MASK_ID).any()
    assert consistent_with_clues(out.tokens, puzzles).all()
    blanks = (puzzles == MASK_ID).sum(1)
    if name == "sequential":
        assert torch.equal(out.passes, blanks)
    elif name == "naive":
        assert torch.equal(out.passes, (blanks + params["k"] - 1) // params["k"])
    else:
        assert ((out.passes >= 1) & (out.passes <= blanks)).all()


def test_bf16_backbone_keeps_the_protocol_and_returns_fp32(tiny_model):
    from mdm_mi.core.backbone import Bf16Backbone

    wrapped = Bf16Backbone(tiny_model)
    assert (wrapped.mask_id, wrapped.vocab_size, wrapped.hidden_dim) == (tiny_model.mask_id, tiny_model.vocab_size,
                                                                         tiny_model.hidden_dim)
    tokens = torch.full((2, 81), tiny_model.mask_id)
    tokens[:, :10] = torch.arange(10) % 9
    with torch.inference_mode():
        a, b = tiny_model(tokens), wrapped(tokens)
    assert b.logits.dtype == b.hidden.dtype == torch.float32 and b.logits.shape == a.logits.shape
    assert torch.allclose(a.logits, b.logits, atol=0.1)  # bf16 keeps ~3 significant digits


def test_full_precision_switches_bf16_off_for_labelling(tiny_model):
    from types import SimpleNamespace

    from mdm_mi.core.backbone import Bf16Backbone, full_precision

    assert full_precision(Bf16Backbone(tiny_model)) is tiny_model  # the wrapper is dropped
    esmc_like = SimpleNamespace(bf16=True)
    assert full_precision(esmc_like).bf16 is False


def test_for_decoding_wraps_only_when_asked_and_probe_backbone_unwraps(tiny_model):
    from mdm_mi.core.backbone import Bf16Backbone, for_decoding, probe_backbone

    assert for_decoding(tiny_model, False) is tiny_model
    wrapped = for_decoding(tiny_model, True)
    assert isinstance(wrapped, Bf16Backbone) and wrapped.inner is tiny_model
    assert probe_backbone(wrapped) is tiny_model and probe_backbone(tiny_model) is tiny_model


def test_bf16_decoding_fills_every_mask_keeps_clues_and_repeats_with_the_seed(tiny_model):
    from mdm_mi.core.backbone import for_decoding
    from mdm_mi.core.samplers import EntropyBounded

    puzzles = torch.full((4, 81), tiny_model.mask_id)
    puzzles[:, :9] = torch.arange(9)
    runs = [decode(for_decoding(tiny_model, True), puzzles, EntropyBounded(0.5), torch.Generator().manual_seed(1),
                   decoding=Decoding(temperature=1.0)) for _ in range(2)]
    assert torch.equal(runs[0].tokens, runs[1].tokens) and torch.equal(runs[0].passes, runs[1].passes)
    assert not (runs[0].tokens == tiny_model.mask_id).any() and torch.equal(runs[0].tokens[:, :9], puzzles[:, :9])


def test_forward_chunked_equals_one_call_and_bounds_each_call(tiny_model):
    from mdm_mi.core.backbone import forward_chunked

    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, tiny_model.mask_id + 1, (23, 81), generator=gen)
    sizes = []

    def counting(chunk):
        sizes.append(len(chunk))
        return tiny_model(chunk)

    with torch.inference_mode():
        whole, chunked = tiny_model(tokens), forward_chunked(counting, tokens, max_tokens=5 * 81)
    assert sizes == [5, 5, 5, 5, 3]  # ≤ max_tokens tokens per call, every row once, in order
    assert torch.allclose(whole.logits, chunked.logits, atol=1e-6) and torch.allclose(whole.hidden, chunked.hidden, atol=1e-6)
    sizes.clear()
    with torch.inference_mode():
        forward_chunked(counting, tokens, max_tokens=10)  # fewer tokens than one row: one row per call
    assert sizes == [1] * 23


def test_decode_is_unchanged_by_the_chunk_size(tiny_model, monkeypatch):
    import functools

    import mdm_mi.core.remask as remask
    import mdm_mi.core.samplers as samplers
    from mdm_mi.core.backbone import forward_chunked

    tokens = torch.full((9, 81), tiny_model.mask_id)
    tokens[:, :20] = (torch.arange(20) + torch.arange(9)[:, None]) % 9
    results = []
    for max_tokens in (81, 4 * 81, 10**9):
        monkeypatch.setattr(remask, "forward_chunked", functools.partial(forward_chunked, max_tokens=max_tokens))
        results.append(samplers.decode(tiny_model, tokens, samplers.EntropyBounded(0.5)))
    for r in results[1:]:
        assert torch.equal(r.tokens, results[0].tokens) and torch.equal(r.passes, results[0].passes)


def test_cpu_chunk_size_follows_the_thread_count():
    from mdm_mi.core.backbone import CPU_CHUNK_TOKENS, CPU_CHUNK_TOKENS_ONE_THREAD, cpu_chunk_tokens

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert cpu_chunk_tokens() == CPU_CHUNK_TOKENS_ONE_THREAD
        torch.set_num_threads(2)
        assert cpu_chunk_tokens() == CPU_CHUNK_TOKENS
    finally:
        torch.set_num_threads(before)
    assert CPU_CHUNK_TOKENS_ONE_THREAD < CPU_CHUNK_TOKENS


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.5, 50.0])
def test_eb_sampler_matches_the_plain_rule(gamma):
    g = torch.Generator().manual_seed(7)
    h = torch.rand(50, 12, generator=g) * 2
    masked = torch.rand(50, 12, generator=g) < 0.6
    masked[0] = False
    view = StepView(masked=masked, entropy=h.masked_fill(~masked, float("inf")), margin=torch.zeros_like(h))
    got = EntropyBounded(gamma).select(view)
    for r in range(len(h)):
        assert got[r].nonzero().flatten().tolist() == eb_prefix(h[r].tolist(), masked[r].tolist(), gamma), r

