"""Issue 51: your own model, third pass: never a silent wrong answer. A checkpoint without its
masked-LM layer, labels and heads from another model, bad flags and files, ``_`` inside tokens, FASTA
read like text, a top-k bound larger than its labels, and misleading messages: each one ``error:``
line (exit 2) that names the problem and the fix, with nothing written."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hf_helpers import BERT_TOKENS, TINY, tiny_bert, tiny_esm, tiny_text_bert

pytest.importorskip("transformers")

TEXT_ALPHABET = "the,cat,sat,on,mat,dog,ran,##s"


def _main(*argv) -> int:
    from mdm_mi.cli import main

    return main([str(a) for a in argv])


def _files(folder) -> set[str]:
    return {p.name for p in folder.rglob("*")} if folder.exists() else set()


def _one_error(capsys, *words) -> str:
    """The one ``error:`` line on stderr, checked to hold every one of ``words``."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def _fasta(path, n: int = 8):
    path.write_text("".join(f">s{i}\n{'MKTAYIAKQRACDEFGHIKL'[i % 5:][:8 + i % 4]}\n" for i in range(n)))
    return path


LABEL = ["--n-contexts", 3, "--shard", 0, "--n-shards", 1, "--method", "exact", "--tol", 0.01,
         "--batch-size", 64, "--seed", 0, "--device", "cpu", "--threads", 1]


def _label(model, sequences, out, *extra) -> int:
    return _main("label", "--model", model, "--sequences", sequences, "--out", out, *LABEL, *extra)


