"""KLASS-style stability sampling (core/klass.py) and PUNT-style independence testing (mi/punt.py): the
properties each rule promises, and on the exact testbed that decode, the one-path replay and the path sum
agree for them (the drift KLASS reads is carried the same way by all three)."""

from __future__ import annotations

import math

import pytest
import torch

from mdm_mi.core.klass import Klass
from mdm_mi.core.prism import EBPrism, Prism
from mdm_mi.core.samplers import ConfidenceThreshold, StepView
from mdm_mi.mi.punt import Punt
from mdm_mi.testbed.chain import ChainBackbone, PottsChain, exact_pairwise_fn, exact_quality_fn
from decode_draws import assert_decode_draws
from mdm_mi.testbed.exact_kl import completions, enumerate_paths, replay

N_SITES, N_STATES = 5, 3


@pytest.fixture(scope="module")
def chain() -> ChainBackbone:
    g = torch.Generator().manual_seed(13)
    fields = 0.5 * torch.randn(1, N_SITES, N_STATES, generator=g, dtype=torch.float64)
    couplings = 1.0 * torch.randn(N_SITES - 1, N_STATES, N_STATES, generator=g, dtype=torch.float64)
    return ChainBackbone(PottsChain(fields, couplings))


@pytest.mark.parametrize("sampler", [Klass(tau=0.4, kl=0.05), Punt(tau=0.3, kappa=0.02)], ids=["klass", "punt"])
def test_decode_replay_and_the_path_sum_agree(chain, sampler):
    prompt = chain.prompts(torch.tensor([0]))[0]
    fn = exact_pairwise_fn(chain) if sampler.uses_pairwise else None
    x = completions(prompt, N_STATES)
    paths = enumerate_paths(chain, prompt, sampler, fn)
    q = torch.tensor([paths.q.get(tuple(r.tolist()), 0.0) for r in x], dtype=torch.float64)
    rep = replay(chain, prompt.expand_as(x), x, sampler, fn)
    assert torch.allclose(rep.log_q.exp(), q, atol=1e-12)
    assert 1.0 < paths.passes < N_SITES  # parallel, and not all at once
    assert_decode_draws(chain, prompt, sampler, fn, q, seed=4)


def _view(conf: torch.Tensor, pairwise=None, drift=None) -> StepView:
    masked = torch.isfinite(conf)
    return StepView(masked=masked, entropy=torch.zeros_like(conf), margin=torch.zeros_like(conf), pairwise=pairwise,
                    confidence=conf, drift=drift)


def test_klass_draws_the_confident_and_stable_and_only_the_fallback_without_history():
    conf = torch.tensor([[0.95, 0.97, 0.5, -math.inf]])
    drift = torch.tensor([[0.001, 0.5, 0.0, math.inf]])
    assert Klass(0.9, 0.01).select(_view(conf, drift=drift)).tolist() == [[True, True, False, False]]  # 1: fallback
    first = torch.full_like(conf, math.inf)  # the first pass: no history
    assert Klass(0.9, 0.01).select(_view(conf, drift=first)).tolist() == [[False, True, False, False]]


def test_punt_keeps_the_most_confident_of_each_dependent_group():
    conf = torch.tensor([[0.99, 0.95, 0.9, 0.85, 0.2]])
    mi = torch.zeros(1, 5, 5)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.3  # 0 and 1 dependent: only 0 goes
    mi[0, 2, 3] = mi[0, 3, 2] = 0.3  # 2 and 3 dependent: only 2 goes
    assert Punt(0.8, 0.05).select(_view(conf, mi)).tolist() == [[True, False, True, False, False]]
    plain = ConfidenceThreshold(0.8).select(_view(conf))
    assert torch.equal(Punt(0.8, math.inf).select(_view(conf, mi)), plain)  # κ = ∞: the threshold rule


def test_punt_never_draws_a_dependent_pair_on_the_chain(chain):
    rows = chain.prompts(torch.zeros(200, dtype=torch.long))
    fn = exact_pairwise_fn(chain)
    out = chain(rows)
    masked = rows == chain.mask_id
    pairwise = fn(out, masked, rows)
    chosen = Punt(0.2, 0.01).select(StepView.from_logits(out.logits, masked, pairwise))
    both = chosen[:, :, None] & chosen[:, None, :] & ~torch.eye(rows.shape[1], dtype=torch.bool)
    assert not (both & (pairwise > 0.01)).any()


def test_the_development_screens_table_marks_a_rule_off_its_budget(tmp_path):
    import json

    from mdm_mi.sudoku.report import screen_block

    run = {"family": "eb", "divisor": 8, "accuracy": 0.5, "passes": 7.0, "on_target": True,
           "vs_sequential": {"diff": -0.1, "lo": -0.15, "hi": -0.05, "p": 0.001},
           "seconds_per_puzzle_batch1": 0.05, "seconds_per_puzzle_batched": 0.001}
    screen = {"n_test": 300, "n_calib": 100, "cpu": "AMD EPYC", "threads": 2,
              "runs": {"sequential": run | {"family": "sequential", "divisor": 1, "vs_sequential": None},
                       "eb@1/8": run, "wino@1/8": run | {"family": "wino", "on_target": False}}}
    (tmp_path / "screen.json").write_text(json.dumps(screen))
    table = screen_block(tmp_path / "screen.json")
    assert "| eb | ÷8 | 50.0 | 7.00 | -10.0 [-15.0, -5.0] p=0.001 |" in table
    assert "| wino | ÷8 † |" in table and table.rstrip().endswith("cannot reach it)")


@pytest.mark.parametrize("sampler", [Prism(tau=0.5, tau_out=0.5), EBPrism(gamma=1.0, tau_out=0.5)],
                         ids=["prism", "eb-prism"])
def test_quality_remasking_decode_and_the_path_sum_agree(chain, sampler):
    """The quality rules send back any written token (not only the last pass's): with the chain's exact
    quality (core/prism.py's stand-in, testbed.chain.exact_quality_fn), the path sum over every draw and
    send-back is the distribution decode draws from, and tokens do go back (more passes than drafts)."""
    prompt = chain.prompts(torch.tensor([0]))[0]
    fn = exact_quality_fn(chain)
    x = completions(prompt, N_STATES)
    paths = enumerate_paths(chain, prompt, sampler, fn)
    q = torch.tensor([paths.q.get(tuple(r.tolist()), 0.0) for r in x], dtype=torch.float64)
    assert abs(float(q.sum()) - 1) < 1e-9
    unmask_only = enumerate_paths(chain, prompt, type(sampler)(**{**sampler.params(), "tau_out": 0.0}), fn)
    assert paths.passes > unmask_only.passes  # tokens went back
    drawn = assert_decode_draws(chain, prompt, sampler, fn, q, seed=4)
    assert float(drawn.passes.double().mean()) == pytest.approx(paths.passes, rel=0.03)
