"""Bring your own masked model (:mod:`mdm_mi.hf`): tiny random ``EsmForMaskedLM`` and ``BertForMaskedLM``
saved to a temporary folder, run through probing → head → decoding, and every Backbone rule broken once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hf_helpers import tiny_bert, tiny_esm
from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.hf.jobs import ImportHfArgs, import_hf
from mdm_mi.infra.errors import BackboneError
from mdm_mi.infra.tracking import NullTracker

pytest.importorskip("transformers")
MAKERS = {"esm": tiny_esm, "bert": tiny_bert}


@pytest.fixture(scope="module", params=sorted(MAKERS))
def hf_dir(request, tmp_path_factory):
    """A marked tiny model folder (import-hf with its check on)."""
    folder = MAKERS[request.param](tmp_path_factory.mktemp(request.param) / "model")
    import_hf(ImportHfArgs(weights=folder), NullTracker())
    return folder


@pytest.fixture(scope="module")
def hf_backbone(hf_dir):
    from mdm_mi.models.loading import load_model

    return load_model(hf_dir, "cpu", "hf")[0]


def test_probe_runs_one_pass_per_allowed_token(hf_backbone):
    from mdm_mi.mi.probe import exact_mi

    tokens = hf_backbone.encode(["MK__Q_"])[0]
    result = exact_mi(hf_backbone, tokens)
    assert result.passes == 1 + 3 * 20  # the 20 amino acids, not the tokenizer's 25 or 33 ids
    assert torch.equal(result.label, result.label.T) and not result.masked[[0, -1]].any()


def test_pads_do_not_change_the_logits_of_real_positions(hf_backbone):
    batch = hf_backbone.encode(["MKAQ_L", "AC_"])
    alone = hf_backbone(hf_backbone.encode(["AC_"])).logits[0]
    assert torch.allclose(hf_backbone(batch).logits[1, : alone.shape[0]], alone, atol=1e-5)


def test_hidden_layer_uses_hugging_face_numbering(hf_dir, hf_backbone):
    from mdm_mi.hf.model import load_hf_model

    tokens = hf_backbone.encode(["MKAQL"])
    with torch.no_grad():
        states = hf_backbone.model(input_ids=tokens, output_hidden_states=True).hidden_states
    assert torch.equal(hf_backbone.at_layer(0)(tokens).hidden, states[0])  # the embeddings
    assert torch.equal(hf_backbone(tokens).hidden, states[-1])  # the last layer's output
    with pytest.raises(Exception, match="hidden_layer 3 is outside"):
        load_hf_model(hf_dir, hidden_layer=3)


def test_encode_names_tokens_outside_the_alphabet(hf_backbone):
    from mdm_mi.infra.errors import InputError

    with pytest.raises(InputError, match="'Z'"):
        hf_backbone.encode(["MKZ"])
    assert hf_backbone.decode_tokens(hf_backbone.encode(["MK_Q"])) == ["MK_Q"]


def test_probe_head_and_decode_keep_special_tokens(hf_backbone):
    from mdm_mi.core.samplers import EntropyBounded, decode
    from mdm_mi.mi.contexts import draw_training
    from mdm_mi.mi.guided import MIGuided, head_pairwise_fn
    from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, train_head
    from mdm_mi.mi.labeller import label_contexts

    seqs = hf_backbone.encode(["MKTAYIAKQR", "ACDEFGHIK", "LLMNPQ"]).numpy()
    draw = draw_training(seqs, 6, hf_backbone.mask_id, 0, hf_backbone.vocab_token_ids)
    fixed = ~torch.isin(torch.as_tensor(seqs), hf_backbone.vocab_token_ids)[draw.rows]  # BOS, EOS, pads
    assert torch.equal(draw.contexts[fixed], torch.as_tensor(seqs)[draw.rows][fixed])
    shard = label_contexts(hf_backbone, draw.contexts, "exact")
    feats = backbone_features(hf_backbone, draw.contexts, 4)
    head, _ = train_head(feats, shard["label"], shard["masked"], HeadTrainConfig(5, 2, 1e-2, 0.0, 0),
                         HeadConfig(hidden=8, heads=2, rank=2, unary=True))
    start = torch.stack([hf_backbone.masked_sequence(6)] * 2)
    for sampler, pairwise in ((EntropyBounded(1.0), None), (MIGuided(1.0, 1.0, "skip", False), head_pairwise_fn(head))):
        out = decode(hf_backbone, start, sampler, torch.Generator().manual_seed(0), pairwise_fn=pairwise)
        assert torch.equal(out.tokens[:, [0, -1]], start[:, [0, -1]])  # BOS/EOS untouched
        assert torch.isin(out.tokens[:, 1:-1], hf_backbone.vocab_token_ids).all()  # only alphabet tokens written
        assert (out.passes >= 1).all() and (out.passes <= 6).all()


# ---- every Backbone rule broken once (issue 33): one line naming the rule ---------------------------


class Adapter:
    """A hand-written adapter around the tiny ESM with its mistakes switchable: ``full`` exposes all 33
    logits (the mask and specials among them), ``width`` cuts the logits to a wrong width."""

    def __init__(self, backbone, full=False, width=None, hidden=None, ids=None, specials=()):
        self.inner, self.full, self.width = backbone, full, width
        self.mask_id, self.pad_id = backbone.mask_id, backbone.pad_id
        self.special_ids = specials
        self.vocab_token_ids = torch.arange(33) if full else (ids if ids is not None else backbone.vocab_token_ids)
        self.vocab_size = len(self.vocab_token_ids)
        self.hidden_dim = hidden or backbone.hidden_dim

    def __call__(self, tokens):
        out = self.inner.model(input_ids=tokens, output_hidden_states=True)
        logits = out.logits if self.full else out.logits[..., self.inner.vocab_token_ids]
        return BackboneOutput(logits[..., : self.width] if self.width else logits, out.hidden_states[-1])


@pytest.fixture(scope="module")
def esm_backbone(tmp_path_factory):
    from mdm_mi.hf.model import load_hf_model

    folder = tiny_esm(tmp_path_factory.mktemp("esm_rules") / "model")
    import_hf(ImportHfArgs(weights=folder, check=False), NullTracker())
    return load_hf_model(folder)[0]


def _probe(backbone):
    from mdm_mi.mi.probe import exact_mi

    exact_mi(backbone, torch.tensor([0, 20, 32, 32, 2]))


def _features(backbone):
    from mdm_mi.mi.head import backbone_features

    backbone_features(backbone, torch.tensor([[0, 20, 32, 32, 2]]), 4)


def _decode(backbone):
    from mdm_mi.core.samplers import EntropyBounded, decode

    decode(backbone, torch.tensor([[0, 20, 32, 32, 2]]), EntropyBounded(1.0))


@pytest.mark.parametrize("entry", [_probe, _features, _decode])
@pytest.mark.parametrize("mistake, rule", [
    (dict(full=True), "mask outside vocabulary"),                          # all 33 logits exposed
    (dict(width=19), "logits width"),                                     # logits not cut to vocab_size
    (dict(hidden=8), "hidden width"),
    (dict(ids=torch.tensor([5, 5, 6])), "vocab_token_ids"),               # V ids repeat / wrong length
    (dict(ids=torch.tensor([0, *range(5, 24)]), specials=(0, 2)), "specials outside vocabulary"),  # <cls> sampled
    (dict(specials=(5,)), "specials outside vocabulary"),                 # a declared special among them
])
def test_each_broken_rule_is_one_line_naming_it(esm_backbone, entry, mistake, rule):
    with pytest.raises(BackboneError, match=rule) as err:
        entry(Adapter(esm_backbone, **mistake))
    assert "\n" not in str(err.value)


def test_a_bare_model_is_refused_by_name(esm_backbone):
    with pytest.raises(BackboneError, match="attributes.*'vocab_size'"):
        _decode(esm_backbone.model)


def test_mask_contexts_keeps_specials_fixed_given_the_vocabulary(esm_backbone):
    from mdm_mi.mi.probe import mask_contexts

    seqs = esm_backbone.encode(["MKTAYIAKQR"] * 50)
    contexts, _ = mask_contexts(seqs, esm_backbone.mask_id, torch.Generator().manual_seed(0),
                                vocab_ids=esm_backbone.vocab_token_ids)
    assert torch.equal(contexts[:, [0, -1]], seqs[:, [0, -1]]) and (contexts == esm_backbone.mask_id).any()


def _probe_rows(backbone, rows):
    from mdm_mi.mi.probe import exact_mi

    exact_mi(backbone, rows[0])


def _decode_rows(backbone, rows):
    from mdm_mi.core.samplers import EntropyBounded, decode

    decode(backbone, rows, EntropyBounded(1.0))


@pytest.mark.parametrize("entry", [_probe_rows, _decode_rows])
def test_a_masked_bos_or_eos_is_refused(esm_backbone, entry):
    """The issue's silent mistake: mask_contexts without vocab_ids masks <cls> and <eos>."""
    from mdm_mi.mi.probe import mask_contexts

    seqs = esm_backbone.encode(["MKTAYIAKQR"] * 20)
    contexts, _ = mask_contexts(seqs, esm_backbone.mask_id, torch.Generator().manual_seed(0))
    bad = contexts[(contexts[:, [0, -1]] == esm_backbone.mask_id).any(1)][:1]
    assert len(bad)
    with pytest.raises(BackboneError, match="specials never masked"):
        entry(esm_backbone, bad)


