"""Remasking in decode (mdm_mi.core.remask), checked on the exact testbed: the output distribution of a
remasking rule enumerated over all its paths (brute force, a sum over every way a token is drawn, sent
back and drawn again) is what the project's decode draws from; for unmask-only rules the path sum equals
the one-path replay; clues are never touched, every pass makes progress, seeds reproduce."""

from __future__ import annotations

import math

import pytest
import torch

from decode_draws import assert_decode_draws
from mdm_mi.core.remask import Check, cap_remask, check_rows, progress_violations
from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded, decode
from mdm_mi.core.streams import RowStreams, row_keys
from mdm_mi.core.wino import EBVerify, Wino
from mdm_mi.mi.guided import OracleMI
from mdm_mi.mi.remask import MIRemask
from mdm_mi.testbed.chain import ChainBackbone, PottsChain, exact_pairwise_fn
from mdm_mi.testbed.exact_kl import completions, enumerate_kl, enumerate_paths, replay

N_SITES, N_STATES = 5, 3


@pytest.fixture(scope="module")
def chain() -> ChainBackbone:
    """One instance of a 5-site, 3-state chain whose random couplings make both remasking rules below
    send tokens back (their expected passes exceed their drafts' alone)."""
    g = torch.Generator().manual_seed(13)
    fields = 0.5 * torch.randn(1, N_SITES, N_STATES, generator=g, dtype=torch.float64)
    couplings = 1.0 * torch.randn(N_SITES - 1, N_STATES, N_STATES, generator=g, dtype=torch.float64)
    return ChainBackbone(PottsChain(fields, couplings))


def _prompt(model: ChainBackbone) -> torch.Tensor:
    return model.prompts(torch.tensor([0]))[0]


def _remaskers(model: ChainBackbone):
    return {"wino": (Wino(tau=0.5, tau_out=0.6), None), "eb-verify": (EBVerify(gamma=1.0, tau_out=0.6), None),
            "mi-remask": (MIRemask(gamma=2.0, kappa=0.001, on_reject="skip", charge_first=False), exact_pairwise_fn(model))}


def _drafts(model: ChainBackbone):
    """Each remasking rule's admission alone (the same rule with no remasking)."""
    return {"wino": (ConfidenceThreshold(tau=0.5), None), "eb-verify": (EntropyBounded(gamma=1.0), None),
            "mi-remask": (OracleMI(2.0, 1.0, "skip", False), exact_pairwise_fn(model))}


def _q(model, prompt, sampler, pairwise_fn) -> tuple[torch.Tensor, float]:
    x = completions(prompt, N_STATES)
    paths = enumerate_paths(model, prompt, sampler, pairwise_fn)
    return torch.tensor([paths.q.get(tuple(r.tolist()), 0.0) for r in x], dtype=torch.float64), paths.passes


@pytest.mark.parametrize("sampler", [EntropyBounded(gamma=1.0), ConfidenceThreshold(tau=0.5),
                                     OracleMI(1.5, 1.0, "skip", False)], ids=["eb", "threshold", "mi-exact"])
def test_the_path_sum_equals_the_one_path_replay_for_unmask_only_rules(chain, sampler):
    prompt = _prompt(chain)
    pairwise_fn = exact_pairwise_fn(chain) if sampler.uses_pairwise else None
    q, passes = _q(chain, prompt, sampler, pairwise_fn)
    x = completions(prompt, N_STATES)
    rep = replay(chain, prompt.expand_as(x), x, sampler, pairwise_fn)
    assert torch.allclose(rep.log_q.exp(), q, atol=1e-12)
    assert passes == pytest.approx(float((q * rep.passes.double()).sum()), abs=1e-9)


