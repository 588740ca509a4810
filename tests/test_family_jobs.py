"""The protein-family verbs through the CLI, on the first records of the Kunitz alignment:
``prepare-family`` (cluster-disjoint splits, whole sequences, the generic pipeline's files),
``family-score`` (a natural ceiling above a site-independent floor) and ``family-table``."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mdm_mi.cli import main
from mdm_mi.infra.fasta import read_fasta, write_fasta
from mdm_mi.protein.family import alignment as fam

pytest.importorskip("esm.models.esmc")  # the MI contexts are ESM-C token ids

REPO = Path(__file__).resolve().parents[1]
KUNITZ = REPO / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
SUBSET = 1000  # records: enough clusters for a 5% validation split of ~50 sequences
N_SCORE, N_TRAIN_CONTEXTS, N_HELDOUT_CONTEXTS, CLUSTERS = 60, 50, 20, 4


def _subset_a2m(path: Path, n: int) -> Path:
    """The first ``n`` records of the Kunitz alignment, as an A2M file."""
    text = KUNITZ.read_text()
    cut = [i for i, line in enumerate(text.splitlines(keepends=True)) if line.startswith(">")]
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[: cut[n]] if n < len(cut) else lines))
    return path


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("family")
    a2m = _subset_a2m(root / "subset.a2m", SUBSET)
    argv = ["prepare-family", "--a2m", str(a2m), "--out-dir", str(root / "data"), "--identity", "0.8",
            "--n-train-contexts", str(N_TRAIN_CONTEXTS), "--n-heldout-contexts", str(N_HELDOUT_CONTEXTS),
            "--n-score", str(N_SCORE), "--seed", "0"]
    assert main(argv) == 0
    return root / "data"


def _split(prepared: Path, name: str) -> list[fam.FamilyRecord]:
    return fam.parse_a2m(prepared / f"{name}.a2m")


def _score(prepared: Path, fasta: Path, row: str, *extra: str) -> dict:
    out = prepared.parent / "scores" / f"{row}.json"
    argv = ["family-score", "--fasta", str(fasta), "--data-dir", str(prepared), "--row", row, "--out", str(out),
            "--clusters", str(CLUSTERS), "--seed", "0", *extra]
    assert main(argv) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def scores(prepared) -> dict[str, dict]:
    """Score JSONs of the ceiling, the floor and a 'generated' set that copies training sequences."""
    n = json.loads((prepared / "summary.json").read_text())["n_score"]
    copies = prepared.parent / "copies.fasta"
    write_fasta(copies, [(r.name, r.sequence) for r in _split(prepared, "train")[:n]])
    summary = prepared.parent / "copies.json"
    summary.write_text(json.dumps({"sampler": "eb", "params": {"gamma": 4.0}, "mean_passes": 7.5}))
    return {"ceiling": _score(prepared, prepared / "ceiling.fasta", "ceiling"),
            "floor": _score(prepared, prepared / "floor.fasta", "floor"),
            "eb-g4.0": _score(prepared, copies, "eb-g4.0", "--summary", str(summary))}


def test_splits_are_cluster_disjoint_and_the_reference_is_never_trained_on(prepared):
    train, val, reference = (_split(prepared, s) for s in fam.SPLIT_NAMES)
    kept, _ = fam.drop_nonstandard(fam.parse_a2m(prepared.parent / "subset.a2m"))
    assert sorted(r.name for r in train + val + reference) == sorted(r.name for r in kept)
    assert min(len(train), len(val), len(reference)) >= 2 and len(train) > len(reference) > len(val)
    codes = {s: fam.encode_columns([r.columns for r in recs]) for s, recs in
             (("train", train), ("val", val), ("reference", reference))}
    for a, b in (("train", "val"), ("train", "reference"), ("val", "reference")):
        assert fam.pairwise_identity(codes[a], codes[b]).max() < 0.8, (a, b)  # whole clusters per split
    trained_on = {s for _, s in read_fasta(prepared / "train.fasta")}
    assert trained_on == {r.sequence for r in train}  # whole, unaligned sequences: never cropped
    assert not trained_on & {r.sequence for r in reference + val}
    assert [s for _, s in read_fasta(prepared / "reference.fasta")] == [r.sequence for r in reference]
    assert [s for _, s in read_fasta(prepared / "reference2.fasta")] == [r.sequence for r in val]


def test_contexts_are_distinct_whole_sequences_of_their_splits(prepared):
    import torch

    from mdm_mi.protein.tokens import protein_tokens

    tok = protein_tokens()
    train = {r.sequence for r in _split(prepared, "train")}
    held = {r.sequence for r in _split(prepared, "val") + _split(prepared, "reference")}
    widths = set()
    for name, pool, n in (("train", train, N_TRAIN_CONTEXTS), ("heldout", held, N_HELDOUT_CONTEXTS)):
        ids = np.load(prepared / f"{name}_contexts.npy", allow_pickle=False)
        seqs = tok.decode_batch(torch.from_numpy(ids))
        assert len(seqs) == len(set(seqs)) == n and set(seqs) <= pool, name
        assert (ids[:, 0] == tok.bos).all()
        widths.add(ids.shape[1])
    assert len(widths) == 1  # one width for both files, as the label rule expects


def test_summary_has_sizes_clusters_and_baselines(prepared):
    summary = json.loads((prepared / "summary.json").read_text())
    assert summary["n_train"] + summary["n_val"] + summary["n_reference"] + summary["n_dropped_nonstandard"] \
        == summary["n_records"] == SUBSET
    assert summary["n_clusters"] >= 3 and summary["n_score"] == min(N_SCORE, summary["n_train"])
    base = summary["baselines"]
    assert 0 < base["profile_nats"] < base["composition_nats"] < np.log(20)
    assert isinstance(json.loads((prepared / "nonstandard.json").read_text()), list)
    train = {r.sequence for r in _split(prepared, "train")}  # the ceiling: natural, cluster-disjoint from the reference
    ceiling, floor = read_fasta(prepared / "ceiling.fasta"), read_fasta(prepared / "floor.fasta")
    assert len(ceiling) == len(floor) == summary["n_score"] and {s for _, s in ceiling} <= train


def test_floor_has_no_pair_correlation_and_the_ceiling_has_more(scores):
    ceiling, floor = scores["ceiling"], scores["floor"]
    assert ceiling["n"] == floor["n"] == scores["eb-g4.0"]["n"]  # every row at the same size
    assert abs(floor["c_ij_r"]) < 0.02 and ceiling["c_ij_r"] > floor["c_ij_r"]  # 0.006 and 0.049 at seed 0
    assert ceiling["corrected_mi_r"] > floor["corrected_mi_r"] + 0.2
    assert min(floor["f_i_r"], ceiling["f_i_r"]) > 0.8  # both have the family's single-site statistics
    assert ceiling["hmm_pass_rate"] > 0.9 and 0 <= floor["hmm_pass_rate"] <= 1


def test_copied_training_sequences_show_as_memorised(scores):
    copies, floor = scores["eb-g4.0"], scores["floor"]
    assert copies["train_identity_median"] == copies["train_identity_max"] == 1.0
    assert scores["ceiling"]["train_identity_median"] == 1.0  # the ceiling is drawn from the training split
    assert floor["train_identity_max"] < 1.0
    assert (copies["sampler"], copies["setting"], copies["mean_passes"]) == ("eb", "gamma=4.0", 7.5)


def test_family_table_has_one_row_per_setting_then_ceiling_and_floor(prepared, scores):
    out = prepared.parent / "table"
    inputs = [str(prepared.parent / "scores" / f"{row}.json") for row in ("floor", "eb-g4.0", "ceiling")]
    assert main(["family-table", "--inputs", *inputs, "--out", str(out / "t.csv"), "--markdown", str(out / "t.md")]) == 0
    with (out / "t.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["row"] for r in rows] == ["eb-g4.0", "ceiling", "floor"]
    assert float(rows[0]["mean_passes"]) == 7.5 and rows[1]["mean_passes"] == ""
    markdown = (out / "t.md").read_text()
    assert all(f"| {row} |" in markdown for row in ("eb-g4.0", "ceiling", "floor"))


def test_bad_inputs_are_one_line(prepared, tmp_path, capsys):
    short = tmp_path / "short.fasta"
    write_fasta(short, [("a", "MKTAYIAKQRQISFVKSHFSRQ")])
    argv = ["family-score", "--fasta", str(short), "--data-dir", str(prepared), "--row", "x", "--out",
            str(tmp_path / "x.json"), "--clusters", str(CLUSTERS), "--seed", "0"]
    assert main(argv) == 2
    assert "scored at" in capsys.readouterr().err
    assert main(argv[:-4] + ["--clusters", "100000", "--seed", "0"]) == 2
    assert "--clusters must lie in 2.." in capsys.readouterr().err
    tiny = _subset_a2m(tmp_path / "tiny.a2m", 3)
    argv = ["prepare-family", "--a2m", str(tiny), "--out-dir", str(tmp_path / "d"), "--identity", "0.8",
            "--n-train-contexts", "2", "--n-heldout-contexts", "2", "--n-score", "2", "--seed", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "too few identity clusters" in err


def _tiny_pretrain_argv(prepared: Path, out: Path) -> list[str]:
    """protein-pretrain of a one-layer d=16 model for one step on the prepared train split, whole sequences."""
    return ["protein-pretrain", "--train", str(prepared / "train.fasta"), "--out", str(out), "--d-model", "16",
            "--n-heads", "2", "--n-layers", "1", "--hidden-layer", "-1", "--steps", "1", "--batch-size", "2",
            "--lr", "0.001", "--warmup", "0", "--weight-decay", "0", "--t-min", "0.5", "--t-max", "1",
            "--loss-weight", "none", "--crop-min", "5", "--crop-max", "10", "--grad-clip", "1", "--log-every", "1",
            "--seed", "0", "--device", "cpu", "--threads", "1", "--ema", "0", "--whole-sequences",
            "--save-every", "0", "--snapshot-every", "0", "--reweight-identity", "0", "--dropout", "0",
            "--eval-every", "0"]


def test_whole_sequence_pretraining_never_crops(prepared, tmp_path):
    out = tmp_path / "model"
    assert main(_tiny_pretrain_argv(prepared, out)) == 0
    train = json.loads((out / "meta.json").read_text())["train"]
    longest = max(len(s) for _, s in read_fasta(prepared / "train.fasta"))
    assert train["crop_min"] == train["crop_max"] == longest  # every crop is the whole sequence


def _with(argv: list[str], **flags) -> list[str]:
    """``argv`` with the given flags' values replaced (or added)."""
    argv = list(argv)
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if flag in argv:
            argv[argv.index(flag) + 1] = str(value)
        else:
            argv += [flag, str(value)]
    return argv


