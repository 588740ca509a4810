"""MI-guided unmasking (:mod:`mdm_mi.mi.guided`, paper Algorithm 1) on hand-made and mock inputs."""

from __future__ import annotations

import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.core.sampler_table import SamplerFlags
from mdm_mi.core.samplers import StepView, decode
from mdm_mi.mi.guided import MIGuided, OracleMI, admit, algorithm1, head_pairwise_fn, oracle_pairwise_fn
from mdm_mi.mi.head import HeadConfig, MIHead
from mdm_mi.sampling.registry import SAMPLER_CLASSES, build_sampler

INF = float("inf")


def _select(h, pairwise, gamma, lam, on_reject="stop", charge_first=True, masked=None):
    """Run MIGuided on one hand-made row; returns ``[admitted positions]``."""
    h = torch.as_tensor(h, dtype=torch.float32)[None]
    masked = torch.ones_like(h, dtype=torch.bool) if masked is None else torch.as_tensor(masked)[None]
    pairwise = torch.as_tensor(pairwise, dtype=torch.float32)[None]
    entropy = h.masked_fill(~masked, INF)
    view = StepView(masked=masked, entropy=entropy, margin=torch.zeros_like(h), pairwise=pairwise)
    chosen = MIGuided(gamma, lam, on_reject, charge_first).select(view)
    assert not (chosen & ~masked).any()
    return [sorted(row.nonzero().flatten().tolist()) for row in chosen]


def test_lambda_zero_stop_is_the_budgeted_entropy_prefix():
    h = [0.375, 0.125, 0.5, 0.25]  # sorted order: 1, 3, 0, 2
    zero = torch.zeros(4, 4)
    # charged: 0.125 + 0.25 = 0.375 ≤ 0.625 < 0.75 → positions 1, 3
    assert _select(h, zero, gamma=0.625, lam=0.0, charge_first=True) == [[1, 3]]
    # first free: 0.25 + 0.375 = 0.625 ≤ 0.625 < 1.125 → positions 1, 3, 0
    assert _select(h, zero, gamma=0.625, lam=0.0, charge_first=False) == [[0, 1, 3]]
    assert _select(h, zero, gamma=10.0, lam=0.0) == [[0, 1, 2, 3]]


def test_first_position_always_admitted_even_over_budget():
    assert _select([3.0, 2.0, 5.0], torch.zeros(3, 3), gamma=0.5, lam=0.0) == [[1]]
    assert _select([3.0, 2.0, 5.0], torch.zeros(3, 3), gamma=0.0, lam=1.0, on_reject="skip") == [[1]]
    # charged first token overdraws the budget: nothing else fits, even at zero entropy
    assert _select([1.0, 0.0, 0.0], torch.zeros(3, 3), gamma=0.5, lam=0.0, charge_first=True,
                   masked=[True, True, False]) == [[1]]


def _dependent_pair():
    """Positions 0 and 1 strongly dependent; 2 independent of both; 3 non-masked."""
    mi = torch.zeros(4, 4)
    mi[0, 1] = mi[1, 0] = 5.0
    return [0.1, 0.2, 0.3, 0.0], mi, [True, True, True, False]


def test_dependent_pair_never_together_independent_one_admitted():
    h, mi, masked = _dependent_pair()
    assert _select(h, mi, gamma=1.0, lam=1.0, on_reject="skip", masked=masked) == [[0, 2]]
    assert _select(h, torch.zeros(4, 4), gamma=1.0, lam=1.0, on_reject="skip", masked=masked) == [[0, 1, 2]]


def test_skip_and_stop_differ_after_a_rejection():
    h, mi, masked = _dependent_pair()
    assert _select(h, mi, gamma=1.0, lam=1.0, on_reject="stop", masked=masked) == [[0]]
    assert _select(h, mi, gamma=1.0, lam=1.0, on_reject="skip", masked=masked) == [[0, 2]]


