"""Calibrated budgets and paired comparisons: fractional naive k, the confidence-threshold sampler,
the bisection reaching its targets on a toy backbone, exact McNemar and Newcombe's interval by hand,
the disjoint comparison splits and the budgets table."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from conftest import MockBackbone, seeded_logits
from mdm_mi.evaluation.budgets import BEST_MI, budget_rows, by_budget, markdown, read_csv, summary_markdown, winners, write_csv
from mdm_mi.evaluation.calibrate import DIVISORS, Family, calibrate, calibrate_grid, next_guess, targets
from mdm_mi.evaluation.paired import (bootstrap_curves, detectable_difference, interpolate_curve, mcnemar_exact,
                           newcombe_interval, paired_difference)

from mdm_mi.core.samplers import INF, ConfidenceThreshold, EntropyBounded, NaiveTopK, StepView, decode
from mdm_mi.sampling.registry import SAMPLER_CLASSES, build_sampler

N, V = 30, 6


def test_fractional_k_unmasks_k_on_average_and_integer_k_exactly():
    frac = NaiveTopK(2.5)
    assert [frac.per_pass(s) for s in range(4)] == [2, 3, 2, 3]
    assert all(NaiveTopK(3).per_pass(s) == 3 for s in range(10))
    assert sum(NaiveTopK(1.3).per_pass(s) for s in range(10)) == 13


def test_threshold_admits_exactly_the_confident_positions_and_at_least_one():
    conf = torch.tensor([[0.95, 0.5, 0.91, 0.2], [0.3, 0.4, 0.2, 0.1]])
    masked = torch.tensor([[True, True, True, False], [True, True, True, True]])
    view = StepView(masked=masked, entropy=torch.zeros(2, 4), margin=torch.zeros(2, 4),
                    confidence=conf.masked_fill(~masked, -INF))
    chosen = build_sampler("threshold", tau=0.9).select(view)
    assert chosen.tolist() == [[True, False, True, False], [False, True, False, False]]


class SharpeningBackbone(MockBackbone):
    """Known logits that sharpen as the context fills (``× (1 + 4 · revealed fraction)`` per row), so
    confidences and entropies change from pass to pass as in a real MDM."""

    def __call__(self, tokens):
        out = super().__call__(tokens)
        revealed = (tokens != self.mask_id).float().mean(1)
        return type(out)(logits=out.logits * (1 + 4 * revealed)[:, None, None], hidden=out.hidden)


def _toy_measure(backbone, tokens):
    def measure(sampler):
        out = decode(backbone, tokens, sampler, torch.Generator().manual_seed(0))
        return float(out.passes.float().mean()), {}
    return measure


@pytest.mark.parametrize("family", [
    Family("naive", "naive", "k", 1.0, float(2 * N), "linear", increasing=False, cls=NaiveTopK),
    Family("eb", "eb", "gamma", 1e-3, 100.0, "log", increasing=False, cls=EntropyBounded),
    Family("threshold", "threshold", "tau", 0.0, 1 - 1e-6, "log1m", increasing=True, cls=ConfidenceThreshold),
])
@pytest.mark.parametrize("divisor", [2, 3, 5, 8])
def test_calibration_reaches_its_target_within_5_percent(family, divisor):
    n = 2 * N
    backbone = SharpeningBackbone(seeded_logits(n, V, seed=1) * 2, mask_id=V)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(V, (32, n), generator=gen)
    for row in range(32):  # 20..n masks at random places: mean passes can fall between integers
        tokens[row, torch.randperm(n, generator=gen)[:20 + row * (n - 20) // 31]] = V
    sequential = float((tokens == V).sum(1).float().mean())
    target = targets(sequential, [divisor])[divisor]
    point = calibrate(family, target, _toy_measure(backbone, tokens))
    assert point.on_target, (family.label, point)
    assert abs(point.passes / target - 1) <= 0.05


def test_mcnemar_exact_matches_a_hand_calculation():
    # b=1, c=6: p = 2 * P[Bin(7, 1/2) <= 1] = 2 * (1 + 7) / 128 = 0.125
    assert mcnemar_exact(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact(6, 1) == pytest.approx(0.125)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_newcombe_interval_without_correlation_is_square_and_add_of_wilson():
    # a·d = b·c gives φ = 0: the interval is θ ∓ √(Wilson half-widths² added), by hand
    from mdm_mi.evaluation.stats import wilson_interval

    a, b, c, d = 20, 10, 20, 10
    n, p1, p2 = 60, 30 / 60, 40 / 60
    l1, u1 = wilson_interval(30, n)
    l2, u2 = wilson_interval(40, n)
    lo, hi = newcombe_interval(a, b, c, d)
    assert lo == pytest.approx(p1 - p2 - math.hypot(p1 - l1, u2 - p2))
    assert hi == pytest.approx(p1 - p2 + math.hypot(u1 - p1, p2 - l2))


def test_newcombe_interval_covers_the_true_paired_difference_at_about_95_percent():
    rng = np.random.default_rng(0)
    cells = np.array([0.30, 0.10, 0.05, 0.55])  # both, only first, only second, neither
    truth = cells[1] - cells[2]
    hits = 0
    draws = 400
    for _ in range(draws):
        a, b, c, d = rng.multinomial(300, cells)
        lo, hi = newcombe_interval(a, b, c, d)
        hits += lo <= truth <= hi
    assert 0.92 <= hits / draws <= 0.98


def test_paired_difference_counts_discordant_pairs_and_decides():
    first = np.array([1, 1, 1, 0, 1, 0, 1, 1] * 20, dtype=bool)
    second = np.array([1, 0, 0, 0, 0, 0, 1, 0] * 20, dtype=bool)
    d = paired_difference(first, second)
    assert (d.b, d.c) == (80, 0)
    assert d.diff == pytest.approx(0.5)
    assert d.lo < d.diff < d.hi and d.p_value < 1e-20 and d.verdict() == "better"
    same = paired_difference(first, first)
    assert same.diff == 0 and same.p_value == 1.0 and same.verdict() == "not resolved"


def test_detectable_difference_shrinks_with_n():
    assert detectable_difference(1000, 0.1) == pytest.approx((1.959964 + 0.841621) * math.sqrt(1e-4), rel=1e-5)
    assert detectable_difference(4000, 0.1) == pytest.approx(detectable_difference(1000, 0.1) / 2)


def test_interpolation_is_exact_at_the_points_and_nan_outside():
    passes = np.array([5.0, 10.0, 20.0])
    acc = np.array([0.2, 0.4, 0.5])
    got = interpolate_curve(passes, acc, np.array([4.0, 5.0, 10.0, 20.0, 30.0]))
    assert np.isnan(got[0]) and np.isnan(got[-1])
    assert got[1:4] == pytest.approx(acc)


def test_bootstrap_bands_contain_the_curve():
    rng = np.random.default_rng(0)
    solved = {"a": rng.random((3, 200)) < np.array([[0.2], [0.4], [0.6]])}
    curves = bootstrap_curves(solved, {"a": np.array([5.0, 10.0, 20.0])}, np.array([6.0, 12.0]), 200, 0)
    c = curves["a"]
    assert np.all(c["lo"] <= c["acc"]) and np.all(c["acc"] <= c["hi"])


def _runs():
    rng = np.random.default_rng(0)
    p = 300
    base = rng.random(p)
    runs = {"sequential": {"family": "sequential", "divisor": 1, "solved": base < 0.5, "passes": np.full(p, 50)}}
    for d in (2, 5):
        for fam, acc, calib in (("eb", 0.4, 0.0), ("naive", 0.3, 0.0), ("mi λ=1", 0.45, 0.4), ("mi λ=2", 0.35, 0.5)):
            runs[f"{fam}@1/{d}"] = {"family": fam, "divisor": d, "solved": base < acc, "passes": np.full(p, 50 / d),
                                    "calib_score": calib, "target": 50 / d,
                                    "params": {"k": d} if fam == "naive" else {"gamma": 0.1 * d}}
    return runs


def test_best_mi_is_chosen_on_calibration_accuracy_not_on_test():
    table = by_budget(_runs())
    assert table[2][BEST_MI]["chosen"] == "mi λ=2"  # higher calibration accuracy, lower test accuracy


def test_budget_rows_compare_each_contender_with_every_baseline(tmp_path):
    runs = _runs()
    rows = budget_rows(runs, "toy")
    pairs = {(r["divisor"], r["first"], r["second"]) for r in rows}
    for d in (2, 5):
        for first in ("mi λ=1", "mi λ=2", BEST_MI):
            for second in ("eb", "naive", "sequential"):
                assert (d, first, second) in pairs
    r = next(r for r in rows if r["first"] == "mi λ=1" and r["second"] == "eb" and r["divisor"] == 2)
    assert r["diff"] == pytest.approx(np.mean(runs["mi λ=1@1/2"]["solved"]) - np.mean(runs["eb@1/2"]["solved"]))
    assert r["c"] == 0  # nested outcomes: mi λ=1 solves a superset of eb's puzzles
    text = markdown(rows, runs, "toy")
    assert "1/2" in text and "1/5" in text and BEST_MI in text
    write_csv(rows, tmp_path / "b.csv")
    back = read_csv(tmp_path / "b.csv")
    table = winners(back)
    assert [(w["divisor"], w["best"]) for w in table] == [(2, "mi λ=1"), (5, "mi λ=1")]
    assert table[0]["vs"]["naive"]["verdict"] == "better"
    assert "| toy | 1/2 |" in summary_markdown(back)
    for d in (2, 5):  # every baseline is also paired with sequential, so the best family always is
        for first in ("eb", "naive"):
            assert (d, first, "sequential") in pairs
    best_vs_seq = table[0]["best_vs_sequential"]
    assert best_vs_seq["first"] == "mi λ=1" and best_vs_seq["diff"] == pytest.approx(0.45 - 0.5, abs=0.05)


def test_mi_star_meets_every_other_contender_in_its_own_holm_family():
    """mi* against each contender that is not one of Algorithm 1's families (role ``contender``, Holm over
    those rows), never against its own λ families; adding a rival leaves the secondary family as it was."""
    from mdm_mi.evaluation.budgets import contrast_pairs
    from mdm_mi.evaluation.verdicts import classify

    runs = _runs()
    before = classify(budget_rows(runs, "toy"))
    base = np.random.default_rng(1).random(len(runs["sequential"]["solved"]))
    for d in (2, 5):
        runs[f"demask@1/{d}"] = {"family": "demask ε=0.5", "divisor": d, "solved": base < 0.05,
                                 "passes": np.full(len(base), 50 / d), "calib_score": 0.0, "target": 50 / d,
                                 "params": {"tau": 0.5, "eps": 0.5}}
    fams = by_budget(runs)[2]
    pairs = contrast_pairs(fams)
    assert (BEST_MI, "demask ε=0.5") in pairs and ("demask ε=0.5", "eb") in pairs
    assert not any(first == BEST_MI and second.startswith("mi λ") for first, second in pairs)
    rows = classify(budget_rows(runs, "toy"))
    rival = [r for r in rows if r["role"] == "contender"]
    assert [(r["divisor"], r["first"], r["second"]) for r in rival] == [(2, BEST_MI, "demask ε=0.5"),
                                                                         (5, BEST_MI, "demask ε=0.5")]
    assert all(r["family_size"] == 2 and r["verdict"] == "better" for r in rival)  # mi* (λ=2, 29% here) vs 5%: 300 items
    secondary = lambda rs: [(r["divisor"], r["second"], r["p_holm"]) for r in rs if r["role"] == "secondary"]
    assert secondary(rows) == secondary(before)
    assert "demask ε=0.5" in winners(rows)[0]["vs"]


# --- rules beyond Algorithm 1 ---------------------------------------------------------------------


def _rule_inputs(seed=0, b=6, n=12):
    gen = torch.Generator().manual_seed(seed)
    h = torch.rand(b, n, generator=gen) * 0.3
    masked = torch.rand(b, n, generator=gen) < 0.8
    masked[:, 0] = True
    a = torch.rand(b, n, n, generator=gen) * 0.2
    mi = (a + a.transpose(1, 2)) / 2 * (1 - torch.eye(n))
    return h.masked_fill(~masked, INF), masked, mi


@pytest.mark.parametrize("tau", [0.0, 0.05, 0.12])
def test_independent_set_admits_no_pair_above_tau(tau):
    h, masked, mi = _rule_inputs()
    view = StepView(masked=masked, entropy=h, margin=torch.zeros_like(h), pairwise=mi)
    chosen = build_sampler("mi-indep", gamma=0.8, cap=tau).select(view)
    assert chosen.any(1).all() and not (chosen & ~masked).any()
    pair = chosen[:, :, None] & chosen[:, None, :] & ~torch.eye(h.shape[1], dtype=torch.bool)
    assert (mi[pair] <= tau).all()


@pytest.mark.parametrize("delta", [0.0, 0.1, 0.3])
def test_two_budget_never_exceeds_its_dependence_budget(delta):
    h, masked, mi = _rule_inputs(seed=1)
    view = StepView(masked=masked, entropy=h, margin=torch.zeros_like(h), pairwise=mi)
    chosen = build_sampler("mi-2b", gamma=0.8, delta=delta).select(view)
    total = torch.einsum("bi,bij,bj->b", chosen.double(), mi.double(), chosen.double()) / 2
    assert (total <= delta + 1e-9).all()
    assert chosen.any(1).all()


def test_rules_reduce_to_eb_without_a_dependence_limit():
    h, masked, mi = _rule_inputs(seed=2)
    view = StepView(masked=masked, entropy=h, margin=torch.zeros_like(h), pairwise=mi)
    for gamma in (0.0, 0.2, 0.5, 5.0):
        eb = build_sampler("eb", gamma=gamma).select(view)
        assert torch.equal(build_sampler("mi-indep", gamma=gamma, cap=float("inf")).select(view), eb)
        assert torch.equal(build_sampler("mi-2b", gamma=gamma, delta=float("inf")).select(view), eb)


def test_a_dependent_candidate_is_skipped_and_a_later_independent_one_admitted():
    h = torch.tensor([[0.1, 0.2, 0.3]])
    masked = torch.ones(1, 3, dtype=torch.bool)
    mi = torch.zeros(1, 3, 3)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5  # positions 0 and 1 depend on each other
    view = StepView(masked=masked, entropy=h, margin=torch.zeros_like(h), pairwise=mi)
    assert build_sampler("mi-indep", gamma=0.25, cap=0.1).select(view).tolist() == [[True, False, True]]
    assert build_sampler("eb", gamma=0.25).select(view).tolist() == [[True, True, False]]


def test_protein_jsd_rows_put_the_contender_first_and_lower_jsd_is_better():
    from types import SimpleNamespace

    from mdm_mi.protein.compare import jsd_rows

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 3)) * 5

    def draw(n, weights):
        return centres[rng.choice(4, size=n, p=weights)] + rng.normal(size=(n, 3)) * 0.3

    ref = draw(300, [0.25] * 4)
    scorer = SimpleNamespace(ref_emb=ref, k=4)
    close, far = draw(300, [0.25] * 4), draw(300, [0.85, 0.05, 0.05, 0.05])
    passes = np.full(300, 10)
    runs = {"sequential": {"family": "sequential", "divisor": 1, "emb": close, "passes": passes * 5},
            "eb@1/5": {"family": "eb", "divisor": 5, "emb": far, "passes": passes, "calib_score": 0.0},
            "mi λ=1@1/5": {"family": "mi λ=1", "divisor": 5, "emb": close, "passes": passes, "calib_score": -0.1}}
    rows = jsd_rows(runs, scorer, n_boot=40, seed=0)
    vs_eb = next(r for r in rows if r["first"] == "mi*" and r["second"] == "eb")
    assert vs_eb["diff"] < 0 and vs_eb["lo"] <= vs_eb["diff"] <= vs_eb["hi"] and vs_eb["verdict"] == "better"
    assert all(r["first"] in ("mi*", "mi λ=1") and r["second"] in ("eb", "sequential") for r in rows)


def test_calibration_grid_reaches_every_budget_and_reuses_brackets():
    from mdm_mi.evaluation.calibrate import DIVISORS, calibrate_grid, calibrated_families

    n = 2 * N
    backbone = SharpeningBackbone(seeded_logits(n, V, seed=1) * 2, mask_id=V)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(V, (32, n), generator=gen)
    for row in range(32):
        tokens[row, torch.randperm(n, generator=gen)[:20 + row * (n - 20) // 31]] = V
    sequential = float((tokens == V).sum(1).float().mean())
    families = [f for f in calibrated_families(n, {"mi_lambda": [1.0], "mi_on_reject": "skip", "mi_charge_first": False}, SAMPLER_CLASSES) if not f.sampler.startswith("mi")]
    points = calibrate_grid(families, sequential, DIVISORS, _toy_measure(backbone, tokens), log=lambda m: None)
    assert [p.extra["divisor"] for p in points] == list(DIVISORS) * len(families)
    assert all(p.on_target for p in points), [(p.family, p.target, p.passes) for p in points if not p.on_target]
    assert sum(p.decodes for p in points) < 6 * len(points)  # the cache's brackets keep the search short


def test_next_u_interpolates_inside_the_bracket_and_bisects_without_measured_ends():
    from mdm_mi.evaluation.calibrate import INTERP_MARGIN, next_u

    assert next_u(0.0, 4.0, None, 10.0, 20.0, bisect=False) == 2.0
    assert next_u(0.0, 4.0, 40.0, 10.0, 20.0, bisect=True) == 2.0
    # log passes linear in u: 40 → 10 over [0, 4] reaches 20 at u = 2
    assert next_u(0.0, 4.0, 40.0, 10.0, 20.0, bisect=False) == pytest.approx(2.0)
    u = next_u(0.0, 4.0, 40.0, 10.0, 39.999, bisect=False)  # clamped away from the end
    assert u == pytest.approx(4 * INTERP_MARGIN)


def test_a_shared_cache_saves_decodes_but_never_moves_a_calibrated_setting():
    """Issue 47's drift: a budget's setting must not depend on which other budgets were searched
    first with the same cache. Passes are a step function (naive k rounds), so a warm start from
    another target's brackets could stop at another point of the step; memoised decodes are free."""
    fam = Family("toy", "naive", "k", 1.0, 100.0, "log", increasing=False, cls=NaiveTopK)
    calls = []

    def measure(sampler):
        calls.append(sampler.k)
        return 100.0 / round(sampler.k), {}

    for first_target in (40.0, 25.0, 7.0, 3.0):
        cache: dict = {}
        calibrate(fam, first_target, measure, cache=cache)
        scratch = calibrate(fam, 12.0, measure, cache={})
        n_calls = len(calls)
        warm = calibrate(fam, 12.0, measure, cache=cache)
        assert (warm.value, warm.passes) == (scratch.value, scratch.passes), first_target
        assert warm.decodes == len(calls) - n_calls <= scratch.decodes  # the cheap end is reused
    again = calibrate(fam, 12.0, measure, cache=cache)
    assert again.decodes == 0 and again.value == warm.value


