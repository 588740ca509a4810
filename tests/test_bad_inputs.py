"""Bad input, through the real command line: every case exits with code 2, prints exactly one
``error: ...`` line naming the problem on stderr (no traceback, nothing on stdout) and leaves every file
as it was (nothing created, nothing modified, nothing unpickled).

Each :class:`Case` is an argv with ``{placeholders}`` (the working folder's tiny model, head, and the
files its ``setup`` writes) and a fragment the error line must contain.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from mdm_mi.models import locate
from mdm_mi.cli import main
from mdm_mi.infra.validate import memory_bytes
from user_verb_helpers import NO_SOLUTION, PUZZLE, SOLUTION, make_run, save_tiny_head

P = PUZZLE


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]
    expect: str
    setup: Callable[[Path], dict] | None = None  # writes input files under the folder → placeholders
    stdin: str | None = None
    environ: dict = field(default_factory=dict)


class Unpickled:
    """Unpickling this creates a file: a checkpoint loader that unpickles would leave it behind."""

    def __reduce__(self):
        return (open, ("UNPICKLED", "w"))


# --- input writers (each gets the working folder, returns placeholders) --------------------------------


def text_file(name: str, content: str | bytes):
    def setup(tmp: Path) -> dict:
        path = tmp / name
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
        return {"file": str(path)}

    return setup


def folder(tmp: Path) -> dict:
    (tmp / "adir").mkdir()
    return {"file": str(tmp / "adir")}


def model_copy(change: Callable[[Path], None], what: str = "model"):
    """A copy of the tiny model (or head) in ``bad/``, changed by ``change(folder)``."""

    def setup(tmp: Path) -> dict:
        import shutil

        src = tmp / "results" / "tiny" / "sudoku" / what
        bad = Path(shutil.copytree(src, tmp / "bad"))
        change(bad)
        return {"bad": str(bad)}

    return setup


def corrupt(d: Path) -> None:
    (d / "model.safetensors").write_bytes(os.urandom(512))


def truncate(d: Path) -> None:
    w = d / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])


def pickled(d: Path) -> None:
    (d / "model.safetensors").write_bytes(pickle.dumps({"weights": Unpickled()}))


def set_meta(**changes):
    def change(d: Path) -> None:
        meta = json.loads((d / "meta.json").read_text())
        (d / "meta.json").write_text(json.dumps(meta | changes))

    return change


def write_meta(text: str):
    return lambda d: (d / "meta.json").write_text(text)


def no_meta(d: Path) -> None:
    (d / "meta.json").unlink()


def protein_model(tmp: Path) -> dict:
    (tmp / "protein").mkdir()
    (tmp / "protein" / "meta.json").write_text(json.dumps({"domain": "protein", "kind": "trained"}))
    return {"protein": str(tmp / "protein")}


def narrow_head(tmp: Path) -> dict:
    return {"bad": str(save_tiny_head(tmp / "narrow", in_dim=8))}


def empty_results(tmp: Path) -> dict:
    (tmp / "empty").mkdir()
    return {"empty": str(tmp / "empty")}


def config(text: str):
    def setup(tmp: Path) -> dict:
        (tmp / "c.yaml").write_text(text)
        return {"cfg": str(tmp / "c.yaml")}

    return setup


def fasta(text: str):
    return text_file("x.fasta", text)


def solutions_npy(tmp: Path) -> dict:
    """Three Sudoku solutions, two of them the same: two distinct sequences."""
    import numpy as np

    from mdm_mi.sudoku.grid import parse_puzzle

    rows = np.stack([parse_puzzle(SOLUTION)] * 2 + [parse_puzzle(SOLUTION[::-1])])
    np.save(tmp / "solutions.npy", rows)
    return {"file": str(tmp / "solutions.npy")}


def label_shards(tmp: Path) -> dict:
    """One small label shard (two contexts of the example puzzle) for train-head."""
    import torch
    from safetensors.torch import save_file

    from mdm_mi.sudoku.grid import MASK_ID, parse_puzzle

    contexts = torch.as_tensor(parse_puzzle(PUZZLE)).long().expand(2, -1).contiguous()
    masked = contexts == MASK_ID
    save_file({"contexts": contexts, "masked": masked, "label": torch.zeros(2, 81, 81)}, str(tmp / "s.safetensors"))
    return {"shard": str(tmp / "s.safetensors")}


CSV_NO_COLUMN = f"grid,solution\n{P},\n"
SOLVE = ["solve", "--quiet"]
MAP = ["mi-map", "--quiet", "--out", "out/map.png"]
EVAL = ["sudoku-evaluate", "--quiet", "--out", "out/s.json", "--per-puzzle", "out/p.csv"]
PROT = [*MAP, "--model", "{protein}"]
GEN = ["generate", "--quiet", "--out", "out/g.fasta", "--summary", "out/g.json"]
LABEL = ["label", "--model", "results/tiny/sudoku/model", "--sequences", "{file}", "--out", "out/s.safetensors",
         "--shard", "0", "--n-shards", "1", "--method", "exact", "--tol", "0.001", "--batch-size", "8", "--seed", "0",
         "--device", "cpu", "--threads", "1"]
HEAD = ["train-head", "--model", "results/tiny/sudoku/model", "--out", "out/head", "--fidelity", "out/f.json",
        "--pairs", "out/p.csv", "--hidden", "4", "--heads", "2", "--rank", "2", "--unary", "--distance-buckets", "0",
        "--steps", "1",
        "--batch-size", "2", "--lr", "0.01", "--weight-decay", "0", "--seed", "0", "--device", "cpu", "--threads", "1"]

CASES = [
    # puzzles: length, letters, broken rules, no solution, empty input
    Case("short", [*SOLVE, "53..7"], "must have 81 cells, got 5"),
    Case("long", [*SOLVE, P + "1"], "got 82"),
    Case("empty-argument", [*SOLVE, ""], "got 0"),
    Case("letter", [*SOLVE, P[:-1] + "x"], "'x'"),
    Case("symbols", [*SOLVE, "?" + P[1:]], "characters other than 1-9"),
    Case("row-duplicate", [*SOLVE, "55" + P[2:]], "digit 5 repeats in row 1"),
    Case("column-duplicate", [*SOLVE, P[:18] + "4" + P[19:]], "error: the puzzle's clues already break a rule: "
         "digit 4 repeats in column 1"),
    Case("box-duplicate", [*SOLVE, P[:10] + "8" + P[11:]], "digit 8 repeats in box 1"),
    Case("no-solution", [*SOLVE, NO_SOLUTION], "has no solution"),
    Case("no-solution-simple", [*SOLVE, "12345678." + "........9" + "." * 63], "has no solution"),
    Case("no-puzzle", SOLVE, "no puzzle given"),
    Case("argument-and-file", [*SOLVE, P, "--file", "{file}"], "not both", text_file("p.txt", P)),
    Case("file-missing", [*SOLVE, "--file", "nope.txt"], "--file nope.txt: file not found"),
    Case("file-is-folder", [*SOLVE, "--file", "{file}"], "is a folder", folder),
    Case("file-empty", [*SOLVE, "--file", "{file}"], "no puzzles", text_file("p.txt", "")),
    Case("file-only-comments", [*SOLVE, "--file", "{file}"], "no puzzles", text_file("p.txt", "# none\n\n")),
    Case("file-bad-line", [*SOLVE, "--file", "{file}"], "line 3: puzzle must have 81 cells",
         text_file("p.txt", f"{P}\n# c\n{P[:70]}\n")),
    Case("file-binary", [*SOLVE, "--file", "{file}"], "is not a text file", text_file("p.txt", b"\xff\xfe\x00")),
    Case("file-rule-broken", [*SOLVE, "--file", "{file}"], "line 2: the puzzle's clues already break a rule",
         text_file("p.txt", f"{P}\n{'99' + P[2:]}\n")),
    Case("csv-no-puzzle-column", [*SOLVE, "--file", "{file}"], "needs a 'puzzle' column",
         text_file("p.csv", CSV_NO_COLUMN)),
    Case("csv-header-only", [*SOLVE, "--file", "{file}"], "no puzzles", text_file("p.csv", "puzzle,level\n")),
    Case("csv-bad-row", [*SOLVE, "--file", "{file}"], "line 3: puzzle must have 81 cells",
         text_file("p.csv", f"puzzle\n{P}\n{P[:80]}\n")),
    Case("stdin-empty", [*SOLVE, "-"], "stdin: no puzzles", stdin=""),
    Case("stdin-bad", [*SOLVE, "-"], "stdin line 1: puzzle has characters", stdin=P[:-1] + "z\n"),
    # samplers and numbers
    Case("unknown-sampler", [*SOLVE, P, "--sampler", "beam"], "unknown sampler 'beam'"),
    Case("oracle-not-for-solve", [*SOLVE, P, "--sampler", "mi-oracle"], "unknown sampler 'mi-oracle'"),
    Case("k-zero", [*SOLVE, P, "--sampler", "naive", "--k", "0"], "--k must be >= 1, got 0"),
    Case("gamma-negative", [*SOLVE, P, "--sampler", "eb", "--gamma", "-1"], "--gamma must be >= 0, got -1"),
    Case("gamma-nan", [*SOLVE, P, "--sampler", "mi", "--gamma", "nan"], "--gamma must be a finite number"),
    Case("lam-negative", [*SOLVE, P, "--sampler", "mi", "--lam", "-2"], "--lam must be"),
    Case("temperature-negative", [*SOLVE, P, "--temperature", "-1"], "--temperature must be"),
    Case("k-not-a-number", [*SOLVE, P, "--k", "four"], "argument --k: invalid float value: 'four'"),
    Case("unknown-flag", [*SOLVE, P, "--gama", "0.1"], "unrecognized arguments: --gama"),
    Case("batch-size-zero", [*SOLVE, P, "--batch-size", "0"], "--batch-size must be >= 1"),
    Case("threads-negative", [*SOLVE, P, "--threads", "-1"], "--threads must be >= 0"),
    Case("device-unknown", [*SOLVE, P, "--device", "tpu"], "device must be"),
    Case("evaluate-bad-order", [*EVAL, "--puzzles", "{file}", "--order", "random"], "order must be",
         text_file("p.csv", f"puzzle\n{P}\n")),
    Case("unknown-verb", ["solv", P], "invalid choice: 'solv'"),
    # models and checkpoints
    Case("model-missing", [*SOLVE, P, "--model", "nowhere"], "--model nowhere: folder not found"),
    Case("no-model-trained", [*SOLVE, P, "--results", "{empty}"], "snakemake --cores 2", empty_results),
    Case("run-unknown", [*SOLVE, P, "--run", "nope"], "searched results/nope/sudoku/model; runs that have one: tiny"),
    Case("run-env-unknown", [*SOLVE, P], "results/nope/sudoku/model", environ={locate.RUN_ENV: "nope"}),
    Case("weights-corrupt", [*SOLVE, P, "--model", "{bad}"], "corrupt or truncated", model_copy(corrupt)),
    Case("weights-truncated", [*SOLVE, P, "--model", "{bad}"], "corrupt or truncated", model_copy(truncate)),
    Case("weights-pickle", [*SOLVE, P, "--model", "{bad}"], "corrupt or truncated", model_copy(pickled)),
    Case("meta-not-json", [*SOLVE, P, "--model", "{bad}"], "checkpoint metadata is not valid JSON", model_copy(write_meta("{oops"))),
    Case("meta-a-list", [*SOLVE, P, "--model", "{bad}"], "checkpoint metadata is not a JSON object", model_copy(write_meta("[1, 2]"))),
    Case("meta-missing", [*SOLVE, P, "--model", "{bad}"], "checkpoint file missing", model_copy(no_meta)),
    Case("meta-wrong-shape", [*SOLVE, P, "--model", "{bad}"], "does not match the Sudoku model",
         model_copy(set_meta(model={"d_model": 32, "n_layers": 1, "n_heads": 2, "ff_mult": 2, "dropout": 0.0,
                                    "hidden_layer": -1}))),
    Case("protein-model-for-sudoku", [*SOLVE, P, "--model", "{bad}"], "is a 'protein' model",
         model_copy(set_meta(domain="protein"))),
    Case("head-as-model", [*SOLVE, P, "--model", "results/tiny/sudoku/head"], "is an MI head checkpoint"),
    Case("model-as-head", [*SOLVE, P, "--sampler", "mi", "--gamma", "0.3", "--head", "results/tiny/sudoku/model"], "not an MI head"),
    Case("head-corrupt", [*SOLVE, P, "--sampler", "mi", "--gamma", "0.3", "--head", "{bad}"], "corrupt or truncated",
         model_copy(corrupt, "head")),
    Case("head-pickle", [*SOLVE, P, "--sampler", "mi", "--gamma", "0.3", "--head", "{bad}"], "corrupt or truncated",
         model_copy(pickled, "head")),
    Case("head-other-width", [*SOLVE, P, "--sampler", "mi", "--gamma", "0.3", "--head", "{bad}"], "width 8", narrow_head),
    Case("no-calibration", [*SOLVE, P, "--sampler", "mi"], "--gamma not given, and the model"),
    Case("head-missing", [*SOLVE, P, "--sampler", "mi", "--gamma", "0.3", "--model", "{bad}"], "no sudoku MI head beside the model",
         model_copy(lambda d: None)),
    Case("evaluate-protein-model", [*EVAL, "--puzzles", "{file}", "--model", "{protein}"], "is a 'protein' model",
         lambda tmp: text_file("p.csv", f"puzzle\n{P}\n")(tmp) | protein_model(tmp)),
    Case("evaluate-no-puzzles-flag", EVAL, "the following arguments are required: --puzzles"),
    Case("evaluate-no-column", [*EVAL, "--puzzles", "{file}"], "needs a 'puzzle' column",
         text_file("p.csv", CSV_NO_COLUMN)),
    Case("evaluate-binary-csv", [*EVAL, "--puzzles", "{file}"], "is not a text file",
         text_file("p.csv", b"puzzle\n\xff\xfe\n")),
    Case("evaluate-out-folder", ["sudoku-evaluate", "--puzzles", "{file}", "--out", "results"], "--out results is a folder",
         text_file("p.csv", f"puzzle\n{P}\n")),
    Case("evaluate-missing-csv", [*EVAL, "--puzzles", "nope.csv"], "--puzzles nope.csv: file not found"),
    # mi-map: cell, outputs, input
    Case("cell-out-of-range", [*MAP, P, "--cell", "10,1"], "row and column must be 1-9"),
    Case("cell-zero", [*MAP, P, "--cell", "0,3"], "row and column must be 1-9"),
    Case("cell-letters", [*MAP, P, "--cell", "a,b"], "--cell must be row,column"),
    Case("cell-one-number", [*MAP, P, "--cell", "3"], "--cell must be row,column"),
    Case("cell-is-a-clue", [*MAP, P, "--cell", "1,1"], "r1c1 is a clue"),
    Case("map-out-suffix", ["mi-map", P, "--out", "map.txt"], "must end in .png"),
    Case("map-out-folder", ["mi-map", P, "--out", "{file}.png"], "is a folder",
         lambda tmp: (tmp / "d.png").mkdir() or {"file": str(tmp / "d")}),
    Case("map-rule-broken", [*MAP, "55" + P[2:]], "digit 5 repeats in row 1"),
    Case("map-too-few-blanks", [*MAP, SOLUTION[:-3] + ".79"],
         "fewer than 2 blanks"),
    Case("map-no-input", MAP, "no input given"),
    Case("map-no-protein-model", [*MAP, "MKV__LLA"], "no trained protein model found"),
    # protein sequences and FASTA (validated before any model loads)
    Case("protein-letters", [*PROT, "MKVXZ__A"], "outside the 20 standard amino acids", protein_model),
    Case("protein-digits", [*PROT, "MK1__A"], "'1'", protein_model),
    Case("protein-too-short", [*PROT, "_"], "length 1", protein_model),
    Case("protein-too-long", [*PROT, "__" + "A" * 3000], "length 3002", protein_model),
    Case("protein-nothing-masked", [*PROT, "MKVLLA"], "fewer than 2 masked positions", protein_model),
    Case("protein-cell", [*PROT, "MKV__LLA", "--cell", "9"], "position 1..8", protein_model),
    Case("protein-cell-unmasked", [*PROT, "MKV__LLA", "--cell", "1"], "is not masked", protein_model),
    Case("fasta-missing", [*MAP, "--file", "nope.fasta"], "--file nope.fasta: file not found"),
    Case("fasta-no-records", [*MAP, "--file", "{file}"], "no records", fasta("\n\n")),
    Case("fasta-text-before-header", [*MAP, "--file", "{file}"], "before the first '>'", fasta("MKV\n>a\nMKV\n")),
    Case("fasta-empty-record", [*MAP, "--file", "{file}"], "has no sequence", fasta(">a\n>b\nMK__V\n")),
    Case("fasta-bad-letters", [*MAP, "--file", "{file}"], "'B'", fasta(">a\nMKB__V\n")),
    # protein generation (checked before any model loads, except the model's own domain)
    Case("generate-n-zero", [*GEN, "--n", "0"], "--n must be >= 1"),
    Case("generate-length-range", [*GEN, "--min-length", "90", "--max-length", "60"],
         "--min-length must be <= 60, got 90"),
    Case("generate-temperature", [*GEN, "--temperature", "-1"], "--temperature must be >= 0"),
    Case("generate-reference-letters", [*GEN, "--reference", "{file}"], "outside the 20 standard amino acids",
         fasta(">a\nMKVJ\n")),
    Case("generate-reference-missing", [*GEN, "--reference", "nope.fasta"], "--reference nope.fasta: file not found"),
    Case("generate-sudoku-model", [*GEN, "--model", "results/tiny/sudoku/model"],
         "'sudoku' model, but this needs a sequence model (protein, hf)"),
    Case("generate-no-protein-model", GEN, "no trained protein model found"),
    Case("generate-unknown-sampler", [*GEN, "--sampler", "greedy"], "unknown sampler 'greedy'"),
    Case("evaluate-fasta", [*EVAL, "--puzzles", "{file}", "--model", "results/tiny/sudoku/model"],
         "`mdm-mi generate --reference", fasta(">a\n" + "MKVL" * 15 + "\n")),
    Case("download-esmc-offline", ["download-esmc", "--dest", "out/esmc"], "HF_HUB_OFFLINE is set",
         environ={"HF_HUB_OFFLINE": "1"}),
    Case("import-esmc-missing", ["import-esmc", "--weights", "nope.pth", "--out", "out/m"],
         "--weights nope.pth: file not found"),
    Case("import-esmc-corrupt", ["import-esmc", "--weights", "{file}", "--out", "out/m"],
         "corrupt or not a PyTorch weights file", text_file("w.pth", b"\x80\x02garbage")),
    # MI labels and head: the train / val / test splits
    Case("label-split-unknown", [*LABEL, "--n-contexts", "2", "--split", "heldout"],
         "--split must be one of all, val, test, got 'heldout'", solutions_npy),
    Case("label-val-empty", [*LABEL, "--n-contexts", "2", "--split", "val", "--val-contexts", "0"],
         "needs 0 < --val-contexts < --n-contexts", solutions_npy),
    Case("label-test-empty", [*LABEL, "--n-contexts", "2", "--split", "test", "--val-contexts", "2"],
         "val and test must both be non-empty", solutions_npy),
    Case("label-too-few-distinct", [*LABEL, "--n-contexts", "3", "--split", "test", "--val-contexts", "1"],
         "the val and test splits need 3 distinct sequences, the sequence file has 2", solutions_npy),
    Case("train-head-test-missing", [*HEAD, "--labels", "{shard}", "--val", "{shard}", "--test", "nope.safetensors"],
         "--test nope.safetensors: file not found", label_shards),
    # the one validator (infra/validate.py): numbers finite and in range, counts that fit in memory, inputs
    # of the right kind, outputs that can be written, all before any work
    Case("generate-temperature-nan", [*GEN, "--temperature", "nan"], "--temperature must be a finite number, got nan"),
    Case("infill-temperature-nan", ["infill", "--quiet", "MK__V", "--temperature", "nan"],
         "--temperature must be a finite number, got nan"),
    Case("solve-temperature-inf", [*SOLVE, P, "--temperature", "inf"], "--temperature must be a finite number"),
    Case("generate-n-huge", [*GEN, "--n", "1000000000000"], "--n 1e+12 needs about"),
    Case("label-n-contexts-huge", [*LABEL, "--n-contexts", "1000000000000"], "--n-contexts 1e+12 needs about",
         solutions_npy),
    Case("label-n-contexts-too-many-of-this-length", [*LABEL, "--n-contexts", str(memory_bytes() // 1000)],
         "--n-contexts", solutions_npy),  # passes the flag's own bound; the sequences' length refuses it
    Case("label-sequences-folder", [*LABEL, "--n-contexts", "2"], "--sequences {file} is a folder; give a file", folder),
    Case("label-n-shards-zero", [*LABEL, "--n-contexts", "2", "--n-shards", "0"], "--n-shards must be >= 1, got 0",
         solutions_npy),
    Case("label-shard-outside", [*LABEL, "--n-contexts", "2", "--shard", "1"], "--shard must be <= 0, got 1",
         solutions_npy),
    Case("label-out-folder", [*LABEL, "--n-contexts", "2", "--out", "{dir}"], "--out {dir} is a folder; give a file name",
         lambda tmp: solutions_npy(tmp) | {"dir": folder(tmp)["file"]}),
    Case("label-out-under-a-file", [*LABEL, "--n-contexts", "2", "--out", "{file}/s.safetensors"],
         "is a file, not a folder", solutions_npy),
    Case("label-method-wrong-case", [*LABEL, "--n-contexts", "2", "--method", "Exact"],
         "--method must be one of exact, certified, topk, got 'Exact'", solutions_npy),
    Case("label-split-spaces", [*LABEL, "--n-contexts", "2", "--split", " val"], "without leading or trailing spaces",
         solutions_npy),
    Case("import-hf-alphabet-folder", ["import-hf", "--weights", "{file}", "--alphabet", "{file}"],
         "--alphabet {file} is a folder; give a file", folder),
    Case("import-hf-weights-a-file", ["import-hf", "--weights", "{file}"], "is a file; give a folder",
         text_file("w.bin", b"junk")),
    Case("device-wrong-case", [*SOLVE, P, "--device", "CPU"], "--device must be auto, cpu, cuda or cuda:<index>"),
    # workflow configs
    Case("config-misspelt", ["check-config", "{cfg}"], "did you mean 'train'", config("sudoku:\n  trian: {}\n")),
    Case("config-misspelt-top", ["check-config", "{cfg}"], "did you mean 'name'", config("nmae: x\n")),
    Case("config-out-of-range", ["check-config", "{cfg}"], "less than the minimum of 1",
         config("sudoku:\n  train: {steps: 0}\n")),
    Case("config-wrong-type", ["check-config", "{cfg}"], "is not of type 'integer'",
         config("sudoku:\n  model: {d_model: wide}\n")),
    Case("config-t-min-above-t-max", ["check-config", "{cfg}"], "t_min 0.9 > t_max 0.5",
         config("sudoku:\n  train: {t_min: 0.9, t_max: 0.5}\n")),
    Case("config-heads", ["check-config", "{cfg}"], "not divisible by n_heads",
         config("sudoku:\n  model: {d_model: 100, n_heads: 8}\n")),
    Case("config-eval-splits-too-large", ["check-config", "{cfg}"],
         "val_contexts 150 + test_contexts 100 > protein/data/n_heldout_contexts 200",
         config("protein:\n  mi: {val_contexts: 150, test_contexts: 100}\n")),
    Case("config-not-yaml", ["check-config", "{cfg}"], "cannot read config", config("a: [1, 2\n")),
    Case("config-not-a-mapping", ["check-config", "{cfg}"], "must be a mapping", config("- 1\n- 2\n")),
    Case("config-missing", ["check-config", "nope.yaml"], "CONFIG nope.yaml: file not found"),
]


def snapshot(root: Path) -> dict:
    """Every path under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def workdir(tmp_path, tiny_checkpoint, monkeypatch):
    """A working folder holding a workflow-like ``results/`` (run ``tiny``: model + head)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(locate.RUN_ENV, raising=False)
    make_run(tmp_path / "results", "tiny", tiny_checkpoint)
    return tmp_path


def prepare(case: Case, tmp: Path, monkeypatch) -> tuple[list[str], dict]:
    """Write the case's files, set its stdin and environment → its argv and its placeholders."""
    values = case.setup(tmp) if case.setup else {}
    if case.stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(case.stdin))
    for key, value in case.environ.items():
        monkeypatch.setenv(key, value)
    return [arg.format(**values) for arg in case.argv], values


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # usage errors exit through argparse
        return exc.code


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_error_line_exit_2_and_changes_nothing(case, workdir, capsys, monkeypatch):
    argv, values = prepare(case, workdir, monkeypatch)
    before = snapshot(workdir)
    capsys.readouterr()
    code = run_main(argv)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and out == "", out
    assert case.expect.format(**values) in lines[0], lines[0]
    assert snapshot(workdir) == before  # nothing written, created or unpickled


def test_the_corpus_is_large_and_ids_are_unique():
    assert len(CASES) >= 50 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [c for c in CASES if c.id in ("short", "weights-pickle", "k-not-a-number")],
                         ids=lambda c: c.id)
def test_bad_input_in_a_real_process(case, workdir, monkeypatch):
    argv, _ = prepare(case, workdir, monkeypatch)
    before = snapshot(workdir)
    proc = subprocess.run([sys.executable, "-m", "mdm_mi", *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and case.expect in proc.stderr
    assert snapshot(workdir) == before
