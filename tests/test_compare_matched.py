"""The Sudoku comparison at identical test passes: the bracket and mixture spend each budget's test
passes exactly on a toy backbone and on a tiny Sudoku MDM, the test puzzles do not depend on the
calibration seed, and the budgets table, its summary and ``sudoku-verdicts`` carry the verdicts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import EASY_CSV, REPO, MockBackbone, seeded_logits
from mdm_mi.core.samplers import ConfidenceThreshold, EntropyBounded, NaiveTopK, decode
from mdm_mi.evaluation.calibrate import Family, calibrate, targets
from mdm_mi.evaluation.matched import BUDGET_RTOL, bracket_settings, mixture
from mdm_mi.sampling.registry import SAMPLER_CLASSES

N, V = 60, 6


class SharpeningBackbone(MockBackbone):
    """Known logits that sharpen as the context fills, so entropies change from pass to pass."""

    def __call__(self, tokens):
        out = super().__call__(tokens)
        revealed = (tokens != self.mask_id).float().mean(1)
        return type(out)(logits=out.logits * (1 + 4 * revealed)[:, None, None], hidden=out.hidden)


def _masked_rows(seed: int, rows: int, least: int) -> torch.Tensor:
    """``rows`` sequences of N tokens with ``least``..N masks at random places."""
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(V, (rows, N), generator=gen)
    for r in range(rows):
        tokens[r, torch.randperm(N, generator=gen)[:least + r * (N - least) // (rows - 1)]] = V
    return tokens


def _decoder(backbone, tokens):
    def run(sampler):
        out = decode(backbone, tokens, sampler, torch.Generator().manual_seed(0))
        return np.ones(len(tokens), dtype=bool), out.passes.numpy()
    return run


@pytest.mark.parametrize("family", [
    Family("naive", "naive", "k", 1.0, float(N), "log", increasing=False, cls=NaiveTopK),
    Family("eb", "eb", "gamma", 1e-3, 100.0, "log", increasing=False, cls=EntropyBounded),
    Family("threshold", "threshold", "tau", 0.0, 1 - 1e-6, "log1m", increasing=True, cls=ConfidenceThreshold),
])
@pytest.mark.parametrize("divisor", [3, 5])
def test_the_mixture_spends_the_test_budget_exactly_where_calibration_misses_it(family, divisor):
    """Calibration sequences have 20–60 masks, test sequences 35–60: the calibrated setting misses the
    test budget; its bracket's mixture spends it exactly."""
    backbone = SharpeningBackbone(seeded_logits(N, V, seed=1) * 2, mask_id=V)
    calib, test = _masked_rows(0, 24, 20), _masked_rows(1, 24, 35)
    seq_calib, seq_test = (float((t == V).sum(1).float().mean()) for t in (calib, test))
    measure_calib = _decoder(backbone, calib)

    def measure(sampler):
        return float(np.mean(measure_calib(sampler)[1])), {}

    cache: dict = {}
    point = calibrate(family, targets(seq_calib, [divisor])[divisor], measure, cache=cache, ceiling=seq_calib)
    budget = seq_test / divisor
    settings = bracket_settings(family, point, budget, _decoder(backbone, test), measure, cache, seq_calib)
    single = settings[0] if settings[0].value == point.value else settings[-1]
    assert abs(single.test_passes / budget - 1) > 1e-3  # the calibrated setting alone misses the budget
    assert len(settings) == 2 and settings[0].test_passes < budget < settings[1].test_passes
    run = mixture(settings, budget)
    assert np.mean(run["passes"]) == pytest.approx(budget, rel=1e-12) and run["on_budget"]
    assert sum(run["weights"]) == pytest.approx(1.0) and all(0 <= w <= 1 for w in run["weights"])