def test_calibration_grid_gives_each_budget_the_setting_it_gets_alone():
    """The same family searched at ÷2…÷10 in one grid and at ÷3 alone: identical ÷3 setting."""
    from mdm_mi.evaluation.calibrate import calibrate_grid

    fam = Family("toy", "eb", "gamma", 1e-3, 50.0, "log", increasing=False, cls=EntropyBounded)

    def measure(sampler):  # a bumpy decreasing step function of γ
        return float(60 // (1 + sampler.gamma ** 0.7 + 0.3 * math.sin(7 * sampler.gamma))), {}

    grid = calibrate_grid([fam], 60.0, (2, 3, 4, 5, 6, 8, 10), measure, log=lambda m: None)
    alone = calibrate_grid([fam], 60.0, (3,), measure, log=lambda m: None)
    in_grid = next(p for p in grid if p.extra["divisor"] == 3)
    assert (in_grid.value, in_grid.passes) == (alone[0].value, alone[0].passes)


def test_the_calibration_log_says_how_far_the_grid_is_and_the_time_left():
    """Issue 52: a comparison's log tells a person where a long job stands: each calibrated point's
    line ends with the grid's progress, counting to every family × budget."""
    from mdm_mi.evaluation.calibrate import calibrate_grid

    fams = [Family(name, "eb", "gamma", 1e-3, 50.0, "log", increasing=False, cls=EntropyBounded) for name in ("a", "b")]
    lines = []
    calibrate_grid(fams, 60.0, (2, 3, 4), lambda sampler: (60.0 / (1 + sampler.gamma), {}), log=lines.append)
    counts = [re.search(r"calibration (\d+)/6 \((\d+)%\), \S+ elapsed", line) for line in lines]
    assert all(counts) and [int(m.group(1)) for m in counts] == [1, 2, 3, 4, 5, 6]
    assert "left" in lines[0] and "left" not in lines[-1] and counts[-1].group(2) == "100"


@pytest.mark.parametrize(("extra", "message"), [
    (["--set", "hard"], "--set hard needs --test-puzzles >= 1"),
    (["--set", "graded", "--graded-per-level", "5"], "--set graded needs --graded-givens"),
    (["--set", "hard", "--test-puzzles", "5", "--divisors", "0"], "--divisors must be >= 1"),
])
def test_compare_size_flags_are_checked_before_any_work(tmp_path, capsys, extra, message):
    from mdm_mi.cli import main

    for folder in ("m", "h"):  # inputs that exist: the one validator checks them first (tests/test_validate.py)
        (tmp_path / folder).mkdir()
    for table in ("r.csv", "e.csv"):
        (tmp_path / table).write_text("puzzle,solution\n")
    argv = ["sudoku-compare", "--model", str(tmp_path / "m"), "--head", str(tmp_path / "h"), "--radcliffe",
            str(tmp_path / "r.csv"), "--easy", str(tmp_path / "e.csv"), "--out-dir", str(tmp_path / "out"),
            "--calib-puzzles", "5", "--divisors", "2", "--mi-lambda", "1", "--on-reject", "skip", "--no-charge-first",
            "--indep-cap", "--two-budget-delta", "--unit-disjoint-peers", "--demask-eps", "--demask-mi-eps",
            "--mi-tv-lambda", "--dapd-theta", "--wino-tau-out", "--mi-remask-kappa", "--klass-kl", "--punt-kappa", "--eb-verify-tau-out", "--prism-tau-out", "--eb-prism-tau-out", "--bootstrap", "10", "--batch-size", "10",
            "--tracking-uri", "none",
            *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _power_law_measure(calls: list):
    """Passes = 100 / k (a naive-like curve), each decode recorded with the passes it cost."""
    def measure(sampler):
        calls.append(100.0 / sampler.k)
        return 100.0 / sampler.k, {}
    return measure


def test_the_search_decodes_the_cheap_end_first_never_the_middle_of_the_range():
    dec = Family("toy", "naive", "k", 1.0, 100.0, "log", increasing=False, cls=NaiveTopK)
    inc = Family("tau", "threshold", "tau", 0.0, 1 - 1e-6, "log1m", increasing=True, cls=ConfidenceThreshold)
    assert next_guess(dec, 25.0, {}) == 100.0  # passes fall with k: the largest k is cheapest
    assert next_guess(inc, 25.0, {}) == 0.0  # passes rise with τ: the smallest τ is cheapest
    calls: list = []
    point = calibrate(dec, 20.0, _power_law_measure(calls))
    assert point.on_target and calls[0] == 1.0
    assert max(calls) < 2 * 20.0  # no decode near sequential's cost (100 passes)


def test_a_target_the_range_cannot_reach_stops_after_one_decode():
    """A rule whose fastest setting still needs 8 passes: the target 5 is out of reach, and the search
    says so after decoding that setting once instead of bisecting toward it."""
    fam = Family("floor", "naive", "k", 1.0, 100.0, "log", increasing=False, cls=NaiveTopK)
    calls = []

    def measure(sampler):
        calls.append(sampler.k)
        return max(100.0 / sampler.k, 8.0), {}

    point = calibrate(fam, 5.0, measure)
    assert calls == [100.0] and point.decodes == 1 and point.passes == 8.0 and not point.on_target
    assert next_guess(fam, 200.0, {1.0: 100.0}) is None  # above the most expensive setting: out of reach too


def test_the_grid_costs_little_more_than_decoding_each_budget_once():
    """Σ passes decoded over all budgets of a power-law family, against Σ targets (the least any
    search can decode: one decode per budget). Each budget's search runs from scratch so that its
    setting does not depend on the others (issue 47); memoised decodes keep the total within 4× (the
    warm-started search of earlier versions stayed under 2×, at the price of that dependence)."""
    fam = Family("toy", "naive", "k", 1.0, 100.0, "log", increasing=False, cls=NaiveTopK)
    calls: list = []
    points = calibrate_grid([fam], 100.0, DIVISORS, _power_law_measure(calls), log=lambda m: None)
    assert [p.extra["divisor"] for p in points] == list(DIVISORS)
    assert all(p.on_target for p in points)
    assert sum(calls) < 4 * sum(p.target for p in points), (sum(calls), calls)


def _outcomes(a: int, b: int, c: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Two paired binary outcome vectors with the 2×2 cells a (both), b (first only), c (second only), d (neither)."""
    first = np.array([1] * a + [1] * b + [0] * c + [0] * d, dtype=bool)
    second = np.array([1] * a + [0] * b + [1] * c + [0] * d, dtype=bool)
    return first, second


def test_a_sudoku_contrast_whose_interval_and_p_disagree_is_marked_and_explained():
    """Issue 51: an interval excluding 0 beside a p above 5% must not stand unexplained. With 4 of 50
    puzzles discordant, all one way, the exact McNemar p is 2/2⁴ = 0.125 while Newcombe's approximate
    interval excludes 0: the cell is marked and the table says why (the verdict follows p)."""
    import dataclasses

    from mdm_mi.evaluation.budgets import DISAGREES, DISAGREES_NOTE, diff_cell, disagree_note
    from mdm_mi.evaluation.paired import interval_agrees

    few = dataclasses.asdict(paired_difference(*_outcomes(12, 0, 4, 34)))
    assert few["p_value"] == pytest.approx(0.125) and few["hi"] < 0
    assert not interval_agrees(few["lo"], few["hi"], few["p_value"])
    many = dataclasses.asdict(paired_difference(*_outcomes(12, 0, 20, 18)))
    assert many["p_value"] < 0.05 and many["hi"] < 0 and interval_agrees(many["lo"], many["hi"], many["p_value"])
    assert diff_cell(few).endswith(DISAGREES) and DISAGREES not in diff_cell(many)
    assert disagree_note([diff_cell(few)]) == ["", DISAGREES_NOTE] and disagree_note([diff_cell(many)]) == []


def test_the_antibody_tables_t_interval_and_p_agree_on_known_data():
    """The antibody table's paired t: d = 1..5 has mean 3, SE √(2.5/5), t = 4.24 on 4 df, p = 0.0132 and
    the 95% interval 3 ± 2.776·SE; on random data its interval excludes 0 exactly when p < 0.05."""
    from mdm_mi.antibody.compare import paired_t

    known = paired_t(np.arange(1.0, 6.0), np.zeros(5))
    assert known["diff"] == 3 and known["p_value"] == pytest.approx(0.01324, abs=1e-4)
    half = 2.7764 * math.sqrt(0.5)  # t(0.975, 4 df) · SE
    assert (known["lo"], known["hi"]) == pytest.approx((3 - half, 3 + half), abs=1e-3)
    rng = np.random.default_rng(51)
    for _ in range(500):
        n = int(rng.integers(3, 40))
        r = paired_t(rng.normal(rng.normal(0, 0.5), 1, n), np.zeros(n))
        assert (r["lo"] > 0 or r["hi"] < 0) == (r["p_value"] < 0.05)


@pytest.mark.parametrize("flag", ["--prism-tau-out", "--eb-prism-tau-out"])
def test_sudoku_compare_refuses_a_quality_rule_before_any_work(tmp_path, capsys, flag):
    """No verb takes a quality head yet: asking sudoku-compare for its rules is one line, nothing written."""
    from mdm_mi.cli import main

    for folder in ("m", "h"):
        (tmp_path / folder).mkdir()
    for table in ("r.csv", "e.csv"):
        (tmp_path / table).write_text("puzzle,solution\n")
    argv = ["sudoku-compare", "--model", str(tmp_path / "m"), "--head", str(tmp_path / "h"), "--radcliffe",
            str(tmp_path / "r.csv"), "--easy", str(tmp_path / "e.csv"), "--out-dir", str(tmp_path / "out"),
            "--set", "hard", "--calib-puzzles", "5", "--test-puzzles", "5", "--divisors", "2", "--mi-lambda", "1", "--on-reject", "skip",
            "--no-charge-first", "--indep-cap", "--two-budget-delta", "--unit-disjoint-peers", "--demask-eps",
            "--demask-mi-eps", "--mi-tv-lambda", "--dapd-theta", "--wino-tau-out", "--mi-remask-kappa", "--klass-kl",
            "--punt-kappa", "--eb-verify-tau-out", "--prism-tau-out", "--eb-prism-tau-out", "--bootstrap", "10",
            "--batch-size", "10", "--tracking-uri", "none", flag, "0.2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "quality head" in err and flag in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
