"""DEMASK's TV target from the MI probes (:mod:`mdm_mi.mi.probe`, ``ProbeResult.tv``) on hand-built
backbones: no extra pass, zero exactly where the MI is, its certified bound, and the label shards."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from mdm_mi.mi.labeller import label_contexts
from mdm_mi.mi.probe import certified_mi, exact_mi
from mdm_mi.mi.topk_probe import topk_mi
from test_probe import TOKEN_OFFSET, JointBackbone, MLPBackbone, all_masked, f64
from test_splits import labelled, shards  # noqa: F401 (a fixture: label shards of the tiny Sudoku model)

ATOL = 1e-9
MASK_ID = 0  # JointBackbone's mask


def plain_tv(backbone, tokens: torch.Tensor) -> torch.Tensor:
    """``tv[i, j] = Σ_v p_i(v) · ½ Σ_w |p(X_j = w | X_i = v, C) − p(X_j = w | C)|``, one pass at a time."""
    def cond(seq):
        return torch.softmax(backbone(seq[None]).logits[0].double(), -1)

    p = cond(tokens)
    masked = (tokens == backbone.mask_id).nonzero().flatten().tolist()
    tv = torch.zeros(len(tokens), len(tokens), dtype=torch.float64)
    for i in masked:
        for v, token in enumerate(backbone.vocab_token_ids.tolist()):
            probe = tokens.clone()
            probe[i] = token
            c = cond(probe)
            for j in masked:
                if j != i:
                    tv[i, j] += p[i, v] * (c[j] - p[j]).abs().sum() / 2
    return tv


def test_perfectly_correlated_bits_have_tv_one_half():
    res = exact_mi(JointBackbone(f64([[0.5, 0.0], [0.0, 0.5]])), all_masked(2))
    # revealing X_0 = v moves X_1 from (½, ½) to a point mass: TV ½ for each v
    assert res.tv[0, 1] == pytest.approx(0.5, abs=ATOL) and res.tv[1, 0] == pytest.approx(0.5, abs=ATOL)
    assert res.tv.diagonal().abs().max() == 0 and res.tv_bound.abs().max() == 0


def test_tv_is_zero_exactly_where_mi_is_zero():
    table = torch.zeros(2, 2, 2)  # XOR: pairwise independent until a clue is fixed
    for x1, x2 in itertools.product(range(2), repeat=2):
        table[x1, x2, x1 ^ x2] = 0.25
    backbone = JointBackbone(table)
    free = exact_mi(backbone, all_masked(3))
    assert free.label.abs().max() < ATOL and free.tv.abs().max() < ATOL
    clued = exact_mi(backbone, torch.tensor([1 + TOKEN_OFFSET, MASK_ID, MASK_ID]))
    assert clued.label[1, 2] > 0.5 and clued.tv[1, 2] == pytest.approx(0.5, abs=ATOL)
    independent = exact_mi(JointBackbone(torch.outer(f64([0.3, 0.7]), f64([0.6, 0.4]))), all_masked(2))
    assert independent.tv.abs().max() < ATOL



@pytest.mark.parametrize("seed", range(4))
def test_tv_on_a_consistent_joint_is_zero_iff_mi_is_and_within_pinsker(seed):
    torch.manual_seed(seed)
    table = torch.distributions.Dirichlet(torch.full((27,), 0.5)).sample().view(3, 3, 3).double()
    table[:, :, 0] = 0  # some structure: X_2 is never 0
    table /= table.sum()
    res = exact_mi(JointBackbone(table), all_masked(3))
    off = ~torch.eye(3, dtype=torch.bool)
    assert ((res.tv[off] > ATOL) == (res.joint[off] > ATOL)).all()
    assert (res.tv[off] <= (res.joint[off] / 2).sqrt() + ATOL).all()  # Pinsker + Jensen
    assert (res.tv >= 0).all() and (res.tv <= 1).all()


def test_batched_tv_is_the_plain_sum_and_costs_no_extra_pass():
    backbone = MLPBackbone(n=5, vocab=3, seed=1)
    tokens = torch.tensor([3, 0, 3, 3, 2])  # mask id 3
    res = exact_mi(backbone, tokens, batch_size=4)
    assert torch.allclose(res.tv, plain_tv(backbone, tokens), atol=ATOL)
    assert res.passes == 1 + 3 * 3
    assert not torch.allclose(res.tv, res.tv.T)  # directed


@pytest.mark.parametrize("method", ["certified", "topk"])
def test_skipped_probes_keep_tv_within_its_bound(method):
    backbone = MLPBackbone(n=6, vocab=4, seed=2, scale=4.0)
    tokens = all_masked(6).fill_(backbone.mask_id)
    exact = exact_mi(backbone, tokens)
    res = certified_mi(backbone, tokens, tol=0.05) if method == "certified" else topk_mi(backbone, tokens, k=2)
    assert res.passes < exact.passes
    assert ((exact.tv - res.tv >= -ATOL) & (exact.tv - res.tv <= res.tv_bound + ATOL)).all()  # one-sided
    assert res.tv_bound.max() > 0  # something was skipped, and said so


def test_label_shards_hold_tv_beside_the_mi(tmp_path):
    backbone = MLPBackbone(n=4, vocab=3, seed=0)
    contexts = torch.tensor([[3, 3, 0, 3], [1, 3, 3, 3]])
    shard = label_contexts(backbone, contexts, method="exact")
    assert shard["tv"].shape == shard["label"].shape == (2, 4, 4) and shard["tv"].dtype == torch.float32
    for c, tokens in enumerate(contexts):
        assert torch.allclose(shard["tv"][c].double(), plain_tv(backbone, tokens), atol=1e-6)
    assert (shard["tv_bound"] == 0).all()
    assert math.isclose(float(shard["passes"].sum()), (1 + 3 * 3) * 2)


def test_a_tv_head_trains_on_the_same_shards_and_is_refused_where_an_mi_head_is_read(labelled, tiny_checkpoint, tmp_path):
    """``train-head --target tv`` learns the symmetrised TV target of the MI label shards; the loader
    tells the two heads apart (a TV head is no MI head, and back)."""
    from mdm_mi.cli import main
    from mdm_mi.infra.checkpoint import CheckpointError
    from mdm_mi.models.loading import load_mi_head
    from mdm_mi.mi.contexts import load_label_shards

    out = tmp_path / "tv_head"
    argv = ["train-head", "--target", "tv", "--model", str(tiny_checkpoint), "--labels", *shards(labelled, "train"),
            "--val", *shards(labelled, "val"), "--test", *shards(labelled, "test"), "--out", str(out),
            "--fidelity", str(tmp_path / "fidelity.json"), "--pairs", str(tmp_path / "pairs.csv"),
            "--hidden", "4", "--heads", "2", "--rank", "2", "--unary", "--distance-buckets", "0", "--steps", "4",
            "--batch-size", "2", "--lr", "0.01", "--weight-decay", "0", "--seed", "0", "--device", "cpu", "--threads", "1"]
    assert main(argv) == 0
    tv = load_label_shards(shards(labelled, "train"), "tv")
    assert torch.equal(tv["label"], tv["label"].transpose(1, 2)) and tv["label"].max() <= 1
    assert not torch.equal(tv["label"], load_label_shards(shards(labelled, "train"))["label"])
    assert load_mi_head(out, target="tv").in_dim > 0
    with pytest.raises(CheckpointError, match="'tv' target, not 'mi'"):
        load_mi_head(out)
