"""Bootstrap intervals of the head's fidelity over contexts (issue 47: intervals on every headline)."""

from __future__ import annotations

import torch

from mdm_mi.mi.fidelity import bootstrap_over_contexts, fidelity


def _case(c: int = 12, n: int = 9, noise: float = 0.0, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    label = torch.rand(c, n, n, generator=gen)
    label = (label + label.transpose(1, 2)) / 2
    pred = label + noise * torch.randn(c, n, n, generator=gen)
    masked = torch.rand(c, n, generator=gen) < 0.7
    return pred, label, masked


def test_a_perfect_head_has_a_degenerate_interval_at_one():
    pred, label, masked = _case()
    ci = bootstrap_over_contexts(pred, label, masked, n_boot=50)
    assert ci["pearson_ci"] == [1.0, 1.0] or all(abs(x - 1) < 1e-12 for x in ci["pearson_ci"])


def test_the_interval_holds_the_estimate_and_is_seeded():
    pred, label, masked = _case(noise=0.3)
    est = fidelity(pred, label, masked)
    a = bootstrap_over_contexts(pred, label, masked, n_boot=200, seed=1)
    b = bootstrap_over_contexts(pred, label, masked, n_boot=200, seed=1)
    assert a == b and a["n_boot"] == 200
    for k in ("pearson", "spearman"):
        lo, hi = a[f"{k}_ci"]
        assert lo < est[k] < hi and hi - lo < 0.3


def test_an_unrelated_head_has_an_interval_around_zero():
    pred, label, masked = _case(c=20)
    noise, _, _ = _case(c=20, seed=5)
    lo, hi = bootstrap_over_contexts(noise, label, masked, n_boot=200)["pearson_ci"]
    assert lo < 0 < hi