def test_without_a_bracket_the_closest_setting_is_kept_and_marked():
    """A family whose fastest setting needs 8 passes cannot reach a budget of 5: one setting, off budget."""
    fam = Family("floor", "naive", "k", 1.0, 100.0, "log", increasing=False, cls=NaiveTopK)

    def test_decode(sampler):
        return np.zeros(10, dtype=bool), np.full(10, max(100.0 / sampler.k, 8.0))

    def measure(sampler):
        return float(max(100.0 / sampler.k, 8.0)), {}

    point = calibrate(fam, 5.0, measure)
    settings = bracket_settings(fam, point, 5.0, test_decode, measure, {})
    run = mixture(settings, 5.0)
    assert len(settings) == 1 and not run["on_budget"] and abs(np.mean(run["passes"]) / 5 - 1) > BUDGET_RTOL


@pytest.fixture(scope="module")
def puzzle_pools():
    from mdm_mi.sudoku.data import load_puzzle_csv

    return load_puzzle_csv(REPO / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"), load_puzzle_csv(EASY_CSV)


def test_the_test_puzzles_do_not_depend_on_the_calibration_seed(puzzle_pools):
    from mdm_mi.sudoku.compare import SETS, SplitSpec, compare_splits

    radcliffe, easy = puzzle_pools
    splits = {s: compare_splits(radcliffe, easy, SETS, SplitSpec(100, 500, (23, 26), 20, seed=0, calib_seed=s))
              for s in (0, 1)}
    for name in SETS:
        (calib0, test0), (calib1, test1) = splits[0][name], splits[1][name]
        assert np.array_equal(test0.puzzles, test1.puzzles), name
        assert not np.array_equal(calib0.puzzles, calib1.puzzles), name  # the pools leave room to redraw
        for calib in (calib0, calib1):  # disjoint by underlying puzzle (graded: by solution)
            assert not {s.tobytes() for s in calib.solutions} & {s.tobytes() for s in test0.solutions}, name
    assert len(splits[0]["hard"][1]) == 500 and len(splits[0]["hard"][0]) == 100


def test_sudoku_runs_are_matched_to_sequentials_test_passes(tiny_model, easy_puzzles):
    """The tiny MDM on easy puzzles: calibrated on 10, decoded on 10 others, every run spends its
    budget (sequential's test passes ÷ d) exactly or is marked off budget."""
    from mdm_mi.evaluation.budgets import budget_rows
    from mdm_mi.evaluation.calibrate import calibrated_families
    from mdm_mi.sudoku.compare import Decoder, compare_runs
    from mdm_mi.sudoku.data import PuzzleSet

    puzzles, solutions = easy_puzzles
    calib = PuzzleSet(puzzles[:10], solutions[:10], ["easy"] * 10)
    test = PuzzleSet(puzzles[10:], solutions[10:], ["easy"] * 10)
    families = [f for f in calibrated_families(81, {"mi_lambda": [1.0], "mi_on_reject": "skip", "mi_charge_first": False}, SAMPLER_CLASSES) if f.label in ("naive", "eb")]
    decoder, calib_decoder = Decoder(tiny_model, None, 10, 0), Decoder(tiny_model, None, 10, 1)
    runs, _ = compare_runs(decoder, test, calib_decoder, calib, families, (3,), log=lambda m: None)
    budget = float(np.mean(runs["sequential"]["passes"])) / 3
    for name in ("naive@1/3", "eb@1/3"):
        run = runs[name]
        assert run["target"] == pytest.approx(budget)
        assert run["on_target"] == (abs(np.mean(run["passes"]) / budget - 1) <= BUDGET_RTOL)
        if len(run["settings"]) == 2:
            assert np.mean(run["passes"]) == pytest.approx(budget, rel=1e-12)
            assert run["setting_solved"].shape == (2, 10)
    assert {r["second"] for r in budget_rows(runs, "toy")} >= {"sequential"}


def _fractional_runs(seed: int):
    rng = np.random.default_rng(seed)
    p = 400
    base = rng.random(p)
    runs = {"sequential": {"family": "sequential", "divisor": 1, "solved": base < 0.5, "passes": np.full(p, 50.0)}}
    for d in (2, 4):
        for fam, acc in (("eb", 0.35), ("naive", 0.25), ("mi λ=1", 0.45)):
            lo, hi = base < acc - 0.02, base < acc + 0.02
            key, value = ("k", d) if fam == "naive" else ("gamma", 0.1 * d)
            runs[f"{fam}@1/{d}"] = {"family": fam, "divisor": d, "solved": 0.5 * lo + 0.5 * hi,
                                    "passes": np.full(p, 50 / d), "calib_score": 0.0, "target": 50 / d,
                                    "on_target": True, "params": {key: value},
                                    "settings": [{"params": {key: value}, "weight": 0.5},
                                                 {"params": {key: 2 * value}, "weight": 0.5}]}
    return runs


def test_the_budgets_table_summary_and_side_by_side_carry_the_verdicts(tmp_path):
    from mdm_mi.cli import main
    from mdm_mi.evaluation.budgets import FIELDS, budget_rows, markdown, write_csv
    from mdm_mi.evaluation.verdicts import VERDICT_FIELDS, classify

    for seed, root in ((0, tmp_path / "budgets"), (1, tmp_path / "budgets-calib1")):
        runs = _fractional_runs(seed)
        rows = classify(budget_rows(runs, "hard"))
        (root / "hard").mkdir(parents=True)
        write_csv(rows, root / "hard" / "budgets.csv", FIELDS + VERDICT_FIELDS)
        text = markdown(rows, runs, "hard")
        assert "(Holm " in text and "γ=0.2 ×0.50 + γ=0.4 ×0.50" in text
        assert {r["verdict"] for r in rows} <= {"better", "worse", "equivalent", "not resolved"}
    assert main(["sudoku-budgets", "--inputs", str(tmp_path / "budgets" / "hard" / "budgets.csv"),
                 "--out", str(tmp_path / "summary.md"), "--tracking-uri", "none"]) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "Primary contrast, mi* − EB" in summary and "hard, 1/2 (25.0 passes): mi* − eb" in summary
    assert main(["sudoku-verdicts", "--runs", str(tmp_path / "budgets"), str(tmp_path / "budgets-calib1"),
                 "--names", "seed 0", "seed 1", "--out", str(tmp_path / "side.md"), "--tracking-uri", "none"]) == 0
    side = (tmp_path / "side.md").read_text()
    assert "| set | budget | contrast | seed 0 | seed 1 | same |" in side and "verdicts agree" in side


def test_the_summary_joins_one_set_run_at_two_lists_of_budgets_into_one_holm_family(tmp_path):
    """sudoku-budgets over two tables of one set (other budgets each): rows by budget, and the primary
    Holm family counts the budgets of both."""
    import csv

    from mdm_mi.cli import main
    from mdm_mi.evaluation.budgets import FIELDS, budget_rows, write_csv
    from mdm_mi.evaluation.verdicts import VERDICT_FIELDS, classify

    paths = []
    for k, shift in enumerate((0, 1)):  # the second table's budgets become ÷3 and ÷5
        runs = _fractional_runs(k)
        rows = classify(budget_rows(runs, "hard"))
        for r in rows:
            r["divisor"] = int(r["divisor"]) + shift
        paths.append(tmp_path / f"t{k}.csv")
        write_csv(rows, paths[-1], FIELDS + VERDICT_FIELDS)
    one = {int(r["divisor"]) for r in csv.DictReader(paths[0].open())}
    assert main(["sudoku-budgets", "--inputs", *map(str, paths), "--out", str(tmp_path / "s.md"),
                 "--tracking-uri", "none"]) == 0
    lines = [l for l in (tmp_path / "s.md").read_text().splitlines() if l.startswith("| hard | 1/")]
    budgets = [int(l.split("|")[2].strip()[2:]) for l in lines]
    assert budgets == sorted(budgets) and len(budgets) == 2 * len(one)
    assert f"({2 * len(one)} primary tests)" in (tmp_path / "s.md").read_text()


def test_sudoku_compare_writes_matched_runs_and_verdicts(tmp_path, tiny_checkpoint):
    """The verb end to end on a tiny MDM and head: every run's settings and weights in runs.json, each
    setting's outcomes in outcomes.npz, roles, Holm p and verdicts in budgets.csv."""
    import json

    from mdm_mi.cli import main
    from mdm_mi.evaluation.budgets import read_csv
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / "head", {})
    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / "tv_head", {"target": "tv"})
    out = tmp_path / "hard"
    rivals = ["--unit-disjoint-peers", "0", "--demask-eps", "0.05", "--demask-mi-eps", "0.1", "--mi-tv-lambda", "1",
              "--dapd-theta", "1", "--tv-head", str(tmp_path / "tv_head"),  # every rival of docs/record/rivals.md
              "--wino-tau-out", "0.5", "--mi-remask-kappa", "0.05", "--klass-kl", "0.05", "--punt-kappa", "0.05",
              "--eb-verify-tau-out", "0.5", "--prism-tau-out", "--eb-prism-tau-out"]  # the quality rules: no head here
    argv = ["sudoku-compare", "--model", str(tiny_checkpoint), "--head", str(tmp_path / "head"), *rivals,
            "--radcliffe", str(REPO / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"),
            "--easy", str(EASY_CSV), "--set", "hard", "--out-dir", str(out), "--calib-puzzles", "4",
            "--test-puzzles", "6", "--divisors", "3", "--mi-lambda", "1", "--on-reject", "skip", "--no-charge-first", "--indep-cap",
            "--two-budget-delta", "--bootstrap", "5", "--batch-size", "500", "--calib-seed", "1",
            "--device", "cpu", "--tracking-uri", "none"]
    assert main(argv) == 0
    runs = json.loads((out / "runs.json").read_text())
    assert runs["args"]["calib_seed"] == 1
    assert {r["family"] for r in runs["runs"].values()} >= {"unit-disjoint peers=0", "demask ε=0.05", "demask-mi ε=0.1",
                                                             "mi-tv λ=1", "dapd θ=1", "wino τout=0.5", "mi-remask κ=0.05",
                                                             "klass KL=0.05", "punt κ=0.05", "eb-verify τout=0.5"}
    budget = runs["runs"]["sequential"]["mean_passes"] / 3
    for name, run in runs["runs"].items():
        if name != "sequential":
            assert run["target"] == pytest.approx(budget)
            assert sum(s["weight"] for s in run["settings"]) == pytest.approx(1.0)
            if len(run["settings"]) == 2:
                assert run["mean_passes"] == pytest.approx(budget)
    with np.load(out / "outcomes.npz") as z:
        assert z["setting_solved"].shape == (len(z["names"]), 2, 6)
    rows = read_csv(out / "budgets.csv")
    assert {r["role"] for r in rows} == {"primary", "secondary", "contender", "exploratory"}
    rivals = {"demask ε=0.05", "demask-mi ε=0.1", "mi-tv λ=1", "dapd θ=1", "mi-remask κ=0.05", "punt κ=0.05"}
    assert {r["second"] for r in rows if r["role"] == "contender"} == rivals
    assert all(r["verdict"] in ("better", "worse", "equivalent", "not resolved") for r in rows)


def test_runs_read_back_in_the_sampler_tables_order_with_values_numerically():
    from mdm_mi.evaluation.budgets import table_order

    names = ["mi λ=16", "demask ε=0.5", "sequential", "mi λ=4", "eb"]
    runs = {f"{n}@2": {"family": n} for n in sorted(names)}
    assert [r["family"] for r in table_order(runs).values()] == ["sequential", "eb", "mi λ=4", "mi λ=16", "demask ε=0.5"]


def test_the_same_compare_command_twice_writes_the_same_runs(tmp_path, tiny_checkpoint):
    """Issue 47: a comparison reproduces itself: two runs of one sudoku-compare command (other output
    folders) write the same runs.json (but their timings and folder) and the same per-puzzle outcomes.
    Issue 48: so do a run that keeps its decoded chunks (--chunks) and its rerun, which reads every
    chunk back and decodes nothing."""
    import json

    from mdm_mi.cli import main
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / "head", {})
    outs = [tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "d"]
    for n, out in enumerate(outs):
        chunks = ["--chunks", str(tmp_path / "chunks")] if n >= 2 else []
        argv = ["sudoku-compare", *chunks, *_compare_argv(tiny_checkpoint, out, "--head", str(tmp_path / "head"),
                                                          divisors=("2", "3"))]
        assert main(argv) == 0

    def runs(out):
        meta = json.loads((out / "runs.json").read_text())
        meta.pop("seconds"), meta.pop("chunks", None)
        meta["args"].pop("out_dir"), meta["args"].pop("chunks")
        return meta

    assert all(runs(outs[0]) == runs(out) for out in outs[1:])
    for out in outs[1:]:
        with np.load(outs[0] / "outcomes.npz") as a, np.load(out / "outcomes.npz") as b:
            assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
    kept = [json.loads((out / "runs.json").read_text())["chunks"] for out in outs[2:]]
    assert kept[0]["read"] == 0 and kept[0]["decoded"] > 0
    assert kept[1] == kept[0] | {"read": kept[0]["decoded"], "decoded": 0}  # the same commits and time summed
    assert kept[0]["decode_cpu_seconds"] > 0