def test_reweighted_pretraining_keeps_the_best_validation_step(prepared, tmp_path, capsys):
    """Neff weights from train.a2m, dropout, and the validation split scored every 2 of 4 steps: meta.json
    records the effective number of sequences, the best step and every score."""
    out = tmp_path / "model"
    argv = _with(_tiny_pretrain_argv(prepared, out), steps=4, reweight_identity=0.8, dropout=0.1, eval_every=2,
                 alignment=prepared / "train.a2m", val=prepared / "reference2.fasta")
    assert main(argv) == 0
    meta = json.loads((out / "meta.json").read_text())
    train = fam.parse_a2m(prepared / "train.a2m")
    neff = fam.sequence_weights(fam.encode_columns([r.columns for r in train]), 0.8).sum()
    assert meta["metrics"]["n_effective"] == pytest.approx(neff) and 1 < neff < len(train)
    scores = meta["val_history"]
    assert [r["step"] for r in scores] == [2, 4] and {"val_t0.15", "val_t0.5", "val_t0.9"} <= set(scores[0])
    best = min(scores, key=lambda r: r["val_loss"])
    assert (meta["metrics"]["best_step"], meta["metrics"]["best_val_loss"]) == (best["step"], best["val_loss"])
    assert meta["train"]["reweight_identity"] == 0.8 and meta["train"]["eval_every"] == 2
    for missing, needle in (("alignment", "--reweight-identity needs --alignment"),
                            ("val", "--eval-every needs --val")):
        cut = argv.index(f"--{missing}")
        assert main(argv[:cut] + argv[cut + 2:]) == 2
        assert needle in capsys.readouterr().err
    other = _with(argv, alignment=prepared / "val.a2m")
    assert main(other) == 2 and "does not hold the sequences" in capsys.readouterr().err


