"""Properties of :mod:`mdm_mi.infra.checkpoint` and :func:`mdm_mi.sudoku.model.load_sudoku_model`: an exact
round trip without unpickling, and a one-line CheckpointError for every broken checkpoint."""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil

import pytest
import torch

from conftest import TINY_CFG, make_tiny_model
from mdm_mi.infra.checkpoint import META, WEIGHTS, CheckpointError, load_checkpoint, save_checkpoint
from mdm_mi.sudoku.grid import MASK_ID
from mdm_mi.sudoku.model import DOMAIN, SudokuMDM, load_sudoku_model


@pytest.fixture
def ckpt(tmp_path, tiny_checkpoint):
    """A private copy of the tiny checkpoint that a test may break."""
    return shutil.copytree(tiny_checkpoint, tmp_path / "model")


def sample_tokens(seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 9, (4, 81), generator=gen)
    return tokens.masked_fill(torch.rand(4, 81, generator=gen) < 0.5, MASK_ID)


def assert_one_line_error(info, *fragments):
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_round_trip_gives_identical_weights_and_outputs(tmp_path, tiny_model):
    save_checkpoint(tiny_model, tmp_path / "m", {"domain": DOMAIN, "model": dataclasses.asdict(TINY_CFG), "x": [1]})
    loaded, meta = load_sudoku_model(tmp_path / "m")
    assert meta["x"] == [1] and meta["domain"] == DOMAIN
    assert not loaded.training
    ref, got = tiny_model.state_dict(), loaded.state_dict()
    assert ref.keys() == got.keys()
    for key in ref:
        assert torch.equal(ref[key], got[key]), key
    tokens = sample_tokens()
    with torch.no_grad():
        a, b = tiny_model(tokens), loaded(tokens)
    assert torch.equal(a.logits, b.logits) and torch.equal(a.hidden, b.hidden)


def test_save_writes_only_weights_and_meta(tmp_path, tiny_model):
    save_checkpoint(tiny_model, tmp_path / "m", {"domain": DOMAIN})
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted([WEIGHTS, META])
    assert (tmp_path / "m" / WEIGHTS).read_bytes()[8:9] == b"{"  # safetensors: u64 length + JSON header


def test_loading_never_unpickles(monkeypatch, tiny_checkpoint):
    def refuse(*args, **kwargs):
        raise AssertionError("checkpoint loading must not unpickle")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    model, meta = load_sudoku_model(tiny_checkpoint)
    assert isinstance(model, SudokuMDM) and meta["domain"] == DOMAIN


def test_load_model_moves_to_the_requested_device(tiny_checkpoint):
    model, _ = load_sudoku_model(tiny_checkpoint, device="cpu")
    assert next(model.parameters()).device.type == "cpu"


def test_a_different_model_loads_different_weights(tmp_path, tiny_checkpoint):
    other = make_tiny_model(seed=1)
    save_checkpoint(other, tmp_path / "m", {"domain": DOMAIN, "model": dataclasses.asdict(TINY_CFG)})
    a, _ = load_sudoku_model(tiny_checkpoint)
    b, _ = load_sudoku_model(tmp_path / "m")
    assert not torch.equal(a.out.weight, b.out.weight)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:7], id="shorter-than-header"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"\xff" * 8 + data[8:], id="corrupt-header-length"),
        pytest.param(lambda data: data[:8] + b"#" + data[9:], id="corrupt-header-json"),
        pytest.param(lambda data: b"PK\x03\x04 this is a torch zip, not safetensors" * 4, id="not-safetensors"),
    ],
)
def test_damaged_weights_raise_checkpoint_error(ckpt, damage):
    weights = ckpt / WEIGHTS
    weights.write_bytes(damage(weights.read_bytes()))
    with pytest.raises(CheckpointError) as info:
        load_sudoku_model(ckpt)
    assert_one_line_error(info, "corrupt or truncated", WEIGHTS)


@pytest.mark.parametrize("name", [META, WEIGHTS])
def test_missing_file_raises_checkpoint_error(ckpt, name):
    (ckpt / name).unlink()
    with pytest.raises(CheckpointError) as info:
        load_sudoku_model(ckpt)
    assert_one_line_error(info, "missing", name)