def test_the_oracle_ceiling_decodes_a_comparisons_puzzles(tmp_path, tiny_checkpoint):
    """sudoku-oracle-ceiling reads a comparison's folder and decodes with the probing oracle in the
    MI's place (it was refused as 'not given' before the pairwise sources mapped the oracle)."""
    import json

    from mdm_mi.cli import main
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / "head", {})
    compare = tmp_path / "compare"
    assert main(["sudoku-compare", "--model", str(tiny_checkpoint), "--head", str(tmp_path / "head"),
                 "--radcliffe", str(REPO / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"),
                 "--easy", str(EASY_CSV), "--set", "hard", "--out-dir", str(compare), "--calib-puzzles", "3",
                 "--test-puzzles", "4", "--divisors", "3", "--mi-lambda", "1", "--on-reject", "skip",
                 "--no-charge-first", "--indep-cap", "--two-budget-delta", "--unit-disjoint-peers", "--demask-eps",
                 "--demask-mi-eps", "--mi-tv-lambda", "--dapd-theta", "--wino-tau-out", "--mi-remask-kappa", "--klass-kl", "--punt-kappa", "--eb-verify-tau-out", "--prism-tau-out", "--eb-prism-tau-out", "--bootstrap", "5",
                 "--batch-size", "500",
                 "--device", "cpu", "--tracking-uri", "none"]) == 0
    out = tmp_path / "ceiling"
    assert main(["sudoku-oracle-ceiling", "--model", str(tiny_checkpoint), "--compare-dir", str(compare),
                 "--out-dir", str(out), "--puzzles", "2", "--divisors", "3", "--tol", "0.01", "--batch-size", "2",
                 "--chunks", str(tmp_path / "chunks"), "--device", "cpu", "--tracking-uri", "none"]) == 0
    result = json.loads((out / "ceiling.json").read_text())
    assert result["n"] == 2 and set(result["divisors"]) == {"3"}
    assert result["divisors"]["3"]["oracle_passes"] >= 1
    assert result["chunks"]["decoded"] == 1 and result["chunks"]["decode_cpu_seconds"] > 0  # the decodes' cost
    from mdm_mi.jobs.docs import RENDERERS

    block = RENDERERS["oracle-ceiling"](out / "ceiling.json")  # docs render the table the verb wrote
    assert block == (out / "ceiling.md").read_text() and "1 decoded by the invocation" in block
    assert main(["sudoku-oracle-ceiling", "--model", str(tiny_checkpoint), "--compare-dir", str(compare),
                 "--out-dir", str(out), "--puzzles", "2", "--divisors", "3", "--tol", "0.01", "--batch-size", "2",
                 "--chunks", str(tmp_path / "chunks"), "--device", "cpu", "--tracking-uri", "none"]) == 0
    again = json.loads((out / "ceiling.json").read_text())  # resumed: read back, the same outcome and cost
    assert (again["chunks"]["read"], again["chunks"]["decoded"]) == (1, 0)
    assert again["chunks"]["decode_cpu_seconds"] == result["chunks"]["decode_cpu_seconds"]
    assert again["divisors"]["3"]["oracle_accuracy"] == result["divisors"]["3"]["oracle_accuracy"]


def _compare_argv(tiny_checkpoint, out, *extra, divisors=("3",)):
    """sudoku-compare's (and sudoku-compare-part's) flags on a few hard puzzles with the tiny model."""
    return ["--model", str(tiny_checkpoint),
            "--radcliffe", str(REPO / "resources" / "data" / "sudoku" / "radcliffe_curated_5000.csv"),
            "--easy", str(EASY_CSV), "--set", "hard", "--out-dir", str(out), "--calib-puzzles", "4",
            "--test-puzzles", "6", "--divisors", *divisors, "--mi-lambda", "1", "--on-reject", "skip",
            "--no-charge-first", "--indep-cap", "--two-budget-delta", "--unit-disjoint-peers", "--demask-eps",
            "--demask-mi-eps", "--mi-tv-lambda", "--dapd-theta", "--wino-tau-out", "--mi-remask-kappa", "--klass-kl", "--punt-kappa", "--eb-verify-tau-out", "--prism-tau-out", "--eb-prism-tau-out", "--bootstrap", "5",
            "--batch-size", "500",
            "--device", "cpu", "--tracking-uri", "none", *extra]


def test_a_comparison_in_parts_merges_into_the_same_runs_as_one_job(tmp_path, tiny_checkpoint, capsys):
    """Issue 52: sudoku-compare-part per family (only the MI family given the head) and sudoku-compare
    --parts write the runs and per-puzzle outcomes of one sudoku-compare job; the merge refuses a
    missing part, a part of other settings and a part made with another head, in one line each."""
    import json

    from mdm_mi.cli import main
    from mdm_mi.mi.head import HeadConfig, MIHead, save_head

    for name, seed in (("head", 0), ("other_head", 1)):
        torch.manual_seed(seed)
        save_head(MIHead(16, HeadConfig(hidden=8, heads=2, rank=2, unary=True)), tmp_path / name, {})
    head = ["--head", str(tmp_path / "head")]
    assert main(["sudoku-compare", *_compare_argv(tiny_checkpoint, tmp_path / "whole", *head)]) == 0
    parts = {p: tmp_path / "parts" / p for p in ("sequential", "naive", "eb", "threshold", "mi-l1")}
    for name, out in parts.items():
        given = head if name == "mi-l1" else []
        assert main(["sudoku-compare-part", "--part", name, *_compare_argv(tiny_checkpoint, out, *given)]) == 0
    merged = tmp_path / "merged"
    assert main(["sudoku-compare", "--parts", *map(str, parts.values()),
                 *_compare_argv(tiny_checkpoint, merged, *head)]) == 0

    def runs(out):
        meta = json.loads((out / "runs.json").read_text())
        meta.pop("seconds"), meta.pop("chunks", None)
        meta["args"].pop("out_dir"), meta["args"].pop("parts")
        return meta

    assert runs(merged) == runs(tmp_path / "whole")
    for name in ("outcomes.npz",):
        with np.load(tmp_path / "whole" / name) as a, np.load(merged / name) as b:
            assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
    assert (merged / "budgets.csv").read_text() == (tmp_path / "whole" / "budgets.csv").read_text()

    def merge_error(part_dirs, *extra) -> str:
        argv = _compare_argv(tiny_checkpoint, tmp_path / "bad", *extra)
        assert main(["sudoku-compare", "--parts", *map(str, part_dirs), *argv]) == 2
        return capsys.readouterr().err

    capsys.readouterr()
    assert "parts missing: mi-l1" in merge_error(list(parts.values())[:-1], *head)
    assert "another head" in merge_error(parts.values(), "--head", str(tmp_path / "other_head"))
    assert "other settings than this comparison (puzzles, seed)" in merge_error(parts.values(), *head, "--seed", "1")
    argv = _compare_argv(tiny_checkpoint, tmp_path / "x")
    assert main(["sudoku-compare-part", "--part", "mi-l1", *argv]) == 2  # the MI family without a head
    assert "reads the head" in capsys.readouterr().err
    assert not (tmp_path / "bad" / "runs.json").exists()