def test_family_loss_masks_at_each_rate_and_states_it_under_the_table(prepared, scores, tmp_path):
    model = tmp_path / "model"
    assert main(_tiny_pretrain_argv(prepared, model)) == 0
    out = tmp_path / "loss.json"
    assert main(["family-loss", "--model", str(model), "--data-dir", str(prepared), "--out", str(out),
                 "--rates", "0.15", "1", "--device", "cpu"]) == 0
    loss = json.loads(out.read_text())
    residues = sum(len(s) for _, s in read_fasta(prepared / "reference.fasta"))
    assert loss["losses"]["1"]["masked_residues"] == residues  # t = 1 masks every residue
    assert 0 < loss["losses"]["0.15"]["masked_residues"] < 0.3 * residues
    # an untrained model knows nothing: its loss is near ln 20 and far above the column profile
    assert abs(loss["losses"]["1"]["loss_nats"] - math.log(20)) < 0.5 and loss["losses"]["1"]["vs_profile"] > 0.5
    inputs = [str(prepared.parent / "scores" / f"{row}.json") for row in ("eb-g4.0", "ceiling", "floor")]
    md = tmp_path / "t.md"
    assert main(["family-table", "--inputs", *inputs, "--out", str(tmp_path / "t.csv"), "--markdown", str(md),
                 "--loss", str(out)]) == 0
    assert "Held-out masked-token loss" in md.read_text() and "column profile" in md.read_text()


