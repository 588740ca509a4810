"""The MI head (:mod:`mdm_mi.mi.head`) and the fidelity statistics (:mod:`mdm_mi.mi.fidelity`)."""

from __future__ import annotations

import itertools
import pickle

import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.infra.checkpoint import CheckpointError, save_checkpoint
import mdm_mi.mi.head as head_module
from mdm_mi.mi.fidelity import auroc, average_ranks, fidelity, spearman
from mdm_mi.mi.head import (
    HeadConfig,
    HeadTrainConfig,
    MIHead,
    backbone_features,
    count_params,
    evaluate_mse,
    expected_params,
    masked_pair_mse,
    load_head,
    save_head,
    train_head,
)

SMALL = HeadConfig(hidden=16, heads=2, rank=4, unary=True)
SEPARATION = HeadConfig(hidden=16, heads=2, rank=4, unary=True, distance_buckets=5)
CHEAP_128 = HeadConfig(hidden=32, heads=4, rank=8, unary=True)  # recommended for D = 128
PAPER_256 = HeadConfig(hidden=256, heads=8, rank=16, unary=True)  # recommended for D = 256
N, D = 12, 8


def _random_inputs(b=5, n=N, d=D, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, n, d, generator=g) * 3, torch.rand(b, n, generator=g) < 0.6


@pytest.mark.parametrize("cfg", [SMALL, HeadConfig(hidden=8, heads=3, rank=2, unary=False), SEPARATION])
def test_output_symmetric_nonnegative_zero_diagonal_and_off_mask(cfg):
    torch.manual_seed(0)
    head = MIHead(D, cfg)
    h, masked = _random_inputs()
    out = head(h, masked)
    assert out.shape == (5, N, N) and out.dtype == torch.float32
    assert torch.equal(out, out.transpose(1, 2))  # exactly, not just approximately
    assert (out >= 0).all()
    assert (out.diagonal(dim1=1, dim2=2) == 0).all()
    both = masked[:, :, None] & masked[:, None, :]
    assert (out[~both] == 0).all()
    off = ~torch.eye(N, dtype=torch.bool)
    assert (out[both & off] > 0).all()  # softplus is strictly positive where not masked out


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.6, 0.9])
@pytest.mark.parametrize("fraction", [0.0, 1.0])  # never / always pack the masked positions
@pytest.mark.parametrize("cfg", [SMALL, SEPARATION])
def test_masked_paths_match_the_all_positions_path(rate, fraction, cfg, monkeypatch):
    monkeypatch.setattr(head_module, "COMPACT_FRACTION", fraction)
    torch.manual_seed(0)
    head = MIHead(D, cfg)
    if head.distance is not None:  # a table that differs per separation, so packing must keep positions
        head.distance.data = torch.arange(5.0) - 2
    h, _ = _random_inputs()
    masked = torch.rand(5, N, generator=torch.Generator().manual_seed(1)) < rate
    keep = masked[:, :, None] & masked[:, None, :]
    out = head(h, masked)
    assert torch.allclose(out, head(h) * keep, rtol=1e-5, atol=1e-7)
    assert torch.equal(out, out.transpose(1, 2)) and (out[~keep] == 0).all()
    assert torch.equal(head(h, torch.ones_like(masked)), head(h))


def test_without_mask_only_the_diagonal_is_zeroed():
    torch.manual_seed(0)
    out = MIHead(D, SMALL)(_random_inputs()[0])
    assert (out.diagonal(dim1=1, dim2=2) == 0).all()
    assert (out.sum(-1) > 0).all()


@pytest.mark.parametrize(
    "in_dim,cfg,expected",
    [
        (D, SMALL, None),
        (D, HeadConfig(8, 3, 2, False), None),
        (128, CHEAP_128, 5_222),
        (128, HeadConfig(hidden=64, heads=4, rank=8, unary=True), 10_406),
        (256, PAPER_256, 98_954),
        (D, SEPARATION, None),
    ],
)
def test_count_params_matches_closed_form(in_dim, cfg, expected):
    head = MIHead(in_dim, cfg)
    assert count_params(head) == expected_params(in_dim, cfg)
    if expected is not None:
        assert count_params(head) == expected


def _synthetic(c, seed):
    """Features = positional code + noise; target = block structure × per-cell gates (learnable)."""
    g = torch.Generator().manual_seed(seed)
    pos = torch.randn(N, D, generator=torch.Generator().manual_seed(123))
    feats = pos + 0.3 * torch.randn(c, N, D, generator=g)
    gate = torch.sigmoid(2 * feats[..., 0])
    block = torch.arange(N) // 4
    structure = (block[:, None] == block[None, :]).float()
    masked = torch.rand(c, N, generator=g) < 0.7
    label = structure * gate[:, :, None] * gate[:, None, :]
    keep = masked[:, :, None] & masked[:, None, :] & ~torch.eye(N, dtype=torch.bool)
    return feats, label * keep, masked


