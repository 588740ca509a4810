"""MI label splits: train, val (choosing the head) and test (the reported fidelity).

Val and test are the two parts of one seeded draw of distinct held-out contexts
(:func:`mdm_mi.mi.contexts.draw_evaluation`): they must share no sequence and no context, for Sudoku
(real Radcliffe solutions, as ``prepare-sudoku`` writes them) and proteins (held-out crops, as
``protein-data`` writes them); ``train-head`` reports both, test as the reported split.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from mdm_mi.cli import main
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.contexts import ContextDraw, draw_evaluation, draw_training, repeated_rows, split_part
from mdm_mi.mi.jobs import LabelArgs, draw_split
from mdm_mi.sudoku.grid import MASK_ID, N_DIGITS

REPO = Path(__file__).resolve().parents[1]
RADCLIFFE = REPO / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"
PROTEIN_DATA = REPO / "resources" / "data" / "protein"
SUDOKU_VAL, SUDOKU_TEST = 50, 50  # the schema's Sudoku defaults
PROTEIN_VAL, PROTEIN_TEST = 30, 30  # the schema's protein defaults
PROTEIN_HELDOUT = 200  # the schema's protein.data.n_heldout_contexts


def label_args(split: str, n_contexts: int, val_contexts: int, seed: int = 0) -> LabelArgs:
    """Label-verb arguments for one split's draw (paths and labeller settings unused here)."""
    return LabelArgs(model=Path("m"), sequences=Path("s.npy"), out=Path("o.safetensors"), n_contexts=n_contexts,
                     shard=0, n_shards=1, method="exact", tol=1e-3, batch_size=8, seed=seed, device="cpu",
                     threads=1, split=split, val_contexts=val_contexts)


def val_and_test(sequences: np.ndarray, n_val: int, n_test: int, mask_id: int, vocab_ids, seed: int = 0):
    """The val and the test job's draws, each computed as its own job computes it."""
    return tuple(draw_split(label_args(split, n_val + n_test, n_val, seed), sequences, mask_id, vocab_ids)
                 for split in ("val", "test"))


def assert_disjoint(sequences: np.ndarray, val: ContextDraw, test: ContextDraw, mask_id: int) -> None:
    """No shared sequence (neither row index nor identical row), no identical context, and each
    context is its own sequence with some tokens masked."""
    assert not set(val.rows.tolist()) & set(test.rows.tolist())
    rows = torch.cat([val.rows, test.rows])
    assert len(set(rows.tolist())) == len(rows)
    assert len(np.unique(sequences[rows.numpy()], axis=0)) == len(rows)  # no identical sequence either
    contexts = torch.cat([val.contexts, test.contexts])
    assert len(torch.unique(contexts, dim=0)) == len(contexts)
    seqs = torch.as_tensor(sequences[rows.numpy()])
    assert ((contexts == seqs) | (contexts == mask_id)).all()


@pytest.fixture(scope="module")
def radcliffe_solutions() -> np.ndarray:
    """The Sudoku held-out sequences: the Radcliffe solutions, as prepare-sudoku writes them."""
    from mdm_mi.sudoku.data import load_puzzle_csv

    return np.asarray(load_puzzle_csv(RADCLIFFE).solutions)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_sudoku_val_and_test_contexts_are_disjoint(radcliffe_solutions, seed):
    val, test = val_and_test(radcliffe_solutions, SUDOKU_VAL, SUDOKU_TEST, MASK_ID, torch.arange(N_DIGITS), seed)
    assert (len(val.contexts), len(test.contexts)) == (SUDOKU_VAL, SUDOKU_TEST)
    assert_disjoint(radcliffe_solutions, val, test, MASK_ID)
    whole = draw_evaluation(radcliffe_solutions, SUDOKU_VAL + SUDOKU_TEST, MASK_ID, seed, torch.arange(N_DIGITS))
    assert torch.equal(whole.contexts, torch.cat([val.contexts, test.contexts]))  # one draw, split in two


