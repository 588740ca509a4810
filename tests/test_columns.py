"""The column-space family backbone (issue 31): a masked model over alignment columns behind the
Backbone protocol — token round trips, the Potts term's symmetry, exact MI on a hand-built coupling,
decoding that never touches BOS/EOS, training that learns a planted coupling, the checkpoint round trip
and the verb, the held-out loss against the profile, and the contact helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import Decoding
from mdm_mi.mi.probe import exact_mi
from mdm_mi.protein.family import contacts
from mdm_mi.protein.family.alignment import COLUMN_ALPHABET, GAP_INDEX, N_LETTERS
from mdm_mi.protein.family.column_train import ColumnTrainConfig, column_losses, train_column_mdm
from mdm_mi.protein.family.columns import (BOS_ID, EOS_ID, MASK_ID, ColumnBackbone, ColumnDims, ColumnMDM,
                                           load_column_model, save_column_model)

from mdm_mi.core.samplers import decode
from mdm_mi.sampling.registry import build_sampler

DIMS = ColumnDims(length=5, d_model=16, n_heads=2, n_layers=1)


def _cfg(**change) -> ColumnTrainConfig:
    base = dict(steps=200, batch_size=32, lr=0.02, warmup=0, weight_decay=0.0, t_min=0.2, t_max=1.0,
                loss_weight="none", grad_clip=1.0, seed=0, log_every=50, ema=0.0, save_every=0, snapshot_every=0,
                lambda_j=0.0, eval_every=0)
    return ColumnTrainConfig(**(base | change))


def _backbone(seed: int = 0, dims: ColumnDims = DIMS) -> ColumnBackbone:
    torch.manual_seed(seed)
    model = ColumnMDM(dims)
    with torch.no_grad():
        model.couplings.normal_(0, 0.5)
    return ColumnBackbone(model).eval()


def test_encode_decode_round_trip_and_gaps_dropped():
    bb = _backbone()
    rows = ["AC-DE", "_-W_Y"]
    tokens = bb.encode(rows)
    assert tokens.shape == (2, 7) and (tokens[:, 0] == BOS_ID).all() and (tokens[:, -1] == EOS_ID).all()
    assert bb.decode_rows(tokens) == rows
    assert bb.decode_tokens(tokens) == ["ACDE", "_W_Y"]


@pytest.mark.parametrize("row", ["ACDE", "ACDEFG", "ACDXE"])
def test_encode_refuses_wrong_length_or_letter(row):
    with pytest.raises(InputError, match="is not 5 letters"):
        _backbone().encode([row])


def test_coupling_matrix_symmetric_with_empty_diagonal_blocks():
    j = _backbone().model.coupling_matrix()
    assert torch.equal(j, j.T)
    for i in range(DIMS.length):
        block = j[i * N_LETTERS:(i + 1) * N_LETTERS, i * N_LETTERS:(i + 1) * N_LETTERS]
        assert (block == 0).all()


def test_masked_columns_add_no_field():
    model = _backbone().model
    x = torch.full((1, DIMS.length), MASK_ID)
    assert (model.field(x) == 0).all()
    x[0, 2] = 3
    assert model.field(x)[0, 2].abs().sum() == 0 and model.field(x)[0, 0].abs().sum() > 0  # no self-coupling


def test_exact_mi_of_one_hand_built_coupling():
    """Two columns, a field-free model (output weights zero, no blocks) and one coupling J_01(a, b):
    at the empty row p(X_0) is uniform and p(X_1 | X_0 = v) = softmax(J_10(·, v)), so the probed MI is
    the MI of that joint, computed here by hand."""
    torch.manual_seed(0)
    model = ColumnMDM(ColumnDims(length=2, d_model=8, n_heads=1, n_layers=0))
    with torch.no_grad():
        model.out.weight.zero_()
        model.out.bias.zero_()
        model.couplings.zero_()
        model.couplings[:N_LETTERS, N_LETTERS:] = torch.randn(N_LETTERS, N_LETTERS) * 2
    bb = ColumnBackbone(model).eval()
    label = exact_mi(bb, bb.masked_sequence()).label[1:-1, 1:-1]
    jmat = model.coupling_matrix()[:N_LETTERS, N_LETTERS:].detach().double()  # J_01(a, b) = J_10(b, a)

    def mi_of(coupling):  # probe X_i = v (uniform), read p(X_j | X_i = v) = softmax over the other letter
        cond = torch.softmax(coupling, dim=1)
        joint = cond / N_LETTERS
        return float((joint * (cond / joint.sum(0)).log()).sum())

    expected = (mi_of(jmat) + mi_of(jmat.T)) / 2  # the label is the two probing directions' mean
    assert label[0, 1] == pytest.approx(expected, rel=1e-6) and label[1, 0] == label[0, 1]


@pytest.mark.parametrize("name,params", [("sequential", {}), ("eb", {"gamma": 1.0}), ("naive", {"k": 2})])
def test_decode_fills_every_column_and_keeps_bos_eos(name, params):
    bb = _backbone()
    start = torch.stack([bb.masked_sequence()] * 3)
    outs = [decode(bb, start, build_sampler(name, **params), torch.Generator().manual_seed(1), decoding=Decoding(temperature=1.0))
            for _ in range(2)]
    tokens = outs[0].tokens
    assert (tokens != MASK_ID).all() and (tokens[:, 0] == BOS_ID).all() and (tokens[:, -1] == EOS_ID).all()
    assert (tokens[:, 1:-1] < N_LETTERS).all()
    assert torch.equal(tokens, outs[1].tokens)  # same seed, same rows
    assert (outs[0].passes <= DIMS.length).all()


def test_training_learns_a_planted_coupling():
    """Column 1 copies column 0 (one of four residues); the rest is noise. After training, revealing
    column 0 makes column 1 nearly certain."""
    rng = np.random.default_rng(0)
    first = rng.integers(0, 4, 400)
    codes = np.stack([first, first, *rng.integers(0, 20, (3, 400))], 1)
    bb, history, _ = train_column_mdm(codes, None, DIMS, _cfg(), "cpu", log=lambda m: None)
    assert history[-1]["loss"] < history[0]["loss"]
    x = torch.full((1, DIMS.length), MASK_ID)
    x[0, 0] = 2
    with torch.no_grad():
        p = torch.softmax(bb.model(x)[0][0, 1], -1)
    assert p[2] > 0.8


def test_checkpoint_round_trip(tmp_path):
    bb = _backbone()
    save_column_model(bb.model, tmp_path / "m", -1, {})
    from mdm_mi.infra.checkpoint import META
    from mdm_mi.infra.io import read_json

    again = load_column_model(tmp_path / "m", read_json(tmp_path / "m" / META))
    tokens = bb.encode(["AC_DE"])
    assert torch.equal(bb(tokens).logits, again(tokens).logits)


def test_column_loss_profile_is_the_profile_cross_entropy():
    codes = np.array([[0, 1, 2, 3, GAP_INDEX]] * 4)
    profile = np.full((5, N_LETTERS), 1 / N_LETTERS)
    losses = column_losses(_backbone(), codes, profile, seed=0, rates=(0.5,))
    assert losses[0.5][1] == pytest.approx(math.log(N_LETTERS))


def test_contact_helpers():
    scores = np.zeros((6, 6))
    scores[0, 5] = scores[5, 0] = 3.0
    scores[1, 3] = scores[3, 1] = 2.0
    assert contacts.pair_ranks(scores, [(5, 0), (1, 3)]) == [1, 2]
    assert contacts.top_pairs(scores, 2) == {(0, 5), (1, 3)}
    assert contacts.top_overlap(scores, scores, 2) == 1.0
    profile = np.zeros((8, N_LETTERS))
    cys = COLUMN_ALPHABET.index("C")
    profile[[0, 2, 3, 5, 6, 7], cys] = 0.9
    assert contacts.disulphide_pairs(profile) == [(0, 7), (2, 5), (3, 6)]
    assert contacts.disulphide_pairs(profile[:7]) == []
    sym = np.random.default_rng(0).random((5, 5))
    corrected = contacts.apc(sym + sym.T)
    assert np.allclose(corrected, corrected.T) and (np.diag(corrected) == 0).all()