def test_missing_directory_raises_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(tmp_path / "nowhere")


def test_invalid_json_meta_raises_checkpoint_error(ckpt):
    (ckpt / META).write_text('{"domain": "sudoku", ')
    with pytest.raises(CheckpointError) as info:
        load_sudoku_model(ckpt)
    assert_one_line_error(info, "not valid JSON", META)


def test_meta_that_is_not_an_object_raises_checkpoint_error(ckpt):
    (ckpt / META).write_text("[1, 2, 3]")
    with pytest.raises(CheckpointError):
        load_sudoku_model(ckpt)


def test_binary_meta_raises_checkpoint_error(ckpt):
    (ckpt / META).write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CheckpointError):
        load_sudoku_model(ckpt)


def test_checkpoint_of_another_domain_raises(ckpt):
    meta = json.loads((ckpt / META).read_text())
    (ckpt / META).write_text(json.dumps(meta | {"domain": "protein"}))
    with pytest.raises(CheckpointError) as info:
        load_sudoku_model(ckpt)
    assert_one_line_error(info, "'protein'", "'sudoku'")


def test_checkpoint_without_domain_raises(ckpt):
    meta = json.loads((ckpt / META).read_text())
    del meta["domain"]
    (ckpt / META).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="domain None"):
        load_sudoku_model(ckpt)


def test_load_checkpoint_without_domain_skips_the_check(ckpt):
    meta = json.loads((ckpt / META).read_text())
    (ckpt / META).write_text(json.dumps(meta | {"domain": "protein"}))
    state, got = load_checkpoint(ckpt)
    assert got["domain"] == "protein" and "out.weight" in state


@pytest.mark.parametrize(
    "model_meta",
    [
        pytest.param(None, id="no-model-section"),
        pytest.param(dataclasses.asdict(TINY_CFG) | {"d_model": 32, "n_heads": 2}, id="shape-mismatch"),
        pytest.param(dataclasses.asdict(TINY_CFG) | {"n_layers": 2}, id="missing-layer"),
        pytest.param(dataclasses.asdict(TINY_CFG) | {"colour": "red"}, id="unknown-field"),
        pytest.param("d_model=16", id="not-a-mapping"),
    ],
)
def test_meta_not_matching_the_weights_raises_checkpoint_error(ckpt, model_meta):
    meta = json.loads((ckpt / META).read_text())
    if model_meta is None:
        del meta["model"]
    else:
        meta["model"] = model_meta
    (ckpt / META).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="does not match the Sudoku model"):
        load_sudoku_model(ckpt)


def test_meta_with_invalid_model_shape_raises_checkpoint_error(ckpt):
    meta = json.loads((ckpt / META).read_text())
    meta["model"]["n_heads"] = 3
    (ckpt / META).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError):
        load_sudoku_model(ckpt)


SAVE_TWICE = """
import sys, torch
from mdm_mi.infra.checkpoint import save_tensors
stamp = {k: k * 3 for k in ("model_fingerprint", "model", "split", "seed", "tol", "method")}
save_tensors({"b": torch.arange(6.0), "a": torch.eye(3)}, sys.argv[1], stamp)
"""


def test_saved_tensors_are_the_same_bytes_in_every_process(tmp_path):
    """safetensors writes its metadata entries in an order drawn per process; save_tensors sorts them."""
    import subprocess
    import sys

    from safetensors import safe_open

    paths = [tmp_path / f"{i}.safetensors" for i in range(3)]
    for p in paths:
        subprocess.run([sys.executable, "-c", SAVE_TWICE, str(p)], check=True)
    assert len({p.read_bytes() for p in paths}) == 1
    with safe_open(str(paths[0]), "pt") as fh:
        assert fh.metadata() == {k: k * 3 for k in ("model_fingerprint", "model", "split", "seed", "tol", "method")}
        assert torch.equal(fh.get_tensor("a"), torch.eye(3)) and torch.equal(fh.get_tensor("b"), torch.arange(6.0))