def _random_steps(seed: int, b: int = 40, n: int = 9):
    """Random entropies ``(B, N)``, masks (row 0 without any) and symmetric Î ``(B, N, N)``."""
    g = torch.Generator().manual_seed(seed)
    h = torch.rand(b, n, generator=g)
    masked = torch.rand(b, n, generator=g) < 0.7
    masked[0] = False  # a row without masks admits nothing
    mi = torch.rand(b, n, n, generator=g) * 0.3
    return h, masked, (mi + mi.transpose(1, 2)) / 2


@pytest.mark.parametrize("gamma", [1.0, 0.3])  # 0.3: the walk ends early, past the last h_i ≤ γ
@pytest.mark.parametrize("stop", [True, False])
@pytest.mark.parametrize("charge_first", [True, False])
def test_vectorised_walk_matches_the_papers_algorithm_1(stop, charge_first, gamma):
    h, masked, mi = _random_steps(0)
    got = admit(h, masked, mi, gamma, 0.7, stop_on_reject=stop, charge_first=charge_first)
    for r in range(len(h)):
        want = algorithm1(h[r].double().tolist(), masked[r].tolist(), mi[r].double().tolist(), gamma, 0.7,
                          "stop" if stop else "skip", charge_first)
        assert got[r].nonzero().flatten().tolist() == want, r


DYADIC = 8  # entropies k/8 and Î k/32: every sum is exact, so ties and cost == budget happen exactly


def _tied_steps(seed: int, b: int = 30, n: int = 12):
    """Entropies and Î on a coarse dyadic grid (ties in the walk order and in cost vs budget), random
    masks (row 0 none, row 1 all), an asymmetric Î (the candidate's row is the one charged)."""
    g = torch.Generator().manual_seed(seed)
    h = torch.randint(0, DYADIC + 1, (b, n), generator=g) / DYADIC
    masked = torch.rand(b, n, generator=g) < 0.6
    masked[0], masked[1] = False, True
    mi = torch.randint(0, 5, (b, n, n), generator=g) / (4 * DYADIC)
    return h, masked, mi


@pytest.mark.parametrize("seed", range(12))
def test_admit_is_algorithm_1_on_many_random_batches_with_ties(seed):
    """:func:`admit` (the incremental batched walk) admits exactly what :func:`algorithm1` admits,
    row by row, for every rule variant, budgets from 0 (only the first) to past every candidate, and
    λ = 0, 1 and 2.5; on exact ties (dyadic values) and on continuous random values."""
    tied = _tied_steps(seed)
    plain = _random_steps(100 + seed, b=25, n=15)
    for h, masked, mi in (tied, plain):
        for gamma in (0.0, 0.25, 0.5, 1.0, 3.0):
            for lam in (0.0, 1.0, 2.5):
                for stop in (False, True):
                    for charge_first in (False, True):
                        got = admit(h, masked, mi, gamma, lam, stop_on_reject=stop, charge_first=charge_first)
                        for r in range(len(h)):
                            want = algorithm1(h[r].double().tolist(), masked[r].tolist(), mi[r].double().tolist(),
                                              gamma, lam, "stop" if stop else "skip", charge_first)
                            assert got[r].nonzero().flatten().tolist() == want, (gamma, lam, stop, charge_first, r)


def test_admit_edge_batches():
    """An empty batch, a batch without a mask, one masked position per row, and a float64 input."""
    none = torch.zeros(0, 5, dtype=torch.bool)
    assert admit(torch.zeros(0, 5), none, torch.zeros(0, 5, 5), 1.0, 1.0,
                 stop_on_reject=False, charge_first=False).shape == (0, 5)
    unmasked = torch.zeros(3, 5, dtype=torch.bool)
    assert not admit(torch.rand(3, 5), unmasked, torch.rand(3, 5, 5), 1.0, 1.0,
                     stop_on_reject=True, charge_first=True).any()
    one = torch.eye(4, dtype=torch.bool)
    assert torch.equal(admit(torch.rand(4, 4), one, torch.rand(4, 4, 4), 9.0, 1.0,
                             stop_on_reject=False, charge_first=True), one)
    h, masked, mi = _tied_steps(0)
    assert torch.equal(admit(h.double(), masked, mi.double(), 0.5, 1.0, stop_on_reject=False, charge_first=False),
                       admit(h, masked, mi, 0.5, 1.0, stop_on_reject=False, charge_first=False))


