"""The statistics of the matched comparison: the paired sign-flip test (exact McNemar on binary
outcomes, ~5% false positives on a simulated Sudoku comparison with calibration noise and no true
difference), TOST at ±2 pp, Holm's correction and the verdict words written from a row's numbers."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from mdm_mi.core.samplers import NaiveTopK
from mdm_mi.evaluation.calibrate import Family, calibrate
from mdm_mi.evaluation.matched import bracket_settings, mixing_weight, mixture
from mdm_mi.evaluation.paired import holm, mcnemar_exact, newcombe_interval, paired_cells, paired_difference, sign_flip_p, tost_p
from mdm_mi.evaluation.verdicts import classify, side_by_side, verdict, verdict_markdown


def test_the_sign_flip_test_is_exact_mcnemar_on_binary_outcomes():
    rng = np.random.default_rng(0)
    x, y = rng.random(300) < 0.3, rng.random(300) < 0.25
    b, c = int((x & ~y).sum()), int((~x & y).sum())
    assert sign_flip_p(x.astype(float) - y) == mcnemar_exact(b, c)
    d = paired_difference(x, y)
    assert (d.b, d.c) == (b, c) and isinstance(d.b, int) and d.p_value == mcnemar_exact(b, c)


def test_the_monte_carlo_flips_match_the_exact_distribution_of_halved_outcomes():
    # every difference ±0.5: the sign-flip distribution is McNemar's, reached by Monte Carlo here
    d = np.array([0.5] * 30 + [-0.5] * 14)
    assert sign_flip_p(d) == pytest.approx(mcnemar_exact(30, 14), abs=0.004)
    assert sign_flip_p(np.zeros(10) + 0.25 * (np.arange(10) % 2 * 2 - 1)) == 1.0  # Σd = 0: nothing is less extreme


def test_fractional_cells_are_expected_counts():
    a, b, c, d = paired_cells([0.5, 1.0, 0.0], [0.5, 0.0, 1.0])
    assert (a, b, c, d) == pytest.approx((0.25, 1.25, 1.25, 0.25))


def test_holm_matches_a_hand_calculation():
    # sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 → monotone 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == [0.02]


def test_tost_hand_cases():
    # 1,000 puzzles both solve, none discordant: the interval is tight around 0, equivalence at ±2 pp
    assert tost_p(1000, 0, 0, 0, 0.02) < 0.05
    # 100 such puzzles: the 90% interval is wider than ±2 pp, equivalence is not shown
    lo, hi = newcombe_interval(100, 0, 0, 0, NormalDist().inv_cdf(0.95))
    assert hi > 0.02 and tost_p(100, 0, 0, 0, 0.02) > 0.05
    # an estimate of +6 pp is never inside ±2 pp
    assert tost_p(200, 40, 10, 250, 0.02) == 1.0
    # at the TOST p the (1 − 2p) interval touches the margin
    cells = (300, 12, 8, 680)
    p = tost_p(*cells, 0.02)
    lo, hi = newcombe_interval(*cells, NormalDist().inv_cdf(1 - p))
    assert max(-lo, hi) == pytest.approx(0.02, abs=1e-6)


def _row(set_name, divisor, second, diff, p, n=1000, b=None, c=None, first="mi*"):
    b = b if b is not None else 50 + 500 * max(diff, 0)
    c = c if c is not None else b - diff * n
    acc_first = 0.3
    return {"set": set_name, "divisor": divisor, "target": 10.0, "first": first, "second": second, "n": n,
            "passes_first": 10.0, "passes_second": 10.0, "acc_first": acc_first, "acc_second": acc_first - diff,
            "diff": diff, "lo": diff - 0.02, "hi": diff + 0.02, "b": b, "c": c, "p_value": p, "detectable": 0.03,
            "verdict": ""}


def test_verdict_words_follow_holm_and_tost():
    rows = classify([
        _row("hard", 2, "eb", 0.05, 1e-6),  # better, also after ×2 (two primary tests)
        _row("hard", 4, "eb", 0.004, 0.6, b=10, c=6),  # small and tight: equivalent
        _row("hard", 2, "naive", -0.04, 0.004),  # worse: 0.004 × 3 secondary tests = 0.012
        _row("hard", 4, "naive", 0.03, 0.03),  # 0.03 alone, but ×2 = 0.06 after Holm: not resolved
        _row("hard", 2, "sequential", 0.0, 1.0, b=60, c=60),
        _row("hard", 2, "eb", 0.02, 0.01, first="mi λ=1"),  # exploratory: its own family
    ])
    assert [r["role"] for r in rows] == ["primary", "primary", "secondary", "secondary", "secondary", "exploratory"]
    assert [r["family_size"] for r in rows] == [2, 2, 3, 3, 3, 1]
    assert [r["verdict"] for r in rows] == ["better", "equivalent", "worse", "not resolved", "not resolved", "better"]
    assert rows[3]["p_holm"] == pytest.approx(0.06)
    word, sentence = verdict(rows[3])
    assert word == "not resolved" and "+3.0 pp" in sentence and "Holm-adjusted p = 0.06 (3 secondary tests)" in sentence
    word, sentence = verdict(rows[1])
    assert word == "equivalent" and "within ±2 pp" in sentence and "TOST p" in sentence
    assert verdict(rows[0])[1].endswith("better.")
    assert "hard, 1/2 (10.0 passes): mi* − eb = +5.0 pp" in verdict_markdown(rows)


def test_side_by_side_counts_the_verdicts_that_differ():
    one = classify([_row("hard", 2, "eb", 0.05, 1e-6), _row("hard", 4, "eb", 0.03, 0.2)])
    two = classify([_row("hard", 2, "eb", 0.05, 1e-6), _row("hard", 4, "eb", 0.03, 0.001)])
    text = side_by_side({"seed 0": one, "seed 1": two})
    assert "| hard | 1/4 | mi* − eb |" in text and "**no**" in text and "1 of 2 verdicts agree" in text


def test_mixing_weight_spends_the_budget_exactly():
    q = mixing_weight(9.0, 12.0, 10.0)
    assert q * 9.0 + (1 - q) * 12.0 == pytest.approx(10.0)
    assert mixing_weight(9.0, 12.0, 8.0) == 1.0 and mixing_weight(9.0, 12.0, 13.0) == 0.0


# --- a simulated Sudoku comparison with no true difference ------------------------------------------------

TOY = Family("toy", "naive", "k", 1.0, 81.0, "log", increasing=False, cls=NaiveTopK)


def _toy_sampler(blanks, difficulty, noise, power):
    """A sampler with speed k^power: passes ⌈blanks / k^power · e^(0.15·difficulty)⌉ (harder puzzles take
    more passes), solved when difficulty + noise < −0.6·log(k^power). Two powers are two samplers with
    the same accuracy at equal passes but different parameters, so their calibrations differ."""
    def decode(sampler):
        k = sampler.k ** power
        passes = np.maximum(1, np.ceil(blanks / k * np.exp(0.15 * difficulty)))
        return difficulty + noise < -0.6 * np.log(k), passes
    return decode


def _simulated_comparison(rng, divisor=4, n_test=400, n_calib=60):
    """Both samplers calibrated on their own noisy calibration puzzles, then matched on shared test
    puzzles by the library's bracket and mixture: the outcomes the paired test compares."""
    test_blanks, test_z = rng.integers(50, 65, n_test), rng.normal(size=n_test)
    calib_blanks, calib_z = rng.integers(50, 65, n_calib), rng.normal(size=n_calib)
    budget, ceiling = test_blanks.mean() / divisor, calib_blanks.mean()
    runs = []
    for power in (1.0, 0.8):
        test = _toy_sampler(test_blanks, test_z, rng.normal(size=n_test), power)
        calib = _toy_sampler(calib_blanks, calib_z, rng.normal(size=n_calib), power)

        def measure(sampler, calib=calib):
            return float(np.mean(calib(sampler)[1])), {}

        cache: dict = {}
        point = calibrate(TOY, ceiling / divisor, measure, cache=cache, ceiling=ceiling)
        runs.append(mixture(bracket_settings(TOY, point, budget, test, measure, cache, ceiling), budget))
    return runs, budget


def test_a_simulated_comparison_without_true_difference_rejects_at_about_5_percent():
    rng = np.random.default_rng(2026)
    draws, rejected = 200, 0
    for _ in range(draws):
        (x, y), budget = _simulated_comparison(rng)
        assert np.mean(x["passes"]) == pytest.approx(budget) and np.mean(y["passes"]) == pytest.approx(budget)
        rejected += paired_difference(x["solved"], y["solved"], n_flips=2000).p_value < 0.05
    assert 0.03 <= rejected / draws <= 0.07, rejected
