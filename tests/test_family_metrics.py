"""Family metrics: the profile HMM (pyhmmer) built from the real training split, and the statistics
of match-column strings (single-site and pair frequencies, corrected MI, identity, cluster JSD)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family import metrics as fm

REPO = Path(__file__).resolve().parents[1]
KUNITZ = REPO / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
N_SCORED = 300  # reference sequences scored / shuffled


@pytest.fixture(scope="module")
def split():
    return fam.cluster_split(fam.drop_nonstandard(fam.parse_a2m(KUNITZ))[0], seed=0)


@pytest.fixture(scope="module")
def hmm(split):
    return fm.build_hmm(split[0], name="PF00014_train")


def _repeat(pairs: dict[str, int]) -> list[str]:
    return [cols for cols, n in pairs.items() for _ in range(n)]


def test_hmm_has_one_match_state_per_column(hmm):
    assert hmm.M == fam.KUNITZ_MATCH_COLUMNS


def test_hmm_scores_natural_reference_above_shuffled_sequences(hmm, split):
    _, val, reference = split
    threshold = fm.score_threshold(fm.hmm_scores(hmm, [r.sequence for r in val]))
    natural = [r.sequence for r in reference[:N_SCORED]]
    rng = np.random.default_rng(0)
    shuffled = ["".join(rng.permutation(list(s))) for s in natural]
    nat_scores, shuf_scores = fm.hmm_scores(hmm, natural), fm.hmm_scores(hmm, shuffled)
    assert fm.pass_rate(nat_scores, threshold) > 0.9
    assert fm.pass_rate(shuf_scores, threshold) < 0.05
    assert np.median(nat_scores) > np.max(shuf_scores)


def test_hmm_scores_are_reproducible_and_in_input_order(hmm, split):
    seqs = [r.sequence for r in split[2][:20]]
    scores = fm.hmm_scores(hmm, seqs)
    assert np.array_equal(scores, fm.hmm_scores(hmm, seqs))
    assert np.array_equal(fm.hmm_scores(hmm, seqs[::-1]), scores[::-1])


def test_hmmalign_reproduces_training_columns_for_most_records(hmm, split):
    train = split[0][:800]
    aligned = fm.align_columns(hmm, [r.sequence for r in train])
    assert {len(c) for c in aligned} == {fam.KUNITZ_MATCH_COLUMNS}
    wrong = np.array([[a != b for a, b in zip(got, r.columns)] for got, r in zip(aligned, train)])
    assert np.mean(wrong.sum(1) <= 2) > 0.85  # HMMER aligns locally: weak end residues may drop out
    assert np.mean(wrong[:, 1:-1].sum(1) == 0) > 0.8
    assert wrong.mean() < 0.05


def test_aligned_records_keep_their_residues(hmm, split):
    seqs = [r.sequence for r in split[2][:50]] + ["GGGGSSSSWWWW"]
    recs = fm.align_records(hmm, [str(i) for i in range(len(seqs))], seqs)
    for rec, seq in zip(recs, seqs):
        assert rec.row.replace("-", "").upper() == seq == rec.sequence
        assert rec.columns == "".join(c for c in rec.row if not c.islower())


def test_known_two_column_mi():
    cols = _repeat({"AA": 400, "AC": 100, "CA": 100, "CC": 400})
    want = 2 * 0.4 * np.log(0.4 / 0.25) + 2 * 0.1 * np.log(0.1 / 0.25)
    mi = fm.plugin_mi(fam.encode_columns(cols))
    assert mi[0, 1] == pytest.approx(want) and mi[1, 0] == pytest.approx(want)
    assert mi[0, 0] == pytest.approx(np.log(2))  # the diagonal is the column entropy
    assert fm.corrected_mi(cols, seed=0)[0] == pytest.approx(want, abs=2e-3)


def test_shuffle_corrected_mi_of_independent_columns_is_near_zero():
    rng = np.random.default_rng(0)
    letters = np.array(list("ACDE"))
    cols = ["".join(row) for row in letters[rng.integers(0, 4, size=(2000, 6))]]
    plug_in = fm.plugin_mi(fam.encode_columns(cols))[np.triu_indices(6, k=1)]
    corrected = fm.corrected_mi(cols, seed=0)
    assert plug_in.mean() > 1e-3  # the finite-sample bias, about 9 / (2 · 2000)
    assert abs(corrected.mean()) < 5e-4 and np.abs(corrected).max() < 3e-3


def test_connected_correlations_of_a_perfect_pair():
    c = fm.connected_correlations(_repeat({"AA-": 5, "CC-": 5}))
    assert c.shape == (3, fam.N_LETTERS, fam.N_LETTERS)
    a, cc = 0, 1
    assert c[0, a, a] == pytest.approx(0.25) and c[0, a, cc] == pytest.approx(-0.25)
    assert np.allclose(c[1:], 0)  # the constant third column correlates with nothing


def test_natural_halves_agree_and_profile_draws_do_not(split):
    train = [r.columns for r in split[0]]
    half = len(train) // 2
    a, b = train[:half], train[half:]
    profile = fam.column_profile(split[0])
    draws = [r.columns for r in fam.sample_profile(profile, half, np.random.default_rng(0))]
    assert fm.correlation_r(a, b) > 0.6 and abs(fm.correlation_r(draws, b)) < 0.05
    assert fm.corrected_mi_r(a, b, seed=0) > 0.8 and abs(fm.corrected_mi_r(draws, b, seed=0)) < 0.1
    assert fm.frequency_r(a, b) > 0.99 and fm.frequency_r(draws, b) > 0.97


def test_identity_diversity_and_memorisation(split):
    train, _, reference = split
    train_cols = [r.columns for r in train]
    assert fm.mean_pairwise_identity([train_cols[0]] * 3) == pytest.approx(1.0)
    assert 0.2 < fm.mean_pairwise_identity([r.columns for r in reference]) < 0.6
    assert np.allclose(fm.max_identity_to(train_cols[:100], train_cols), 1.0)
    assert fm.max_identity_to([r.columns for r in reference], train_cols).max() < 0.8


def test_one_hot_and_cluster_jsd(split):
    cols = [r.columns for r in split[2][:200]]
    x = fm.one_hot_columns(cols)
    assert x.shape == (200, fam.KUNITZ_MATCH_COLUMNS * fam.N_LETTERS)
    assert np.array_equal(x.sum(1), np.full(200, fam.KUNITZ_MATCH_COLUMNS))
    same = fm.cluster_jsd_columns(cols, cols, k=4, seed=0)
    assert same["cluster_jsd"] == pytest.approx(0.0) and same["cluster_jsd_lo"] == 0.0
    constant = fm.cluster_jsd_columns(cols, [cols[0]] * 200, k=4, seed=0)
    assert constant["cluster_jsd"] > 0.3
    assert constant["cluster_jsd_lo"] <= constant["cluster_jsd_bc"] <= constant["cluster_jsd_hi"]
    assert constant["cluster_jsd_lo"] > 0.2  # a basic interval that excludes 0 when the sets differ



def test_realigned_profile_draws_share_only_gap_correlations(hmm, split):
    train = split[0]
    draws = fam.sample_profile(fam.column_profile(train), 600, np.random.default_rng(1))
    sets = (draws, train[:600], train[600:1200])
    aligned = [fm.align_columns(hmm, [r.sequence for r in recs]) for recs in sets]
    assert abs(fm.correlation_r(aligned[0], aligned[1], residues_only=True)) < 0.05
    assert fm.correlation_r(aligned[2], aligned[1], residues_only=True) > 0.5


def test_residue_mi_ignores_gaps_and_finds_residue_coupling():
    rng = np.random.default_rng(0)
    n = 400
    a = rng.choice(list("ACDE"), n)
    coupled = np.array([{"A": "K", "C": "L", "D": "M", "E": "N"}[x] for x in a])  # column 2 = f(column 1)
    gaps = rng.random(n) < 0.3  # gaps that co-occur in columns 3 and 4, residues independent
    c3 = np.where(gaps, "-", rng.choice(list("FGHI"), n))
    c4 = np.where(gaps, "-", rng.choice(list("PQRS"), n))
    cols = ["".join(r) for r in zip(a, coupled, c3, c4)]
    codes = fam.encode_columns(cols)
    mi = fm.residue_mi(codes)  # pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    assert abs(mi[0] - np.log(4)) < 0.02  # one residue determines the other: ln 4
    both = ~gaps  # pair (2, 3) by hand: MI of the residue pairs where both columns hold one
    pairs = list(zip(c3[both], c4[both]))
    f = {p: pairs.count(p) / len(pairs) for p in set(pairs)}
    fi = {x: np.mean(c3[both] == x) for x in set(c3[both])}
    fj = {y: np.mean(c4[both] == y) for y in set(c4[both])}
    assert mi[5] == pytest.approx(sum(v * np.log(v / (fi[x] * fj[y])) for (x, y), v in f.items()), rel=1e-9)
    assert fm.plugin_mi(codes)[2, 3] > 0.3  # with gaps as a letter, shared gaps look like coupling
    corrected = fm.corrected_mi(cols, seed=0, residues_only=True)  # pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    assert corrected[0] > 1.2 and abs(corrected[5]) < 0.03  # the gap-only pair is independent over residues