def test_protein_oracle_ceiling_scores_oracle_head_and_sequential_on_the_same_lengths(prepared, tmp_path, capsys):
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    model, head = tmp_path / "model", tmp_path / "head"
    assert main(_tiny_pretrain_argv(prepared, model)) == 0
    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), head, {})
    budgets = tmp_path / "budgets"
    budgets.mkdir()
    params = {"gamma": 30.0, "lam": 1.0, "on_reject": "skip", "charge_first": False}
    (budgets / "runs.json").write_text(json.dumps({"runs": {
        "mi λ=1@1/4": {"family": "mi λ=1", "divisor": 4, "calib_score": -0.1, "params": params}}}))
    argv = ["protein-oracle-ceiling", "--model", str(model), "--head", str(head), "--budgets-dir", str(budgets),
            "--data-dir", str(prepared), "--out-dir", str(tmp_path / "out"), "--n", "2", "--tol", "0.01", "--batch-size", "16",
            "--device", "cpu"]
    assert main([*argv, "--divisors", "4"]) == 0
    result = json.loads((tmp_path / "out" / "ceiling.json").read_text())
    at4 = result["divisors"]["4"]
    assert at4["params"] == params and set(at4["differences"]) == {"oracle-head", "oracle-sequential", "head-sequential"}
    assert at4["oracle"]["mean_passes"] <= result["sequential"]["mean_passes"]  # γ = 30 nats unmasks in parallel
    assert all(d["bit_score"]["n"] == 2 for d in at4["differences"].values())  # paired on the same 2 lengths
    assert "MI oracle 1/4" in (tmp_path / "out" / "ceiling.md").read_text()
    part = tmp_path / "parts" / "mi-l1"  # the workflow reads the MI-guided parts, not the merge
    part.mkdir(parents=True)
    (part / "part.json").write_text((budgets / "runs.json").read_text())
    from_parts = [a if a != str(budgets) else str(part) for a in argv]
    from_parts[from_parts.index("--budgets-dir")] = "--parts"
    assert main([*from_parts, "--divisors", "4", "--out-dir", str(tmp_path / "out2")]) == 0
    again = json.loads((tmp_path / "out2" / "ceiling.json").read_text())
    for r in (result, again):
        r["divisors"]["4"].pop("seconds")
    assert again == result
    capsys.readouterr()
    assert main([*argv, "--parts", str(part), "--divisors", "4"]) == 2  # both sources
    assert "either --budgets-dir" in capsys.readouterr().err
    assert main([*argv, "--divisors", "5"]) == 2  # no mi run at 1/5: one line, before any decoding
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "divisor 5" in err