def _train_head(model, labels, out, *extra) -> int:
    return _main("train-head", "--model", model, "--labels", labels["train"], "--val", labels["val"],
                 "--test", labels["test"], "--out", out / "head", "--fidelity", out / "fid.json",
                 "--pairs", out / "pairs.csv", "--hidden", 8, "--heads", 2, "--rank", 2, "--unary",
                 "--steps", 2, "--batch-size", 2, "--lr", 0.01, "--weight-decay", 0.0, "--distance-buckets", 0,
                 "--seed", 0, "--device", "cpu", "--threads", 1, *extra)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two BERTs of one tokenizer and width (seeds 0 and 1) and an ESM of the same width, marked."""
    root = tmp_path_factory.mktemp("models")
    found = {"a": tiny_bert(root / "a", seed=0), "b": tiny_bert(root / "b", seed=1), "esm": tiny_esm(root / "esm")}
    for folder in found.values():
        assert _main("import-hf", "--weights", folder) == 0
    return found


@pytest.fixture(scope="module")
def labelled(models, tmp_path_factory):
    """Model a's token files (hf-data), its train/val/test labels and its head; ESM's train labels."""
    root = tmp_path_factory.mktemp("labelled")
    fasta = _fasta(root / "seqs.fasta", 12)
    for name in ("a", "esm"):
        assert _main("hf-data", "--model", models[name], "--sequences", fasta, "--out-dir", root / name / "data",
                     "--heldout-fraction", 0.5, "--seed", 0) == 0
    labels = {"train": root / "a" / "train.safetensors", "val": root / "a" / "val.safetensors",
              "test": root / "a" / "test.safetensors"}
    data = root / "a" / "data"
    assert _label(models["a"], data / "train_contexts.npy", labels["train"]) == 0
    for split in ("val", "test"):
        assert _label(models["a"], data / "heldout_contexts.npy", labels[split], "--split", split,
                      "--val-contexts", 1) == 0
    esm_train = root / "esm" / "train.safetensors"
    assert _label(models["esm"], root / "esm" / "data" / "train_contexts.npy", esm_train) == 0
    assert _train_head(models["a"], labels, root / "a") == 0
    return {"labels": labels, "esm_train": esm_train, "head": root / "a" / "head", "data": data}


# ---- 1. a checkpoint without its masked-LM layer -------------------------------------------------------

def _saved_as(cls_name: str):
    def make(folder):
        import transformers
        from transformers import BertConfig, BertTokenizer

        folder.mkdir(parents=True)
        (folder / "vocab.txt").write_text("\n".join(BERT_TOKENS) + "\n")
        getattr(transformers, cls_name)(BertConfig(vocab_size=len(BERT_TOKENS), **TINY)).save_pretrained(folder)
        BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False).save_pretrained(folder)
        return folder
    return make


@pytest.mark.parametrize("cls_name", ["BertForSequenceClassification", "BertModel"])
def test_import_hf_refuses_a_checkpoint_whose_lm_layer_would_be_random(cls_name, tmp_path, capsys):
    folder = _saved_as(cls_name)(tmp_path / "model")
    before = _files(folder)
    assert _main("import-hf", "--weights", folder) == 2
    _one_error(capsys, "newly initialised", "cls.predictions", "ForMaskedLM")
    assert _files(folder) == before
    assert _main("import-hf", "--weights", folder, "--no-check") == 0  # marked without the check: every reader refuses
    capsys.readouterr()
    assert _main("mi-map", "MK__QL", "--model", folder, "--out", tmp_path / "m.png", "--quiet") == 2
    _one_error(capsys, "newly initialised")
    assert not (tmp_path / "m.png").exists()


# ---- 2. labels from another model ------------------------------------------------------------------------

def test_train_head_refuses_labels_from_another_model(models, labelled, tmp_path, capsys):
    labels = labelled["labels"]
    assert _train_head(models["b"], labels, tmp_path) == 2  # same tokenizer, same width, other weights
    _one_error(capsys, str(labels["train"]), "another model", "label")
    assert _train_head(models["a"], labels | {"train": labelled["esm_train"]}, tmp_path) == 2
    _one_error(capsys, str(labelled["esm_train"]), "another model")
    assert not (tmp_path / "head").exists() and not (tmp_path / "fid.json").exists()


def test_labels_without_a_stamp_holding_ids_the_model_does_not_read_are_one_line(models, labelled, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    bare = tmp_path / "esm_bare.safetensors"  # a shard from before stamps: no metadata
    save_file(load_file(str(labelled["esm_train"])), str(bare))
    assert _train_head(models["a"], labelled["labels"] | {"train": bare}, tmp_path) == 2
    _one_error(capsys, str(bare), "token id")


def test_labels_carry_the_fingerprint_of_their_model(models, labelled):
    from safetensors import safe_open

    from mdm_mi.models.loading import model_fingerprint

    with safe_open(str(labelled["labels"]["train"]), "pt") as fh:
        stamp = fh.metadata()
    assert stamp["model_fingerprint"] == model_fingerprint(models["a"]) != model_fingerprint(models["b"])
    assert json.loads(labelled["labels"]["train"].with_suffix(".json").read_text())["model_fingerprint"] == \
        stamp["model_fingerprint"]


# ---- 3. a head from another model of the same width ------------------------------------------------------

def test_mi_map_and_generate_refuse_a_head_from_another_model(models, labelled, tmp_path, capsys):
    head = labelled["head"]
    assert json.loads((head / "meta.json").read_text())["model_fingerprint"]
    assert _main("mi-map", "MK__QL", "--model", models["b"], "--head", head, "--out", tmp_path / "m.png",
                 "--quiet") == 2
    _one_error(capsys, str(head), "another model", "train-head")
    assert _main("generate", "--model", models["b"], "--head", head, "--sampler", "mi", "--gamma", 1, "--n", 1,
                 "--min-length", 4, "--max-length", 4, "--out", tmp_path / "g.fasta", "--quiet", "--device", "cpu") == 2
    _one_error(capsys, "another model")
    assert not (tmp_path / "m.png").exists() and not (tmp_path / "g.fasta").exists()
    assert _main("mi-map", "MK__QL", "--model", models["a"], "--head", head, "--out", tmp_path / "m.png",
                 "--quiet") == 0


def test_a_head_at_another_hidden_layer_is_refused(models, labelled, tmp_path, capsys):
    other = tmp_path / "layer1"
    assert _main("import-hf", "--weights", models["a"], "--out", other, "--hidden-layer", 1) == 0
    capsys.readouterr()
    assert _main("mi-map", "MK__QL", "--model", other, "--head", labelled["head"], "--out", tmp_path / "m.png",
                 "--quiet") == 2
    _one_error(capsys, "hidden layer")


# ---- 4. bad flags and files: one line, not a traceback ---------------------------------------------------

def _bad_sequences(kind: str, folder):
    path = folder / {"fasta": "s.fasta", "garbage": "g.npy", "float": "f.npy", "1d": "o.npy", "object": "p.npy"}[kind]
    if kind == "fasta":
        path.write_text(">s\nMKTAYIAK\n")
    elif kind == "garbage":
        path.write_bytes(b"not a numpy file at all")
    elif kind == "float":
        np.save(path, np.full((2, 6), 0.5))
    elif kind == "1d":
        np.save(path, np.arange(6))
    else:
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return path


@pytest.mark.parametrize("kind, words", [("fasta", ".npy"), ("garbage", "not a .npy"), ("float", "integer"),
                                         ("1d", "2-D"), ("object", "integer")])
def test_label_refuses_a_sequence_file_that_is_not_token_ids(models, tmp_path, capsys, kind, words):
    path = _bad_sequences(kind, tmp_path)
    assert _label(models["a"], path, tmp_path / "l.safetensors") == 2
    _one_error(capsys, str(path), words, "hf-data")
    assert not (tmp_path / "l.safetensors").exists()


@pytest.mark.parametrize("flag, value, words", [("--batch-size", 0, "--batch-size"),
                                                ("--batch-size", -5, "--batch-size"), ("--tol", -1, "--tol"),
                                                ("--k", -4, "--k")])
def test_label_refuses_bad_numbers(models, labelled, tmp_path, capsys, flag, value, words):
    argv = list(LABEL)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    assert _main("label", "--model", models["a"], "--sequences", labelled["data"] / "train_contexts.npy",
                 "--out", tmp_path / "l.safetensors", *argv) == 2
    _one_error(capsys, words)
    assert not (tmp_path / "l.safetensors").exists()


@pytest.mark.parametrize("cut", [8, 50, -100])
def test_import_hf_refuses_a_truncated_safetensors_file(tmp_path, capsys, cut):
    folder = tiny_bert(tmp_path / "model")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:cut])
    assert _main("import-hf", "--weights", folder) == 2
    _one_error(capsys, "model.safetensors", "save_pretrained")
    assert not (folder / "meta.json").exists()


# ---- 5. `_` inside alphabet tokens --------------------------------------------------------------------

@pytest.mark.parametrize("alphabet", ["_,A,C", "a_b,c"])
def test_import_hf_refuses_tokens_holding_the_mask_character(tmp_path, capsys, alphabet):
    folder = tiny_bert(tmp_path / "model")
    assert _main("import-hf", "--weights", folder, "--alphabet", alphabet) == 2
    _one_error(capsys, "'_'", "mask character")
    assert not (folder / "meta.json").exists()


def test_a_meta_json_with_a_mask_character_token_is_refused_by_its_readers(models, tmp_path, capsys):
    folder = tmp_path / "model"
    shutil.copytree(models["a"], folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps(meta | {"tokens": ["A", "C", "a_b"]}))
    assert _main("mi-map", "A__C", "--model", folder, "--out", tmp_path / "m.png", "--quiet") == 2
    _one_error(capsys, "'a_b'", "mask character")


# ---- 6. FASTA read as written -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """A marked text model (multi-character tokens, 16 positions) and a head of its width."""
    import torch

    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    root = tmp_path_factory.mktemp("text")
    folder = tiny_text_bert(root / "model")
    assert _main("import-hf", "--weights", folder, "--alphabet", TEXT_ALPHABET) == 0
    torch.manual_seed(0)
    save_head(MIHead(16, HeadConfig(8, 2, 2, True, 0)), root / "head", {"backbone": str(folder)})
    return folder


def test_hf_data_reads_a_text_models_fasta_records_as_tokens(text_model, tmp_path):
    from mdm_mi.models.loading import load_model

    fasta = tmp_path / "text.fasta"
    fasta.write_text("".join(f">t{i}\nthe cat sat\non the mat\n" for i in range(4)))
    lines = tmp_path / "text.txt"
    lines.write_text("the cat sat on the mat\n" * 4)
    for source, out in ((fasta, "f"), (lines, "l")):
        assert _main("hf-data", "--model", text_model, "--sequences", source, "--out-dir", tmp_path / out,
                     "--heldout-fraction", 0.5, "--seed", 0) == 0
    backbone = load_model(text_model, "cpu", "hf")[0]
    got = np.load(tmp_path / "f" / "train_contexts.npy")
    assert np.array_equal(got, np.load(tmp_path / "l" / "train_contexts.npy"))
    assert backbone.decode_tokens(__import__("torch").as_tensor(got))[0] == "the cat sat on the mat"
    assert (tmp_path / "f" / "train.fasta").read_text().splitlines()[1] == "the cat sat on the mat"


def test_lowercase_protein_fasta_is_refused_like_mi_map_refuses_it(models, labelled, tmp_path, capsys):
    fasta = tmp_path / "lower.fasta"
    fasta.write_text(">s0\nMKTAYIAK\n>s1\nmktayiak\n>s2\nMKTAYIAK\n")
    assert _main("hf-data", "--model", models["a"], "--sequences", fasta, "--out-dir", tmp_path / "d",
                 "--heldout-fraction", 0.4, "--seed", 0) == 2
    _one_error(capsys, "record s1", "'m'", "case")
    assert not (tmp_path / "d").exists()
    assert _main("mi-map", "mk__ql", "--model", models["a"], "--head", labelled["head"], "--out", tmp_path / "m.png",
                 "--quiet") == 2
    _one_error(capsys, "'m'")


def test_mi_map_reads_a_text_models_fasta_file_as_tokens(text_model, tmp_path, capsys):
    fasta = tmp_path / "one.fasta"
    fasta.write_text(">q\nthe _ sat\n_ mat\n")
    assert _main("mi-map", "--file", fasta, "--model", text_model, "--head", text_model.parent / "head",
                 "--out", tmp_path / "m.png", "--quiet") == 0, capsys.readouterr().err


# ---- 7. the top-k bound against its labels; --k only where it is used ---------------------------------

def test_label_topk_warns_when_its_bound_exceeds_the_labels(models, labelled, tmp_path, capsys):
    out = tmp_path / "topk.safetensors"
    assert _main("label", "--model", models["a"], "--sequences", labelled["data"] / "train_contexts.npy",
                 "--out", out, *[v if v != "exact" else "topk" for v in LABEL], "--k", 1) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    stats = json.loads(out.with_suffix(".json").read_text())
    assert stats["bound_share"] > 0.25 and stats["bound_warning"] is True
    assert len(err) == 1 and "--k" in err[0] and "certified" in err[0], err


def test_k_is_not_recorded_by_the_methods_that_ignore_it(models, labelled, tmp_path):
    out = tmp_path / "exact.safetensors"
    assert _label(models["a"], labelled["data"] / "train_contexts.npy", out, "--k", 7) == 0
    stats = json.loads(out.with_suffix(".json").read_text())
    assert stats["k"] is None and "bound_warning" not in stats


# ---- 9. messages that name the right problem and fix ------------------------------------------------

def test_a_repeated_alphabet_token_is_named(tmp_path, capsys):
    folder = tiny_bert(tmp_path / "model")
    assert _main("import-hf", "--weights", folder, "--alphabet", "A,C,A") == 2
    _one_error(capsys, "repeats", "'A'")


def test_a_pickle_that_is_more_than_tensors_is_named(tmp_path, capsys):
    import os

    import torch

    class Payload:
        def __reduce__(self):
            return (os.system, ("true",))

    folder = tiny_bert(tmp_path / "model")
    (folder / "model.safetensors").unlink()
    torch.save({"x": Payload()}, folder / "pytorch_model.bin")
    assert _main("import-hf", "--weights", folder) == 2
    line = _one_error(capsys, "pytorch_model.bin", "weights_only")
    assert "from_tf" not in line


def test_contexts_without_bos_name_hf_data_not_the_library(models, tmp_path, capsys):
    ids = np.array([[9, 10, 11, 12, 13, 14]] * 3)  # amino-acid ids, no BOS / EOS, no stamp
    np.save(tmp_path / "raw.npy", ids)
    assert _label(models["a"], tmp_path / "raw.npy", tmp_path / "l.safetensors") == 2
    line = _one_error(capsys, "raw.npy", "hf-data")
    assert "mask_contexts" not in line


def test_generate_names_max_length(text_model, tmp_path, capsys):
    assert _main("generate", "--model", text_model, "--sampler", "eb", "--gamma", 3, "--n", 1, "--min-length", 3,
                 "--max-length", 37, "--out", tmp_path / "g.fasta", "--quiet", "--device", "cpu") == 2
    _one_error(capsys, "--max-length 37", "14")


def test_mi_map_without_a_head_points_at_train_head_for_your_model(models, tmp_path, capsys):
    assert _main("mi-map", "MK__QL", "--model", models["a"], "--out", tmp_path / "m.png", "--quiet") == 2
    line = _one_error(capsys, "train-head", "--head")
    assert "snakemake --cores 2" not in line


@pytest.mark.parametrize("flag, value", [("--steps", 0), ("--batch-size", 0)])
def test_train_head_refuses_no_steps(models, labelled, tmp_path, capsys, flag, value):
    extra = [flag, value]
    assert _train_head(models["a"], labelled["labels"], tmp_path, *extra) == 2
    _one_error(capsys, flag)
    assert not (tmp_path / "head").exists()


# ---- 10. the doc says what the code does ----------------------------------------------------------

def test_docs_your_model_states_the_rules_of_this_issue():
    from conftest import REPO

    text = " ".join((REPO / "docs" / "your_model.md").read_text().split())
    assert "such as GPT-2" not in text and "newly initialised" in text
    assert "must not contain `_`" in text
    assert "`generate` without `--reference`" in text  # the Limits paragraph: generate works for any alphabet
    assert "first `--val-contexts`" in text and "bound_warning" in text and '"k": null' in text
    assert "tokens separated by spaces*" not in text and "case is kept" in text  # the one reader's rules (issue 65)


# ---- 11. weights fingerprinted by content at every load ------------------------------------------------

def test_weights_replaced_after_import_are_refused_until_reimported(models, tmp_path, capsys):
    """Issue 65: model a's folder with model b's weights copied over, without import-hf again: every
    load refuses it in one line that says to re-import; after import-hf it loads, as a new model."""
    import shutil

    folder = shutil.copytree(models["a"], tmp_path / "a")
    for weights in models["b"].glob("*.safetensors"):
        shutil.copy(weights, folder / weights.name)
    argv = ("mi-map", "MK__QL", "--model", folder, "--out", tmp_path / "m.png", "--quiet")
    assert _main(*argv) == 2
    _one_error(capsys, "changed since they were imported", "re-import", "import-hf")
    assert not (tmp_path / "m.png").exists()
    assert _main("import-hf", "--weights", folder) == 0
    from mdm_mi.models.loading import load_model

    load_model(folder)
