"""Placing a backbone on the exact testbed's map (issue 48, item 3): EB's dependence share on
hand-built contexts, the parsing of matched settings, the regimes' ordering, and the verb on a tiny
backbone's real label shards."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from mdm_mi.testbed.placement import context_profile, parse_setting_text, profile, weighted_setting

INF = float("inf")


def _context(h, mi_pairs, n=4):
    """Entropy ``(n,)`` (+inf where not masked), MI ``(n, n)`` from {(i, j): I}, masked ``(n,)``."""
    entropy = torch.tensor(h + [INF] * (n - len(h)), dtype=torch.float64)
    mi = torch.zeros(n, n, dtype=torch.float64)
    for (i, j), v in mi_pairs.items():
        mi[i, j] = mi[j, i] = v
    return entropy, mi, entropy.isfinite()


def test_share_is_the_admitted_pairs_mi_over_their_entropy():
    entropy, mi, masked = _context([1.0, 1.0, 1.0], {(0, 1): 0.5, (1, 2): 0.25})
    row = context_profile(entropy, mi, masked, gamma=10.0)  # EB admits all three
    assert row["admitted"] == 3
    assert row["share"] == pytest.approx(0.75 / 3.0)
    assert row["max_ratio"] == pytest.approx(0.5 / 1.0)
    assert row["independent"] == 0.0  # each has a partner of MI >= 0.01


def test_share_counts_only_what_eb_admits():
    """γ = 0.6 admits the two lowest-entropy positions (0.5 − 0.5 ≤ γ, then 0.5 + 0.5 + 0.9 − 0.9 > γ)."""
    entropy, mi, masked = _context([0.5, 0.5, 0.9], {(0, 1): 0.1, (1, 2): 0.4})
    row = context_profile(entropy, mi, masked, gamma=0.6)
    assert row["admitted"] == 2 and row["share"] == pytest.approx(0.1 / 1.0)


def test_independent_positions_have_share_zero_and_one_admitted_has_none():
    entropy, mi, masked = _context([1.0, 1.0], {})
    assert context_profile(entropy, mi, masked, 10.0)["share"] == 0.0
    assert context_profile(entropy, mi, masked, 10.0)["independent"] == 1.0
    assert math.isnan(context_profile(entropy, mi, masked, 0.0)["share"])  # γ = 0: one position per pass


def test_profile_averages_over_the_contexts_that_define_each_column():
    rows = [_context([1.0, 1.0], {(0, 1): 0.2}), _context([1.0, 1.0], {(0, 1): 0.4}), _context([1.0], {})]
    entropy, mi, masked = (torch.stack([r[k] for r in rows]) for k in range(3))
    out = profile(entropy, mi, masked, gamma=10.0)
    assert out["contexts"] == 3 and out["pass_contexts"] == 2
    assert out["share"] == pytest.approx(0.15) and out["share_lo"] < 0.15 < out["share_hi"]


def test_matched_settings_read_as_their_weighted_value():
    assert parse_setting_text("4.649") == pytest.approx(4.649)
    assert parse_setting_text("0.5×2 + 0.5×4") == pytest.approx(3.0)
    settings = [{"params": {"gamma": 1.0}, "weight": 0.25}, {"params": {"gamma": 3.0}, "weight": 0.75}]
    assert weighted_setting(settings, "gamma") == pytest.approx(2.5)


def test_weak_coupling_puts_less_dependence_in_ebs_passes_than_strong_pairs(tmp_path):
    """The two ends of the testbed's map (weak-uniform: a tie; sparse-pairs: Algorithm 1 beats EB),
    measured at the same γ, are told apart by the share."""
    from mdm_mi.testbed.placement import regime_profile
    from mdm_mi.testbed.regimes import REGIMES
    from mdm_mi.testbed.study import StudySettings

    settings = StudySettings(n_calibration=40, n_test=1, n_noise_contexts=40)
    weak, sparse = (regime_profile(REGIMES[name], settings, 3.8) for name in ("weak-uniform", "sparse-pairs"))
    assert weak["share"] < 0.01 < sparse["share"]
    assert weak["max_ratio"] < sparse["max_ratio"]


def test_the_verb_places_a_backbone_from_its_label_shards_and_runs(tmp_path, tiny_checkpoint, easy_puzzles):
    from mdm_mi.cli import main
    from test_splits import run_label

    solutions = tmp_path / "solutions.npy"
    np.save(solutions, easy_puzzles[1])
    run_label(tiny_checkpoint, solutions, tmp_path / "labels", "train", 6)
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps({"runs": {"eb@1/4": {"settings": [{"params": {"gamma": 2.0}, "weight": 1.0}]}}}))
    out = tmp_path / "place.json"
    shards = [str(p) for p in sorted((tmp_path / "labels" / "train").glob("*.safetensors"))]
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--out", str(out), "--tracking-uri", "none"]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["name"] == "tiny" and row["gamma"] == 2.0 and row["contexts"] == 6
    assert main(["testbed-place", "--name", "tiny 2", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--out", str(out), "--tracking-uri", "none"]) == 0
    assert [r["name"] for r in json.loads(out.read_text())["rows"]] == ["tiny", "tiny 2"]  # rows gather
    before = out.read_text()
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--divisor", "8", "--out", str(out), "--tracking-uri", "none"]) != 0
    assert out.read_text() == before  # another budget: refused, the file untouched
    assert row["pass_contexts"] == 0 or row["share"] >= 0.0
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--out", str(out),
                 "--tracking-uri", "none"]) != 0  # a backbone without labels and runs: refused
    runs.write_text(json.dumps({"eb@4": {"params": {"gamma": 3.0}}, "sequential": {}}))  # antibody-compare's shape
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--out", str(out), "--tracking-uri", "none"]) == 0
    assert [r["gamma"] for r in json.loads(out.read_text())["rows"] if r["name"] == "tiny"] == [3.0]
    runs.write_text(json.dumps({"runs": {"eb@1/4": {"params": {"gamma": 2.5}}}}))  # protein-compare's shape
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--out", str(out), "--tracking-uri", "none"]) == 0
    assert [r["gamma"] for r in json.loads(out.read_text())["rows"] if r["name"] == "tiny"] == [2.5]
    runs.write_text(json.dumps({"eb@8": {"params": {"gamma": 3.0}}}))
    assert main(["testbed-place", "--name", "tiny", "--model", str(tiny_checkpoint), "--labels", *shards,
                 "--runs", str(runs), "--out", str(out), "--tracking-uri", "none"]) != 0  # no EB run at ÷4
    runs.write_text(json.dumps({"runs": {"eb@1/4": {"settings": [{"params": {"gamma": 2.0}, "weight": 1.0}]}}}))
    import dataclasses

    from mdm_mi.infra.checkpoint import save_checkpoint
    from conftest import DOMAIN, TINY_CFG, make_tiny_model
    other = tmp_path / "other"
    save_checkpoint(make_tiny_model(seed=1), other, {"domain": DOMAIN, "model": dataclasses.asdict(TINY_CFG)})
    assert main(["testbed-place", "--name", "other", "--model", str(other), "--labels", *shards, "--runs", str(runs),
                 "--out", str(out), "--tracking-uri", "none"]) != 0  # labels of another model: refused


def test_the_table_says_where_a_backbone_falls_against_the_regimes(tmp_path):
    from mdm_mi.testbed.report import render_placement

    def row(name, kind, share, pair_mi):
        return {"name": name, "kind": kind, "gamma": 1.0, "contexts": 10, "pass_contexts": 9, "admitted": 3.0,
                "entropy": 1.0, "pair_mi": pair_mi, "share": share, "share_lo": share, "share_hi": share,
                "max_ratio": 0.5, "independent": 0.5}

    (tmp_path / "map.csv").write_text("regime,rule,divisor,verdict\nweak,mi-exact,4,ties\nstrong,mi-exact,4,beats\n"
                                      "strong,mi-exact,2,beats\n")
    rows = [row("weak", "testbed regime", 0.01, 0.01), row("strong", "testbed regime", 0.1, 0.2),
            row("model", "backbone", 0.3, 0.05)]
    (tmp_path / "placement.json").write_text(json.dumps({"divisor": 4, "rows": rows}))
    table = render_placement(tmp_path / "placement.json")
    assert "| ties |" in table and "| beats |" in table
    assert "share above every beats regime; pairwise MI between the ties and the beats" in table