@pytest.mark.parametrize("rule", ["wino", "eb-verify", "mi-remask"])
def test_decode_draws_from_the_enumerated_distribution_of_a_remasking_rule(chain, rule):
    sampler, pairwise_fn = _remaskers(chain)[rule]
    prompt = _prompt(chain)
    q, passes = _q(chain, prompt, sampler, pairwise_fn)
    assert float(q.sum()) == pytest.approx(1.0, abs=1e-9)
    assert passes > _q(chain, prompt, *_drafts(chain)[rule])[1] + 0.1  # tokens were sent back
    n = 20_000
    drawn = assert_decode_draws(chain, prompt, sampler, pairwise_fn, q, seed=3, n=n)
    mean, se = drawn.passes.double().mean(), drawn.passes.double().std() / math.sqrt(n)
    assert abs(float(mean) - passes) < 6 * float(se) + 1e-9


def test_remasking_happens_and_changes_the_distribution(chain):
    """With a check that sends back every token it can, the rule takes more passes than its unmask-only
    draft (the same threshold without remasking), and its output distribution differs."""
    prompt = _prompt(chain)
    strict = Wino(tau=0.5, tau_out=1.0)
    q_strict, passes_strict = _q(chain, prompt, strict, None)
    q_draft, passes_draft = _q(chain, prompt, ConfidenceThreshold(tau=0.5), None)
    assert passes_strict > passes_draft + 0.5
    assert float((q_strict - q_draft).abs().sum()) > 1e-3
    exact = enumerate_kl(chain, prompt, strict)
    assert exact.q_total == pytest.approx(1.0, abs=1e-9) and exact.kl_pq >= 0 and exact.kl_qp >= 0


def test_clues_are_never_touched_and_no_mask_is_left(chain):
    prompt = _prompt(chain).clone()
    prompt[2], prompt[4] = 1, 0  # two clue sites
    rows = prompt.expand(500, -1)
    for sampler, pairwise_fn in _remaskers(chain).values():
        out = decode(chain, rows, sampler, torch.Generator().manual_seed(0), decoding=_sampling(), pairwise_fn=pairwise_fn)
        assert (out.tokens[:, 2] == 1).all() and (out.tokens[:, 4] == 0).all() and (out.tokens[:, 0] == prompt[0]).all()
        assert not (out.tokens == chain.mask_id).any()
        assert (out.passes <= N_SITES - 2).all()  # every pass leaves fewer masks than it found


def test_the_same_row_keys_give_the_same_remasked_fills(chain):
    sampler, _ = _remaskers(chain)["wino"]
    rows = _prompt(chain).expand(64, -1)
    streams = lambda: RowStreams(row_keys(5, torch.arange(64), 0, sampler.stream_tag()))
    a = decode(chain, rows, sampler, streams(), decoding=_sampling())
    b = decode(chain, rows, sampler, streams(), decoding=_sampling())
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passes, b.passes)


def test_a_rule_that_sends_back_everything_it_drew_is_refused(chain):
    class Greedy(Wino):
        def remask(self, check: Check) -> torch.Tensor:
            return check.pending

    with pytest.raises(RuntimeError, match="sent back as many tokens"):
        decode(chain, _prompt(chain).expand(4, -1), Greedy(tau=0.5, tau_out=1.0), torch.Generator().manual_seed(0),
               decoding=_sampling())


def test_cap_remask_keeps_the_least_supported_and_leaves_progress():
    back = torch.tensor([[True, True, True, False], [True, False, False, False]])
    logp = torch.tensor([[-1.0, -3.0, -2.0, float("nan")], [-0.5, float("nan"), float("nan"), float("nan")]],
                        dtype=torch.float64)
    drafted = torch.tensor([[False, False, True, True], [True, False, False, False]])  # 2 and 1 drawn
    capped = cap_remask(back, logp, drafted)
    assert capped.tolist() == [[False, True, False, False], [False, False, False, False]]
    assert not progress_violations(capped, drafted).any()


def test_check_rows_mask_one_pending_token_each():
    tokens = torch.tensor([[5, 1, 2], [3, 4, 0]])
    pending = torch.tensor([[False, True, True], [True, False, False]])
    rows, where = check_rows(tokens, pending, mask_id=9)
    assert where.tolist() == [[0, 1], [0, 2], [1, 0]]
    assert rows.tolist() == [[5, 9, 2], [5, 1, 9], [9, 4, 0]]


def _sampling():
    from mdm_mi.infra.flags import Decoding

    return Decoding(temperature=1.0)