def test_training_lowers_validation_mse_and_is_seeded():
    feats, label, masked = _synthetic(256, seed=1)
    val = _synthetic(64, seed=2)
    base = HeadTrainConfig(steps=0, batch_size=32, lr=1e-2, weight_decay=0.0, seed=0)
    head0, hist0 = train_head(feats, label, masked, base, SMALL, log=lambda s: None)
    assert hist0 == []
    mse0 = evaluate_mse(head0, *val)
    cfg = HeadTrainConfig(steps=100, batch_size=32, lr=1e-2, weight_decay=0.0, seed=0)
    logs = []
    head, hist = train_head(feats, label, masked, cfg, SMALL, val=val, log=logs.append)
    assert len(logs) == len(hist) and hist[-1]["step"] == 100 and not head.training
    assert hist[-1]["val_mse"] < 0.3 * mse0, (mse0, hist[-1])
    again, _ = train_head(feats, label, masked, cfg, SMALL, log=lambda s: None)
    assert all(torch.equal(a, b) for a, b in zip(head.state_dict().values(), again.state_dict().values()))


class _HiddenBackbone:
    """Backbone stub: hidden = embedding of the tokens, logits unused."""

    vocab_size, mask_id, hidden_dim = 4, 4, D

    def __init__(self):
        self.vocab_token_ids = torch.arange(4)
        self.emb = torch.nn.Embedding(5, D)

    def __call__(self, tokens):
        return BackboneOutput(torch.zeros(*tokens.shape, 4), self.emb(tokens))


def test_backbone_features_are_the_hidden_states_and_trainable_from():
    bb = _HiddenBackbone()
    contexts = torch.randint(0, 5, (7, N), generator=torch.Generator().manual_seed(0))
    feats = backbone_features(bb, contexts, batch_size=3)
    assert feats.shape == (7, N, D) and feats.dtype == torch.float32
    assert torch.allclose(feats, bb(contexts).hidden.detach())
    masked = contexts == bb.mask_id
    label = torch.rand(7, N, N) * (masked[:, :, None] & masked[:, None, :])
    cfg = HeadTrainConfig(steps=2, batch_size=4, lr=1e-3, weight_decay=0.0, seed=0)
    train_head(feats, (label + label.transpose(1, 2)) / 2, masked, cfg, SMALL, log=lambda s: None)


def test_save_load_round_trip_never_unpickles(tmp_path, monkeypatch):
    torch.manual_seed(0)
    head = MIHead(D, SMALL)
    save_head(head, tmp_path / "head", {"layer": -1, "backbone": "sudoku"})

    def forbidden(*args, **kwargs):
        raise AssertionError("load_head must not unpickle")

    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(torch, "load", forbidden)
    loaded, meta = load_head(tmp_path / "head")
    assert meta["domain"] == "mi_head" and meta["layer"] == -1 and meta["in_dim"] == D
    assert loaded.cfg == SMALL and not loaded.training
    h, masked = _random_inputs()
    assert torch.equal(head(h, masked), loaded(h, masked))


def test_load_rejects_other_domains_and_reserved_meta(tmp_path):
    save_checkpoint(MIHead(D, SMALL), tmp_path / "x", {"domain": "sudoku"})
    with pytest.raises(CheckpointError):
        load_head(tmp_path / "x")
    with pytest.raises(ValueError):
        save_head(MIHead(D, SMALL), tmp_path / "y", {"in_dim": 3})


# ---- fidelity ---------------------------------------------------------------------------------


def _label_set(c=6, n=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(c, n, n, generator=g)
    return (x + x.transpose(1, 2)) / 2, torch.rand(c, n, generator=g) < 0.7


def test_fidelity_identical_prediction_is_perfect():
    label, masked = _label_set()
    stats = fidelity(label, label, masked)
    assert stats["pearson"] == pytest.approx(1.0) and stats["spearman"] == pytest.approx(1.0)
    assert stats["mae"] == 0 and stats["rmse"] == 0
    assert stats["pairs"] == int(sum(k * (k - 1) // 2 for k in masked.sum(1).tolist()))
    assert fidelity(label.exp(), label, masked)["spearman"] == pytest.approx(1.0)  # monotone map


def test_fidelity_auroc_perfect_separation_and_label_reference():
    n = 10
    structure = torch.zeros(n, n, dtype=torch.bool)
    structure[:5, :5] = structure[5:, 5:] = True
    structure.fill_diagonal_(False)
    masked = torch.ones(3, n, dtype=torch.bool)
    label = structure.float().expand(3, n, n) * 0.5
    pred = structure.float().expand(3, n, n) + torch.rand(3, n, n) * 0.1
    stats = fidelity(pred, label, masked, structure)
    assert stats["auroc"] == 1.0 and stats["auroc_label"] == 1.0
    assert stats["structure_pairs"] == 3 * 2 * 10
    flipped = fidelity(-pred, label, masked, structure)
    assert flipped["auroc"] == 0.0


def test_auroc_random_scores_near_half():
    g = torch.Generator().manual_seed(0)
    scores, positive = torch.rand(20_000, generator=g), torch.rand(20_000, generator=g) < 0.3
    assert auroc(scores, positive) == pytest.approx(0.5, abs=0.02)
    assert auroc(torch.zeros(100), positive[:100]) == 0.5  # all tied


def test_auroc_matches_brute_force_pair_count_with_ties():
    g = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 4, (40,), generator=g).float()  # many ties
    positive = torch.rand(40, generator=g) < 0.4
    pos, neg = scores[positive].tolist(), scores[~positive].tolist()
    brute = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    assert auroc(scores, positive) == pytest.approx(brute / (len(pos) * len(neg)), abs=1e-12)


def test_average_ranks_and_spearman_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(0, 5, (50,), generator=g).float(), torch.randn(50, generator=g)
    assert torch.allclose(average_ranks(x), torch.as_tensor(stats.rankdata(x.numpy()), dtype=torch.float64))
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x.numpy(), y.numpy()).statistic, abs=1e-12)


