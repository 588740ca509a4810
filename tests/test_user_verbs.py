"""The user verbs end to end on tiny models: ``solve`` (argument, file, CSV, stdin; exit 1 on an invalid
answer), ``mi-map`` (PNG + CSV), ``sudoku-evaluate`` with the model found by :mod:`mdm_mi.models.locate`, and
``check-config``."""

from __future__ import annotations

import dataclasses

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conftest import write_csv
from mdm_mi.models import domains, locate
from mdm_mi.cli import main
from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.infra.errors import InputError
from mdm_mi.sudoku.grid import MASK_ID, N_DIGITS, parse_puzzle
from mdm_mi.sudoku.puzzle_maker import find_solution as reference_solve
from user_verb_helpers import MANY_SOLUTIONS, PUZZLE, make_run

SOLUTION_LINES = ["534 678 912", "672 195 348", "198 342 567", "859 761 423", "426 853 791",
                  "713 924 856", "961 537 284", "287 419 635", "345 286 179"]


@pytest.fixture
def results(tmp_path, tiny_checkpoint, monkeypatch):
    """A workflow-like ``results/`` under the working directory with one run (model + head)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(locate.RUN_ENV, raising=False)
    make_run(tmp_path / "results", "tiny", tiny_checkpoint)
    return tmp_path / "results"


class OracleBackbone:
    """Backbone whose logits put all weight on the puzzle's true solution: decoding always succeeds."""

    vocab_size, mask_id, hidden_dim = N_DIGITS, MASK_ID, 16
    vocab_token_ids = torch.arange(N_DIGITS)

    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        sols = torch.as_tensor(np.stack([reference_solve(t.numpy()) for t in tokens.cpu()]))
        logits = 10.0 * torch.nn.functional.one_hot(sols, N_DIGITS).float()
        return BackboneOutput(logits=logits, hidden=torch.zeros(*tokens.shape, self.hidden_dim))


@pytest.fixture
def oracle(monkeypatch, results):
    """Make every Sudoku checkpoint load as :class:`OracleBackbone`."""
    monkeypatch.setitem(domains.DOMAINS, "sudoku", dataclasses.replace(
        domains.DOMAINS["sudoku"], load=lambda directory, meta, device: OracleBackbone()))
    return results


