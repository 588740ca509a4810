"""The per-sequence pair log-odds score: exact on a hand-built coupled pair, natural above
site-independent, gaps ignored."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdm_mi.protein.family.alignment import GAP_INDEX
from mdm_mi.protein.family.pair_score import pair_scores, pair_weights

A, C, D = 0, 1, 2  # residue codes (AMINO_ACIDS order)


def test_a_perfectly_coupled_pair_scores_ln2_with_a_vanishing_pseudocount():
    codes = np.array([[A, A], [C, C]] * 50)  # column 1 copies column 0; each residue half the time
    w = pair_weights(codes, pseudocount=1e-9)
    assert w[0, 1, A, A] == pytest.approx(math.log(2), abs=1e-6)  # ln 0.5 − ln 0.5 − ln 0.5
    assert np.allclose(w[0, 1], w[1, 0].T) and np.all(w[0, 0] == 0)
    assert pair_scores(w, np.array([[A, A], [C, C]])) == pytest.approx([math.log(2)] * 2, abs=1e-6)
    assert pair_scores(w, np.array([[A, C]]))[0] < -10  # a pair never seen together


def test_natural_sequences_score_above_their_site_independent_shuffle():
    rng = np.random.default_rng(0)
    first = rng.integers(0, 20, 2000)
    codes = np.stack([first, (first + 1) % 20, (first * 7) % 20, rng.integers(0, 20, 2000)], 1)  # 3 coupled columns
    w = pair_weights(codes)
    shuffled = np.stack([rng.permutation(col) for col in codes.T], 1)  # same columns, no coupling
    natural, independent = pair_scores(w, codes).mean(), pair_scores(w, shuffled).mean()
    assert natural > 0.5 > 0 > independent


def test_gaps_are_left_out_and_an_all_gap_sequence_is_nan():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 20, (300, 3))
    w = pair_weights(codes)
    x = np.array([[A, C, D]])
    gapped = np.array([[A, C, GAP_INDEX]])
    assert pair_scores(w, gapped)[0] == pytest.approx(w[0, 1, A, C])  # only the residue-residue pair counts
    assert np.isnan(pair_scores(w, np.array([[GAP_INDEX, GAP_INDEX, D]]))[0])
    assert pair_scores(w, x)[0] == pytest.approx((w[0, 1, A, C] + w[0, 2, A, D] + w[1, 2, C, D]) / 3)
    with pytest.raises(ValueError, match="pseudocount"):
        pair_weights(codes, pseudocount=0)