def test_protein_val_and_test_contexts_are_disjoint(tmp_path):
    pytest.importorskip("esm.models.esmc")
    from mdm_mi.protein.tokens import protein_tokens

    flags = {"n_reference": 500, "heldout_fraction": 0.05, "n_train_contexts": 4,
             "n_heldout_contexts": PROTEIN_HELDOUT, "min_length": 50, "max_length": 100, "seed": 0}
    argv = ["protein-data", "--train-fasta", str(PROTEIN_DATA / "train_uniref50_cath.fasta"),
            "--reference-fasta", str(PROTEIN_DATA / "uniref50_len50-100.fasta"), "--out-dir", str(tmp_path)]
    assert main(argv + [f"--{k.replace('_', '-')}={v}" for k, v in flags.items()]) == 0
    crops = np.load(tmp_path / "heldout_contexts.npy")
    held = np.concatenate([crops, crops[:40]])  # repeated crops: a repeated row must not reach both splits
    tok = protein_tokens()
    vocab = torch.tensor(tok.aa_ids)
    val, test = val_and_test(held, PROTEIN_VAL, PROTEIN_TEST, tok.mask, vocab)
    assert (len(val.contexts), len(test.contexts)) == (PROTEIN_VAL, PROTEIN_TEST)
    assert_disjoint(held, val, test, tok.mask)
    specials = ~np.isin(held[torch.cat([val.rows, test.rows]).numpy()], tok.aa_ids)
    assert not (torch.cat([val.contexts, test.contexts]).numpy()[specials] == tok.mask).any()  # BOS/EOS/pads stay


def test_repeated_contexts_are_masked_again():
    # 9 distinct 2-token sequences: fully masked (identical) contexts are near certain for some seed
    sequences = np.array([[a, b] for a in range(3) for b in range(3)] * 2)
    for seed in range(20):
        val, test = val_and_test(sequences, 4, 5, mask_id=3, vocab_ids=torch.arange(3), seed=seed)
        assert_disjoint(sequences, val, test, mask_id=3)


def test_repeated_rows_marks_later_copies():
    x = torch.tensor([[1, 2], [3, 4], [1, 2], [5, 6], [3, 4], [1, 2]])
    assert repeated_rows(x).tolist() == [False, False, True, False, True, True]
    assert repeated_rows(x[:0]).tolist() == []


def test_training_split_is_the_whole_draw_with_replacement():
    sequences = np.arange(12).reshape(4, 3)
    draw = draw_split(label_args("all", 10, 0), sequences, mask_id=99)
    assert len(draw.contexts) == 10 and len(set(draw.rows.tolist())) <= 4  # more contexts than sequences
    again = draw_training(sequences, 10, 99, 0)
    assert torch.equal(draw.contexts, again.contexts) and torch.equal(draw.rows, again.rows)


@pytest.mark.parametrize("split, n, n_val, fragment", [
    ("heldout", 10, 5, "--split must be one of all, val, test"),
    ("val", 10, 0, "0 < --val-contexts < --n-contexts"),
    ("test", 10, 10, "val and test must both be non-empty"),
    ("all", 0, 0, "--n-contexts must be >= 1"),
])
def test_bad_split_flags_are_user_errors(split, n, n_val, fragment):
    with pytest.raises(InputError, match=re.escape(fragment)):
        split_part(split, n, n_val)


def test_skipped_contexts_go_to_neither_split_and_test_takes_the_tail():
    """--skip-contexts k: val keeps the draw's first contexts, test the last ones after k spent ones
    (new sequences and masks), and a skip that leaves no test context is a user error."""
    assert split_part("val", 10, 3, skip_contexts=4) == slice(0, 3)
    assert split_part("test", 10, 3, skip_contexts=4) == slice(7, 10)
    sequences = np.arange(40).reshape(20, 2) % 17
    sequences = sequences[np.unique(sequences, axis=0, return_index=True)[1]]
    args = dataclasses.replace(label_args("test", 9, 3), skip_contexts=4)
    test = draw_split(args, sequences, mask_id=99)
    val = draw_split(dataclasses.replace(args, split="val"), sequences, mask_id=99)
    assert len(val.rows) == 3 and len(test.rows) == 2 and not set(val.rows.tolist()) & set(test.rows.tolist())
    with pytest.raises(InputError, match="val and test must both be non-empty"):
        split_part("test", 10, 3, skip_contexts=7)


