"""Issue 65 item 6: hf-compare's (and protein-compare's) contrasts use the table's estimator, so a contrast
never disagrees with the table beside it, and p is printed with its resolution (``p<1/50``, never
``p=0``); checked on data whose answer is known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("sklearn")

K = 6


def _blobs(seed: int, n: int, weights=None, spread: float = 1.5) -> np.ndarray:
    """``n`` points of eight Gaussian blobs in 4-D (overlapping at the default ``spread``: there k-means'
    answer depends on its restarts)."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(8, 4)) * spread
    pick = rng.choice(8, size=n, p=weights)
    return centres[pick] + rng.normal(size=(n, 4))


def _scorer(ref: np.ndarray, seed: int = 0):
    from mdm_mi.protein.metrics import fit_clusters

    return SimpleNamespace(ref_emb=ref, k=K, seed=seed, km=fit_clusters(ref, K, seed))


def _runs(first: np.ndarray, second: np.ndarray) -> dict:
    passes = np.full(len(first), 10)
    return {"sequential": {"family": "sequential", "divisor": 1, "emb": second, "passes": passes * 4},
            "mi λ=1@1/4": {"family": "mi λ=1", "divisor": 4, "emb": first, "passes": passes, "calib_score": 0.0}}


def test_the_contrast_is_the_difference_of_the_tables_jsds():
    """Each side of a contrast is the JSD its table prints (the same clusters, restarts and seed)."""
    from mdm_mi.protein.compare import jsd_rows
    from mdm_mi.protein.metrics import cluster_jsd

    ref, a, b = _blobs(11, 300), _blobs(21, 120), _blobs(2, 120, [0.3] + [0.1] * 7)  # one restart gets these wrong
    scorer = _scorer(ref)
    table = {name: cluster_jsd(scorer.km, ref, emb) for name, emb in (("a", a), ("b", b))}
    rows = jsd_rows(_runs(a, b), scorer, n_boot=20, seed=0)
    row = next(r for r in rows if r["first"] == "mi*" and r["second"] == "sequential")
    assert (row["jsd_first"], row["jsd_second"]) == (table["a"], table["b"])
    assert row["diff"] == table["a"] - table["b"]


def test_the_contrast_without_the_tables_clusters_refits_them_the_same_way():
    """Without the table's fitted clusters the point estimate refits them with the table's estimator
    (fit_clusters: its restarts and seed), so it is the same number."""
    from mdm_mi.protein.metrics import bootstrap_jsd_differences, cluster_jsd, fit_clusters

    ref, a = _blobs(3, 300), _blobs(4, 100)
    out = bootstrap_jsd_differences(ref, {"a": a, "b": a}, K, seed=5, n_boot=5)
    assert out["jsd"]["a"] == cluster_jsd(fit_clusters(ref, K, 5), ref, a)


def test_two_identical_sets_differ_by_nothing():
    from mdm_mi.protein.compare import jsd_rows

    ref, a = _blobs(5, 300), _blobs(6, 150)
    rows = jsd_rows(_runs(a, a.copy()), _scorer(ref), n_boot=50, seed=0)
    row = next(r for r in rows if r["first"] == "mi*")
    assert row["diff"] == 0.0 and row["lo"] <= 0.0 <= row["hi"] and row["verdict"] == "not resolved"
    assert row["p_value"] > 0.5


def test_clearly_different_sets_differ_and_p_is_printed_with_its_resolution():
    """A set drawn like the reference against one piled into one blob: the first is closer (better), with
    p below what 50 replicates resolve, printed ``p<1/50`` (not ``p=0``); with 10 replicates (which
    resolve no p below 0.1) the same data is not resolved."""
    from mdm_mi.protein.compare import jsd_rows
    from mdm_mi.protein.metrics import p_text

    weights = [0.93] + [0.01] * 7
    ref, close, far = _blobs(7, 300, spread=6), _blobs(8, 150, spread=6), _blobs(9, 150, weights, spread=6)
    row = next(r for r in jsd_rows(_runs(close, far), _scorer(ref), n_boot=50, seed=0) if r["first"] == "mi*")
    assert row["diff"] < 0 and row["hi"] < 0 and row["verdict"] == "better"
    assert row["p_value"] < 1 / 50 and p_text(row["p_value"], 50) == "p<1/50"
    few = next(r for r in jsd_rows(_runs(close, far), _scorer(ref), n_boot=10, seed=0) if r["first"] == "mi*")
    assert few["verdict"] == "not resolved" and p_text(few["p_value"], 10) == "p<1/10"
    assert p_text(0.034, 50) == "p=0.034" and p_text(0.0, None) == "p=0"
