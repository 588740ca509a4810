"""AntiBERTy and the antibody path on a tiny random BERT with AntiBERTy's vocabulary (CI never needs
the 97 MB weights): the one-time conversion of a pickled AntiBERTy-shaped wheel (read with
``weights_only=True``, a pickle that runs code refused), the lineage split, and ``mdm-mi infill`` on
any backbone (clues kept, no mask left, seeds reproduce, one-line errors)."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hf_helpers import BERT_TOKENS, TINY, tiny_bert
from mdm_mi.antibody.data import CDRS, read_vh, split_by_lineage, template
from mdm_mi.cli import main
from mdm_mi.infra.errors import InputError

pytest.importorskip("transformers")
DATA = Path(__file__).resolve().parents[1] / "resources/data/antibody/vh_public.tsv"
VH = ("EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYC"
      "AKDRGYSSGWYFDY" "WGQGTLVTVSS")
POSITIONS = 160  # natural VH reach 131 tokens with [CLS] and [SEP] (AntiBERTy has 512 positions)


def _fake_wheel(path: Path, payload=None) -> Path:
    """A zip laid out like antiberty-0.1.3's wheel around a tiny BERT state dict (plus AntiBERTy's extra heads)."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(BERT_TOKENS), **(TINY | {"max_position_embeddings": POSITIONS}))
    state = BertForMaskedLM(config).state_dict()
    state |= {"cls.species.weight": torch.zeros(6, 16), "bert.pooler.dense.weight": torch.zeros(16, 16)}
    blob = path.parent / "weights.bin"
    torch.save(state if payload is None else payload, blob)
    cfg = config.to_dict() | {"architectures": ["AntiBERTy"]}
    root = "antiberty/trained_models"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{root}/AntiBERTy_md_smooth/config.json", json.dumps(cfg))
        whl.write(blob, f"{root}/AntiBERTy_md_smooth/pytorch_model.bin")
        whl.writestr(f"{root}/vocab.txt", "\n".join(BERT_TOKENS) + "\n")
    return path


class _RunsCode:
    def __reduce__(self):
        return (print, ("pickle ran code",))


@pytest.fixture(scope="module")
def antiberty_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("antiberty")
    wheel = _fake_wheel(tmp / "antiberty-0.1.3-py3-none-any.whl")
    assert main(["import-antiberty", "--source", str(wheel), "--out", str(tmp / "model"), "--hidden-layer", "-1"]) == 0
    return tmp / "model"


def test_conversion_writes_safetensors_and_a_manifest_with_hashes(antiberty_dir):
    from mdm_mi.infra.checkpoint import verify_manifest

    manifest = verify_manifest(antiberty_dir)
    assert "model.safetensors" in manifest["files"] and not list(antiberty_dir.glob("*.bin"))
    assert manifest["licence"].startswith("MIT") and "2112.07782" in manifest["citation"]
    assert "cls.species.weight" in manifest["dropped"] and len(manifest["source_sha256"]["pytorch_model.bin"]) == 64


def test_the_imported_model_carries_its_measured_calibration(antiberty_dir):
    """`infill --sampler eb` without γ on AntiBERTy takes the CDR-H3 comparison's ÷ 3 setting."""
    from mdm_mi.core.fallbacks import block_problems, read_calibrated
    from mdm_mi.core.sampler_table import ALGORITHM_1, SAMPLERS

    manifest = json.loads((antiberty_dir / "MANIFEST.json").read_text())
    assert block_problems(manifest["calibrated"], SAMPLERS, ALGORITHM_1) == []
    assert read_calibrated(antiberty_dir).value("eb", "gamma") == pytest.approx(4.8232)


def test_special_tokens_are_never_probed_or_sampled(antiberty_dir):
    from mdm_mi.models.loading import load_model

    backbone, meta = load_model(antiberty_dir, "cpu", "hf")
    assert meta["tokens"] == list("ACDEFGHIKLMNPQRSTVWY") and backbone.vocab_size == 20
    specials = {backbone.mask_id, *backbone.special_ids}
    assert specials == {0, 1, 2, 3, 4} and not specials & set(backbone.vocab_token_ids.tolist())


