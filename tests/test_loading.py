"""The one model loader (:mod:`mdm_mi.models.loading`): meta.json read once, every check in one place,
every failure one :class:`CheckpointError` line."""

from __future__ import annotations

import json
import shutil

import pytest

from mdm_mi.models import loading
from mdm_mi.infra import checkpoint
from mdm_mi.infra.checkpoint import CheckpointError
from mdm_mi.models.loading import SEQUENCES, load_mi_head, load_model, load_model_and_head
from user_verb_helpers import save_tiny_head


def test_load_model_reads_meta_json_once(monkeypatch, tiny_checkpoint):
    reads = []
    real = checkpoint.read_meta
    monkeypatch.setattr(loading, "read_meta", lambda folder: reads.append(folder) or real(folder))
    monkeypatch.setattr(checkpoint, "read_meta", lambda folder: pytest.fail("meta.json read a second time"))
    backbone, meta = load_model(tiny_checkpoint, "cpu", "sudoku")
    assert meta["domain"] == "sudoku" and len(reads) == 1 and not backbone.training


def test_a_head_of_another_width_is_refused(tmp_path, tiny_checkpoint, tiny_model):
    width = tiny_model.hidden_dim
    backbone, head = load_model_and_head(tiny_checkpoint, save_tiny_head(tmp_path / "ok", width), "cpu", "sudoku")
    assert head.in_dim == backbone.hidden_dim
    with pytest.raises(CheckpointError, match=f"reads hidden states of width {width + 1}, but model"):
        load_model_and_head(tiny_checkpoint, save_tiny_head(tmp_path / "wide", width + 1), "cpu", "sudoku")


@pytest.mark.parametrize("call, needle", [
    (lambda m, h: load_model(h), "is an MI head checkpoint, not a model"),
    (lambda m, h: load_mi_head(m, "cpu"), "not an MI head: pass it as --model"),
    (lambda m, h: load_model(m, "cpu", "protein"), "is a 'sudoku' model, but this needs a 'protein' model"),
    (lambda m, h: load_model(m, "cpu", SEQUENCES), "but this needs a sequence model (protein, hf)"),
])
def test_each_wrong_folder_is_one_checkpoint_error_line(tmp_path, tiny_checkpoint, call, needle):
    head = save_tiny_head(tmp_path / "head")
    with pytest.raises(CheckpointError) as info:
        call(tiny_checkpoint, head)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_an_unknown_domain_is_refused(tmp_path, tiny_checkpoint):
    folder = tmp_path / "m"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "meta.json").write_text(json.dumps({"domain": "chess"}))
    with pytest.raises(CheckpointError, match="unknown domain 'chess'; known: sudoku, protein, hf"):
        load_model(folder)
