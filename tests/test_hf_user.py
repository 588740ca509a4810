"""Issue 38: what a new user of ``import-hf`` / ``hf-data`` / ``label`` / ``generate`` / ``mi-map`` hits
with their own model: refusals leave nothing behind, one-line errors name the record, and the words are
right (lengths in tokens, small MI printed, whole tokens, hints)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hf_helpers import BERT_TOKENS, tiny_bert, tiny_esm, tiny_text_bert

pytest.importorskip("transformers")


def _main(*argv) -> int:
    from mdm_mi.cli import main

    return main([str(a) for a in argv])


def _files(folder) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def _no_tokenizer(folder):
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink()
    return folder


def _mismatched(folder):
    """A tokenizer whose ids reach past the model's embeddings (a 13-token model, a 13-token
    tokenizer that says its ids go to 30)."""
    tiny_text_bert(folder, vocab_size=8)
    return folder


def _gpt2(folder):
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps({"A": 0, "C": 1, "<|endoftext|>": 2}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    GPT2LMHeadModel(GPT2Config(vocab_size=3, n_embd=8, n_layer=1, n_head=2, n_positions=16)).save_pretrained(folder)
    GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    return folder


REFUSALS = {  # case -> (model maker, import-hf flags, words of the one-line error)
    "special in alphabet": (tiny_bert, ["--alphabet", "[CLS],A,C"], "specials outside vocabulary"),
    "mask in alphabet": (tiny_bert, ["--alphabet", "[MASK],A,C"], "mask outside vocabulary"),
    "unknown token": (tiny_bert, ["--alphabet", "A,C,Zq"], "does not know the alphabet tokens"),
    "hidden layer": (tiny_bert, ["--hidden-layer", "9"], "hidden_layer 9 is outside"),
    "no tokenizer": (lambda f: _no_tokenizer(tiny_bert(f)), [], "cannot load the tokenizer"),
    "ids past the model": (_mismatched, ["--alphabet", "the,##s"], "tokenizer's ids reach"),
    "gpt-2": (_gpt2, ["--alphabet", "A,C"], "cannot load a Hugging Face masked LM"),
    "corrupt config.json": (lambda f: _corrupt_config(tiny_bert(f)), [], "config.json is not valid JSON (line 1"),
}


def _corrupt_config(folder):
    (folder / "config.json").write_text('{"architectures": ["BertForMaskedLM"],')
    return folder


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_import_leaves_nothing_behind(case, tmp_path, capsys):
    make, flags, words = REFUSALS[case]
    folder = make(tmp_path / "model")
    before = _files(folder)
    assert _main("import-hf", "--weights", folder, "--out", tmp_path / "marked", *flags) == 2
    assert _main("import-hf", "--weights", folder, *flags) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 2, err  # one line per refusal
    assert _files(folder) == before and not (tmp_path / "marked").exists()


def test_a_bin_only_folder_is_read_with_weights_only_and_says_so(tmp_path, capsys):
    from transformers import BertConfig, BertForMaskedLM

    folder = tiny_bert(tmp_path / "model")
    (folder / "model.safetensors").unlink()
    BertForMaskedLM(BertConfig(vocab_size=len(BERT_TOKENS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32)).save_pretrained(folder, safe_serialization=False)
    assert _main("import-hf", "--weights", folder) == 0
    assert "weights_only=True" in capsys.readouterr().out


def test_loading_prints_no_transformers_chatter(tmp_path):
    """Every BERT load printed transformers' five-line GenerationMixin notice; now import-hf prints one line."""
    folder = tiny_bert(tmp_path / "model")
    done = subprocess.run([sys.executable, "-m", "mdm_mi", "import-hf", "--weights", str(folder)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "GenerationMixin" not in done.stderr + done.stdout, done.stderr
    assert done.stdout.count("\n") == 1


def _hf_data(model, fasta, out, fraction=0.5) -> int:
    return _main("hf-data", "--model", model, "--sequences", fasta, "--out-dir", out, "--heldout-fraction", fraction,
                 "--seed", 0)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = tiny_bert(tmp_path_factory.mktemp("bert") / "model")
    assert _main("import-hf", "--weights", folder) == 0
    return folder


@pytest.mark.parametrize("bad, words", [("MKAZQ", "outside the model's alphabet"), ("MK_AQ", "the mask character"),
                                        ("M" * 200, "positions hold at most")])
def test_hf_data_names_the_record_and_writes_nothing(bert, tmp_path, capsys, bad, words):
    """A bad record anywhere (held out or not) is refused by its own id, before any file is written."""
    fasta = tmp_path / "seqs.fasta"
    fasta.write_text("".join(f">s{i}\n{bad if i == 37 else 'MKTAYIAK'}\n" for i in range(40)))
    assert _hf_data(bert, fasta, tmp_path / "data") == 2
    err = capsys.readouterr().err
    assert "record s37 " in err and words in err and err.count("\n") == 1, err
    assert not (tmp_path / "data").exists()


def test_hf_data_stamps_the_model_and_label_refuses_another_models_contexts(bert, tmp_path, capsys):
    esm = tiny_esm(tmp_path / "esm")
    assert _main("import-hf", "--weights", esm) == 0
    fasta = tmp_path / "seqs.fasta"
    fasta.write_text("".join(f">s{i}\nMKTAYIAK\n" for i in range(4)))
    assert _hf_data(bert, fasta, tmp_path / "data") == 0
    stamp = json.loads((tmp_path / "data" / "train_contexts.json").read_text())
    assert len(stamp["token_fingerprint"]) == 16 and stamp["records"][0].startswith("s")
    label = ["label", "--n-contexts", 2, "--shard", 0, "--n-shards", 1, "--method", "exact", "--tol", 0.01,
             "--batch-size", 16, "--seed", 0, "--device", "cpu", "--threads", 1]
    assert _main(*label, "--model", esm, "--sequences", tmp_path / "data" / "train_contexts.npy",
                 "--out", tmp_path / "l.safetensors") == 2
    assert "encoded for another model" in capsys.readouterr().err
    far = tmp_path / "far.npy"  # no stamp, ids no model reads
    np.save(far, np.full((2, 6), 7457))
    assert _main(*label, "--model", bert, "--sequences", far, "--out", tmp_path / "l.safetensors") == 2
    assert "token id 7457" in capsys.readouterr().err and not (tmp_path / "l.safetensors").exists()


def test_a_tokenizer_past_the_models_vocabulary_is_one_line_at_load(tmp_path):
    from mdm_mi.infra.checkpoint import CheckpointError
    from mdm_mi.models.loading import load_model

    folder = _mismatched(tmp_path / "model")
    assert _main("import-hf", "--weights", folder, "--alphabet", "the,##s", "--no-check") == 0
    with pytest.raises(CheckpointError, match="tokenizer's ids reach 12, but the model has only 8"):
        load_model(folder, "cpu", "hf")


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    """A marked text model (multi-character tokens, 16 positions) and its MI head."""
    import torch

    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    root = tmp_path_factory.mktemp("text")
    folder = tiny_text_bert(root / "model")
    assert _main("import-hf", "--weights", folder, "--alphabet", "the,cat,sat,on,mat,dog,ran,##s") == 0
    torch.manual_seed(0)
    save_head(MIHead(16, HeadConfig(8, 2, 2, True, 0)), root / "head", {"backbone": str(folder)})
    return folder, root / "head"


def test_a_sequence_past_the_position_table_is_one_line(text, tmp_path, capsys):
    from mdm_mi.infra.errors import InputError
    from mdm_mi.models.loading import load_model

    backbone = load_model(text[0], "cpu", "hf")[0]
    with pytest.raises(InputError, match="exceed the model's 16 positions"):
        backbone(np_tokens(backbone, 20))
    assert _main("generate", "--model", text[0], "--sampler", "eb", "--gamma", 3, "--n", 1, "--min-length", 20,
                 "--max-length", 20, "--out", tmp_path / "g.fasta", "--quiet", "--device", "cpu") == 2
    assert "positions hold at most 14" in capsys.readouterr().err


def np_tokens(backbone, n: int):
    import torch

    return torch.cat([backbone.masked_sequence(2), torch.full((n,), backbone.mask_id)])[None]


def test_generate_writes_lengths_in_tokens(text, tmp_path):
    out = tmp_path / "g.fasta"
    assert _main("generate", "--model", text[0], "--sampler", "eb", "--gamma", 3, "--n", 2, "--min-length", 6, "--max-length", 6,
                 "--out", out, "--quiet", "--device", "cpu") == 0
    headers = [line for line in out.read_text().splitlines() if line.startswith(">")]
    assert headers and all(" length=6 " in h for h in headers), headers


def test_generate_without_meta_hints_at_import_hf(tmp_path, capsys):
    folder = tiny_bert(tmp_path / "model")
    assert _main("generate", "--model", folder, "--sampler", "eb", "--gamma", 3, "--n", 1, "--min-length", 3, "--max-length", 3,
                 "--out", tmp_path / "g.fasta", "--quiet", "--device", "cpu") == 2
    assert "import-hf" in capsys.readouterr().err


def test_mi_map_prints_small_mi_and_draws_whole_tokens(text, tmp_path, monkeypatch):
    from mdm_mi.core.map_domain import nats
    from mdm_mi.hf import map as hf_map

    assert nats(1e-5) == "1.00e-05" and nats(0.25) == "0.250" and nats(0.0) == "0.000"
    drawn = {}
    monkeypatch.setattr(hf_map, "sequence_map_figure", lambda seq, *a: drawn.setdefault("seq", seq))
    assert _main("mi-map", "the _ sat _ mat", "--model", text[0], "--head", text[1], "--out", tmp_path / "m.png",
                 "--quiet") == 0
    assert drawn["seq"] == ["the", "_", "sat", "_", "mat"]


def test_the_missing_tokenizer_error_ends_on_a_whole_word():
    from mdm_mi.hf.model import _first_sentence

    long = "Can't load tokenizer for 'x'. " + "make sure the folder holds every relevant file " * 10
    assert _first_sentence(ValueError(long)) == "Can't load tokenizer for 'x'."
    cut = _first_sentence(ValueError("word " * 100))
    assert cut.endswith("word …") and len(cut) <= 242


def test_check_config_refuses_an_alphabet_the_comparison_cannot_score(tmp_path, capsys):
    import yaml

    from conftest import REPO

    cfg = yaml.safe_load((REPO / "config" / "hf.yaml").read_text())
    cfg["hf"]["alphabet"] = "the,cat,sat"
    path = tmp_path / "text.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert _main("check-config", path) == 2
    assert "hf/alphabet" in capsys.readouterr().err
    assert _main("check-config", REPO / "config" / "hf.yaml") == 0


def test_the_docs_hf_compare_example_parses_and_its_help_names_any_sequence_model():
    import re

    from conftest import REPO
    from mdm_mi.cli import build_parser

    text = (REPO / "docs" / "your_model.md").read_text()
    block = next(b for b in re.findall(r"```text\n(.*?)```", text, re.S) if "hf-compare" in b)
    argv = block.replace("\\\n", " ").split()
    assert argv[:3] == ["python", "-m", "mdm_mi"]
    args = build_parser().parse_args(argv[3:])
    assert list(args.indep_cap) == [] and list(args.two_budget_delta) == []
    shown = " ".join(subprocess.run([sys.executable, "-m", "mdm_mi", "hf-compare", "--help"], capture_output=True,
                                    text=True).stdout.split())
    assert "protein backbone" not in shown and "marked by import-hf" in shown
