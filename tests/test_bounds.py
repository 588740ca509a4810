"""The lower bound on certified labelling (:mod:`mdm_mi.mi.bounds`): the width formula against brute
force, two backbones that agree on all probes but one, and the certified labeller never skipping a
probe the bound calls necessary."""

from __future__ import annotations

import math

import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.mi.bounds import probe_lower_bound, skip_width
from mdm_mi.mi.probe import certified_mi, exact_mi
from test_probe import MLPBackbone, certified_cases


def joint_mi(p: torch.Tensor, cond: torch.Tensor) -> float:
    """I(X;Y) of ``P(v, w) = p(v) cond[v, w]`` in nats."""
    joint = p[:, None] * cond
    outer = p[:, None] * joint.sum(0, keepdim=True)
    return float(torch.special.xlogy(joint, joint / outer.clamp_min(1e-300)).sum())


def test_width_is_binary_entropy_when_a_value_is_unreachable():
    p = torch.tensor(0.3, dtype=torch.float64)
    r = torch.tensor([0.0, 0.4, 0.3], dtype=torch.float64)
    assert float(skip_width(p, r)) == pytest.approx(-0.3 * math.log(0.3) - 0.7 * math.log(0.7), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_width_is_the_range_of_the_mi_over_the_unseen_conditional(seed):
    g = torch.Generator().manual_seed(seed)
    v_size, v = 5, 2
    p = torch.rand(v_size, generator=g, dtype=torch.float64)
    p = p / p.sum()
    cond = torch.rand(v_size, v_size, generator=g, dtype=torch.float64) ** 3
    cond = cond / cond.sum(1, keepdim=True)
    r = (p[:, None] * cond).sum(0) - p[v] * cond[v]

    def mi_with(row: torch.Tensor) -> float:
        c = cond.clone()
        c[v] = row
        return joint_mi(p, c)

    vertices = [mi_with(torch.nn.functional.one_hot(torch.tensor(w), v_size).double()) for w in range(v_size)]
    low = mi_with(r / (1 - p[v]))
    assert max(vertices) - low == pytest.approx(float(skip_width(p[v], r)), abs=1e-12)
    for _ in range(20):  # every other conditional gives an MI inside [low, max]
        row = torch.rand(v_size, generator=g, dtype=torch.float64) ** 4
        row = row / row.sum()
        assert low - 1e-12 <= mi_with(row) <= max(vertices) + 1e-12


class OverrideProbe:
    """``base``, except that the probe ``X_i = v`` of ``context`` answers ``logits_j`` at column j."""

    def __init__(self, base, context: torch.Tensor, i: int, v: int, j: int, logits_j: torch.Tensor):
        self.base, self.j, self.logits_j = base, j, logits_j
        self.mask_id, self.vocab_size = base.mask_id, base.vocab_size
        self.vocab_token_ids, self.hidden_dim = base.vocab_token_ids, base.hidden_dim
        self.probe = context.clone()
        self.probe[i] = base.vocab_token_ids[v]

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        out = self.base(tokens)
        logits = out.logits.clone()
        logits[(tokens == self.probe).all(1), self.j] = self.logits_j
        return BackboneOutput(logits, out.hidden)


@pytest.mark.parametrize("seed", range(3))
def test_backbones_differing_in_one_probe_differ_by_half_the_width(seed):
    base = MLPBackbone(n=5, vocab=4, seed=seed, scale=3.0)
    context = torch.full((5,), base.mask_id)
    context[4] = 1
    i, v, j = 0, 1, 2
    p_i = base(context[None]).logits[0, i].softmax(-1)
    conds = []
    for u in range(base.vocab_size):
        seq = context.clone()
        seq[i] = u
        conds.append(base(seq[None]).logits[0, j].softmax(-1))
    cond = torch.stack(conds)
    r = (p_i[:, None] * cond).sum(0) - p_i[v] * cond[v]
    width = float(skip_width(p_i[v], r))
    w_star = int(r.argmin())
    point = torch.full((base.vocab_size,), -1e4, dtype=torch.float64)
    point[w_star] = 0.0
    a = exact_mi(OverrideProbe(base, context, i, v, j, (r / (1 - p_i[v])).log()), context)
    b = exact_mi(OverrideProbe(base, context, i, v, j, point), context)
    assert width > 0.01
    assert float(b.label[i, j] - a.label[i, j]) == pytest.approx(width / 2, abs=1e-9)


@pytest.mark.parametrize("tol", [1e-3, 1e-2])
def test_certified_labeller_runs_every_necessary_probe(tol):
    necessary = 0
    for backbone, tokens in certified_cases():
        lb = probe_lower_bound(backbone, tokens, tol=tol, batch_size=7)
        cert = certified_mi(backbone, tokens, tol=tol, batch_size=7)
        if lb.passes:
            assert not bool((lb.necessary & ~cert.probed).any())
            assert lb.passes <= cert.passes <= lb.exact_passes == exact_mi(backbone, tokens).passes
        necessary += int(lb.necessary.sum())
    assert necessary > 0


def test_no_pair_needs_no_pass():
    backbone = MLPBackbone(n=4, vocab=3, seed=0)
    lb = probe_lower_bound(backbone, torch.tensor([0, backbone.mask_id, 2, 0]))
    assert lb.passes == 0 and lb.exact_passes == 1 + 3