def test_import_hf_refuses_an_alphabet_with_a_special_token(tmp_path):
    folder = tiny_bert(tmp_path / "model")
    with pytest.raises(BackboneError, match="specials outside vocabulary"):
        import_hf(ImportHfArgs(weights=folder, alphabet="[CLS],A,C"), NullTracker())


def test_the_domain_table_is_open(tmp_path):
    from mdm_mi.models.domains import DOMAINS, Domain, register_domain
    from mdm_mi.models.loading import load_model

    entry = Domain("toy", ("toy/model",), ("toy/head",), (".txt",), lambda d, meta, dev: "loaded", lambda: None,
                   lambda meta: "toy", lambda: None)
    register_domain(entry)
    try:
        (tmp_path / "meta.json").write_text('{"domain": "toy"}')
        assert load_model(tmp_path)[0] == "loaded"
        with pytest.raises(Exception, match="already registered"):
            register_domain(entry)
    finally:
        DOMAINS.pop("toy")


def test_the_cli_marks_a_folder_and_refuses_a_missing_one(tmp_path):
    folder = tiny_esm(tmp_path / "model")
    run = [sys.executable, "-m", "mdm_mi", "import-hf", "--weights"]
    done = subprocess.run(run + [str(folder), "--alphabet", "protein"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (folder / "meta.json").is_file()
    bad = subprocess.run(run + [str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--weights" in bad.stderr and "folder not found" in bad.stderr


def test_hf_data_splits_and_encodes(hf_dir, tmp_path):
    from mdm_mi.hf.jobs import HfDataArgs, hf_data

    fasta = tmp_path / "seqs.fasta"
    fasta.write_text("".join(f">s{i}\nMKTAYIAKQ{'ACDEFGHIK'[: i % 9]}\n" for i in range(10)))
    hf_data(HfDataArgs(model=hf_dir, sequences=fasta, out_dir=tmp_path / "data", heldout_fraction=0.2, seed=0), NullTracker())
    train, held = (np.load(tmp_path / "data" / f"{s}_contexts.npy") for s in ("train", "heldout"))
    assert len(train) == 8 and len(held) == 2
    assert (train[:, 0] == hf_backbone_bos(hf_dir)).all()


def hf_backbone_bos(folder) -> int:
    from mdm_mi.hf.model import load_hf_model

    return load_hf_model(folder)[0].bos_id


def _cli(*argv) -> None:
    from mdm_mi.cli import main

    assert main([str(a) for a in argv]) == 0, argv


def test_every_verb_runs_on_a_hugging_face_folder(hf_dir, tmp_path):
    """label → train-head → mi-map → generate (MI-guided) → hf-compare, with passes counted."""
    import json

    fasta = tmp_path / "seqs.fasta"
    fasta.write_text("".join(f">s{i}\n{'MKTAYIAKQRACDEFGHIKL'[i % 5:][:8 + i % 4]}\n" for i in range(12)))
    data, labels = tmp_path / "data", tmp_path / "labels"
    _cli("hf-data", "--model", hf_dir, "--sequences", fasta, "--out-dir", data, "--heldout-fraction", 0.5, "--seed", 0)
    common = ["--model", hf_dir, "--method", "certified", "--tol", 0.01, "--batch-size", 64, "--seed", 0,
              "--device", "cpu", "--threads", 1, "--shard", 0, "--n-shards", 1]
    _cli("label", *common, "--sequences", data / "train_contexts.npy", "--n-contexts", 4, "--out", labels / "train.safetensors")
    for split in ("val", "test"):
        _cli("label", *common, "--sequences", data / "heldout_contexts.npy", "--n-contexts", 4, "--split", split,
             "--val-contexts", 2, "--out", labels / f"{split}.safetensors")
    head = tmp_path / "head"
    _cli("train-head", "--model", hf_dir, "--labels", labels / "train.safetensors", "--val", labels / "val.safetensors",
         "--test", labels / "test.safetensors", "--out", head, "--fidelity", tmp_path / "fid.json",
         "--pairs", tmp_path / "pairs.csv", "--hidden", 8, "--heads", 2, "--rank", 2, "--unary", "--steps", 5,
         "--batch-size", 2, "--lr", 0.01, "--weight-decay", 0.0, "--distance-buckets", 0, "--seed", 0,
         "--device", "cpu", "--threads", 1)
    _cli("head-fidelity", "--model", hf_dir, "--head", head, "--val", labels / "val.safetensors",
         "--test", labels / "test.safetensors", "--out", tmp_path / "fid_again.json", "--device", "cpu", "--threads", 1)
    trained, again = (json.loads((tmp_path / f).read_text()) for f in ("fid.json", "fid_again.json"))
    assert again["test"]["pearson"] == trained["test"]["pearson"] and len(again["test"]["pearson_ci"]) == 2
    assert trained["test"]["pearson_ci"] == again["test"]["pearson_ci"]  # the same seeded bootstrap
    _cli("mi-map", "MK__QL_A", "--model", hf_dir, "--head", head, "--exact", "--out", tmp_path / "map.png", "--quiet")
    _cli("generate", "--model", hf_dir, "--head", head, "--sampler", "mi", "--gamma", 1.0, "--n", 3,
         "--min-length", 5, "--max-length", 7, "--out", tmp_path / "gen.fasta", "--summary", tmp_path / "gen.json",
         "--quiet", "--device", "cpu")
    assert json.loads((tmp_path / "gen.json").read_text())["mean_passes"] >= 1
    _cli("hf-compare", "--model", hf_dir, "--head", head, "--reference", data / "reference.fasta",
         "--out-dir", tmp_path / "budgets", "--n", 4, "--calib-n", 2, "--divisors", 2, "--mi-lambda", 1.0,
         "--on-reject", "skip", "--no-charge-first", "--two-budget-delta", "--indep-cap", "--clusters", 2,
         "--bootstrap", 5, "--batch-size", 8, "--seed", 0, "--device", "cpu", "--threads", 1)
    assert (tmp_path / "budgets" / "runs.json").is_file() and (tmp_path / "map.csv").is_file()


def _hf_config(tmp_path, model, **hf) -> list[str]:
    """``--configfile`` arguments: config/hf.yaml with the model and sequences at absolute paths."""
    import yaml

    from conftest import REPO

    over = tmp_path / "over.yaml"
    seqs = REPO / "resources" / "data" / "protein" / "uniref50_len50-100.fasta"
    over.write_text(yaml.safe_dump({"hf": {"model": str(model), "sequences": str(seqs)} | hf}))
    return ["--configfile", str(REPO / "config" / "hf.yaml"), str(over)]


def _snakemake(tmp_path, *args):
    from conftest import REPO

    venv = Path(sys.executable).parent
    env = os.environ | {"PATH": f"{venv}{os.pathsep}{os.environ['PATH']}"}
    cmd = [str(venv / "snakemake"), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)


def test_config_hf_plans_labels_head_and_the_calibrated_comparison(tmp_path):
    from mdm_mi.cli import build_parser

    folder = tiny_esm(tmp_path / "hf_model")
    proc = _snakemake(tmp_path, "-n", "-p", *_hf_config(tmp_path, folder), "--", "hf")
    assert proc.returncode == 0, proc.stderr[-2000:]
    verbs = [line.split()[5] for line in proc.stdout.splitlines() if line.startswith("Shell command: python")]
    assert {"import-hf", "hf-data", "label", "train-head", "hf-compare"} <= set(verbs)
    for line in proc.stdout.splitlines():
        if line.startswith("Shell command: python"):
            build_parser().parse_args(line.split(" > ")[0].split()[5:])


@pytest.mark.slow
def test_config_hf_runs_end_to_end_on_a_tiny_model(tmp_path):
    """The whole hf chain on a tiny random ESM (a few CPU minutes): runs.json holds every sampler's passes."""
    import json

    folder = tiny_esm(tmp_path / "hf_model")
    small = {"mi": {"train_contexts": 8, "val_contexts": 2, "test_contexts": 2, "head_train": {"steps": 10}},
             "generate": {"n": 6, "batch_size": 6, "clusters": 2}, "compare": {"calib_n": 2, "divisors": [2],
                                                                               "bootstrap": 5}}
    proc = _snakemake(tmp_path, "--cores", "2", *_hf_config(tmp_path, folder, **small), "--", "hf")
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads((tmp_path / "results" / "hf-example" / "hf" / "budgets" / "runs.json").read_text())
    assert runs


def test_docs_your_model_example_runs_as_written(tmp_path, monkeypatch):
    """docs/your_model.md: its Python blocks run, and each `python -m mdm_mi` line of its bash blocks (the
    short forms, then the small run) runs through the CLI with the same arguments, in a folder where
    resources/ is the repository's; the short forms' schema sizes are made small here (the test's time)."""
    import re
    import shlex

    from conftest import REPO
    from mdm_mi.cli import main
    from mdm_mi.infra import schema

    small = {"hf.mi.train_contexts": 6, "hf.mi.val_contexts": 2, "hf.mi.test_contexts": 2, "hf.mi.head_train.steps": 20}
    monkeypatch.setattr("mdm_mi.mi.jobs.schema_default", lambda key, real=schema.schema_default: small.get(key, real(key)))
    text = (REPO / "docs" / "your_model.md").read_text()
    blocks = re.findall(r"```(python|bash)\n(.*?)```", text, re.S)
    assert [lang for lang, _ in blocks] == ["python", "bash", "bash", "python"]
    (tmp_path / "resources").symlink_to(REPO / "resources")
    monkeypatch.chdir(tmp_path)
    for lang, code in blocks:
        if lang == "python":
            exec(compile(code, "your_model.md", "exec"), {})
            continue
        for line in code.replace("\\\n", " ").splitlines():
            argv = shlex.split(line)
            assert argv[:3] == ["python", "-m", "mdm_mi"], line
            assert main(argv[3:]) == 0, line
    assert (tmp_path / "byom" / "mi_map.png").is_file() and (tmp_path / "byom" / "mi.fasta").is_file()


def test_label_topk_writes_its_bound_beside_the_labels(hf_dir, tmp_path):
    """Issue 38: the top-k probe is a verb flag (label --method topk --k K), its bound stored with the labels."""
    import json

    from safetensors.torch import load_file

    from mdm_mi.cli import main
    from mdm_mi.infra.schema import schema_default

    seqs = tmp_path / "seqs.npy"
    np.save(seqs, hf_backbone_of(hf_dir).encode(["MKTAYIAK", "QRACDEFG"]).numpy())
    common = ["label", "--model", hf_dir, "--sequences", seqs, "--n-contexts", 2, "--shard", 0, "--n-shards", 1,
              "--tol", 0.01, "--batch-size", 64, "--seed", 0, "--device", "cpu", "--threads", 1, "--method", "topk"]
    assert main([str(a) for a in common + ["--out", tmp_path / "no_k.safetensors"]]) == 0  # issue 65: the schema's k
    assert json.loads((tmp_path / "no_k.json").read_text())["k"] == schema_default("hf.mi.topk_k")
    _cli(*common, "--k", 3, "--out", tmp_path / "topk.safetensors")
    stats = json.loads((tmp_path / "topk.json").read_text())
    shard = load_file(str(tmp_path / "topk.safetensors"))
    assert stats["method"] == "topk" and stats["k"] == 3 and stats["max_bound"] == float(shard["bound"].max()) > 0
    assert 0 < stats["mean_bound"] <= stats["max_bound"]
    masked = shard["masked"].sum(1)
    assert ((shard["passes"] == 1 + 3 * masked) | (masked < 2)).all()


def hf_backbone_of(folder):
    from mdm_mi.models.loading import load_model

    return load_model(folder, "cpu", "hf")[0]