def test_protein_compare_in_parts_equals_one_job(prepared, tmp_path, capsys):
    """The workflow's split (one protein-compare-part job per family, then a merge) writes the same
    runs, tables and sequences as protein-compare decoding everything itself; bad parts are refused."""
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head
    from mdm_mi.protein.compare_jobs import ProteinComparePartArgs, comparison_parts

    model, head = tmp_path / "model", tmp_path / "head"
    assert main(_tiny_pretrain_argv(prepared, model)) == 0
    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), head, {})
    common = ["--model", str(model), "--head", str(head), "--reference", str(prepared / "reference.fasta"),
              "--n", "6", "--calib-n", "4", "--divisors", "2", "4", "--mi-lambda", "1", "4", "--on-reject", "skip",
              "--no-charge-first", "--indep-cap", "--two-budget-delta", "--clusters", "2", "--batch-size", "4",
              "--device", "cpu"]
    names = comparison_parts(ProteinComparePartArgs(model=model, head=head, reference=prepared, out_dir=tmp_path, calib_n=4,
                                              divisors=(2, 4), mi_lambda=(1.0, 4.0), on_reject="skip",
                                              charge_first=False, indep_cap=(), two_budget_delta=(), part="sequential"))
    assert names == ["sequential", "naive", "eb", "threshold", "mi-l1", "mi-l4"]
    parts = [tmp_path / "parts" / n for n in names]
    for name, out in zip(names, parts):
        assert main(["protein-compare-part", "--part", name, "--out-dir", str(out), *common]) == 0
    merge = ["--bootstrap", "3", *common]  # the bootstrap is the merge's only
    assert main(["protein-compare", "--parts", *map(str, parts), "--out-dir", str(tmp_path / "merged"), *merge]) == 0
    assert main(["protein-compare", "--out-dir", str(tmp_path / "whole"), *merge]) == 0
    merged, whole = (json.loads((tmp_path / d / "runs.json").read_text()) for d in ("merged", "whole"))
    assert merged["runs"] == whole["runs"] and len(whole["runs"]) == 1 + 5 * 2
    for d in ("budgets.csv", "budgets.md"):
        assert (tmp_path / "merged" / d).read_text() == (tmp_path / "whole" / d).read_text()
    fastas = sorted(p.name for p in (tmp_path / "whole" / "fasta").iterdir())
    assert fastas == sorted(p.name for p in (tmp_path / "merged" / "fasta").iterdir())
    assert all((tmp_path / "merged" / "fasta" / f).read_text() == (tmp_path / "whole" / "fasta" / f).read_text()
               for f in fastas)
    capsys.readouterr()
    bad = {"missing": parts[:-1], "twice": [*parts, parts[0]]}
    for why, given in bad.items():
        assert main(["protein-compare", "--parts", *map(str, given), "--out-dir", str(tmp_path / why), *merge]) == 2
        assert capsys.readouterr().err.count("\n") == 1, why
    assert main(["protein-compare", "--parts", *map(str, parts), "--out-dir", str(tmp_path / "other"),
                 *[a if a != "6" else "8" for a in merge]]) == 2  # parts made at --n 6
    assert "other settings than this comparison (n)" in capsys.readouterr().err
    assert main(["protein-compare", "--parts", *map(str, parts), "--out-dir", str(tmp_path / "other"), *merge,
                 "--bf16"]) == 2  # parts decoded in fp32
    assert "other settings than this comparison (bf16)" in capsys.readouterr().err
    assert main(["protein-compare-part", "--part", "mi-l2", "--out-dir", str(tmp_path / "x"), *common]) == 2
    assert "unknown --part 'mi-l2'" in capsys.readouterr().err
    assert main(["protein-compare-part", "--part", "dapd-t1", "--out-dir", str(tmp_path / "dapd"), *common,
                 "--dapd-theta", "1"]) == 0  # DAPD on the small ESM-C: its attention recomputed in each pass
    dapd = json.loads((tmp_path / "dapd" / "part.json").read_text())["runs"]
    assert {r["family"] for r in dapd.values()} == {"dapd θ=1"} and all(r["params"]["theta"] == 1 for r in dapd.values())
    tv = tmp_path / "tv_head"  # DEMASK's TV head, read by the families of its entry only
    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tv, {"target": "tv"})
    demask = ["protein-compare-part", "--part", "demask-e0.5", "--out-dir", str(tmp_path / "demask"), *common,
              "--demask-eps", "0.5"]
    assert main(demask) == 2 and "pass --tv-head" in capsys.readouterr().err
    assert main([*demask, "--tv-head", str(head)]) == 2  # an MI head where the TV head is read: refused
    assert capsys.readouterr().err.count("\n") == 1
    assert main([*demask, "--tv-head", str(tv)]) == 0
    runs = json.loads((tmp_path / "demask" / "part.json").read_text())["runs"]
    assert {r["family"] for r in runs.values()} == {"demask ε=0.5"}
    assert not (tmp_path / "other").exists() and not (tmp_path / "x").exists()
    # one more value of a swept list: only its part is new; the parts made without it still join, and a
    # part decoded with the longer list holds the same runs as the one decoded without it
    wider = list(common)
    wider[wider.index("--mi-lambda"):wider.index("--mi-lambda") + 3] = ["--mi-lambda", "1", "4", "16"]
    assert main(["protein-compare-part", "--part", "mi-l16", "--out-dir", str(tmp_path / "parts" / "mi-l16"), *wider]) == 0
    assert main(["protein-compare-part", "--part", "mi-l1", "--out-dir", str(tmp_path / "again"), *wider]) == 0
    again = json.loads((tmp_path / "again" / "part.json").read_text())["runs"]
    assert again == json.loads((parts[4] / "part.json").read_text())["runs"]
    alone = list(common)  # as the workflow runs a part: its own list cut to its value
    alone[alone.index("--mi-lambda"):alone.index("--mi-lambda") + 3] = ["--mi-lambda", "4"]
    assert main(["protein-compare-part", "--part", "mi-l4", "--out-dir", str(tmp_path / "l4-alone"), *alone]) == 0
    assert (json.loads((tmp_path / "l4-alone" / "part.json").read_text())["runs"]
            == json.loads((parts[5] / "part.json").read_text())["runs"])
    assert main(["protein-compare", "--parts", *map(str, parts), str(tmp_path / "parts" / "mi-l16"),
                 "--out-dir", str(tmp_path / "wider"), "--bootstrap", "3", *wider]) == 0
    wide = json.loads((tmp_path / "wider" / "runs.json").read_text())["runs"]
    assert {r["family"] for r in wide.values()} >= {"mi λ=1", "mi λ=4", "mi λ=16"}