def run(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# --- solve -----------------------------------------------------------------------------------------


def test_solve_argument_prints_grid_passes_and_validity(capsys, oracle):
    code, out, err = run(capsys, ["solve", PUZZLE])
    lines = out.splitlines()
    assert code == 0, err
    assert lines[:9] == SOLUTION_LINES
    assert lines[9] == f"passes: {PUZZLE.count('.')} (sequential)" and lines[10] == "valid: yes"
    assert "model: results/tiny/sudoku/model" in err


@pytest.mark.parametrize(("flags", "passes"), [(["--sampler", "naive", "--k", "4"], 13),
                                               (["--sampler", "eb", "--gamma", "0.5"], 1),
                                               (["--sampler", "mi", "--gamma", "0.5", "--lam", "0"], 1),
                                               (["--sampler", "threshold", "--tau", "0.9"], 1),
                                               (["--sampler", "naive", "--k", "2.5"], 21),  # ⌊2.5·21⌋ = 52 ≥ 51 blanks
                                               (["--sampler", "mi-indep", "--gamma", "0.5", "--cap", "100"], 1),
                                               (["--sampler", "mi-2b", "--gamma", "0.5", "--delta", "1e6"], 1)])
def test_solve_parallel_samplers_take_fewer_passes(capsys, oracle, flags, passes):
    code, out, _ = run(capsys, ["solve", PUZZLE, *flags, "--quiet"])
    assert code == 0 and f"passes: {passes} (" in out and "valid: yes" in out


def test_invalid_answer_exits_1_and_names_the_broken_rule(capsys, results):
    code, out, _ = run(capsys, ["solve", PUZZLE, "--quiet"])  # an untrained tiny model breaks rules
    assert code == 1
    assert "valid: no (digit " in out and " repeats in " in out
    assert len(out.splitlines()) == 11


def test_solve_reads_a_file_of_lines_with_comments(capsys, oracle, tmp_path):
    path = tmp_path / "p.txt"
    path.write_text(f"# two puzzles\n{PUZZLE}\n\n{PUZZLE.replace('.', '0')}\n")
    code, out, _ = run(capsys, ["solve", "--file", str(path), "--quiet"])
    assert code == 0
    assert f"# {path} line 2" in out and f"# {path} line 4" in out
    assert out.count("valid: yes") == 2 and "valid: 2/2, mean passes 51.0" in out


def test_solve_reads_a_csv_with_a_puzzle_column(capsys, oracle, tmp_path):
    path = write_csv(tmp_path / "p.csv", ["id", "puzzle"], [["a", PUZZLE], ["b", PUZZLE]])
    code, out, _ = run(capsys, ["solve", "--file", str(path), "--quiet"])
    assert code == 0 and out.count("valid: yes") == 2


def test_solve_reads_stdin(capsys, oracle, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(PUZZLE + "\n"))
    code, out, _ = run(capsys, ["solve", "-", "--quiet"])
    assert code == 0 and out.splitlines()[:9] == SOLUTION_LINES  # one puzzle: no header line


def test_puzzle_with_several_solutions_is_solved_with_a_note(capsys, oracle):
    code, out, _ = run(capsys, ["solve", MANY_SOLUTIONS, "--quiet"])
    assert code == 0 and "more than one solution" in out


def test_quiet_writes_nothing_to_stderr(capsys, oracle):
    assert run(capsys, ["solve", PUZZLE, "--quiet"])[2] == ""


def test_solve_is_seeded_when_sampling(capsys, results):
    argv = ["solve", PUZZLE, "--temperature", "1.0", "--seed", "3", "--quiet"]
    assert run(capsys, argv)[1] == run(capsys, argv)[1]


# --- mi-map ----------------------------------------------------------------------------------------


def read_matrix(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_mi_map_writes_png_and_full_matrix_csv(capsys, results, tmp_path):
    code, out, _ = run(capsys, ["mi-map", PUZZLE, "--out", "map.png", "--quiet"])
    assert code == 0
    assert (tmp_path / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = read_matrix(tmp_path / "map.csv")
    assert len(rows) == 81 * 81 and set(rows[0]) == {"i", "j", "head", "exact"}
    assert all(r["exact"] == "" for r in rows)
    pred = np.array([float(r["head"]) for r in rows]).reshape(81, 81)
    assert np.allclose(pred, pred.T) and (pred >= 0).all()
    given = parse_puzzle(PUZZLE) != MASK_ID
    assert (pred[given] == 0).all()  # pairs touching a clue carry no MI
    best = f"r{pred.sum(1).argmax() // 9 + 1}c{pred.sum(1).argmax() % 9 + 1}:"
    assert out.startswith(best), out


def test_mi_map_exact_and_chosen_cell(capsys, results, tmp_path):
    code, out, _ = run(capsys, ["mi-map", PUZZLE, "--cell", "1,3", "--exact", "--out", "m.svg",
                                "--csv", "m.csv", "--quiet"])
    assert code == 0 and out.startswith("r1c3:") and "(exact " in out
    assert (tmp_path / "m.svg").read_text().lstrip().startswith("<?xml")
    exact = np.array([float(r["exact"]) for r in read_matrix(tmp_path / "m.csv")]).reshape(81, 81)
    assert np.allclose(exact, exact.T, atol=1e-5) and exact.max() > 0


def test_mi_map_reads_the_first_puzzle_of_a_file(capsys, results, tmp_path):
    (tmp_path / "p.txt").write_text(PUZZLE + "\n")
    assert run(capsys, ["mi-map", "--file", "p.txt", "--quiet"])[0] == 0
    assert (tmp_path / "mi_map.png").is_file() and (tmp_path / "mi_map.csv").is_file()


class FakeProteinBackbone:
    """Backbone-protocol stand-in for ESM-C: BOS + residues + EOS, 20 amino acids, each position's logits
    depending on the whole sequence (so probing finds MI)."""

    vocab_size, mask_id, hidden_dim, bos_id, eos_id = 20, 32, 16, 0, 2
    vocab_token_ids = torch.arange(4, 24)

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.own, self.mix = torch.randn(33, 20, generator=g), torch.randn(33, 20, generator=g)
        self.feat = torch.randn(33, 16, generator=g)

    def encode(self, seqs, device=None):
        from mdm_mi.protein.esmc import AMINO_ACIDS

        ids = {a: 4 + i for i, a in enumerate(AMINO_ACIDS)} | {"_": self.mask_id}
        return torch.tensor([[self.bos_id, *[ids[c] for c in s], self.eos_id] for s in seqs], device=device)

    def __call__(self, tokens):
        logits = self.own[tokens] + self.mix[tokens].mean(1, keepdim=True)
        return BackboneOutput(logits=logits, hidden=self.feat[tokens] + self.feat[tokens].mean(1, keepdim=True))


def test_mi_map_of_a_protein_draws_positions(capsys, results, tmp_path, monkeypatch):
    from mdm_mi.infra.io import write_json

    write_json(results / "tiny" / "protein" / "model" / "meta.json", {"domain": "protein"})
    from user_verb_helpers import save_tiny_head

    save_tiny_head(results / "tiny" / "protein" / "head")
    monkeypatch.setitem(domains.DOMAINS, "protein", dataclasses.replace(
        domains.DOMAINS["protein"], load=lambda directory, meta, device: FakeProteinBackbone()))
    code, out, err = run(capsys, ["mi-map", "MKV___LA", "--cell", "5", "--exact", "--out", "p.png"])
    assert code == 0, err
    assert out.startswith("position 5:") and "(exact " in out
    assert "results/tiny/protein/model" in err
    rows = read_matrix(tmp_path / "p.csv")
    assert len(rows) == 10 * 10  # BOS + 8 residues + EOS
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_mi_map_of_a_protein_with_a_real_tiny_esmc(capsys, results, tmp_path):
    pytest.importorskip("esm")
    from mdm_mi.protein.model import new_esmc, save_trained
    from user_verb_helpers import save_tiny_head

    torch.manual_seed(0)
    save_trained(new_esmc(32, 2, 1), results / "tiny" / "protein" / "model", {"d_model": 32, "n_heads": 2,
                                                                               "n_layers": 1}, -1, {})
    save_tiny_head(results / "tiny" / "protein" / "head", in_dim=32)
    code, out, err = run(capsys, ["mi-map", "MKV___LA", "--out", "p.png", "--quiet"])
    assert code == 0, err
    assert out.startswith("position ") and len(read_matrix(tmp_path / "p.csv")) == 10 * 10


def test_undecided_puzzle_is_solved_with_a_note(capsys, oracle, monkeypatch):
    import mdm_mi.sudoku.puzzles as puzzles
    from mdm_mi.sudoku.puzzle_maker import SearchLimitError, count_solutions

    with pytest.raises(SearchLimitError):
        count_solutions(parse_puzzle("." * 81), max_nodes=3)
    monkeypatch.setattr(puzzles, "MAX_NODES", 1)
    code, out, _ = run(capsys, ["solve", PUZZLE, "--quiet"])
    assert code == 0 and "could not decide" in out


# --- evaluate --------------------------------------------------------------------------------------


@pytest.fixture
def puzzles_csv(tmp_path, easy_rows):
    return write_csv(tmp_path / "my.csv", ["puzzle", "solution", "level"],
                     [[r["puzzle"], r["solution"], r["level"]] for r in easy_rows[:3]])


def test_evaluate_with_defaults_prints_a_table_and_writes_nothing(capsys, results, puzzles_csv, tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, _ = run(capsys, ["sudoku-evaluate", "--puzzles", str(puzzles_csv), "--quiet"])
    assert code == 0
    assert "sampler sequential" in out and "results/tiny/sudoku/model" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert set(rows) == {"easy", "all"} and rows["all"][1] == "3"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_evaluate_mi_finds_the_head_beside_the_model(capsys, results, puzzles_csv, tmp_path):
    argv = ["sudoku-evaluate", "--puzzles", str(puzzles_csv), "--sampler", "mi", "--gamma", "0.3",
            "--out", "s.json", "--per-puzzle", "p.csv"]
    assert run(capsys, argv)[0] == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["sampler"] == "mi" and summary["levels"]["all"]["n"] == 3
    assert len(read_matrix(tmp_path / "p.csv")) == 3


def test_evaluate_run_flag_and_env_choose_the_run(capsys, results, puzzles_csv, tiny_checkpoint, monkeypatch):
    make_run(results, "newer", tiny_checkpoint)
    out = run(capsys, ["sudoku-evaluate", "--puzzles", str(puzzles_csv), "--run", "tiny"])[1]
    assert "results/tiny/sudoku/model" in out
    monkeypatch.setenv(locate.RUN_ENV, "tiny")
    assert "results/tiny/sudoku/model" in run(capsys, ["sudoku-evaluate", "--puzzles", str(puzzles_csv)])[1]


# --- locate ----------------------------------------------------------------------------------------


def test_locate_prefers_the_newest_run_and_the_head_beside_the_model(results, tiny_checkpoint):
    old = results / "tiny" / "sudoku" / "model" / "meta.json"
    past = time.time() - 100
    os.utime(old, (past, past))
    new_model = make_run(results, "newer", tiny_checkpoint)
    assert locate.find_model("sudoku", results) == new_model
    assert locate.find_model("sudoku", results, run="tiny") == old.parent
    assert locate.find_head("sudoku", results, model=old.parent) == results / "tiny" / "sudoku" / "head"


def test_locate_error_names_the_searched_paths_and_how_to_train(results):
    with pytest.raises(InputError, match=r"results/\*/protein/model.*snakemake --cores 2"):
        locate.find_model("protein", results)
    shutil.rmtree(results / "tiny" / "sudoku" / "head")
    with pytest.raises(InputError, match="sudoku MI head"):
        locate.find_head("sudoku", results)


# --- check-config and the entry point --------------------------------------------------------------


def test_check_config_accepts_a_valid_config(capsys, tmp_path):
    (tmp_path / "c.yaml").write_text("name: tiny\nsudoku:\n  train: {steps: 5}\n")
    code, out, _ = run(capsys, ["check-config", str(tmp_path / "c.yaml")])
    assert code == 0 and out.startswith("ok:") and "name: tiny" in out


def test_installed_entry_point_has_help_with_examples():
    exe = shutil.which("mdm-mi") or pytest.skip("mdm-mi is not installed on PATH")
    for verb in ("solve", "mi-map", "sudoku-evaluate"):
        proc = subprocess.run([exe, verb, "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "examples:" in proc.stdout, proc.stderr
