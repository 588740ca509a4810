"""The grouped jackknife of the co-variation statistics: every leave-one-group-out and
leave-two-groups-out value equals the statistic recomputed from scratch on the set without those
groups, the groups are a balanced seeded partition, block shuffles keep each group's letters, and
the t helpers agree with the textbook cases (the jackknife of a mean is the t interval of the mean,
and its second-order correction is zero)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdm_mi.evaluation.stats import jackknife_t, mean_t_ci, second_order_share, t_quantile
from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family import jackknife as jk
from mdm_mi.protein.family import metrics as fm

KUNITZ = Path(__file__).resolve().parents[1] / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"


@pytest.fixture(scope="module")
def columns():
    """120 natural match-column strings and 200 others (a reference)."""
    records = fam.drop_nonstandard(fam.parse_a2m(KUNITZ))[0]
    return [r.columns for r in records[:120]], [r.columns for r in records[1000:1200]]


def test_groups_are_a_balanced_seeded_partition():
    labels = jk.group_labels(125, seed=3)
    assert labels.max() + 1 == 125 // jk.MIN_GROUP_SIZE and set(np.bincount(labels)) == {10, 11}
    assert np.array_equal(labels, jk.group_labels(125, seed=3)) and not np.array_equal(labels, jk.group_labels(125, 4))
    assert jk.group_labels(5000, 0).max() + 1 == jk.MAX_GROUPS and jk.group_labels(7, 0).max() + 1 == 2


def test_block_shuffles_keep_each_groups_letters(columns):
    codes = fam.encode_columns(columns[0])
    labels = jk.group_labels(len(codes), seed=0)
    (shuffled,) = jk.block_shuffles(codes, labels, 1, seed=0)
    for g in range(labels.max() + 1):
        rows = labels == g
        assert np.array_equal(np.sort(shuffled[rows], axis=0), np.sort(codes[rows], axis=0))
    assert not np.array_equal(shuffled, codes)


def test_residue_mi_without_each_group_equals_recomputing_it(columns):
    codes = fam.encode_columns(columns[0])
    labels = jk.group_labels(len(codes), seed=1)
    point, loo, loo2 = jk.residue_mi_jackknife(jk.PairCounts.of(codes, labels))
    np.testing.assert_allclose(point, fm.residue_mi(codes), atol=1e-12)
    assert loo.shape == (labels.max() + 1, len(point)) and loo2.shape == (labels.max() + 1, *loo.shape)
    for g in range(labels.max() + 1):
        np.testing.assert_allclose(loo[g], fm.residue_mi(codes[labels != g]), atol=1e-12)
    for g, h in ((0, 1), (4, 9), (11, 2)):
        np.testing.assert_allclose(loo2[g, h], fm.residue_mi(codes[(labels != g) & (labels != h)]), atol=1e-12)
        np.testing.assert_allclose(loo2[g, h], loo2[h, g], atol=1e-13)


def test_corrected_mi_without_each_group_equals_recomputing_it(columns):
    codes = fam.encode_columns(columns[0])
    labels = jk.group_labels(len(codes), seed=1)
    point, loo, loo2 = jk.corrected_mi_jackknife(codes, labels, seed=2, n_shuffles=3)
    nulls = jk.block_shuffles(codes, labels, 3, seed=2)

    def corrected(keep):
        return fm.residue_mi(codes[keep]) - np.mean([fm.residue_mi(s[keep]) for s in nulls], axis=0)

    np.testing.assert_allclose(point, corrected(np.ones(len(codes), bool)), atol=1e-12)
    np.testing.assert_allclose(jk.block_corrected_mi(codes, labels, seed=2, n_shuffles=3), point, atol=1e-12)
    for g in (0, labels.max()):
        np.testing.assert_allclose(loo[g], corrected(labels != g), atol=1e-12)
    np.testing.assert_allclose(loo2[1, 5], corrected((labels != 1) & (labels != 5)), atol=1e-12)


def test_cij_r_without_each_group_equals_recomputing_it(columns):
    cols, ref_cols = columns
    codes, ref = fam.encode_columns(cols), fm.residue_correlations(ref_cols).ravel()
    np.testing.assert_array_equal(jk.connected(fam.encode_columns(ref_cols)), ref)
    labels = jk.group_labels(len(codes), seed=0)
    point, loo, loo2 = jk.correlation_r_jackknife(codes, labels, ref)
    assert point == pytest.approx(fm.pearson(fm.residue_correlations(cols), ref), abs=1e-12)
    for g in range(labels.max() + 1):
        keep = [c for c, lab in zip(cols, labels) if lab != g]
        assert loo[g] == pytest.approx(fm.pearson(fm.residue_correlations(keep), ref), abs=1e-12)
    for g, h in ((0, 1), (3, 10), (11, 6)):
        keep = [c for c, lab in zip(cols, labels) if lab not in (g, h)]
        assert loo2[g, h] == pytest.approx(fm.pearson(fm.residue_correlations(keep), ref), abs=1e-12)
        assert loo2[g, h] == pytest.approx(loo2[h, g], abs=1e-14)


def test_t_helpers_match_the_textbook():
    assert t_quantile(7) == pytest.approx(2.364624, abs=1e-6) and t_quantile(1e9) == pytest.approx(1.959964, abs=1e-6)
    x = np.random.default_rng(0).normal(size=8)
    mean, half = mean_t_ci(x)
    assert mean == pytest.approx(x.mean()) and half == pytest.approx(2.364624 * x.std(ddof=1) / np.sqrt(8), rel=1e-6)
    loo = (x.sum() - x) / 7  # delete-one jackknife of a mean: SE = s/√n exactly
    r = jackknife_t(x.mean(), loo)
    assert r["df"] == 7 and (r["lo"], r["hi"]) == pytest.approx((mean - half, mean + half))
    assert jackknife_t(0.0, np.zeros(5))["p_value"] == 1.0 and jackknife_t(0.1, np.zeros(5))["p_value"] == 0.0
    pairs = (x.sum() - x[:, None] - x[None]) / 6  # a mean is linear: its delete-2 interactions are additive
    assert jackknife_t(x.mean(), loo, pairs) == pytest.approx(r)
    assert second_order_share(30) == pytest.approx(0.8693, abs=1e-4)


def test_second_order_correction_removes_the_jackknifes_double_count():
    """A statistic whose variance is half linear, half degenerate quadratic (|x̄|² − K/n of K-variate
    normal groups): the plain jackknife's variance is ~1.5× the true one, the corrected one ~1×."""
    rng = np.random.default_rng(0)
    groups, size, dims, mu = 30, 10, 100, 0.41
    n = groups * size
    true = 4 * mu**2 / n + 2 * dims / n**2
    plain, corrected = [], []
    for _ in range(300):
        x = rng.normal(size=(groups, size, dims))
        x[..., 0] += mu
        sums, total = x.sum(1), x.sum((0, 1))

        def stat(s, m):
            return (s**2).sum(-1) / m**2 - dims / m

        loo = stat(total - sums, n - size)
        loo2 = stat(total - sums[:, None] - sums[None], n - 2 * size)
        est = stat(total, n)
        plain.append(jackknife_t(est, loo)["se"] ** 2)
        corrected.append(jackknife_t(est, loo, loo2)["se"] ** 2)
    assert 1.3 < np.mean(plain) / true < 1.7 and 0.85 < np.mean(corrected) / true < 1.15
