"""The protein domain on a tiny random ESM-C: tokens, data split, MDM training batches, checkpoints
(trained and 300M-by-reference), unconditional generation, the JSD metric and the CLI verbs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("esm.models.esmc")

from mdm_mi.cli import main  # noqa: E402
from mdm_mi.infra.checkpoint import CheckpointError  # noqa: E402
from mdm_mi.infra.errors import InputError  # noqa: E402
from mdm_mi.infra.fasta import AMINO_ACIDS, read_fasta, write_fasta  # noqa: E402
from mdm_mi.models.loading import load_model  # noqa: E402
from mdm_mi.protein import data as pdata# noqa: E402
from mdm_mi.protein import metrics# noqa: E402
from mdm_mi.protein.generate import generate  # noqa: E402
from mdm_mi.protein.model import load_protein_model, new_esmc, save_trained, write_300m_meta  # noqa: E402
from mdm_mi.protein.train import ProteinTrainConfig, sample_batch  # noqa: E402
from mdm_mi.protein.tokens import protein_tokens  # noqa: E402
from mdm_mi.sampling.registry import build_sampler
  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
UNIREF = REPO / "resources" / "data" / "protein" / "uniref50_len50-100.fasta"
DIMS = {"d_model": 16, "n_heads": 2, "n_layers": 2}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random ESM-C saved as a trained protein checkpoint."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("protein") / "model"
    save_trained(new_esmc(**DIMS), out, DIMS, -1, {"metrics": {"n_params": 1}})
    return out


@pytest.fixture(scope="module")
def backbone(model_dir):
    return load_protein_model(model_dir)[0]


@pytest.fixture(scope="module")
def reference() -> list[tuple[str, str]]:
    return read_fasta(UNIREF)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---- tokens and data ------------------------------------------------------------------------------

def test_tokens_round_trip_and_specials():
    tok = protein_tokens()
    ids = tok.encode_batch(["MKT", "ACDEFGHIKLMNPQRSTVWY"])
    assert ids.shape == (2, 22) and (ids[:, 0] == tok.bos).all()
    assert ids[0, 4].item() == tok.eos and (ids[0, 5:] == tok.pad).all()
    assert tok.decode_batch(ids) == ["MKT", AMINO_ACIDS]
    assert tok.residues(ids).sum(1).tolist() == [3, 20]
    assert len({tok.mask, tok.pad, tok.bos, tok.eos} | set(tok.aa_ids)) == 24


def test_tokens_reject_unknown_letters():
    with pytest.raises(InputError, match="outside the 20 standard amino acids"):
        protein_tokens().encode_batch(["MKXT"])


def test_split_is_disjoint_and_seeded(reference):
    train, held = pdata.split_records(reference, 0.1, seed=3)
    assert len(held) == round(0.1 * len(reference)) and len(train) + len(held) == len(reference)
    assert not {h for h, _ in train} & {h for h, _ in held}
    assert pdata.split_records(reference, 0.1, seed=3) == (train, held)


def test_reference_pair_is_disjoint_and_in_range(reference):
    first, second = pdata.reference_pair(reference, 500, 0, 50, 100)
    assert len(first) == 500 and len(second) == len(reference) - 500
    assert not {h for h, _ in first} & {h for h, _ in second}
    assert all(50 <= len(s) <= 100 for _, s in first + second)
    with pytest.raises(InputError, match="reference sequences"):
        pdata.reference_pair(reference, len(reference), 0, 50, 100)


def test_crops_take_reference_lengths():
    records = [("a", "M" * 300), ("b", "K" * 40)]
    crops = pdata.crops_like(records, np.array([60, 70]), 50, rng())
    assert all(len(c) in (40, 60, 70) for c in crops)
    assert pdata.random_crop("ACDEFG", 3, rng()) in {"ACD", "CDE", "DEF", "EFG"}


def test_training_batch_masks_residues_only():
    tok = protein_tokens()
    cfg = ProteinTrainConfig(steps=1, batch_size=16, lr=1e-3, warmup=0, weight_decay=0, t_min=0.5, t_max=1.0,
                             loss_weight="none", crop_min=5, crop_max=20, grad_clip=1, seed=0, log_every=1, ema=0.0,
                             save_every=0, snapshot_every=0, reweight_identity=0.0, dropout=0.0, eval_every=0)
    tokens, target, _ = sample_batch(["ACDEFGHIKLMNPQRSTVWY" * 3, "MKT" * 10], tok, cfg, rng())
    masked = tokens == tok.mask
    assert masked.any()
    assert torch.equal(masked, target >= 0)  # targets exactly at masked positions
    assert (tokens[:, 0] == tok.bos).all()  # BOS never masked
    assert not (masked & ~tok.residues(tokens)).any()
    assert target.max() < 20


# ---- checkpoints ------------------------------------------------------------------------------------

def test_trained_checkpoint_round_trip(model_dir, backbone):
    again, meta = load_model(model_dir, "cpu", "protein")
    tokens = backbone.encode(["MKTAYIAKQR"])
    with torch.inference_mode():
        assert torch.equal(backbone(tokens).logits, again(tokens).logits)
    assert meta["kind"] == "trained" and again.vocab_size == 20


def test_domain_mismatch_is_one_line(model_dir):
    with pytest.raises(CheckpointError, match="'protein' model, but this needs a 'sudoku' model"):
        load_model(model_dir, "cpu", "sudoku")


def test_corrupt_weights_refused(tmp_path, model_dir):
    bad = tmp_path / "m"
    bad.mkdir()
    (bad / "meta.json").write_text((model_dir / "meta.json").read_text())
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_protein_model(bad)


def test_300m_by_reference_loads_weights_only(tmp_path, model_dir):
    """The esmc-300m kind loads a .pth state dict by path (same code as the real 300M, tiny dims)."""
    state = new_esmc(**DIMS).state_dict()
    torch.save(state, tmp_path / "w.pth")
    folder = tmp_path / "esmc"
    write_300m_meta(folder, tmp_path / "w.pth", hidden_layer=0, bf16=False)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["kind"] == "esmc-300m" and meta["esmc"]["d_model"] == 960
    meta["esmc"] = DIMS
    (folder / "meta.json").write_text(json.dumps(meta))
    bb, _ = load_protein_model(folder)
    assert bb.hidden_dim == 16 and bb.hidden_index == 0
    (tmp_path / "w.pth").unlink()
    with pytest.raises(CheckpointError, match="missing"):
        load_protein_model(folder)


# ---- generation -------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampler", [build_sampler("sequential"), build_sampler("naive", k=4),
                                     build_sampler("eb", gamma=2.0)])
def test_generation_fills_every_position_and_keeps_specials(backbone, sampler):
    lengths = [5, 12, 9, 12]
    seqs, passes = generate(backbone, lengths, sampler, 0, batch_size=3)
    assert [len(s) for s in seqs] == lengths
    assert all(set(s) <= set(AMINO_ACIDS) for s in seqs)
    if sampler.name == "sequential":
        assert passes.tolist() == lengths
    if sampler.name == "naive":
        assert passes.tolist() == [-(-n // 4) for n in lengths]


def test_generation_same_seed_same_output(backbone):
    eb = build_sampler("eb", gamma=1.0)
    a = generate(backbone, [20, 30], eb, 7)
    b = generate(backbone, [20, 30], eb, 7)
    c = generate(backbone, [20, 30], eb, 8)
    assert a[0] == b[0] and (a[1] == b[1]).all() and a[0] != c[0]


def test_padding_does_not_change_logits(backbone):
    short, long_ = backbone.encode(["MKTAY"]), backbone.encode(["MKTAY", "ACDEFGHIKLMN"])
    with torch.inference_mode():
        alone, padded = backbone(short).logits[0], backbone(long_).logits[0, :7]
    assert torch.allclose(alone, padded, atol=1e-5)


# ---- metrics ----------------------------------------------------------------------------------------

def test_jsd_bits_known_values():
    assert metrics.jsd_bits([1, 0], [1, 0]) == 0
    assert metrics.jsd_bits([1, 0], [0, 1]) == pytest.approx(1.0)
    # p = (1/2, 1/2), q = (1, 0): JSD = 1 - (3/4) log2(4/3) ... closed form
    m = np.array([0.75, 0.25])
    want = 0.5 * (0.5 * np.log2(0.5 / 0.75) + 0.5 * np.log2(0.5 / 0.25)) + 0.5 * np.log2(1 / 0.75)
    assert metrics.jsd_bits([1, 1], [2, 0]) == pytest.approx(want) and m.sum() == 1


def test_cluster_jsd_of_reference_with_itself_is_zero(backbone, reference):
    seqs = [s for _, s in reference[:60]]
    emb = metrics.embed(backbone, seqs)
    assert emb.shape == (60, 16)
    km = metrics.fit_clusters(emb, 4, seed=0)
    assert metrics.cluster_jsd(km, emb, emb) == 0
    lo, hi = metrics.bootstrap_jsd_ci(metrics.cluster_histogram(km, emb), metrics.cluster_histogram(km, emb), 0, 50)
    assert 0 <= lo <= hi


def test_embedding_ignores_padding(backbone):
    alone = metrics.embed(backbone, ["MKTAYIAK"])
    mixed = metrics.embed(backbone, ["MKTAYIAK", "ACDEFGHIKLMNPQRSTVWY"])
    assert np.allclose(alone[0], mixed[0], atol=1e-5)


def test_composition_and_diversity():
    assert metrics.composition(["AAAC"])[AMINO_ACIDS.index("A")] == 0.75
    same = metrics.diversity(["ACDEFG", "ACDEFG"])
    assert same["unique_fraction"] == 0.5 and same["kmer_distance"] == 0
    assert metrics.diversity(["AAAAK"])["mean_longest_run"] == 4


# ---- CLI ----------------------------------------------------------------------------------------------

def test_generate_verb_writes_fasta_and_scores(tmp_path, model_dir, reference):
    ref = tmp_path / "ref.fasta"
    write_fasta(ref, reference[:30])
    ref2 = tmp_path / "ref2.fasta"
    write_fasta(ref2, reference[30:45])
    out, summary = tmp_path / "gen.fasta", tmp_path / "gen.json"
    rc = main(["generate", "--model", str(model_dir), "--n", "12", "--reference", str(ref), "--reference2", str(ref2),
               "--clusters", "3", "--sampler", "naive", "--k", "8", "--out", str(out), "--summary", str(summary),
               "--quiet", "--device", "cpu"])
    assert rc == 0
    seqs = [s for _, s in read_fasta(out)]
    lengths = {len(s) for _, s in reference[:30]}
    assert len(seqs) == 12 and all(len(s) in lengths for s in seqs)
    s = json.loads(summary.read_text())
    assert 0 <= s["jsd"] <= 1 and s["jsd_lo"] <= s["jsd_hi"] and s["n_reference2"] == 15
    assert 0 <= s["jsd_lo"] <= s["jsd_bc"] <= s["jsd_hi"] and s["jsd_interval"].startswith("basic bootstrap")
    analytic = (3 - 1) * (1 / 30 + 1 / 12) / (8 * np.log(2))  # 3 clusters, 30 reference, 12 generated
    assert s["jsd_noise_floor"] > 0 and s["jsd_floor_analytic"] == pytest.approx(analytic)
    assert s["jsd_reference2"] >= 0 and "jsd_floor_kind" in s
    assert s["mean_passes"] == pytest.approx(np.mean([-(-len(x) // 8) for x in seqs]))


def test_a_decoding_key_is_one_field_and_reaches_decode_from_the_cli(tmp_path, model_dir, monkeypatch):
    """A ``protein.generate`` key is a DecodeFlags field (a toy ``top_p`` here, on a subclass: what adding
    the field to DecodeFlags does): the verb takes its flag and ``decode`` receives it in the one decoding
    object, which the summary records. (The rules pass ``protein.generate`` whole, so the workflow gives
    the flag: ``test_workflow.test_rules_pass_whole_config_sections``.)"""
    import dataclasses

    from mdm_mi import cli
    from mdm_mi.infra.flags import h
    from mdm_mi.protein import decode_flags, generate as generate_module, generate_jobs

    toy = dataclasses.make_dataclass("ToyDecodeFlags", [("top_p", float, dataclasses.field(default=1.0, metadata=h("toy")))],
                                     bases=(decode_flags.DecodeFlags,), frozen=True, kw_only=True)
    toy_args = dataclasses.make_dataclass("ToyGenerateArgs", [], bases=(generate_jobs.GenerateArgs, toy), frozen=True)
    monkeypatch.setitem(cli.VERBS, "generate", cli.VERBS["generate"]._replace(args=toy_args))
    monkeypatch.setattr(generate_jobs, "DecodeFlags", toy)
    seen, real = [], generate_module.decode

    def decode(*args, decoding, **kw):
        seen.append(decoding)
        return real(*args, decoding=decoding, **kw)

    monkeypatch.setattr(generate_module, "decode", decode)
    summary = tmp_path / "g.json"
    rc = main(["generate", "--model", str(model_dir), "--n", "3", "--min-length", "4", "--max-length", "6", "--top-p",
               "0.5", "--temperature", "0.7", "--out", str(tmp_path / "g.fasta"), "--summary", str(summary),
               "--quiet", "--device", "cpu"])
    assert rc == 0 and seen
    assert all(isinstance(d, toy) and (d.top_p, d.temperature, d.bf16) == (0.5, 0.7, False) for d in seen)
    assert json.loads(summary.read_text())["top_p"] == 0.5


def test_generate_verb_rejects_bad_input(tmp_path, model_dir, capsys):
    bad = tmp_path / "bad.fasta"
    bad.write_text(">x\nMKTZZ\n")
    rc = main(["generate", "--model", str(model_dir), "--reference", str(bad), "--out", str(tmp_path / "o.fasta")])
    assert rc == 2 and "outside the 20 standard amino acids" in capsys.readouterr().err
    assert not (tmp_path / "o.fasta").exists()
    rc = main(["generate", "--model", str(model_dir), "--min-length", "10", "--max-length", "5",
               "--out", str(tmp_path / "o.fasta")])
    assert rc == 2 and "--min-length must be <= 5, got 10" in capsys.readouterr().err


def test_label_draw_never_masks_specials(backbone):
    from mdm_mi.mi.contexts import draw_contexts

    seqs = protein_tokens().encode_batch(["MKTAYIAKQR"] * 3, width=14).numpy()
    contexts, t = draw_contexts(seqs, 40, backbone.mask_id, 0, backbone.vocab_token_ids)
    masked = (contexts == backbone.mask_id).numpy()
    residue = np.isin(seqs[0], backbone.vocab_token_ids.numpy())
    assert masked.any() and not masked[:, ~residue].any()  # BOS, EOS, pads stay
    assert ((contexts.numpy() == seqs[0]) | masked).all()


# ---- tables and figures -------------------------------------------------------------------------------

def _summary(sampler, params, passes, jsd):
    return {"sampler": sampler, "params": params, "n": 500, "mean_passes": passes, "passes_ci": 0.5, "jsd": jsd,
            "jsd_bc": jsd - 0.01, "jsd_lo": jsd - 0.02, "jsd_hi": jsd, "jsd_noise_floor": 0.01,
            "jsd_floor_analytic": 0.0101, "composition_jsd": 0.001,
            "unique_fraction": 1.0, "kmer_distance": 0.9, "mean_longest_run": 2.0, "seconds": 1.0}


def test_protein_tables_and_speed_quality_figure(tmp_path):
    from mdm_mi.evaluation.tables import to_csv
    from mdm_mi.protein import report

    rows = report.protein_rows([
        _summary("sequential", {"order": "entropy"}, 75.0, 0.05), _summary("naive", {"k": 8}, 10.0, 0.20),
        _summary("eb", {"gamma": 8.0}, 10.5, 0.10), _summary("mi", {"gamma": 4.0, "lam": 1.0}, 10.2, 0.08),
        _summary("mi", {"gamma": 4.0, "lam": 2.0}, 12.0, 0.07)])
    (tmp_path / "t.csv").write_text(to_csv(rows, report.COLUMNS))
    back = report.read_rows(tmp_path / "t.csv")
    assert [r["sampler"] for r in back] == ["eb", "mi", "mi", "naive", "sequential"]
    paper = report.paper_table(back, "tiny")
    assert "74.8 / 0.093" in paper and "75.0 / 0.050" in paper
    assert "(best λ)" in paper  # two MI rows at γ=4: the best JSD is shown
    matched = report.matched_table(back)
    mi_row = next(line for line in matched.splitlines() if line.startswith("| gamma=4.0 lam=1.0"))
    assert "gamma=8.0: 10.5 / 0.100" in mi_row and "k=8: 10.0 / 0.200" in mi_row
    assert "none within ±10%" not in mi_row
    assert "75.0 / 0.050 (bc 0.040) [0.030, 0.050]" in paper
    table = report.to_markdown(rows, "tiny")
    assert "basic-bootstrap 95% interval" in table
    assert "noise floor (plug-in JSD expected of a perfect generator" in table
    assert "| 0.050 | 0.040 [0.030, 0.050] |" in table and "analytic 0.010" in table
    report.speed_quality(back, tmp_path / "f.png", "tiny")
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_distance_profile_averages_masked_pairs_by_separation():
    from mdm_mi.protein.report import distance_profile

    n = 5
    label = torch.zeros(1, n, n)
    for i in range(n - 1):
        label[0, i, i + 1] = label[0, i + 1, i] = 1.0  # neighbours carry 1 nat
    masked = torch.tensor([[False, True, True, True, True]])
    d, lab, head, cnt = distance_profile(label * 0.5, label, masked, max_dist=3)
    assert d.tolist() == [1, 2, 3]
    assert lab.tolist() == [1.0, 0.0, 0.0] and head.tolist() == [0.5, 0.0, 0.0]
    assert cnt.tolist() == [6, 4, 2]  # ordered pairs among the 4 masked positions
