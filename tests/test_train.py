"""Properties of :mod:`mdm_mi.sudoku.train`: symmetries keep grids valid, masking rates stay in
[t_min, t_max], the loss only reads masked cells, the LR schedule's endpoints, and a tiny model
learns."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from conftest import TINY_CFG, make_tiny_model
from mdm_mi.infra.train_loop import lr_at
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, is_valid_solution
from mdm_mi.sudoku.train import TrainConfig, augment, diffusion_loss, mask_batch, train

BASE = TrainConfig(steps=100, batch_size=8, lr=1e-2, warmup=10, weight_decay=0.0, t_min=0.05, t_max=1.0,
                   loss_weight="none", augment=True, grad_clip=1.0, seed=0, log_every=5, compile=False, ema=0.0, save_every=0, snapshot_every=0)


def cfg(**changes) -> TrainConfig:
    return dataclasses.replace(BASE, **changes)


@pytest.fixture(scope="module")
def solutions(easy_puzzles) -> torch.Tensor:
    return torch.as_tensor(easy_puzzles[1])


# --- augmentation ----------------------------------------------------------------------------------


def test_augment_keeps_grids_valid(solutions):
    gen = torch.Generator().manual_seed(0)
    grids = solutions.repeat(10, 1)  # 200 grids, 200 random symmetries
    out = augment(grids, gen)
    assert out.shape == grids.shape and out.dtype == grids.dtype
    assert is_valid_solution(out).all()


def test_augment_is_seeded_deterministic(solutions):
    a = augment(solutions, torch.Generator().manual_seed(3))
    b = augment(solutions, torch.Generator().manual_seed(3))
    c = augment(solutions, torch.Generator().manual_seed(4))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_augment_changes_grids_and_leaves_input_alone(solutions):
    before = solutions.clone()
    out = augment(solutions, torch.Generator().manual_seed(0))
    assert torch.equal(solutions, before)
    assert (out != solutions).any(1).all()  # a random symmetry almost surely moves something


def test_augment_draws_many_distinct_symmetries():
    """500 draws on one grid give (almost) 500 different grids: the symmetry group is large
    (9!·6^8·2) and the draws are not stuck on a few of its elements."""
    grid = torch.tensor([[(3 * (r % 3) + r // 3 + c) % 9 for r in range(9) for c in range(9)]])
    assert is_valid_solution(grid).item()
    out = augment(grid.repeat(500, 1), torch.Generator().manual_seed(0))
    assert len({tuple(g.tolist()) for g in out}) > 450


# --- masking ---------------------------------------------------------------------------------------


def test_mask_batch_rates_stay_within_t_range(solutions):
    c = cfg(t_min=0.2, t_max=0.4)
    grids = solutions.repeat(200, 1)  # 4000 grids
    tokens, masked, t = mask_batch(grids, c, torch.Generator().manual_seed(0))
    assert t.shape == (len(grids), 1)
    assert ((t >= 0.2) & (t <= 0.4)).all()
    assert torch.equal(tokens == MASK_ID, masked)
    assert torch.equal(tokens[~masked], grids[~masked])
    rate = masked.float().mean(1, keepdim=True)
    # each grid's mask rate is Binomial(81, t) / 81: within 5 standard deviations of its t
    sd = (t * (1 - t) / N_CELLS).sqrt()
    assert ((rate - t).abs() <= 5 * sd).all()
    assert abs(rate.mean().item() - 0.3) < 0.01
    assert rate.min() > 0.2 - 5 * math.sqrt(0.2 * 0.8 / 81) and rate.max() < 0.4 + 5 * math.sqrt(0.4 * 0.6 / 81)
    # t is spread over the range, not a constant
    assert t.min() < 0.21 and t.max() > 0.39


@pytest.mark.parametrize(("t", "expected"), [(0.0, 0.0), (1.0, 1.0)])
def test_mask_batch_extremes(solutions, t, expected):
    _, masked, _ = mask_batch(solutions, cfg(t_min=t, t_max=t), torch.Generator().manual_seed(0))
    assert masked.float().mean().item() == expected


def test_mask_batch_is_seeded(solutions):
    a = mask_batch(solutions, BASE, torch.Generator().manual_seed(5))
    b = mask_batch(solutions, BASE, torch.Generator().manual_seed(5))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


# --- loss ------------------------------------------------------------------------------------------


def test_loss_reads_only_masked_cells(solutions):
    """Changing the logits at unmasked cells does not change the loss."""
    model = make_tiny_model()
    c = cfg(t_min=0.5, t_max=0.5)
    _, masked, _ = mask_batch(solutions, c, torch.Generator().manual_seed(1))

    def forward_all(tokens, poison=False):
        logits, hidden = model.forward_all(tokens)
        if poison:
            logits = torch.where(masked.unsqueeze(-1), logits, torch.randn_like(logits) * 50)
        return logits, hidden

    a = diffusion_loss(forward_all, solutions, c, torch.Generator().manual_seed(1), "cpu")
    b = diffusion_loss(lambda t: forward_all(t, True), solutions, c, torch.Generator().manual_seed(1), "cpu")
    assert torch.allclose(a, b)


def test_elbo_weighting_is_one_over_t(solutions):
    model = make_tiny_model()
    none = diffusion_loss(model.forward_all, solutions, cfg(t_min=0.25, t_max=0.25), torch.Generator().manual_seed(2), "cpu")
    elbo = diffusion_loss(model.forward_all, solutions, cfg(t_min=0.25, t_max=0.25, loss_weight="elbo"),
                          torch.Generator().manual_seed(2), "cpu")
    _, masked, _ = mask_batch(solutions, cfg(t_min=0.25, t_max=0.25), torch.Generator().manual_seed(2))
    frac = masked.float().mean()
    assert torch.allclose(elbo, none * frac / 0.25, rtol=1e-5)


def test_loss_with_nothing_masked_is_zero(solutions):
    model = make_tiny_model()
    loss = diffusion_loss(model.forward_all, solutions, cfg(t_min=0.0, t_max=0.0), torch.Generator(), "cpu")
    assert loss.item() == 0.0


def test_a_few_steps_decrease_the_loss_on_a_fixed_batch(solutions):
    model = make_tiny_model().train()
    c = cfg(t_min=0.3, t_max=0.3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def loss_now():
        return diffusion_loss(model.forward_all, solutions[:8], c, torch.Generator().manual_seed(0), "cpu")

    first = loss_now().item()
    for _ in range(15):
        loss = loss_now()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss_now().item() < 0.9 * first


# --- schedule --------------------------------------------------------------------------------------


def test_lr_warmup_and_cosine_endpoints():
    c = cfg(steps=100, warmup=10, lr=1.0)
    assert lr_at(0, c) == pytest.approx(0.1)  # (step + 1) / warmup
    assert lr_at(9, c) == pytest.approx(1.0)  # peak at the end of warm-up
    assert lr_at(10, c) == pytest.approx(1.0)  # cosine starts at the peak
    assert lr_at(55, c) == pytest.approx(0.55)  # half way: 0.1 + 0.9 / 2
    assert lr_at(100, c) == pytest.approx(0.1)  # decays to 10%
    assert 0.1 < lr_at(99, c) < 0.101
    warm = [lr_at(s, c) for s in range(10)]
    decay = [lr_at(s, c) for s in range(10, 101)]
    assert warm == sorted(warm) and decay == sorted(decay, reverse=True)


def test_lr_without_warmup_starts_at_peak():
    c = cfg(steps=50, warmup=0, lr=0.5)
    assert lr_at(0, c) == pytest.approx(0.5)
    assert lr_at(50, c) == pytest.approx(0.05)


# --- the training loop -----------------------------------------------------------------------------


def test_train_runs_logs_and_is_seeded(solutions):
    c = cfg(steps=6, batch_size=4, log_every=4, warmup=2)
    model_a, history = train(solutions.numpy(), TINY_CFG, c, "cpu", log=lambda m: None)
    model_b, _ = train(solutions.numpy(), TINY_CFG, c, "cpu", log=lambda m: None)
    assert not model_a.training
    assert [h["step"] for h in history] == [4, 6]
    assert all(math.isfinite(h["loss"]) and h["loss"] > 0 for h in history)
    for key, value in model_a.state_dict().items():
        assert torch.equal(value, model_b.state_dict()[key]), key


def test_ema_weights_are_the_moving_average_of_every_steps_weights():
    """On one scalar parameter, ``optimise`` with ``ema`` ends at Σ_s (1−e) e^(S−s) w_s + e^S w_0,
    computed here by hand from the weights after each step of a run without EMA."""
    from types import SimpleNamespace

    from mdm_mi.infra.train_loop import optimise

    settings = dict(steps=12, lr=0.1, warmup=2, weight_decay=0.0, grad_clip=10.0, log_every=4)
    trail = []

    def run(ema: float) -> float:
        w = torch.nn.Parameter(torch.tensor(3.0))

        def loss(step):
            if ema == 0.0:
                trail.append(float(w.detach()))  # weights before this step (w_0 … w_{S-1})
            return (w - 1.0) ** 2

        optimise([w], loss, SimpleNamespace(ema=ema, **settings), log=lambda m: None)
        if ema == 0.0:
            trail.append(float(w.detach()))
        return float(w.detach())

    run(0.0)
    e = 0.8
    expected = trail[0]
    for w_s in trail[1:]:
        expected = e * expected + (1 - e) * w_s
    assert run(e) == pytest.approx(expected, rel=1e-5)
    assert run(e) != pytest.approx(trail[-1])  # the average, not the last weights
    with pytest.raises(ValueError, match="ema must lie in"):
        optimise([torch.nn.Parameter(torch.tensor(0.0))], lambda s: torch.tensor(0.0),
                 SimpleNamespace(ema=1.5, steps=1, lr=0.1, warmup=1, weight_decay=0.0, grad_clip=1.0, log_every=1))


class Killed(Exception):
    """Stands in for a kill signal in the middle of a run."""


@pytest.mark.parametrize("ema", [0.0, 0.9])
def test_a_killed_run_resumes_to_the_uninterrupted_weights(solutions, tmp_path, monkeypatch, ema):
    import mdm_mi.sudoku.train as train_mod

    run_cfg = cfg(steps=12, save_every=4, log_every=3, ema=ema)
    whole, whole_hist = train(solutions, TINY_CFG, run_cfg, "cpu", log=lambda m: None)
    real_loss = train_mod.diffusion_loss
    calls = {"n": 0}

    def dying_loss(*args):
        calls["n"] += 1
        if calls["n"] == 10:  # after the save at step 8, before the one at 12
            raise Killed
        return real_loss(*args)

    monkeypatch.setattr(train_mod, "diffusion_loss", dying_loss)
    with pytest.raises(Killed):
        train(solutions, TINY_CFG, run_cfg, "cpu", log=lambda m: None, resume_dir=tmp_path)
    assert (tmp_path / "train_state.safetensors").is_file()
    monkeypatch.setattr(train_mod, "diffusion_loss", real_loss)
    lines = []
    resumed, hist = train(solutions, TINY_CFG, run_cfg, "cpu", log=lines.append, resume_dir=tmp_path)
    assert lines[0].startswith("resumed from") and "after step 8" in lines[0]
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
    assert [r["loss"] for r in hist] == [r["loss"] for r in whole_hist]
    assert not (tmp_path / "train_state.safetensors").exists()  # cleared once the run finished


def test_resuming_with_other_settings_is_refused(solutions, tmp_path, monkeypatch):
    import mdm_mi.sudoku.train as train_mod
    from mdm_mi.infra.errors import InputError

    monkeypatch.setattr(train_mod.TrainState, "clear", lambda self: None)  # keep the state of a finished run
    train(solutions, TINY_CFG, cfg(steps=6, save_every=2), "cpu", log=lambda m: None, resume_dir=tmp_path)
    with pytest.raises(InputError, match="other settings \\(lr\\)"):
        train(solutions, TINY_CFG, cfg(steps=6, save_every=2, lr=0.5), "cpu", log=lambda m: None, resume_dir=tmp_path)


def test_snapshots_are_taken_every_snapshot_every_steps(solutions):
    steps = []
    train(solutions, TINY_CFG, cfg(steps=10, snapshot_every=4), "cpu", log=lambda m: None,
          snapshot=lambda step, model: steps.append(step))
    assert steps == [4, 8]


# --- warm restart from a checkpoint's weights (--init-from; the GPU leases of issue 39) ------------


def test_init_state_is_where_training_starts(solutions):
    start = make_tiny_model(seed=5).state_dict()
    frozen = cfg(steps=2, lr=0.0, weight_decay=0.0)  # a zero learning rate leaves the weights where they start
    model, _ = train(solutions.numpy(), TINY_CFG, frozen, "cpu", log=lambda m: None, init_state=start)
    for key, value in model.state_dict().items():
        assert torch.equal(value, start[key]), key
    fresh, _ = train(solutions.numpy(), TINY_CFG, frozen, "cpu", log=lambda m: None)
    assert not all(torch.equal(v, start[k]) for k, v in fresh.state_dict().items())


def _pretrain_argv(solutions_file, out, steps: int, d_model: int = 16) -> list[str]:
    return ["sudoku-pretrain", "--solutions", str(solutions_file), "--out", str(out), "--d-model", str(d_model),
            "--n-layers", "1", "--n-heads", "2", "--ff-mult", "2", "--dropout", "0", "--hidden-layer", "-1",
            "--steps", str(steps), "--batch-size", "4", "--lr", "0.01", "--warmup", "1", "--weight-decay", "0",
            "--t-min", "0.05", "--t-max", "1", "--loss-weight", "none", "--augment", "--no-compile",
            "--grad-clip", "1", "--log-every", "1", "--ema", "0", "--save-every", "0", "--snapshot-every", "0",
            "--device", "cpu", "--seed", "0", "--threads", "1", "--tracking-uri", "none"]


def test_init_from_counts_steps_across_runs_and_refuses_another_shape(solutions, tmp_path, capsys):
    import json

    import numpy as np

    from mdm_mi.cli import main

    data = tmp_path / "train.npy"
    np.save(data, solutions.numpy().astype(np.uint8))  # what the GPU lease carries: uint8 is enough
    assert main(_pretrain_argv(data, tmp_path / "a", steps=3)) in (0, None)
    assert main(_pretrain_argv(data, tmp_path / "b", steps=2) + ["--init-from", str(tmp_path / "a")]) in (0, None)
    meta = json.loads((tmp_path / "b" / "meta.json").read_text())
    assert meta["total_steps"] == 5 and meta["init_from"] == str(tmp_path / "a")
    assert main(_pretrain_argv(data, tmp_path / "c", steps=2, d_model=8) + ["--init-from", str(tmp_path / "a")]) not in (0, None)
    err = capsys.readouterr().err.strip().splitlines()
    assert "another model shape" in err[-1] and "Traceback" not in "".join(err)
    assert not (tmp_path / "c").exists()


def test_gpu_batch_probe_takes_a_doubling_only_while_it_pays():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_batch_probe.py"
    spec = importlib.util.spec_from_file_location("gpu_batch_probe", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    rows = [{"batch": b, "steps_per_s": s, "grids_per_s": b * s} for b, s in
            ((256, 74.0), (512, 69.0), (1024, 50.0), (2048, 28.0), (4096, 15.0))]  # the H200's, rounded
    pick = probe.choose(rows)
    assert pick["batch"] == 1024  # 2048 gains 12% over 1024, below MIN_GAIN
    assert pick["lr"] == pytest.approx(2e-3)
    assert probe.choose(rows[:1])["lr"] == pytest.approx(1e-3)
    flat = [{"batch": b, "steps_per_s": 100.0 / b, "grids_per_s": 100.0} for b in (256, 512)]
    assert probe.choose(flat)["batch"] == 256
