"""Shipped backbones: export writes a sha256 manifest, import and load check it, and a changed byte
is a one-line error that writes nothing; the repository's own artifact verifies and loads."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from mdm_mi.cli import main
from mdm_mi.infra.checkpoint import MANIFEST, META, WEIGHTS, CheckpointError, load_checkpoint, verify_manifest

SHIPPED = REPO / "resources" / "pretrained" / "sudoku"
SHIPPED_PROTEIN = REPO / "resources" / "pretrained" / "protein-kunitz"


TRAINING_DATA = b"training grids"


@pytest.fixture
def shipped(tmp_path, tiny_checkpoint):
    """A tiny checkpoint exported as a shipped backbone."""
    data = tmp_path / "train.npy"
    data.write_bytes(TRAINING_DATA)
    about = tmp_path / "about.json"
    about.write_text(json.dumps({"name": "tiny", "command": "mdm-mi sudoku-pretrain ...", "seed": 0}))
    out = tmp_path / "shipped"
    code = main(["export-pretrained", "--model", str(tiny_checkpoint), "--data", str(data), "--out", str(out),
                 "--about", str(about)])
    assert code == 0
    return out


def test_export_writes_a_manifest_that_verifies(shipped):
    manifest = json.loads((shipped / MANIFEST).read_text())
    assert set(manifest["files"]) == {WEIGHTS, META}
    assert manifest["name"] == "tiny" and len(manifest["data_sha256"]) == 64
    assert verify_manifest(shipped) == manifest


def test_import_copies_files_that_load(shipped, tmp_path, tiny_checkpoint):
    out = tmp_path / "run" / "model"
    assert main(["import-pretrained", "--source", str(shipped), "--out", str(out)]) == 0
    for name in (WEIGHTS, META):
        assert (out / name).read_bytes() == (tiny_checkpoint / name).read_bytes()
    state, meta = load_checkpoint(out, domain="sudoku")
    assert state and meta["domain"] == "sudoku"


def test_a_changed_byte_is_a_one_line_error_and_nothing_is_imported(shipped, tmp_path, capsys):
    weights = shipped / WEIGHTS
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 0xFF
    weights.write_bytes(bytes(blob))
    out = tmp_path / "run" / "model"
    assert main(["import-pretrained", "--source", str(shipped), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: checkpoint file") and "sha256" in err and "\n" not in err
    assert not (out / META).exists()
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(shipped)  # loading a shipped folder checks the hashes too


def test_import_refuses_a_folder_without_manifest(tmp_path, tiny_checkpoint, capsys):
    code = main(["import-pretrained", "--source", str(tiny_checkpoint), "--out", str(tmp_path / "m")])
    assert code == 2 and "MANIFEST.json" in capsys.readouterr().err


def test_the_shipped_sudoku_backbone_verifies_and_loads():
    from mdm_mi.models.loading import load_model

    manifest = verify_manifest(SHIPPED)
    assert (SHIPPED / WEIGHTS).stat().st_size <= 20 * 2**20
    assert {"command", "seed", "data_sha256", "evaluation"} <= set(manifest)
    backbone, meta = load_model(SHIPPED, "cpu", "sudoku")
    assert meta["domain"] == "sudoku"


def test_import_checks_the_runs_training_data(shipped, tmp_path, capsys):
    same, other = tmp_path / "same.npy", tmp_path / "other.npy"
    same.write_bytes(TRAINING_DATA)
    other.write_bytes(TRAINING_DATA + b"!")
    out = tmp_path / "run" / "model"
    assert main(["import-pretrained", "--source", str(shipped), "--out", str(out), "--data", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "trained on other data" in err and "\n" not in err
    assert not out.exists()  # refused before anything is copied
    assert main(["import-pretrained", "--source", str(shipped), "--out", str(out), "--data", str(same)]) == 0
    assert (out / META).is_file()


def test_the_shipped_protein_family_backbone_verifies_and_loads():
    from mdm_mi.models.loading import load_model

    manifest = verify_manifest(SHIPPED_PROTEIN)
    assert (SHIPPED_PROTEIN / WEIGHTS).stat().st_size <= 20 * 2**20
    assert {"command", "seed", "data_sha256", "evaluation"} <= set(manifest)
    backbone, meta = load_model(SHIPPED_PROTEIN, "cpu", "protein")
    assert meta["domain"] == "protein" and meta["train"]["steps"] == 4500


# Keys that change how often a run writes files, never its weights.
BOOKKEEPING = {"save_every", "snapshot_every", "log_every"}


def test_the_default_config_states_the_shipped_sudoku_training():
    """``sudoku.backbone: trained`` reproduces the shipped weights: config.yaml's model and training
    settings (schema defaults filled in) are the ones in the shipped meta.json."""
    from mdm_mi.infra.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml")
    meta = json.loads((SHIPPED / META).read_text())
    assert meta["model"] == {k: cfg["sudoku"]["model"][k] for k in meta["model"]}
    train = {k: v for k, v in meta["train"].items() if k not in BOOKKEEPING}
    assert train == {k: cfg["sudoku"]["train"][k] for k in train if k != "seed"} | {"seed": cfg["seed"]}


# --- calibrated fallbacks: every shipped backbone carries its own (mdm_mi.core.fallbacks) -------------

PRETRAINED = sorted(p for p in (REPO / "resources" / "pretrained").iterdir() if (p / MANIFEST).is_file())


def test_there_are_shipped_backbones():
    assert {p.name for p in PRETRAINED} >= {"sudoku", "protein-kunitz", "protein-kunitz-columns"}


@pytest.mark.parametrize("folder", PRETRAINED, ids=lambda p: p.name)
def test_every_shipped_backbone_has_its_calibrated_fallbacks(folder):
    """A shipped backbone without a ``calibrated`` block (at, source, Algorithm 1's γ at least) fails
    here: the user verbs would have no defaults of its own."""
    from mdm_mi.core.fallbacks import KEY, block_problems
    from mdm_mi.core.sampler_table import ALGORITHM_1, SAMPLERS

    manifest = verify_manifest(folder)  # the block does not touch the hashed files
    assert block_problems(manifest.get(KEY), SAMPLERS, ALGORITHM_1) == []


def test_a_broken_calibrated_block_is_named():
    from mdm_mi.core.fallbacks import block_problems
    from mdm_mi.core.sampler_table import SAMPLERS

    assert block_problems(None, SAMPLERS, "mi") == ["no 'calibrated' block"]
    problems = block_problems({"at": 1, "samplers": {"eb": {"tau": 0.5}, "beam": {}}}, SAMPLERS, "mi")
    assert len(problems) == 5, problems  # at, source, no mi, eb's tau, beam


def test_import_copies_the_calibration_and_retraining_drops_it(shipped, tmp_path, tiny_checkpoint):
    from mdm_mi.core.fallbacks import read_calibrated
    from mdm_mi.infra.checkpoint import save_checkpoint

    manifest = json.loads((shipped / MANIFEST).read_text())
    manifest["calibrated"] = {"at": 3, "samplers": {"mi": {"gamma": 0.5}}, "source": "a test"}
    (shipped / MANIFEST).write_text(json.dumps(manifest))
    out = tmp_path / "run" / "model"
    assert main(["import-pretrained", "--source", str(shipped), "--out", str(out)]) == 0
    assert read_calibrated(out).params("mi") == {"gamma": 0.5}
    state, meta = load_checkpoint(out)
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(1, 1)
    save_checkpoint(model, out, meta)  # retrained in place: the shipped calibration is not its own
    assert not (out / MANIFEST).exists() and read_calibrated(out).params("mi") == {}


def test_solve_and_generate_without_gamma_use_the_shipped_calibration():
    """``solve --sampler mi`` and ``generate --sampler eb`` without γ take γ from the MANIFEST of the
    model they decode with (here the shipped folders themselves)."""
    from mdm_mi.protein.generate_jobs import GenerateArgs, generate_sampler
    from mdm_mi.user.solve import SolveArgs, user_sampler

    for folder in (SHIPPED, REPO / "resources" / "pretrained" / "sudoku-paper"):
        gamma = json.loads((folder / MANIFEST).read_text())["calibrated"]["samplers"]["mi"]["gamma"]
        assert user_sampler(SolveArgs(sampler="mi", model=folder)).gamma == gamma
    for name in ("protein-kunitz", "protein-kunitz-columns"):
        folder = REPO / "resources" / "pretrained" / name
        gamma = json.loads((folder / MANIFEST).read_text())["calibrated"]["samplers"]["eb"]["gamma"]
        assert generate_sampler(GenerateArgs(sampler="eb", model=folder)).gamma == gamma
    assert user_sampler(SolveArgs(sampler="mi", model=SHIPPED, gamma=0.7)).gamma == 0.7  # given wins


def test_a_model_without_calibration_asks_for_the_flag(tiny_checkpoint, capsys):
    code = main(["solve", "--model", str(tiny_checkpoint), "--sampler", "eb", "--quiet",
                 "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--gamma not given" in err and "pass --gamma" in err and "\n" not in err