def test_fidelity_empty_selection_is_nan():
    label, _ = _label_set()
    stats = fidelity(label, label, torch.zeros(6, 10, dtype=torch.bool))
    assert stats["pairs"] == 0 and all(stats[k] != stats[k] for k in ("pearson", "mae", "rmse"))


def test_separation_table_learns_distance_dependent_mi():
    """Labels that depend on |i - j| only (1 nat for neighbours, else 0) on inputs that carry no
    position: only the separation table can fit them."""
    n, c = 12, 64
    feats = torch.randn(c, n, D, generator=torch.Generator().manual_seed(0))
    idx = torch.arange(n)
    label = ((idx[:, None] - idx[None, :]).abs() == 1).float().expand(c, n, n).clone()
    masked = torch.ones(c, n, dtype=torch.bool)
    cfg = HeadTrainConfig(steps=300, batch_size=16, lr=0.05, weight_decay=0.0, seed=0)
    plain, _ = train_head(feats, label, masked, cfg, SMALL, log=lambda _: None)
    sep, _ = train_head(feats, label, masked, cfg, SEPARATION, log=lambda _: None)
    with torch.no_grad():
        err_plain = masked_pair_mse(plain(feats, masked), label, masked)
        err_sep = masked_pair_mse(sep(feats, masked), label, masked)
    assert err_sep < 0.02 < err_plain


@pytest.mark.parametrize("buckets", [0, 5])
@pytest.mark.parametrize("rate", [0.15, 0.6, 1.0])
@pytest.mark.parametrize("k", [1, 7, 20])
def test_among_is_the_matrix_restricted_to_the_positions(buckets, rate, k):
    """Î among a few positions (what the MI-guided walk reads) equals the dense Î restricted to them,
    masked or not, with and without the separation term."""
    g = torch.Generator().manual_seed(3)
    head = MIHead(12, HeadConfig(hidden=16, heads=3, rank=4, unary=True, distance_buckets=buckets)).eval()
    if buckets:
        with torch.no_grad():
            head.distance.copy_(torch.randn(buckets, generator=g))
    hidden = torch.randn(6, 20, 12, generator=g)
    masked = torch.rand(6, 20, generator=g) < rate
    idx = torch.stack([torch.randperm(20, generator=g)[:k] for _ in range(6)])  # (6, k) distinct
    with torch.inference_mode():
        dense = head(hidden, masked)
        got = head.among(hidden, masked, idx)
    want = dense[torch.arange(6)[:, None, None], idx[:, :, None], idx[:, None, :]]
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    assert torch.equal(got, got.transpose(1, 2))


def test_admit_reads_the_same_set_from_the_head_as_from_the_matrix():
    from mdm_mi.mi.guided import HeadPairs, admit

    g = torch.Generator().manual_seed(4)
    head = MIHead(12, HeadConfig(hidden=16, heads=3, rank=4, unary=True)).eval()
    hidden = torch.randn(32, 20, 12, generator=g)
    masked = torch.rand(32, 20, generator=g) < 0.7
    entropy = torch.rand(32, 20, generator=g)
    with torch.inference_mode():
        dense, lazy = head(hidden, masked), HeadPairs(head, hidden, masked)
        for gamma, lam in [(0.3, 1.0), (2.0, 2.0), (5.0, 0.5)]:
            for stop in (False, True):
                want = admit(entropy, masked, dense, gamma, lam, stop_on_reject=stop, charge_first=False)
                got = admit(entropy, masked, lazy, gamma, lam, stop_on_reject=stop, charge_first=False)
                assert torch.equal(got, want)