@pytest.mark.parametrize("seed", range(3))
def test_default_mi_sampler_is_the_papers_algorithm_1(seed):
    """The sampler a user and the workflow get by default (SamplerFlags' on_reject / charge_first,
    the schema's too) selects what :func:`algorithm1` with its defaults admits."""
    flags = SamplerFlags()
    h, masked, mi = _random_steps(seed)
    gamma, lam = 0.2 + seed * 0.4, 0.5 + seed
    sampler = build_sampler("mi", gamma=gamma, lam=lam, on_reject=flags.on_reject, charge_first=flags.charge_first)
    view = StepView(masked=masked, entropy=h.masked_fill(~masked, INF), margin=torch.zeros_like(h), pairwise=mi)
    got = sampler.select(view)
    for r in range(len(h)):
        want = algorithm1(h[r].double().tolist(), masked[r].tolist(), mi[r].double().tolist(), gamma, lam)
        assert got[r].nonzero().flatten().tolist() == want, r


def test_registry_params_and_validation():
    assert SAMPLER_CLASSES["mi"] is MIGuided and SAMPLER_CLASSES["mi-oracle"] is OracleMI
    s = build_sampler("mi-oracle", gamma=0.5, lam=2, on_reject="skip", charge_first=False)
    assert isinstance(s, OracleMI) and s.uses_pairwise
    assert s.params() == {"gamma": 0.5, "lam": 2.0, "on_reject": "skip", "charge_first": False}
    bads = ({"gamma": -1}, {"gamma": float("nan")}, {"lam": -0.1}, {"on_reject": "maybe"}, {"charge_first": "no"})
    for bad in bads:
        with pytest.raises(ValueError):
            MIGuided(**{"gamma": 1.0, "lam": 1.0, "on_reject": "stop", "charge_first": True, **bad})
    view = StepView.from_logits(torch.zeros(1, 3, 2), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError):
        s.select(view)


class MockBackbone:
    """Deterministic toy MDM: logits from a fixed random map of the one-hot tokens."""

    vocab_size, mask_id, hidden_dim = 3, 3, 5

    def __init__(self, n: int = 10):
        g = torch.Generator().manual_seed(42)
        self.n = n
        self.vocab_token_ids = torch.arange(3)
        self.w = torch.randn(n * 4, n * 3, generator=g) * 2
        self.emb = torch.randn(4, 5, generator=g)

    def __call__(self, tokens):
        onehot = torch.nn.functional.one_hot(tokens, 4).float().flatten(1)
        logits = (onehot @ self.w).view(len(tokens), self.n, 3)
        return BackboneOutput(logits, self.emb[tokens])


def _puzzles(b=6, n=10):
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 3, (b, n), generator=g)
    return tokens.masked_fill(torch.rand(b, n, generator=g) < 0.7, MockBackbone.mask_id)


def _constant_mi(output, masked, tokens=None):
    b, n = masked.shape
    return (1.0 - torch.eye(n)).expand(b, n, n) * (masked[:, :, None] & masked[:, None, :])


@pytest.mark.parametrize("on_reject", ["skip", "stop"])
def test_decode_fills_every_mask_keeps_clues_and_is_deterministic(on_reject):
    bb, puzzles = MockBackbone(), _puzzles()
    sampler = MIGuided(gamma=1.0, lam=0.5, on_reject=on_reject, charge_first=True)
    a = decode(bb, puzzles, sampler, pairwise_fn=_constant_mi)
    b = decode(bb, puzzles, sampler, pairwise_fn=_constant_mi)
    assert not (a.tokens == bb.mask_id).any()
    clues = puzzles != bb.mask_id
    assert torch.equal(a.tokens[clues], puzzles[clues])
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passes, b.passes)
    assert (a.passes <= (puzzles == bb.mask_id).sum(1)).all()


