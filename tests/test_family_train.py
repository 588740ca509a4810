"""The family backbone's training options (issue 26): Neff sequence weights from the alignment,
weighted batch draws, residual dropout, and checkpoint selection on the validation loss that survives
a kill and resume — on hand-built alignments, a scalar parameter and a one-layer d=16 ESM-C."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.train_loop import BestWeights, draw_probs, optimise
from mdm_mi.infra.train_state import TrainState
from mdm_mi.protein.family import alignment as fam

pytest.importorskip("esm.models.esmc")

from mdm_mi.protein import train as ptrain# noqa: E402
from mdm_mi.protein.tokens import protein_tokens  # noqa: E402

DIMS = {"d_model": 16, "n_heads": 2, "n_layers": 1}
SEQS = ["ACDEFGHIKLMNPQ", "ACDEFGHIKLMNPW", "MKTAYIAKQRQISF", "WWYYHHKKRRDDEE", "GGSGGSAAVVLLII", "PPQQNNMMTTSSCC"]
VAL = ["ACDEFGHIKLMNQQ", "MKTAYIAKQRQIAF", "GGSGGSAAVVLLIV"]


def _cfg(**change) -> ptrain.ProteinTrainConfig:
    base = dict(steps=6, batch_size=4, lr=3e-3, warmup=0, weight_decay=0.0, t_min=0.2, t_max=1.0,
                loss_weight="none", crop_min=20, crop_max=20, grad_clip=1.0, seed=0, log_every=2, ema=0.0,
                save_every=0, snapshot_every=0, reweight_identity=0.0, dropout=0.0, eval_every=0)
    return ptrain.ProteinTrainConfig(**(base | change))


def _losses(history: list[dict]) -> list[tuple]:
    return [(r["step"], r["loss"]) for r in history]  # not the minutes


def _train(cfg, **kw):
    return ptrain.train_protein_mdm(SEQS, DIMS, -1, cfg, "cpu", log=lambda m: None, **kw)


# ---- sequence weights --------------------------------------------------------------------------------

def test_identical_sequences_share_one_weight_and_a_distinct_one_keeps_its_own():
    codes = fam.encode_columns(["ACDEFGHIKL", "ACDEFGHIKL", "WWYYHHKKRR"])
    assert np.allclose(fam.sequence_weights(codes, 0.8), [0.5, 0.5, 1.0])


def test_weights_count_neighbours_at_the_threshold_and_the_record_itself():
    # identities to row 0: 1.0 (itself), 0.8 (two changed columns of ten), 0.0; row 3 has no residue
    codes = fam.encode_columns(["ACDEFGHIKL", "ACDEFGHIWW", "WWYYHHKKRR", "----------"])
    assert np.allclose(fam.sequence_weights(codes, 0.8), [0.5, 0.5, 1.0, 1.0])
    assert np.allclose(fam.sequence_weights(codes, 0.9), [1.0, 1.0, 1.0, 1.0])
    blocked = fam.sequence_weights(codes, 0.8, block=3)  # a block boundary inside the matrix
    assert np.array_equal(blocked, fam.sequence_weights(codes, 0.8))
    with pytest.raises(InputError, match="must lie in"):
        fam.sequence_weights(codes, 0.0)


def test_neff_of_a_duplicated_family_is_the_number_of_distinct_members():
    rows = ["ACDEFGHIKL", "WWYYHHKKRR", "MNPQSTVACD"]
    codes = fam.encode_columns([r for r in rows for _ in range(5)] + ["GGGGGAAAAA"])
    weights = fam.sequence_weights(codes, 0.8)
    assert weights.sum() == pytest.approx(4.0) and np.allclose(weights[:15], 0.2)


# ---- weighted draws ------------------------------------------------------------------------------------

def test_weighted_draws_follow_the_weights():
    tok = protein_tokens()
    seqs = ["AAAA", "CCCC", "DDDD"]
    cfg = _cfg(batch_size=6000, t_min=0.0, t_max=0.0)  # nothing masked: the first residue names the draw
    probs = draw_probs(np.array([0.5, 0.25, 0.25]) * 3, 3)
    tokens, _, _ = ptrain.sample_batch(seqs, tok, cfg, np.random.default_rng(0), probs)
    ids = [int(tok.encode_batch([s])[0, 1]) for s in seqs]
    freq = np.array([(tokens[:, 1] == i).float().mean().item() for i in ids])
    assert np.allclose(freq, [0.5, 0.25, 0.25], atol=0.02)
    uniform, _, _ = ptrain.sample_batch(seqs, tok, cfg, np.random.default_rng(0))
    assert np.allclose([(uniform[:, 1] == i).float().mean().item() for i in ids], 1 / 3, atol=0.02)
    with pytest.raises(ValueError, match="sequence weights"):
        draw_probs(np.array([1.0, -1.0, 1.0]), 3)


def test_same_seed_same_weights_and_model():
    codes = fam.encode_columns(["ACDEFGHIKL", "ACDEFGHIKL", "ACDEFGHIKW", "WWYYHHKKRR", "MNPQSTVACD", "GGGGGAAAAA"])
    w1, w2 = fam.sequence_weights(codes, 0.8), fam.sequence_weights(codes, 0.8)
    assert np.array_equal(w1, w2)
    cfg = _cfg(reweight_identity=0.8, dropout=0.2, eval_every=3)
    (a, hist_a, best_a), (b, hist_b, best_b) = (_train(cfg, weights=w1, val=VAL) for _ in range(2))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k
    assert _losses(hist_a) == _losses(hist_b) and best_a.history == best_b.history
    plain, _, _ = _train(_cfg(eval_every=3), val=VAL)  # the options change the run
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), plain.state_dict().values()))


def test_dropout_is_active_in_training_only_and_leaves_the_checkpoint_alone():
    from mdm_mi.protein.model import new_esmc

    torch.manual_seed(0)
    model = new_esmc(**DIMS)
    keys = set(model.state_dict())
    tokens = protein_tokens().encode_batch(SEQS[:2])
    hooks = ptrain.residual_dropout(model, 0.5)
    model.train()
    x, y = (model(sequence_tokens=tokens).sequence_logits for _ in range(2))
    assert not torch.equal(x, y)  # two dropout masks
    model.eval()
    x, y = (model(sequence_tokens=tokens).sequence_logits for _ in range(2))
    assert torch.equal(x, y)
    for hook in hooks:
        hook.remove()
    assert set(model.state_dict()) == keys


def test_the_default_options_train_as_before_and_score_nothing():
    """Weights None, dropout 0 and eval_every 0 are the shipped model's run: a fixed seed gives the
    same weights whether or not the (unused) validation sequences are passed."""
    a, _, best = _train(_cfg())
    b, _, _ = _train(_cfg(), val=VAL)
    assert best is None
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# ---- checkpoint selection ------------------------------------------------------------------------------

SCRIPT = {2: 3.0, 4: 1.0, 6: 2.0, 8: 4.0}  # validation loss after each scored step: step 4 is best


def _scripted_run(state: TrainState | None = None, die_at: int | None = None):
    """A scalar parameter walking towards 1 for 8 steps, scored every 2 steps by SCRIPT → (final
    weight, weight after each step, BestWeights)."""
    w = torch.nn.Parameter(torch.tensor(3.0))
    trail, seen = {}, {"step": 0}

    def loss(step):
        if step == die_at:
            raise KeyboardInterrupt
        seen["step"] = step + 1
        return (w - 1.0) ** 2

    def score():
        trail[seen["step"]] = float(w.detach())
        return {"a": SCRIPT[seen["step"]], "b": SCRIPT[seen["step"]] + 1.0}

    best = BestWeights(2, score)
    cfg = SimpleNamespace(steps=8, lr=0.1, warmup=0, weight_decay=0.0, grad_clip=10.0, log_every=2, ema=0.0,
                          snapshot_every=0)
    optimise([w], loss, cfg, log=lambda m: None, state=state, best=best)
    return float(w.detach()), trail, best


def test_best_step_keeps_the_lowest_validation_loss_weights():
    final, trail, best = _scripted_run()
    assert best.step == 4 and best.loss == pytest.approx(1.5)  # the mean over the two losses
    assert [r["step"] for r in best.history] == [2, 4, 6, 8] and best.history[1]["a"] == 1.0
    assert final == trail[4] and final != trail[8]  # ended with step 4's weights, not the last


def test_a_killed_run_resumes_with_its_best_weights(tmp_path):
    whole, _, whole_best = _scripted_run()
    state = TrainState(tmp_path, 4, np.random.default_rng(0), {"run": 1})
    with pytest.raises(KeyboardInterrupt):
        _scripted_run(state, die_at=6)  # saved after step 4 (the best), killed in step 7
    assert (tmp_path / "train_state.safetensors").is_file()
    final, trail, best = _scripted_run(state)
    assert sorted(trail) == [6, 8]  # only the steps after the save are scored again
    assert final == whole and best.step == 4 and best.history == whole_best.history


def test_a_killed_protein_run_resumes_to_the_uninterrupted_model(tmp_path, monkeypatch):
    cfg = _cfg(steps=8, save_every=4, eval_every=2, dropout=0.1, reweight_identity=0.8)
    weights = np.array([0.5, 0.5, 1.0, 1.0, 1.0, 1.0])
    whole, hist, best = _train(cfg, weights=weights, val=VAL)
    real, calls = ptrain.diffusion_loss, {"n": 0}

    def dying(*args):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(ptrain, "diffusion_loss", dying)
    with pytest.raises(KeyboardInterrupt):
        _train(cfg, weights=weights, val=VAL, resume_dir=tmp_path)
    assert (tmp_path / "train_state.safetensors").is_file()
    monkeypatch.setattr(ptrain, "diffusion_loss", real)
    resumed, hist2, best2 = _train(cfg, weights=weights, val=VAL, resume_dir=tmp_path)
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
    assert _losses(hist) == _losses(hist2) and best2.history == best.history and best2.step == best.step
    assert [r["step"] for r in best.history] == [2, 4, 6, 8]


def test_the_saved_model_is_the_best_scored_step(monkeypatch):
    """With a validation score that favours step 2 of 6, the model returned holds step 2's weights."""
    calls, snaps = [], []

    def fake(backbone, seqs, t, seed):
        if len(calls) % len(ptrain.MASK_RATES) == 0:  # the first rate of a new scoring
            snaps.append([p.detach().clone() for p in backbone.parameters()])
        calls.append(t)
        return (1.0 if len(snaps) == 1 else 5.0), len(seqs)

    monkeypatch.setattr(ptrain, "masked_loss", fake)
    model, _, best = _train(_cfg(steps=6, eval_every=2), val=VAL)
    assert len(snaps) == 3 and best.step == 2 and best.loss == 1.0
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), snaps[0]))
    assert not all(torch.equal(a, b) for a, b in zip(model.parameters(), snaps[-1]))
    assert not model.training


def test_with_a_weight_average_the_average_is_scored_and_training_goes_on_undisturbed():
    """Scores falling at every scoring: the run ends as the unscored run does (the average of the
    last step), so scoring the average put the raw weights back each time."""
    cfg = SimpleNamespace(steps=8, lr=0.1, warmup=0, weight_decay=0.0, grad_clip=10.0, log_every=2, ema=0.8,
                          snapshot_every=0)

    def run(scored: bool) -> tuple[float, list[float]]:
        w, seen = torch.nn.Parameter(torch.tensor(3.0)), []

        def score():
            seen.append(float(w.detach()))
            return {"a": 10.0 - len(seen)}

        best = BestWeights(2, score) if scored else None
        optimise([w], lambda step: (w - 1.0) ** 2, cfg, log=lambda m: None, best=best)
        return float(w.detach()), seen

    plain, _ = run(False)
    final, seen = run(True)
    assert final == plain and seen[-1] == pytest.approx(plain)  # the last scored weights: the average
