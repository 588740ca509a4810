"""Top-k probing (:mod:`mdm_mi.mi.topk_probe`): its proven bound holds against the exact probe, it costs
``1 + |M| k`` passes, and with k = V it is the exact probe."""

from __future__ import annotations

import pytest
import torch

from mdm_mi.mi.probe import exact_mi
from mdm_mi.mi.topk_probe import topk_mi
from test_probe import MLPBackbone


@pytest.mark.parametrize("scale", [1.0, 4.0])
@pytest.mark.parametrize("k", [1, 2, 4, 7])
def test_label_lies_within_the_proven_bound_of_the_exact_label(k, scale):
    backbone = MLPBackbone(n=6, vocab=7, seed=3, scale=scale)
    tokens = torch.tensor([0, 7, 7, 3, 7, 7])
    exact, top = exact_mi(backbone, tokens), topk_mi(backbone, tokens, k)
    assert ((top.label - exact.label).abs() <= top.bound).all()
    assert top.passes == 1 + 4 * k and top.probed.sum() == 4 * k


def test_all_values_probed_is_the_exact_probe():
    backbone = MLPBackbone(n=5, vocab=4, seed=1)
    tokens = torch.tensor([4, 4, 1, 4, 4])
    exact, top = exact_mi(backbone, tokens), topk_mi(backbone, tokens, k=10)
    assert torch.allclose(top.label, exact.label, atol=1e-10) and top.bound.max() <= 1e-11
    assert top.passes == exact.passes


def test_the_bound_shrinks_as_k_grows():
    backbone = MLPBackbone(n=6, vocab=8, seed=5, scale=3.0)
    tokens = torch.tensor([8, 8, 8, 2, 8, 8])
    bounds = [float(topk_mi(backbone, tokens, k).bound.max()) for k in (1, 2, 4, 8)]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] < 1e-9


def test_fewer_than_two_masked_positions_cost_nothing():
    backbone = MLPBackbone(n=4, vocab=3, seed=0)
    result = topk_mi(backbone, torch.tensor([0, 3, 1, 2]), k=2)
    assert result.passes == 0 and result.label.abs().max() == 0


@pytest.mark.parametrize("bound, label, warns", [
    (2.862, 2.985, True),   # issue 65: 24x the certified MI, and no warning while the bound stayed below the label
    (2.15, 2.27, True),
    (0.3, 1.0, True),
    (0.2, 1.0, False),
    (0.0, 0.0, False),
])
def test_topk_warns_from_the_bounds_share_of_the_label(bound, label, warns, capsys):
    from types import SimpleNamespace

    from mdm_mi.mi.jobs import bound_note

    note = bound_note(SimpleNamespace(method="topk", k=4), {"mean_bound": bound, "mean_label": label})
    err = capsys.readouterr().err.splitlines()
    assert note["bound_warning"] is warns and len(err) == int(warns)
    if warns:
        assert err[0].startswith("warning:") and "%" in err[0] and "--method certified" in err[0]
    assert bound_note(SimpleNamespace(method="exact", k=None), {"mean_bound": bound, "mean_label": label}) == {}
