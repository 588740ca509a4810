"""The PRISM-style quality head and its rules (mdm_mi.quality, mdm_mi.core.prism): the head's features
and checkpoint, its training states' labels, a head that learns what it can, and decode with a
quality-reading sampler (clues kept, no mask left, written tokens only sent back, progress every pass,
unmask-only when nothing falls below tau_out, same seed same output)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.core.prism import EBPrism, Prism
from mdm_mi.core.samplers import EntropyBounded, decode
from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT, CheckpointError
from mdm_mi.quality.head import (N_TOKEN_FEATURES, QualityConfig, QualityHead, load_quality_head, quality_fn,
                                 save_quality_head, token_features)
from mdm_mi.quality.states import QualityStates, decode_states
from mdm_mi.quality.train import QualityTrainConfig, auc, scores, train_quality_head
from mdm_mi.sudoku.grid import MASK_ID

CFG = QualityConfig(width=8, heads=2, layers=1)


def _head(backbone, seed: int = 0) -> QualityHead:
    torch.manual_seed(seed)
    return QualityHead(backbone.hidden_dim + N_TOKEN_FEATURES, CFG).eval()


def _puzzles(easy_puzzles, n: int = 6):
    puzzles, solutions = easy_puzzles
    return torch.as_tensor(puzzles[:n]), torch.as_tensor(solutions[:n])


def test_token_features_hold_the_hidden_state_and_the_held_tokens_log_probability(tiny_model, easy_puzzles):
    puzzles, solutions = _puzzles(easy_puzzles, 2)
    tokens = torch.where(torch.arange(81) % 2 == 0, solutions, puzzles)  # every other cell written
    with torch.no_grad():
        out = tiny_model(tokens)
    f = token_features(tiny_model, out, tokens)
    assert f.shape == (2, 81, tiny_model.hidden_dim + N_TOKEN_FEATURES)
    assert torch.equal(f[..., :tiny_model.hidden_dim], out.hidden.float())
    masked = tokens == MASK_ID
    assert torch.equal(f[..., -4] > 0.5, masked)
    logp = torch.log_softmax(out.logits.float(), -1)
    b, i = (~masked).nonzero()[0]
    assert f[b, i, -1] == pytest.approx(float(logp[b, i, tokens[b, i]]))
    assert bool((f[..., -1][masked] == 0).all())


def test_the_head_round_trips_and_refuses_a_head_of_another_model(tmp_path, tiny_model):
    head = _head(tiny_model)
    save_quality_head(head, tmp_path / "q", {MODEL_FINGERPRINT: "abc"})
    again = load_quality_head(tmp_path / "q", "abc")
    x = torch.randn(2, 81, head.in_dim)
    with torch.no_grad():
        assert torch.equal(head(x), again(x))
    with pytest.raises(CheckpointError, match="another model"):
        load_quality_head(tmp_path / "q", "xyz")


def test_decode_states_label_each_position_and_never_judge_a_clue(tiny_model, easy_puzzles):
    puzzles, solutions = _puzzles(easy_puzzles, 3)
    states = decode_states(tiny_model, puzzles, solutions, torch.tensor([5, 9, 81]), batch_size=2)
    blanks = (puzzles == MASK_ID).sum(1)
    assert len(states) == sum(-(-int(b) // k) for b, k in zip(blanks, (5, 9, 81)))  # ⌈blanks / k⌉ passes each
    first = states.subset(torch.tensor([0]))  # item 0 before any write: every blank masked
    assert torch.equal(first.judged[0], puzzles[0] == MASK_ID)
    masked = states.features[..., -N_TOKEN_FEATURES] > 0.5
    wrong = (~states.right & ~masked & states.judged).any(1)  # states with a wrong written token
    assert not (states.judged & masked)[wrong].any()  # … judge no masked position
    assert bool(wrong.any())  # the tiny random model errs
    with torch.no_grad():
        out = tiny_model(puzzles[:1])
    best = out.logits.argmax(-1)[0]
    assert torch.equal(first.right[0][first.judged[0]], (best == solutions[0])[first.judged[0]])


def test_the_head_learns_a_rule_it_can_see():
    g = torch.Generator().manual_seed(0)
    feats = torch.randn(400, 12, 4 + N_TOKEN_FEATURES, generator=g)
    feats[..., -N_TOKEN_FEATURES] = 1.0  # every position masked
    right = feats[..., 0] > 0
    judged = torch.ones_like(right)
    train, val = QualityStates(feats[:300], right[:300], judged[:300]), QualityStates(feats[300:], right[300:], judged[300:])
    before = scores(QualityHead(feats.shape[-1], CFG).eval(), val)
    head, history = train_quality_head(train, QualityTrainConfig(300, 32, 1e-2, 0.0, 0), CFG, val, log=lambda s: None)
    after = scores(head, val)
    assert after["bce"] < before["bce"] and after["auc_masked"] > 0.95 and np.isnan(after["auc_written"]) and min(r["val_bce"] for r in history) == after["bce"]


def test_auc_is_one_for_a_perfect_score_zero_reversed_and_half_for_ties():
    pos = torch.tensor([True, True, False, False])
    assert auc(torch.tensor([3.0, 2.0, 1.0, 0.0]), pos) == 1.0
    assert auc(torch.tensor([0.0, 1.0, 2.0, 3.0]), pos) == 0.0
    assert auc(torch.zeros(4), pos) == 0.5
    assert np.isnan(auc(torch.zeros(2), torch.tensor([True, True])))


def _two_waves(puzzle: torch.Tensor, low_at: int | None = None):
    """A quality fn for one puzzle: the first half of its blanks (wave A) trusted at 0.9; the rest (wave B)
    at 0.1 while a wave-A cell is masked, then 0.9; a written token at 0.9, except at ``low_at`` (0.01). At
    tau 0.5 pass 1 writes wave A, pass 2 wave B (at least two cells, so one token may go back)."""
    blanks = (puzzle == MASK_ID).nonzero()[:, 0]
    wave_a, wave_b = blanks[: len(blanks) // 2], blanks[len(blanks) // 2:]

    def fn(out: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        q = torch.full(masked.shape, 0.9)
        waiting = masked[:, wave_a].any(1, keepdim=True)
        q[:, wave_b] = torch.where(masked[:, wave_b] & waiting, 0.1, 0.9)
        if low_at is not None:
            q[:, low_at] = torch.where(masked[:, low_at], 0.9, 0.01)
        return q
    return fn


def test_prism_keeps_clues_fills_every_mask_and_reproduces(tiny_model, easy_puzzles):
    puzzles, _ = _puzzles(easy_puzzles)
    fn = quality_fn(_head(tiny_model), tiny_model)
    sampler = Prism(tau=0.6, tau_out=0.4)
    a = decode(tiny_model, puzzles, sampler, torch.Generator().manual_seed(0), pairwise_fn=fn)
    b = decode(tiny_model, puzzles, sampler, torch.Generator().manual_seed(0), pairwise_fn=fn)
    clue = puzzles != MASK_ID
    assert torch.equal(a.tokens[clue], puzzles[clue]) and not (a.tokens == MASK_ID).any()
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passes, b.passes)
    assert bool((a.passes <= (puzzles == MASK_ID).sum(1)).all())


def test_prism_sends_back_only_the_written_token_it_distrusts_and_still_progresses(tiny_model, easy_puzzles):
    puzzles, _ = _puzzles(easy_puzzles, 1)
    blank = int((puzzles[0] == MASK_ID).nonzero()[0])  # in wave A
    clue = int((puzzles[0] != MASK_ID).nonzero()[0])
    sampler = Prism(tau=0.5, tau_out=0.5)
    trusting = decode(tiny_model, puzzles, sampler, pairwise_fn=_two_waves(puzzles[0]))
    assert int(trusting.passes[0]) == 2
    # `blank`, written at pass 1, is distrusted: pass 2 writes wave B and sends it back, pass 3 writes it again
    doubting = decode(tiny_model, puzzles, sampler, pairwise_fn=_two_waves(puzzles[0], blank))
    assert int(doubting.passes[0]) == 3 and torch.equal(doubting.tokens, trusting.tokens)
    # a distrusted clue is never touched
    kept = decode(tiny_model, puzzles, sampler, pairwise_fn=_two_waves(puzzles[0], clue))
    assert torch.equal(kept.tokens, trusting.tokens) and int(kept.passes[0]) == 2
    # nothing below tau_out 0: unmask-only
    never = decode(tiny_model, puzzles, Prism(tau=0.5, tau_out=0.0), pairwise_fn=_two_waves(puzzles[0], blank))
    assert int(never.passes[0]) == 2


def test_eb_prism_is_eb_when_nothing_falls_below_tau_out(tiny_model, easy_puzzles):
    puzzles, _ = _puzzles(easy_puzzles)
    eb = decode(tiny_model, puzzles, EntropyBounded(gamma=0.5))
    both = decode(tiny_model, puzzles, EBPrism(gamma=0.5, tau_out=0.0), pairwise_fn=_two_waves(puzzles[0]))
    assert torch.equal(eb.tokens, both.tokens) and torch.equal(eb.passes, both.passes)


def test_a_quality_sampler_without_a_quality_source_is_refused(tiny_model, easy_puzzles):
    puzzles, _ = _puzzles(easy_puzzles, 1)
    with pytest.raises(ValueError, match="needs a pairwise matrix"):
        decode(tiny_model, puzzles, Prism(tau=0.5, tau_out=0.5))
    with pytest.raises(ValueError, match="tau_out must lie"):
        Prism(tau=0.5, tau_out=1.5)