def test_decode_pass_counts_at_the_extremes():
    bb, puzzles = MockBackbone(), _puzzles()
    n_masks = (puzzles == bb.mask_id).sum(1)
    sequential = MIGuided(gamma=1.0, lam=100.0, on_reject="skip", charge_first=False)
    assert torch.equal(decode(bb, puzzles, sequential, pairwise_fn=_constant_mi).passes, n_masks)
    one_shot = MIGuided(gamma=1e9, lam=0.0, on_reject="stop", charge_first=True)
    assert (decode(bb, puzzles, one_shot, pairwise_fn=_constant_mi).passes == 1).all()


def test_head_pairwise_fn_gives_the_heads_rows_and_decodes():
    bb, puzzles = MockBackbone(), _puzzles()
    torch.manual_seed(0)
    head = MIHead(bb.hidden_dim, HeadConfig(hidden=8, heads=2, rank=2, unary=True)).eval()
    fn = head_pairwise_fn(head)
    out = bb(puzzles)
    masked = puzzles == bb.mask_id
    dense = head(out.hidden, masked)
    source = fn(out, masked, puzzles)  # entries of the head's matrix, formed on demand
    assert tuple(source.shape) == tuple(dense.shape)
    everything = torch.arange(puzzles.shape[1]).expand(puzzles.shape)
    torch.testing.assert_close(source.among(everything), dense, atol=1e-6, rtol=1e-5)
    result = decode(bb, puzzles, MIGuided(1.0, 1.0, "skip", True), pairwise_fn=fn)
    assert not (result.tokens == bb.mask_id).any()


def test_oracle_pairwise_fn_is_the_exact_probing_label():
    from mdm_mi.mi.probe import exact_mi

    bb = MockBackbone(n=6)
    tokens = _puzzles(b=2, n=6)
    masked = tokens == bb.mask_id
    fn = oracle_pairwise_fn(bb, method="exact")
    mi = fn(bb(tokens), masked, tokens)
    assert mi.shape == (2, 6, 6) and mi.dtype == torch.float32
    for r in range(2):
        assert torch.allclose(mi[r], exact_mi(bb, tokens[r]).label.float())
    cert = oracle_pairwise_fn(bb, method="certified", tol=1e-3)(bb(tokens), masked, tokens)
    assert (cert - mi).abs().max() <= 1e-3 + 1e-6
    with pytest.raises(ValueError):
        fn(bb(tokens), masked)  # no tokens
    with pytest.raises(ValueError):
        fn(bb(tokens), ~masked, tokens)


def test_oracle_probes_in_fp32_under_a_bf16_decoding_wrapper():
    """Decoding may run under bf16 (Bf16Backbone); the oracle's probes must not (mixed precision
    between the base and probe passes biases the KL labels): they go to the wrapped fp32 model."""
    from mdm_mi.core.backbone import Bf16Backbone
    from mdm_mi.mi.probe import exact_mi

    class Refuses(Bf16Backbone):
        def __call__(self, tokens):
            raise AssertionError("probed through the bf16 wrapper")

    bb, tokens = MockBackbone(n=6), _puzzles(b=2, n=6)
    masked = tokens == bb.mask_id
    mi = oracle_pairwise_fn(Refuses(bb), method="exact")(bb(tokens), masked, tokens)
    for r in range(2):
        assert torch.equal(mi[r], exact_mi(bb, tokens[r]).label.float())


def test_oracle_decodes_through_decode_with_the_pass_tokens():
    bb, puzzles = MockBackbone(n=6), _puzzles(b=3, n=6)
    sampler = OracleMI(gamma=0.5, lam=1.0, on_reject="skip", charge_first=True)
    result = decode(bb, puzzles, sampler, pairwise_fn=oracle_pairwise_fn(bb, method="exact"))
    assert not (result.tokens == bb.mask_id).any()
    clues = puzzles != bb.mask_id
    assert torch.equal(result.tokens[clues], puzzles[clues])