def test_evaluation_splits_need_enough_distinct_sequences():
    sequences = np.array([[0, 1], [0, 1], [1, 0]])  # two distinct rows
    with pytest.raises(InputError, match="need 3 distinct sequences, the sequence file has 2"):
        draw_evaluation(sequences, 3, mask_id=2, seed=0)


# ---- label → train-head through the CLI --------------------------------------------------------------


def run_label(model: Path, sequences: Path, out: Path, split: str, n_contexts: int, n_val: int = 0) -> None:
    """Label all shards (two) of one split with the tiny model."""
    for shard in range(2):
        argv = ["label", "--model", str(model), "--sequences", str(sequences), "--n-contexts", str(n_contexts),
                "--shard", str(shard), "--n-shards", "2", "--method", "certified", "--tol", "0.01",
                "--batch-size", "256", "--seed", "0", "--device", "cpu", "--threads", "1",
                "--out", str(out / split / f"shard{shard}.safetensors")]
        if split != "train":
            argv += ["--split", split, "--val-contexts", str(n_val)]
        assert main(argv) == 0


@pytest.fixture(scope="module")
def labelled(tmp_path_factory, tiny_checkpoint, easy_puzzles) -> Path:
    """Train (4), val (3) and test (3) label shards of the tiny Sudoku model, in one folder."""
    root = tmp_path_factory.mktemp("labels")
    solutions = root / "solutions.npy"
    np.save(solutions, easy_puzzles[1])
    run_label(tiny_checkpoint, solutions, root, "train", 4)
    for split in ("val", "test"):
        run_label(tiny_checkpoint, solutions, root, split, 6, n_val=3)
    return root


def shards(root: Path, split: str) -> list[str]:
    return [str(root / split / f"shard{i}.safetensors") for i in range(2)]


def test_label_shards_of_val_and_test_are_disjoint(labelled):
    from safetensors.torch import load_file

    parts = {split: [load_file(p) for p in shards(labelled, split)] for split in ("val", "test")}
    rows = {s: torch.cat([p["sequence_row"] for p in ps]) for s, ps in parts.items()}
    contexts = torch.cat([p["contexts"] for ps in parts.values() for p in ps])
    assert len(rows["val"]) == len(rows["test"]) == 3
    assert not set(rows["val"].tolist()) & set(rows["test"].tolist())
    assert len(torch.unique(contexts, dim=0)) == len(contexts) == 6
    stats = json.loads((labelled / "test" / "shard0.json").read_text())
    assert stats["split"] == "test"


def test_train_head_reports_test_and_keeps_val_for_choosing(labelled, tiny_checkpoint, tmp_path):
    from mdm_mi.mi.head import load_head

    out = tmp_path / "head"
    argv = ["train-head", "--model", str(tiny_checkpoint), "--labels", *shards(labelled, "train"),
            "--val", *shards(labelled, "val"), "--test", *shards(labelled, "test"), "--out", str(out),
            "--fidelity", str(tmp_path / "fidelity.json"), "--pairs", str(tmp_path / "pairs.csv"),
            "--hidden", "4", "--heads", "2", "--rank", "2", "--unary", "--distance-buckets", "0", "--steps", "4",
            "--batch-size", "2", "--lr", "0.01", "--weight-decay", "0", "--seed", "0", "--device", "cpu", "--threads", "1"]
    assert main(argv) == 0
    fid = json.loads((tmp_path / "fidelity.json").read_text())
    assert fid["reported"] == "test"
    for split in ("val", "test"):
        assert fid[split]["contexts"] == 3
        assert {"pearson", "spearman", "mae", "auroc", "pairs"} <= set(fid[split])
    assert "pearson" not in fid  # no unlabelled top-level numbers: each belongs to a split
    assert fid["train_contexts"] == 4
    pairs = (tmp_path / "pairs.csv").read_text().splitlines()
    assert pairs[0] == "label,prediction" and len(pairs) - 1 == min(fid["test"]["pairs"], 20000)
    _, meta = load_head(out)
    assert meta["fidelity"] == fid and all("val_mse" in row for row in meta["history"])