def test_a_pickle_that_runs_code_is_refused(tmp_path, capsys):
    from mdm_mi.antibody.model import find_source, read_weights

    wheel = _fake_wheel(tmp_path / "bad.whl", payload={"w": _RunsCode()})
    with pytest.raises(InputError, match="not a plain tensor dict"):
        read_weights(find_source(wheel).weights)
    assert "pickle ran code" not in capsys.readouterr().out


def test_a_missing_source_is_one_line(tmp_path, capsys):
    assert main(["import-antiberty", "--source", str(tmp_path / "none"), "--out", str(tmp_path / "m"),
                 "--hidden-layer", "-1"]) == 2
    assert "not an antiberty wheel" in capsys.readouterr().err and not (tmp_path / "m").exists()


def test_split_is_by_lineage():
    rows = read_vh(DATA)
    parts = split_by_lineage(rows, {"test": 0.2, "calibration": 0.1}, seed=0)
    lineages = [{r.lineage for r in p} for p in parts.values()]
    assert sum(map(len, parts.values())) == len(rows)
    assert all(not (a & b) for i, a in enumerate(lineages) for b in lineages[i + 1:])
    assert 0.2 <= len(parts["test"]) / len(rows) < 0.3


def test_templates_mask_natural_lengths_and_known_pairs_sit_where_imgt_says():
    vh = read_vh(DATA)[0]
    masked = template(vh, CDRS)
    assert len(masked) == len(vh.sequence) and masked.count("_") == sum(len(vh.regions[c]) for c in CDRS)
    i, j = vh.cys_pair()
    assert vh.sequence[i] == vh.sequence[j] == "C"
    h94, h101 = vh.salt_bridge()
    assert vh.span("cdr3")[0] < h94 < h101 < vh.span("cdr3")[1]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    folder = tiny_bert(tmp_path_factory.mktemp("bert") / "model", positions=POSITIONS)
    assert main(["import-hf", "--weights", str(folder)]) == 0
    return folder


def _infill(bert_dir, tmp_path, *extra) -> list[tuple[str, str]]:
    out = tmp_path / "fills.fasta"
    code = main(["infill", *extra, "--model", str(bert_dir), "--out", str(out), "--quiet", "--threads", "1"])
    assert code == 0
    lines = out.read_text().splitlines()
    return list(zip(lines[::2], lines[1::2]))


def test_infill_keeps_clues_and_leaves_no_mask(bert_dir, tmp_path):
    templ = VH[:96] + "_" * 14 + VH[110:]
    for sampler in (["--sampler", "sequential"], ["--sampler", "eb", "--gamma", "1"], ["--sampler", "naive", "--k", "3"]):
        fills = _infill(bert_dir, tmp_path, templ, *sampler, "--n", "2")
        assert len(fills) == 2
        for header, seq in fills:
            assert "_" not in seq and len(seq) == len(templ)
            assert all(t == "_" or t == s for t, s in zip(templ, seq))
            assert "passes=" in header


def test_infill_same_seed_same_fills(bert_dir, tmp_path):
    templ = VH[:96] + "_" * 14 + VH[110:]
    a = _infill(bert_dir, tmp_path, templ, "--sampler", "eb", "--gamma", "2", "--seed", "3", "--n", "2")
    b = _infill(bert_dir, tmp_path, templ, "--sampler", "eb", "--gamma", "2", "--seed", "3", "--n", "2")
    c = _infill(bert_dir, tmp_path, templ, "--sampler", "eb", "--gamma", "2", "--seed", "4", "--n", "2")
    assert a == b and a != c


def test_infill_at_a_budget_takes_about_that_share_of_sequential_passes(bert_dir, tmp_path):
    templ = VH[:96] + "_" * 16 + VH[112:]
    fills = _infill(bert_dir, tmp_path, templ, "--sampler", "naive", "--budget", "1/4")
    assert "budget=1/4" in fills[0][0] and "passes=4" in fills[0][0]


def test_infill_reads_a_tsv_with_a_mask_column(bert_dir, tmp_path):
    table = tmp_path / "t.tsv"
    mask = "." * 96 + "_" * 14 + "." * (len(VH) - 110)
    table.write_text(f"id\tsequence\tmask\nvh1\t{VH}\t{mask}\n")
    (header, seq), = _infill(bert_dir, tmp_path, "--file", str(table), "--sampler", "eb", "--gamma", "1")
    assert header.startswith(">vh1 ") and seq[:96] == VH[:96] and seq[110:] == VH[110:]


