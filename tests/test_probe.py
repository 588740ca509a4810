"""Properties of ground-truth MI by probing (:mod:`mdm_mi.mi.probe`) on tiny hand-built backbones."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from safetensors.torch import load, save

from mdm_mi.core.backbone import Backbone, BackboneOutput
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.labeller import label_contexts
from mdm_mi.mi.probe import (
    certified_mi,
    content_width,
    exact_mi,
    mask_contexts,
    probing_equation,
)

EXACT_ATOL = 1e-9
TOKEN_OFFSET = 1  # value v is token id v + 1 and the mask is id 0: exercises vocab_token_ids
MASK = 0


class JointBackbone:
    """Backbone whose conditionals come by Bayes from an explicit joint table ``(V,) * N``.

    When ``marginal_table`` is given it answers the all-masked query instead of ``table``: the
    marginals then disagree with the mixture of the conditionals (an inconsistent model).
    """

    mask_id = MASK
    hidden_dim = 1

    def __init__(self, table: torch.Tensor, marginal_table: torch.Tensor | None = None):
        self.table, self.marginal_table = table.double(), marginal_table
        self.n, self.vocab_size = table.dim(), table.shape[0]
        self.vocab_token_ids = torch.arange(self.vocab_size) + TOKEN_OFFSET

    def _log_conditionals(self, row: torch.Tensor) -> torch.Tensor:
        """``(N,)`` tokens → ``(N, V)`` log p(X_j | observed positions)."""
        observed = row != MASK
        w = self.table if observed.any() or self.marginal_table is None else self.marginal_table.double()
        for k in observed.nonzero().flatten().tolist():
            shape = [1] * self.n
            shape[k] = self.vocab_size
            w = w * torch.nn.functional.one_hot(row[k] - TOKEN_OFFSET, self.vocab_size).view(shape)
        if w.sum() == 0:
            return torch.zeros(self.n, self.vocab_size, dtype=torch.float64)
        margs = [w.sum(dim=[a for a in range(self.n) if a != j]) for j in range(self.n)]
        return (torch.stack(margs) / w.sum()).log()

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        logits = torch.stack([self._log_conditionals(row) for row in tokens])
        return BackboneOutput(logits, torch.zeros(*tokens.shape, self.hidden_dim))


class MLPBackbone:
    """A random float64 MLP over the whole sequence; ``scale`` sharpens its distributions."""

    hidden_dim = 8

    def __init__(self, n: int, vocab: int, seed: int, scale: float = 1.0, width: int = 32):
        g = torch.Generator().manual_seed(seed)
        self.n, self.vocab_size, self.mask_id = n, vocab, vocab
        self.vocab_token_ids = torch.arange(vocab)
        self.embed = torch.randn(vocab + 1, self.hidden_dim, generator=g, dtype=torch.float64)
        self.pos = torch.randn(n, self.hidden_dim, generator=g, dtype=torch.float64)
        fan_in = n * self.hidden_dim
        self.w1 = torch.randn(fan_in, width, generator=g, dtype=torch.float64) * 2 / math.sqrt(fan_in)
        self.w2 = torch.randn(width, n * vocab, generator=g, dtype=torch.float64) * scale / math.sqrt(width)

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        hidden = self.embed[tokens] + self.pos
        logits = torch.tanh(hidden.flatten(1) @ self.w1) @ self.w2
        return BackboneOutput(logits.view(len(tokens), self.n, self.vocab_size), hidden)


def closed_form_mi(table: torch.Tensor, i: int, j: int, fixed: dict[int, int] | None = None) -> float:
    """I(X_i; X_j | fixed) in nats, straight from the joint table."""
    t = table.double()
    for k, v in (fixed or {}).items():
        shape = [-1 if a == k else 1 for a in range(t.dim())]
        t = t * torch.nn.functional.one_hot(torch.tensor(v), t.shape[k]).view(shape)
    pair = t.sum(dim=[a for a in range(t.dim()) if a not in (i, j)])
    pair = pair / pair.sum() if i < j else (pair / pair.sum()).T
    outer = pair.sum(1, keepdim=True) * pair.sum(0, keepdim=True)
    return float(torch.special.xlogy(pair, pair / outer.clamp_min(1e-300)).sum())


def f64(data) -> torch.Tensor:
    return torch.tensor(data, dtype=torch.float64)


def all_masked(n: int) -> torch.Tensor:
    return torch.full((n,), MASK, dtype=torch.long)


def binary_entropy(x: float) -> float:
    return -x * math.log(x) - (1 - x) * math.log(1 - x)


def test_hand_built_backbones_follow_the_protocol():
    assert isinstance(JointBackbone(f64([[0.5, 0.5], [0.0, 0.0]])), Backbone)
    assert isinstance(MLPBackbone(n=3, vocab=2, seed=0), Backbone)


def test_perfectly_correlated_bits_give_log2():
    res = exact_mi(JointBackbone(f64([[0.5, 0.0], [0.0, 0.5]])), all_masked(2))
    assert res.label[0, 1] == pytest.approx(math.log(2), abs=EXACT_ATOL)
    assert res.label[1, 0] == pytest.approx(math.log(2), abs=EXACT_ATOL)
    assert res.label.diagonal().abs().max() == 0


def test_independent_bits_give_zero():
    table = torch.outer(f64([0.3, 0.7]), f64([0.6, 0.4]))
    res = exact_mi(JointBackbone(table), all_masked(2))
    assert res.label.abs().max() < EXACT_ATOL and res.entropy_form.abs().max() < EXACT_ATOL


def test_binary_symmetric_channel_matches_formula():
    a, e = 0.3, 0.1
    table = f64([[(1 - a) * (1 - e), (1 - a) * e], [a * e, a * (1 - e)]])
    res = exact_mi(JointBackbone(table), all_masked(2))
    expected = binary_entropy(a * (1 - e) + (1 - a) * e) - binary_entropy(e)
    assert res.label[0, 1] == pytest.approx(expected, abs=EXACT_ATOL)
    assert res.joint[1, 0] == pytest.approx(expected, abs=EXACT_ATOL)


def test_xor_is_pairwise_independent_until_a_clue_is_fixed():
    table = torch.zeros(2, 2, 2)
    for x1, x2 in itertools.product(range(2), repeat=2):
        table[x1, x2, x1 ^ x2] = 0.25
    backbone = JointBackbone(table)
    free = exact_mi(backbone, all_masked(3))
    assert free.label.abs().max() < EXACT_ATOL
    clued = exact_mi(backbone, torch.tensor([1 + TOKEN_OFFSET, MASK, MASK]))  # X1 = 1 is a clue
    assert clued.label[1, 2] == pytest.approx(math.log(2), abs=EXACT_ATOL)
    assert clued.label[0].abs().max() == 0 and clued.label[:, 0].abs().max() == 0


@pytest.mark.parametrize("seed", range(4))
def test_consistent_joint_matches_closed_form(seed):
    g = torch.Generator().manual_seed(seed)
    table = torch.distributions.Dirichlet(torch.full((27,), 0.5)).sample().view(3, 3, 3)
    backbone = JointBackbone(table)
    for fixed in ({}, {2: int(torch.randint(3, (1,), generator=g))}):
        tokens = all_masked(3)
        for k, v in fixed.items():
            tokens[k] = v + TOKEN_OFFSET
        res = exact_mi(backbone, tokens)
        free = [k for k in range(3) if k not in fixed]
        for i, j in itertools.permutations(free, 2):
            assert res.joint[i, j] == pytest.approx(closed_form_mi(table, i, j, fixed), abs=EXACT_ATOL)
        assert torch.allclose(res.entropy_form, res.joint, atol=EXACT_ATOL)  # self-consistent model
        assert res.gap_max < EXACT_ATOL and res.asymmetry < EXACT_ATOL


def test_inconsistent_backbone_reports_gap():
    joint = f64([[0.45, 0.05], [0.05, 0.45]])
    skewed = f64([[0.9, 0.05], [0.04, 0.01]])  # marginals that the conditionals do not mix to
    res = exact_mi(JointBackbone(joint, marginal_table=skewed), all_masked(2))
    gap = (res.entropy_form - res.joint).abs()
    assert gap.max() > 0.1
    assert res.gap_max == pytest.approx(float(gap.max()), abs=EXACT_ATOL)
    assert res.gap_mean == pytest.approx(float(gap[0, 1] + gap[1, 0]) / 2, abs=EXACT_ATOL)
    assert (res.joint >= 0).all() and torch.equal(res.label, res.label.T)
    assert res.asymmetry == pytest.approx(float((res.joint - res.joint.T).abs().max()), abs=EXACT_ATOL)


def test_exact_pass_count_and_unmasked_rows_are_zero():
    backbone = MLPBackbone(n=6, vocab=3, seed=0)
    tokens = torch.tensor([backbone.mask_id, 1, backbone.mask_id, backbone.mask_id, 0, backbone.mask_id])
    res = exact_mi(backbone, tokens, batch_size=5)
    masked = tokens == backbone.mask_id
    assert res.passes == 1 + int(masked.sum()) * backbone.vocab_size
    assert torch.equal(res.masked, masked) and res.probed[masked].all() and not res.probed[~masked].any()
    assert res.label[~masked].abs().max() == 0 and res.label[:, ~masked].abs().max() == 0
    assert (res.joint >= 0).all() and torch.equal(res.label, res.label.T) and res.bound.abs().max() == 0
    assert res.asymmetry > 0  # a random MLP is not symmetric in its two directions


def certified_cases():
    """(backbone, tokens) pairs: random MLPs at several sharpnesses and peaked random joints."""
    for seed, scale in itertools.product(range(3), (1.0, 4.0, 12.0)):
        backbone = MLPBackbone(n=6, vocab=4, seed=seed, scale=scale)
        g = torch.Generator().manual_seed(seed)
        tokens = torch.randint(backbone.vocab_size, (6,), generator=g)
        tokens[torch.rand(6, generator=g) < 0.7] = backbone.mask_id
        yield backbone, tokens
    for seed in range(3):
        torch.manual_seed(seed)
        table = torch.distributions.Dirichlet(torch.full((27,), 0.1)).sample().view(3, 3, 3)
        yield JointBackbone(table), all_masked(3)


@pytest.mark.parametrize("tol", [1e-3, 1e-2, 0.05])
def test_certified_error_within_bound_within_tol(tol):
    skipped = 0
    for backbone, tokens in certified_cases():
        exact, cert = exact_mi(backbone, tokens), certified_mi(backbone, tokens, tol=tol, batch_size=7)
        assert ((cert.label - exact.label).abs() <= cert.bound).all()
        assert (cert.bound >= 0).all() and cert.bound.max() <= tol
        assert torch.equal(cert.label, cert.label.T) and cert.passes <= exact.passes
        skipped += exact.passes - cert.passes
    assert skipped > 0


def test_certified_bound_holds_when_a_rare_value_carries_the_information():
    # X1 = 2 has probability 2e-4 yet makes X2 = 2, a value it never takes otherwise.
    rare = 2e-4
    table = torch.zeros(3, 3)
    table[0, :2] = table[1, :2] = (1 - rare) / 4
    table[2, 2] = rare
    backbone = JointBackbone(table)
    exact = exact_mi(backbone, all_masked(2))
    cert = certified_mi(backbone, all_masked(2), tol=0.01)
    assert not cert.probed[0, 2]  # the rare value was skipped ...
    assert (cert.label - exact.label).abs().max() <= cert.bound.max() <= 0.01  # ... and still covered


def test_certified_uses_fewer_passes_on_peaked_model():
    backbone = MLPBackbone(n=8, vocab=5, seed=3, scale=25.0)
    tokens = torch.full((8,), backbone.mask_id)
    exact, cert = exact_mi(backbone, tokens), certified_mi(backbone, tokens)
    assert cert.passes < exact.passes / 2
    assert (cert.label - exact.label).abs().max() <= cert.bound.max() <= 1e-3


def test_certified_needs_no_pass_without_a_pair():
    backbone = MLPBackbone(n=4, vocab=3, seed=0)
    for tokens in (torch.tensor([0, 1, 2, 0]), torch.tensor([0, backbone.mask_id, 2, 0])):
        res = certified_mi(backbone, tokens)
        assert res.passes == 0 and res.label.abs().max() == 0 and res.bound.abs().max() == 0


def test_label_contexts_stacks_and_saves():
    backbone = MLPBackbone(n=5, vocab=3, seed=1, scale=6.0)
    solutions = torch.randint(3, (4, 5), generator=torch.Generator().manual_seed(0))
    contexts, _ = mask_contexts(solutions, backbone.mask_id, torch.Generator().manual_seed(1))
    calls = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))

    shard = label_contexts(backbone, contexts, method="certified", tol=1e-2, progress=progress)
    assert calls[-1] == (4, 4)
    assert shard["label"].shape == shard["bound"].shape == (4, 5, 5) and shard["label"].dtype == torch.float32
    assert shard["masked"].dtype == torch.bool and shard["passes"].dtype == torch.long
    exact = label_contexts(backbone, contexts, method="exact")
    assert ((shard["label"] - exact["label"]).abs() <= shard["bound"] + 1e-6).all()
    assert torch.equal(exact["passes"], 1 + exact["masked"].sum(1) * 3)
    assert exact["label"][~exact["masked"]].abs().max() == 0 if (~exact["masked"]).any() else True
    loaded = load(save(shard))
    assert all(torch.equal(loaded[k], v) for k, v in shard.items())
    with pytest.raises(InputError, match="method must be one of"):
        label_contexts(backbone, contexts, method="approximate")


class PaddedBackbone:
    """Any width; pads (``pad_id``) are ignored as ESM-C ignores them: each position's logits depend on
    its own token, its position and the sum of the non-pad tokens' embeddings. Records call widths."""

    hidden_dim = 4

    def __init__(self, vocab: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.vocab_size, self.mask_id, self.pad_id = vocab, vocab, vocab + 1
        self.vocab_token_ids = torch.arange(vocab)
        self.embed = torch.randn(vocab + 2, self.hidden_dim, generator=g, dtype=torch.float64)
        self.embed[self.pad_id] = 0
        self.pos = torch.randn(64, self.hidden_dim, generator=g, dtype=torch.float64)
        self.out = 3 * torch.randn(self.hidden_dim, vocab, generator=g, dtype=torch.float64)
        self.widths: list[int] = []

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        self.widths.append(tokens.shape[1])
        e = self.embed[tokens]
        hidden = torch.tanh(e + self.pos[: tokens.shape[1]] + e.sum(1, keepdim=True))
        return BackboneOutput(hidden @ self.out, hidden)


def test_padded_contexts_are_probed_without_their_pads_and_labelled_the_same():
    backbone = PaddedBackbone(vocab=3, seed=2)
    seqs = torch.randint(3, (3, 5), generator=torch.Generator().manual_seed(4))
    contexts, _ = mask_contexts(seqs, backbone.mask_id, torch.Generator().manual_seed(5))
    contexts[:, 1] = backbone.mask_id  # at least one pair masked in each
    contexts[:, 3] = backbone.mask_id
    padded = torch.cat([contexts, torch.full((3, 4), backbone.pad_id)], 1)  # (3, 9): 4 trailing pads
    assert content_width(backbone, padded[0]) == 5 and content_width(MLPBackbone(5, 3, 0), contexts[0]) == 5
    for method in ("exact", "certified"):
        short = label_contexts(backbone, contexts, method=method, tol=1e-3)
        backbone.widths.clear()
        long = label_contexts(backbone, padded, method=method, tol=1e-3)
        assert set(backbone.widths) == {5}  # the pads never reach the backbone
        assert long["label"].shape == (3, 9, 9) and torch.equal(long["label"][:, :5, :5], short["label"])
        assert long["label"][:, 5:].abs().max() == 0 and long["bound"][:, :, 5:].abs().max() == 0
        assert torch.equal(long["passes"], short["passes"]) and short["label"].abs().max() > 0


def test_mask_contexts_keeps_fixed_cells_and_is_reproducible():
    solutions = torch.randint(9, (200, 81), generator=torch.Generator().manual_seed(0))
    fixed = torch.rand(200, 81, generator=torch.Generator().manual_seed(1)) < 0.3
    contexts, t = mask_contexts(solutions, 9, torch.Generator().manual_seed(2), fixed=fixed)
    again, t2 = mask_contexts(solutions, 9, torch.Generator().manual_seed(2), fixed=fixed)
    masked = contexts == 9
    assert torch.equal(contexts, again) and torch.equal(t, t2)
    assert not masked[fixed].any() and torch.equal(contexts[~masked], solutions[~masked])
    assert ((t >= 0) & (t <= 1)).all()
    free_rate = masked.sum(1) / (~fixed).sum(1)
    assert (free_rate - t).abs().mean() < 0.1  # each free cell is masked with probability t


@pytest.mark.parametrize("case", ["mlp", "inconsistent"])
def test_production_probe_matches_the_plain_equation(case):
    """exact_mi (batched, log-space, grouped rows) gives the label, entropy form and pass count of the
    equation written one pass at a time, on a random MLP and on a self-inconsistent model."""
    if case == "mlp":
        backbone = MLPBackbone(n=5, vocab=3, seed=2)
        tokens = torch.tensor([backbone.mask_id, 1, backbone.mask_id, backbone.mask_id, backbone.mask_id])
    else:
        backbone = JointBackbone(f64([[0.45, 0.05], [0.05, 0.45]]), marginal_table=f64([[0.9, 0.05], [0.04, 0.01]]))
        tokens = all_masked(2)
    label, entropy_form, passes = probing_equation(backbone, tokens)
    res = exact_mi(backbone, tokens, batch_size=4)
    assert passes == res.passes == 1 + int((tokens == backbone.mask_id).sum()) * backbone.vocab_size
    torch.testing.assert_close(res.label, label, atol=EXACT_ATOL, rtol=0)
    torch.testing.assert_close(res.entropy_form, entropy_form, atol=EXACT_ATOL, rtol=0)



class _LargestOutput:
    """A dispatch mode that records the element count of the largest tensor any torch op returns."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        largest = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in out if isinstance(out, (tuple, list)) else (out,):
                    if isinstance(t, torch.Tensor):
                        largest.numel = max(largest.numel, t.numel())
                return out

        self.numel, self.mode = 0, Mode()


@pytest.mark.parametrize("method", ["exact", "certified"])
def test_probing_memory_is_batch_times_masked_times_vocabulary(method):
    """Issue 38: no tensor larger than one batch of logits, batch_size * N * V (the old code held a
    (V, |M|, V) block per row: here 1024 * 4 * 1024, 85x more)."""
    n, vocab, batch = 6, 1024, 8
    backbone = MLPBackbone(n=n, vocab=vocab, seed=0, scale=0.1)
    tokens = torch.tensor([vocab, 3, vocab, vocab, 5, vocab])  # 4 masked
    probe = exact_mi if method == "exact" else certified_mi
    largest = _LargestOutput()
    with largest.mode:
        result = probe(backbone, tokens, batch_size=batch)
    assert result.passes > vocab and largest.numel <= batch * n * vocab
