"""Issue 65 item 8: every setting with a default in the config schema has it on the command line, so the
short forms docs/your_model.md shows first run as written: ``label --model M --sequences S --out O`` and
``train-head --model M --labels L --out H`` (held-out labels optional, the fidelity files beside the
head, the sizes the schema's for the model's domain)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hf_helpers import tiny_bert

pytest.importorskip("transformers")


def _main(*argv) -> int:
    from mdm_mi.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    """A marked tiny BERT and hf-data's token files of a few short proteins."""
    root = tmp_path_factory.mktemp("short")
    model = tiny_bert(root / "model")
    assert _main("import-hf", "--weights", model) == 0
    fasta = root / "seqs.fasta"
    fasta.write_text("".join(f">s{i}\n{'MKTAYIAKQR'[i % 3:][:6]}\n" for i in range(12)))
    assert _main("hf-data", "--model", model, "--sequences", fasta, "--out-dir", root / "data") == 0
    return model, root / "data"


def test_label_and_train_head_run_in_their_short_forms(encoded, tmp_path, monkeypatch, capsys):
    """The documented short forms exit 0 and write the shard, the head, and the fidelity JSON and pairs
    CSV beside the head; the sizes they used are the schema's (here made small: the test's time)."""
    from mdm_mi.infra import schema

    small = {"hf.mi.train_contexts": 6, "hf.mi.head_train.steps": 3}
    real = schema.schema_default
    monkeypatch.setattr("mdm_mi.mi.jobs.schema_default", lambda key: small.get(key, real(key)))
    model, data = encoded
    labels = tmp_path / "labels.safetensors"
    assert _main("label", "--model", model, "--sequences", data / "train_contexts.npy", "--out", labels) == 0
    stats = json.loads(labels.with_suffix(".json").read_text())
    assert stats["contexts"] == 6 and stats["method"] == real("hf.mi.train_method")
    assert _main("train-head", "--model", model, "--labels", labels, "--out", tmp_path / "head") == 0
    out = capsys.readouterr()
    assert "without --test labels" in out.err and "in-sample" in out.err
    fid = json.loads((tmp_path / "head_fidelity.json").read_text())
    assert fid["reported"] == "train" and "pearson" in fid["train"]
    assert (tmp_path / "head_pairs.csv").read_text().startswith("label,prediction")
    meta = json.loads((tmp_path / "head" / "meta.json").read_text())
    assert meta["head"]["distance_buckets"] == real("hf.mi.head.distance_buckets")
    assert meta["head"]["hidden"] == real("hf.mi.head.hidden") and len(meta["history"]) >= 1


def test_the_filled_settings_are_the_schemas_for_the_models_domain():
    """What label and train-head fill in is what the workflow passes a model of that domain (its
    ``label_options`` and ``<domain>.mi.head | head_train``): sudoku's and hf's differ, and each is read."""
    from mdm_mi.infra.schema import schema_default
    from mdm_mi.mi.jobs import LabelArgs, TrainHeadArgs, label_settings, train_head_settings

    for domain in ("sudoku", "protein", "hf"):
        mi = lambda key: schema_default(f"{domain}.mi.{key}")  # noqa: E731
        train = label_settings(LabelArgs(model="m", sequences="s.npy", out="o"), domain)
        assert (train.n_contexts, train.method, train.tol, train.batch_size, train.k) == (
            mi("train_contexts"), mi("train_method"), mi("tol"), mi("label_batch_size"), None)
        test = label_settings(LabelArgs(model="m", sequences="s.npy", out="o", split="test"), domain)
        assert test.n_contexts == mi("val_contexts") + mi("skip_contexts") + mi("test_contexts")
        assert (test.method, test.val_contexts) == (mi("eval_method"), mi("val_contexts"))
        topk = label_settings(LabelArgs(model="m", sequences="s.npy", out="o", method="topk"), domain)
        assert topk.k == mi("topk_k")
        head = train_head_settings(TrainHeadArgs(model="m", labels=("l",), out="runs/head"), domain)
        for name in ("hidden", "heads", "rank", "unary", "distance_buckets"):
            assert getattr(head, name) == mi(f"head.{name}"), name
        for name in ("steps", "batch_size", "lr", "weight_decay"):
            assert getattr(head, name) == mi(f"head_train.{name}"), name
        assert (str(head.fidelity), str(head.pairs)) == ("runs/head_fidelity.json", "runs/head_pairs.csv")
    given = label_settings(LabelArgs(model="m", sequences="s.npy", out="o", n_contexts=3, tol=0.5), "hf")
    assert (given.n_contexts, given.tol) == (3, 0.5)  # a flag given is kept


USER_PATH_VERBS = ("import-hf", "hf-data", "label", "train-head", "mi-map", "generate", "infill")


@pytest.mark.parametrize("verb", USER_PATH_VERBS)
def test_a_user_path_verb_requires_only_what_the_schema_cannot_default(verb):
    """On the documented path, a required flag is a path (a model, an input, an output: the user's own) or
    one no schema key sets: a setting named like a schema key of any section is optional."""
    import typing
    from pathlib import Path

    from mdm_mi.cli import VERBS
    from mdm_mi.infra.schema import read_schema

    def keys(node) -> set[str]:
        found = set()
        for name, sub in node.get("properties", {}).items():
            found |= keys(sub) if sub.get("type") == "object" else ({name} if "default" in sub else set())
        return found

    schema_keys = keys(read_schema()) | {"label_batch_size"}
    hints = typing.get_type_hints(VERBS[verb].args)
    required = [f.name for f in dataclasses.fields(VERBS[verb].args) if hints[f.name] is not Path
                and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    assert not [name for name in required if name in schema_keys], required