@pytest.mark.parametrize("template, message", [
    ("EVQLVESGG", "has no _ to fill"),
    ("EVQLVXSGG__", "outside the model's alphabet: 'X'"),
    ("A" * 200 + "_", "the model takes at most 158"),
])
def test_infill_bad_templates_are_one_line_and_write_nothing(bert_dir, tmp_path, capsys, template, message):
    out = tmp_path / "fills.fasta"
    assert main(["infill", template, "--model", str(bert_dir), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_infill_refuses_a_budget_beside_the_parameter_it_sets(bert_dir, capsys):
    assert main(["infill", "AC__", "--model", str(bert_dir), "--sampler", "eb", "--gamma", "1", "--budget", "1/2"]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.fixture(scope="module")
def antibody_data_dir(bert_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("abdata")
    assert main(["antibody-data", "--model", str(bert_dir), "--tsv", str(DATA), "--out-dir", str(out),
                 "--calibration-fraction", "0.1", "--test-fraction", "0.2", "--label-scopes", "cdr3", "cdrs", "all",
                 "--scope-weights", "1", "1", "1", "--seed", "0"]) == 0
    return out


def test_label_contexts_mask_only_their_scope(bert_dir, antibody_data_dir, tmp_path):
    """The stamp names the maskable positions; `label` masks nothing outside them, and a CDR-H3-scoped
    VH is masked only inside its CDR-H3."""
    from safetensors.torch import load_file

    stamp = json.loads((antibody_data_dir / "train_contexts.json").read_text())
    maskable = np.load(antibody_data_dir / stamp["maskable"])
    tokens = np.load(antibody_data_dir / "train_contexts.npy")
    assert maskable.shape == tokens.shape and set(stamp["scopes"]) == {"cdr3", "cdrs", "all"}
    rows = read_vh(antibody_data_dir / "labels.tsv")
    widths = maskable.sum(1)
    cdr3 = [len(r.regions["cdr3"]) for r in rows]
    cdrs = [sum(len(r.regions[c]) for c in CDRS) for r in rows]
    whole = [len(r.sequence) for r in rows]
    assert all(w in (a, b, c) for w, a, b, c in zip(widths, cdr3, cdrs, whole))
    out = tmp_path / "shard.safetensors"
    assert main(["label", "--model", str(bert_dir), "--sequences", str(antibody_data_dir / "train_contexts.npy"),
                 "--out", str(out), "--n-contexts", "6", "--shard", "0", "--n-shards", "1", "--method", "exact",
                 "--tol", "0.01", "--batch-size", "64", "--seed", "0", "--threads", "1", "--device", "cpu"]) == 0
    shard = load_file(str(out))
    masked, rows_drawn = shard["masked"].numpy(), shard["sequence_row"].numpy()
    assert masked.any() and not (masked & ~maskable[rows_drawn]).any()


def test_unknown_label_scope_is_one_line_and_writes_nothing(bert_dir, tmp_path, capsys):
    out = tmp_path / "d"
    assert main(["antibody-data", "--model", str(bert_dir), "--tsv", str(DATA), "--out-dir", str(out),
                 "--calibration-fraction", "0.1", "--test-fraction", "0.2", "--label-scopes", "cdr4",
                 "--scope-weights", "1", "--seed", "0"]) == 2
    assert "label scopes must be among" in capsys.readouterr().err and not out.exists()


def test_antibody_data_writes_lineage_disjoint_parts(antibody_data_dir):
    parts = {n: {r.lineage for r in read_vh(antibody_data_dir / f"{n}.tsv")} for n in ("labels", "calibration", "test")}
    assert not (parts["labels"] & parts["test"]) and not (parts["calibration"] & parts["test"])
    assert (antibody_data_dir / "train_contexts.npy").is_file() and (antibody_data_dir / "heldout_contexts.npy").is_file()


def test_compare_pairs_every_sampler_by_context_with_verdicts(bert_dir, antibody_data_dir, tmp_path):
    from user_verb_helpers import save_tiny_head

    head = save_tiny_head(tmp_path / "head", in_dim=16)
    tv_head = save_tiny_head(tmp_path / "tv_head", in_dim=16, target="tv")
    out = tmp_path / "cmp"
    assert main(["antibody-compare", "--model", str(bert_dir), "--head", str(head), "--data-dir", str(antibody_data_dir),
                 "--set-name", "cdr3", "--n-test", "3", "--n-calibration", "2", "--fills", "2",
                 "--divisors", "2", "4", "--samplers", "naive", "eb", "--mi-lambda", "1", "--mi-on-reject", "skip",
                 "--no-mi-charge-first", "--temperature", "1", "--threads", "1", "--batch-size", "8", "--seed", "0",
                 "--margin", "--oracle-contexts", "2", "--oracle-divisors", "4", "--oracle-tol", "0.01",
                 "--demask-mi-eps", "0.1", "--dapd-theta", "1", "--demask-eps", "0.5", "--mi-tv-lambda", "1",
                 "--tv-head", str(tv_head), "--out-dir", str(out)]) == 0
    runs = json.loads((out / "runs.json").read_text())
    rivals = {"demask-mi ε=0.1", "dapd θ=1", "demask ε=0.5", "mi-tv λ=1"}
    assert {r["family"] for r in runs.values()} == {"sequential", "naive", "eb", "mi λ=1"} | rivals
    assert all(len(r["pll"]) == 3 and len(r["diversity"]) == 3 and 0 <= r["jsd"] <= 1 for r in runs.values())
    refs = json.loads((out / "references.json").read_text())
    assert refs["margin"]["params"] == {"order": "margin"} and len(refs["oracle"]["4"]["pll"]) == 2
    text = (out / "budgets.md").read_text()
    assert "mi* − eb" in text and "Primary" in text and "margin order" in text and "oracle − head" in text
    rows = list(csv.DictReader((out / "budgets.csv").open()))
    assert {r["second"] for r in rows if r["role"] == "contender"} == rivals
    assert (out / "budgets.png").stat().st_size > 0
    fills = np.load(out / "fills.npz")  # every run's test fills, for a scorer that did not write them
    assert {k.removeprefix("fill/") for k in fills.files if k.startswith("fill/")} == set(runs)
    pos, native = fills["positions"], fills["native"]
    for run in runs:
        tokens = fills[f"fill/{run}"].reshape(2, 3, -1)  # fill k of context p at row k·3 + p
        assert (tokens[:, ~pos] == np.broadcast_to(native, tokens.shape)[:, ~pos]).all()
        assert np.isin(tokens[:, pos], fills["vocab_ids"]).all()
    _oracle_ceiling_reproduces_the_comparisons_oracle(bert_dir, head, antibody_data_dir, out, refs, runs, tmp_path)


def _oracle_ceiling_reproduces_the_comparisons_oracle(bert_dir, head, data_dir, cmp, refs, runs, tmp_path):
    """antibody-oracle-ceiling on the finished comparison: with one λ, mi* is mi λ=1, so its oracle fills
    are the comparison's own oracle's; its other arms are runs.json's on the same contexts; its first-pass
    shard loads as labels of the blanked templates; another seed fails the head check in one line."""
    from mdm_mi.mi.contexts import load_label_shards

    out, shard = tmp_path / "oracle", tmp_path / "first.safetensors"
    common = ["antibody-oracle-ceiling", "--model", str(bert_dir), "--head", str(head), "--data-dir", str(data_dir),
              "--compare-dir", str(cmp), "--contexts", "2", "--divisors", "4", "--fills", "2", "--tol", "0.01",
              "--threads", "1", "--batch-size", "2"]
    assert main([*common, "--seed", "0", "--first-pass", str(shard), "--chunks", str(tmp_path / "ch"),
                 "--out-dir", str(out)]) == 0
    result = json.loads((out / "oracle.json").read_text())["divisors"]["4"]
    assert np.allclose(result["oracle_pll"], refs["oracle"]["4"]["pll"], atol=1e-5)
    assert np.allclose(result["oracle_passes"], refs["oracle"]["4"]["passes"])
    assert result["arms"]["eb"]["pll"] == pytest.approx(np.mean(runs["eb@4"]["pll"][:2]))
    labels = load_label_shards([shard])
    pairs = labels["masked"][:, :, None] & labels["masked"][:, None, :]
    assert labels["label"].shape[0] == 2 and labels["masked"].any(1).all() and (labels["label"][~pairs] == 0).all()
    assert "oracle − head" in (out / "oracle.md").read_text()
    assert main([*common, "--seed", "0", "--first-pass", str(shard), "--chunks", str(tmp_path / "ch"),
                 "--out-dir", str(tmp_path / "again")]) == 0  # a rerun reads the shard and the chunks back
    again = json.loads((tmp_path / "again" / "oracle.json").read_text())
    assert again["divisors"]["4"]["oracle_pll"] == result["oracle_pll"] and again["chunks"]["decoded"] == 0
    assert main([*common, "--seed", "1", "--out-dir", str(tmp_path / "other")]) == 2
    assert not (tmp_path / "other" / "oracle.json").exists()


def test_compare_without_the_tv_head_its_families_need_is_one_line(bert_dir, antibody_data_dir, tmp_path, capsys):
    from user_verb_helpers import save_tiny_head

    out = tmp_path / "cmp"
    assert main(["antibody-compare", "--model", str(bert_dir), "--head", str(save_tiny_head(tmp_path / "head")),
                 "--data-dir", str(antibody_data_dir), "--set-name", "cdr3", "--n-test", "3", "--n-calibration", "2",
                 "--fills", "2", "--divisors", "2", "--samplers", "eb", "--mi-lambda", "1", "--mi-on-reject", "skip",
                 "--no-mi-charge-first", "--temperature", "1", "--threads", "1", "--batch-size", "8", "--seed", "0",
                 "--no-margin", "--oracle-contexts", "0", "--oracle-divisors", "2", "--oracle-tol", "0.01",
                 "--demask-eps", "0.5", "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "needs --tv-head" in err and len(err.strip().splitlines()) == 1 and not out.exists()


def _chunked_compare(bert_dir, data_dir, head, out, *extra) -> int:
    """antibody-compare on 5 test VH (batches and chunks of 2: three chunks per fill), 3 calibration VH,
    2 fills, naive, eb, mi at two λ (mi* scores its calibration fills), margin order and the oracle."""
    return main(["antibody-compare", "--model", str(bert_dir), "--head", str(head), "--data-dir", str(data_dir),
                 "--set-name", "cdr3", "--n-test", "5", "--n-calibration", "3", "--fills", "2", "--divisors", "2", "3",
                 "--samplers", "naive", "eb", "--mi-lambda", "1", "0.5", "--mi-on-reject", "skip", "--no-mi-charge-first",
                 "--temperature", "1", "--threads", "1", "--batch-size", "2", "--seed", "0", "--margin",
                 "--oracle-contexts", "2", "--oracle-divisors", "3", "--oracle-tol", "0.01", "--out-dir", str(out), *extra])


def _results(out: Path) -> dict:
    """A comparison's result files, less what differs between runs that decode the same: timings (the
    oracle's seconds, also its column of budgets.md) and the chunk record."""
    import re

    summary = json.loads((out / "summary.json").read_text())
    chunks = [summary.pop(k, None) for k in ("seconds", "chunks")][1]
    refs = json.loads((out / "references.json").read_text())
    for r in refs["oracle"].values():
        r.pop("seconds")
    head, oracle = (out / "budgets.md").read_text().split("Exact-MI oracle")
    return {"runs": (out / "runs.json").read_text(), "refs": refs, "csv": (out / "budgets.csv").read_text(),
            "md": head + re.sub(r"\| \d+ \|$", "|", oracle, flags=re.M), "summary": summary,
            "png": (out / "budgets.png").read_bytes(), "chunks": chunks}


def test_compare_with_chunks_resumes_and_writes_what_a_run_without_them_writes(bert_dir, antibody_data_dir, tmp_path,
                                                                                monkeypatch):
    """Issue 48: antibody-compare --chunks keeps every fill and its scores per chunk of templates. A run
    stopped mid-way (the 12th chunk's write raises), rerun with the same command, decodes only what is
    missing and writes what a run without --chunks writes (but timings); a second rerun reads every
    chunk back and decodes nothing."""
    from user_verb_helpers import save_tiny_head

    from mdm_mi.evaluation.chunks import ChunkStore

    head, chunks = save_tiny_head(tmp_path / "head", in_dim=16), tmp_path / "chunks"
    assert _chunked_compare(bert_dir, antibody_data_dir, head, tmp_path / "plain") == 0
    write, written = ChunkStore._write, []

    def stops_at_the_12th(self, path, arrays, cost):
        if len(written) == 11:
            raise KeyboardInterrupt
        written.append(path)
        return write(self, path, arrays, cost)

    monkeypatch.setattr(ChunkStore, "_write", stops_at_the_12th)
    assert _chunked_compare(bert_dir, antibody_data_dir, head, tmp_path / "stopped", "--chunks", str(chunks)) == 130
    monkeypatch.setattr(ChunkStore, "_write", write)
    assert len(list(chunks.glob("*.npz"))) == 11 and not (tmp_path / "stopped").exists()
    for name in ("resumed", "again"):
        assert _chunked_compare(bert_dir, antibody_data_dir, head, tmp_path / name, "--chunks", str(chunks)) == 0
    plain, resumed, again = (_results(tmp_path / n) for n in ("plain", "resumed", "again"))
    assert plain.pop("chunks") is None
    kept = [resumed.pop("chunks"), again.pop("chunks")]
    assert plain == resumed == again
    assert kept[0]["read"] >= 11 and kept[0]["decoded"] > 0
    assert kept[1] == kept[0] | {"read": kept[0]["read"] + kept[0]["decoded"], "decoded": 0}  # the same time summed
    assert len(list(chunks.glob("*.npz"))) == 11 + kept[0]["decoded"]


def test_the_chunks_identity_names_what_fixes_a_fill(bert_dir, tmp_path):
    """Another seed, temperature or head never reads a chunk kept by this one; a chunk is one batch."""
    from types import SimpleNamespace

    from user_verb_helpers import TINY_HEAD, save_tiny_head

    from mdm_mi.antibody.jobs import compare_filler
    from mdm_mi.mi.head import MIHead, save_head

    heads = [save_tiny_head(tmp_path / "head0", in_dim=16), tmp_path / "head1"]
    torch.manual_seed(1)
    save_head(MIHead(16, TINY_HEAD), heads[1], {"backbone": "tiny"})
    base = dict(model=bert_dir, head=heads[0], tv_head=None, seed=0, temperature=1.0, batch_size=4, chunks=tmp_path)
    changes = [{}, {"seed": 1}, {"temperature": 0.5}, {"head": heads[1]}, {"head": None}]
    fillers = [compare_filler(None, SimpleNamespace(**(base | c))) for c in changes]
    assert len({f.store.identity for f in fillers}) == len(changes)
    assert fillers[0].store.chunk_items == 4 and compare_filler(None, SimpleNamespace(**(base | {"chunks": None}))).store is None


def test_every_lineage_when_no_count_is_given(bert_dir, antibody_data_dir):
    """--n-test and --n-calibration left out: one VH of every lineage of the table (the decisive run's
    test); a count above the lineages is one line."""
    from mdm_mi.antibody.infill_runs import InfillSet
    from mdm_mi.models.loading import load_model

    backbone, _ = load_model(bert_dir, "cpu")
    rows = read_vh(antibody_data_dir / "test.tsv")
    every = InfillSet.from_tsv(backbone, antibody_data_dir / "test.tsv", ("cdr3",), None, 0)
    assert len(every.ids) == len({r.lineage for r in rows}) < len(rows)
    assert every.first(4).ids == InfillSet.from_tsv(backbone, antibody_data_dir / "test.tsv", ("cdr3",), 4, 0).ids
    with pytest.raises(InputError, match="fewer than"):
        InfillSet.from_tsv(backbone, antibody_data_dir / "test.tsv", ("cdr3",), len(every.ids) + 1, 0)


def test_the_captured_attention_is_the_passes_own_and_changes_nothing(bert_dir):
    """HFBackbone.capture_attention: one (B, N, N) matrix per forward, the model's last-layer attention
    averaged over heads (rows sum to 1 over the unpadded tokens), the logits unchanged; none outside it."""
    from mdm_mi.models.loading import load_model

    backbone, _ = load_model(bert_dir, "cpu", "hf")
    tokens = backbone.encode(["ACDE_G", "AC__"])
    plain = backbone(tokens).logits
    with backbone.capture_attention() as seen:
        logits = backbone(tokens).logits
        backbone(tokens)
    backbone(tokens)
    assert len(seen) == 2 and seen[0].shape == (2, tokens.shape[1], tokens.shape[1])
    assert torch.allclose(logits, plain, atol=1e-5)
    attention = (tokens != backbone.pad_id).long()
    own = backbone.model(input_ids=tokens, attention_mask=attention, output_attentions=True).attentions[-1].mean(1)
    assert torch.allclose(seen[0], own, atol=1e-6)
    assert torch.allclose(seen[0].sum(-1), torch.ones(2, tokens.shape[1]), atol=1e-5)
    assert torch.all(seen[0][1][:, attention[1] == 0] < 1e-6)  # pads get no attention


def test_diversity_and_composition_on_hand_built_fills():
    from mdm_mi.antibody.compare import composition, fill_diversity
    from mdm_mi.evaluation.stats import jsd_bits as jsd

    pos = torch.tensor([[False, True, True, True, True]] * 2)
    fills = torch.tensor([[0, 5, 6, 7, 8], [0, 5, 6, 7, 8], [0, 5, 6, 9, 9], [0, 5, 6, 7, 8]])  # fill k of context p: row k·2 + p
    assert fill_diversity(fills, pos.repeat(2, 1), 2).tolist() == [0.5, 0.0]
    vocab = torch.arange(5, 10)
    p = composition(fills, pos.repeat(2, 1), vocab)
    assert p.sum() == pytest.approx(1) and jsd(p, p) == 0
    assert jsd(np.array([1.0, 0]), np.array([0, 1.0])) == pytest.approx(1.0)


def test_figure_ranks_the_known_pairs(bert_dir, antibody_data_dir, tmp_path):
    from user_verb_helpers import save_tiny_head

    head = save_tiny_head(tmp_path / "head", in_dim=16)
    out, ranks = tmp_path / "map.png", tmp_path / "ranks.json"
    assert main(["figure-antibody-mi", "--model", str(bert_dir), "--head", str(head), "--data-dir", str(antibody_data_dir),
                 "--n-contexts", "2", "--exact-contexts", "1", "--threads", "1", "--seed", "0", "--out", str(out),
                 "--ranks", str(ranks)]) == 0
    result = json.loads(ranks.read_text())
    assert out.stat().st_size > 0 and set(result["head"]) == {"H94-H101 salt bridge", "Cys23-Cys104"}
    assert all(1 <= r <= n for v in result["exact"].values() for r, n in zip(v["ranks"], v["pairs"]))


def test_infill_fills_a_sudoku_grid_and_keeps_its_clues(tiny_checkpoint, tmp_path):
    puzzle = "53__7____6__195____98____6_8___6___34__8_3__17___2___6_6____28____419__5____8__79"
    out = tmp_path / "grid.fasta"
    assert main(["infill", puzzle, "--model", str(tiny_checkpoint), "--sampler", "eb", "--gamma", "0.5",
                 "--out", str(out), "--quiet", "--threads", "1"]) == 0
    header, grid = out.read_text().splitlines()
    assert len(grid) == 81 and set(grid) <= set("123456789") and "passes=" in header
    assert all(p == "_" or p == g for p, g in zip(puzzle, grid))


def test_a_family_off_its_budget_is_marked_with_its_contrasts():
    """A family whose calibration missed the budget (DAPD's graph allowing too few positions per pass)
    is marked † in the values table and in mi*'s contrasts with it; the contender role is counted."""
    from mdm_mi.antibody.compare import contrast_rows
    from mdm_mi.antibody.infill_runs import antibody_markdown

    rng = np.random.default_rng(0)

    def run(family, d, passes, on_target=True):
        return {"family": family, "divisor": d, "mean_passes": passes, "passes": [passes] * 4, "on_target": on_target,
                "pll": list(rng.normal(-1.8, 0.1, 4)), "recovery": list(rng.uniform(0.2, 0.4, 4)),
                "diversity": [0.7] * 4, "jsd": 0.02, "calib_score": 0.0}

    runs = {"sequential": run("sequential", 1, 12.0), "eb@2": run("eb", 2, 6.0), "mi-l1@2": run("mi λ=1", 2, 6.0),
            "dapd-t1@2": run("dapd θ=1", 2, 11.0, on_target=False)}
    rows = contrast_rows(runs, "cdr3")
    text = antibody_markdown(runs, rows, "cdr3", -1.8, 4, 2, {})
    assert "@ 11.0†" in text and "mi* − dapd θ=1† |" in text and "mi* − eb |" in text
    assert "| contender | 2 |" in text  # PLL and recovery