def test_protein_generate_under_bf16_repeats_with_the_seed_and_draws_reference_lengths(prepared, tmp_path):
    from mdm_mi.infra.fasta import read_fasta

    model = tmp_path / "model"
    assert main(_tiny_pretrain_argv(prepared, model)) == 0
    reference = prepared / "reference.fasta"
    lengths = {len(s) for _, s in read_fasta(reference)}
    outs = []
    for i in range(2):
        out, summary = tmp_path / f"g{i}.fasta", tmp_path / f"g{i}.json"
        assert main(["generate", "--model", str(model), "--reference", str(reference), "--n", "6", "--sampler", "eb",
                     "--gamma", "2", "--bf16", "--clusters", "2", "--out", str(out), "--summary", str(summary),
                     "--quiet", "--device", "cpu", "--threads", "1"]) == 0
        outs.append(out.read_text())
        assert json.loads(summary.read_text())["bf16"] is True
    assert outs[0] == outs[1]
    seqs = [s for _, s in read_fasta(tmp_path / "g0.fasta")]
    assert len(seqs) == 6 and all(len(s) in lengths and set(s) <= set("ACDEFGHIKLMNPQRSTVWY") for s in seqs)


def _column_pretrain_argv(prepared: Path, out: Path) -> list[str]:
    """column-pretrain of a one-block d=16 column model for a few steps on the prepared train split."""
    return ["column-pretrain", "--alignment", str(prepared / "train.a2m"), "--out", str(out), "--d-model", "16",
            "--n-heads", "2", "--n-layers", "1", "--mean-field", "1", "--lambda-j", "0.001", "--steps", "4",
            "--batch-size", "8", "--lr", "0.01", "--warmup", "0", "--weight-decay", "0", "--t-min", "0.1",
            "--t-max", "1", "--loss-weight", "none", "--grad-clip", "1", "--log-every", "2", "--seed", "0",
            "--device", "cpu", "--threads", "1", "--ema", "0", "--save-every", "2", "--snapshot-every", "0",
            "--reweight-identity", "0.8", "--eval-every", "2", "--val", str(prepared / "val.a2m")]