def test_train_head_without_test_shards_reports_val_and_warns(labelled, tiny_checkpoint, tmp_path, capsys):
    """Held-out labels are optional (issue 65 item 8): without --test the val fidelity is reported, and one
    warning line says that val chose the head."""
    import json

    argv = ["train-head", "--model", str(tiny_checkpoint), "--labels", *shards(labelled, "train"),
            "--val", *shards(labelled, "val"), "--out", str(tmp_path / "h"), "--fidelity", str(tmp_path / "f.json"),
            "--pairs", str(tmp_path / "p.csv"), "--hidden", "4", "--heads", "2", "--rank", "2", "--unary",
            "--distance-buckets", "0", "--steps", "1", "--batch-size", "2", "--lr", "0.01", "--weight-decay", "0", "--seed", "0",
            "--device", "cpu", "--threads", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: train-head without --test" in err and "val fidelity is reported" in err
    fid = json.loads((tmp_path / "f.json").read_text())
    assert fid["reported"] == "val" and "test" not in fid and "pearson" in fid["val"]


def test_scatter_reads_the_reported_split():
    from mdm_mi.mi.figures import reported_fidelity

    fid = {"reported": "test", "test": {"pearson": 0.9}, "val": {"pearson": 0.8}, "n_params": 10}
    assert reported_fidelity(fid) == ("test", {"pearson": 0.9})
    assert reported_fidelity({"pearson": 0.7}) == ("held-out", {"pearson": 0.7})  # a JSON from before the split


def test_label_args_default_to_the_whole_draw():
    defaults = {f.name: f.default for f in dataclasses.fields(LabelArgs)}
    assert defaults["split"] == "all" and defaults["val_contexts"] is None  # val's: the schema's, with --split val|test


def test_maskable_positions_restrict_the_draw_and_bad_files_are_one_line(tmp_path):
    """A token file's stamp may name its maskable positions: the draws mask nothing else; a missing or
    misshapen maskable file is one InputError naming it."""
    from mdm_mi.infra.errors import InputError
    from mdm_mi.mi.contexts import draw_evaluation, draw_training, read_maskable

    seqs = np.tile(np.arange(1, 9), (20, 1))
    maskable = np.zeros_like(seqs, dtype=bool)
    maskable[:, 2:5] = True
    np.save(tmp_path / "s.npy", seqs)
    assert read_maskable(tmp_path / "s.npy", seqs) is None  # no stamp: every token maskable
    (tmp_path / "s.json").write_text(json.dumps({"maskable": "s_maskable.npy"}))
    with pytest.raises(InputError, match="does not exist"):
        read_maskable(tmp_path / "s.npy", seqs)
    np.save(tmp_path / "s_maskable.npy", maskable[:, :4])
    with pytest.raises(InputError, match="shape"):
        read_maskable(tmp_path / "s.npy", seqs)
    np.save(tmp_path / "s_maskable.npy", maskable)
    got = read_maskable(tmp_path / "s.npy", seqs)
    for draw in (draw_training(seqs, 50, 0, 0, maskable=got), draw_evaluation(seqs[:1], 1, 0, 0, maskable=got)):
        masked = (draw.contexts == 0).numpy()
        assert not (masked & ~maskable[draw.rows.numpy()]).any()
    assert (draw_training(seqs, 50, 0, 0, maskable=got).contexts == 0).any()