def test_column_model_trains_scores_generates_and_maps(prepared, tmp_path, capsys):
    """column-pretrain → a protein model folder (kind columns) that family-loss scores per column beside
    the profile, generate decodes to gap-free proteins of the family's alphabet with one pass per column
    (sequential) and --embedder, and figure-column-contacts maps against ArDCA; a column model without
    an embedder cannot score proteins by embedding (one line)."""
    model = tmp_path / "columns"
    assert main(_column_pretrain_argv(prepared, model)) == 0
    meta = json.loads((model / "meta.json").read_text())
    assert meta["kind"] == "columns" and meta["columns"]["mean_field"] == 1 and meta["metrics"]["best_step"] in (2, 4)
    assert not (model / "resume").exists() or not any((model / "resume").iterdir())  # cleared after a finished run
    loss = tmp_path / "loss.json"
    assert main(["family-loss", "--model", str(model), "--data-dir", str(prepared), "--out", str(loss),
                 "--rates", "0.5", "--device", "cpu"]) == 0
    row = json.loads(loss.read_text())["losses"]["0.5"]
    assert json.loads(loss.read_text())["space"] == "columns" and row["masked_columns"] > 0
    assert row["vs_profile"] == pytest.approx(row["loss_nats"] - row["profile_nats"])
    embedder = tmp_path / "seq"
    assert main(_tiny_pretrain_argv(prepared, embedder)) == 0
    fasta, summary = tmp_path / "gen.fasta", tmp_path / "gen.json"
    base = ["generate", "--model", str(model), "--n", "6", "--sampler", "sequential", "--out", str(fasta),
            "--reference", str(prepared / "reference.fasta"), "--clusters", "2", "--quiet", "--device", "cpu"]
    assert main(base + ["--summary", str(summary), "--embedder", str(embedder)]) == 0
    seqs = [s for _, s in read_fasta(fasta)]
    assert len(seqs) == 6 and all(s and set(s) <= set(fam.AMINO_ACIDS) for s in seqs)
    assert json.loads(summary.read_text())["mean_passes"] == len(fam.parse_a2m(prepared / "train.a2m")[0].columns)
    assert main(base + ["--out", str(tmp_path / "again.fasta")]) == 2
    assert "give --embedder" in capsys.readouterr().err
    png, out = tmp_path / "contacts.png", tmp_path / "contacts.json"
    assert main(["figure-column-contacts", "--model", str(model), "--data-dir", str(prepared), "--out", str(png),
                 "--json", str(out)]) == 0
    contacts = json.loads(out.read_text())
    assert png.stat().st_size > 0 and -1 <= contacts["map_r"] <= 1 and 0 <= contacts["top_l_overlap"] <= 1
