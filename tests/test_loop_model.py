"""The CDR-H3 loop model (a scorer that did not write the fills) on loops whose answer is known."""
import numpy as np
import pytest

from mdm_mi.antibody.loop_model import anchor, DEPTH, fit_on, INDEX, LETTERS, LoopCounts, LoopModel, lineage_weights
from mdm_mi.antibody.second_scorer import context_scores, fill_loops, ranking


def test_positions_are_anchored_at_the_nearer_end_and_the_middle_is_pooled():
    assert [anchor(k, 10) for k in range(10)] == [0, 1, 2, 3, 4, 10, 9, 8, 7, 6]
    assert anchor(0, 20) == 0 and anchor(19, 20) == DEPTH and anchor(9, 20) == 2 * DEPTH == anchor(10, 20)


def test_every_conditional_is_a_distribution():
    counts = LoopCounts.of(["ARDYW", "AKGGFDY", "ARW"], [1.0, 1.0, 1.0])
    model = LoopModel.smoothed(counts, 0.5, 0.3, 0.5)
    for state in range(2 * DEPTH + 1):
        for prev in range(21):
            p = model.a * model.profile[state] + model.b * model.pair[prev] + (1 - model.a - model.b) * model.background
            assert p.sum() == pytest.approx(1.0) and (p > 0).all()


def test_a_lineage_counts_once_however_many_rows_it_has():
    w = lineage_weights(["a"] * 10 + ["b"])
    assert w.tolist() == [0.1] * 10 + [1.0]
    many = LoopCounts.of(["ARW"] * 10 + ["KKK"], w)
    once = LoopCounts.of(["ARW", "KKK"], [1.0, 1.0])
    assert np.allclose(many.profile, once.profile) and np.allclose(many.pair, once.pair)


def _loops(rng, n, positional: bool) -> list[str]:
    """Positional: the first residue A, the last Y, the rest uniform. Markov: each residue the one
    after its predecessor in LETTERS (with prob 0.9), wherever it sits."""
    out = []
    for _ in range(n):
        length = int(rng.integers(8, 16))
        if positional:
            out.append("A" + "".join(rng.choice(list(LETTERS), length - 2)) + "Y")
        else:
            s = [str(rng.choice(list(LETTERS)))]
            for _ in range(length - 1):
                s.append(LETTERS[(INDEX[s[-1]] + 1) % 20] if rng.random() < 0.9 else str(rng.choice(list(LETTERS))))
            out.append("".join(s))
    return out


@pytest.mark.parametrize("positional", [True, False])
def test_the_fit_picks_the_part_that_generated_the_loops(positional):
    rng = np.random.default_rng(0)
    train, held = _loops(rng, 400, positional), _loops(rng, 200, positional)
    model, nats = fit_on(train, [str(i) for i in range(400)], held, [str(i) for i in range(200)])
    assert (model.a > model.b) == positional
    assert nats > np.log(1 / 20)  # better than uniform on loops it never saw
    native = held[0]
    assert model.score(native) > model.score(native[::-1])  # order matters to either model


def test_fills_are_read_back_at_the_masked_positions_per_context():
    alphabet = np.asarray(list(LETTERS))
    vocab = np.arange(5, 25)
    positions = np.array([[False, True, True, False], [False, True, False, False]])
    tok = lambda s: vocab[INDEX[s]]  # noqa: E731
    fills = np.array([[0, tok("A"), tok("R"), 1], [0, tok("W"), 0, 1],      # fill 0 of contexts x, y
                      [0, tok("K"), tok("R"), 1], [0, tok("Y"), 0, 1]])     # fill 1
    arrays = {"fill/eb@4": fills, "positions": positions, "ids": np.asarray(["x", "y"]), "alphabet": alphabet,
              "vocab_ids": vocab}

    class Z(dict):
        files = list(arrays)

    loops = fill_loops(Z(arrays))
    assert loops == {"eb@4": [(0, "x", "AR"), (0, "y", "W"), (1, "x", "KR"), (1, "y", "Y")]}
    model = LoopModel.smoothed(LoopCounts.of(["AR"], [1.0]), 0.5, 0.0, 1.0)
    assert context_scores(model, loops["eb@4"], ["x", "y"])[0] == pytest.approx((model.score("AR") + model.score("KR")) / 2)


def test_rules_are_ranked_per_budget_best_first_without_the_mi_star_copy():
    runs = {f"{f}@4": {"family": f, "divisor": 4, "loop": [v], "calib_score": 0.0}
            for f, v in (("eb", -2.0), ("naive", -2.5), ("mi λ=1", -1.9))}
    assert ranking(runs, "loop") == {"4": ["mi λ=1", "eb", "naive"]}


def test_the_record_ranks_contrasts_and_adjusts_on_loops_whose_scores_are_known():
    """mi's fills are the training loop itself, EB's and naive's a worse loop: mi ranks first under the
    loop model at both budgets, mi − EB is the score gap, and sequential (the training loop) ties mi."""
    from mdm_mi.antibody.second_scorer import second_scorer_record

    model = LoopModel.smoothed(LoopCounts.of(["ARDYW"] * 5, [1.0] * 5), 0.8, 0.1, 0.1)
    good, bad = "ARDYW", "WYDRA"
    ids = ["x", "y", "z"]
    runs, loops = {}, {}
    for name, fam, d, passes, loop, pll in (("mi-l1@4", "mi λ=1", 4, 3.0, good, -2.0), ("mi-l1@6", "mi λ=1", 6, 2.0, good, -2.1),
                                            ("eb@4", "eb", 4, 3.5, bad, -1.9), ("eb@6", "eb", 6, 2.5, bad, -2.2),
                                            ("naive@4", "naive", 4, 3.5, bad, -2.5), ("naive@6", "naive", 6, 2.5, bad, -2.6),
                                            ("sequential", "sequential", 1, 5.0, good, -1.5)):
        runs[name] = {"family": fam, "divisor": d, "mean_passes": passes, "pll": [pll + 0.01 * i for i in range(3)],
                      "calib_score": 0.0}
        loops[name] = [(k, c, loop) for k in range(2) for c in ids]
    rec = second_scorer_record(runs, loops, model, ids, "mi λ=1", "eb", primary=4, margin=0.1)
    gap = model.score(good) - model.score(bad)
    assert gap > 1 and rec["ranking"]["loop"]["4"][0] == "mi λ=1" and rec["ranking"]["pll"]["4"][0] == "eb"
    assert rec["raw"]["4"]["diff"] == pytest.approx(gap) and rec["pass_adjusted"]["4"]["diff"] == pytest.approx(gap)
    assert rec["sequential_minus"]["4"]["mi λ=1"]["diff"] == pytest.approx(0.0)
    assert rec["kendall_tau"]["4"] == pytest.approx(1 / 3)  # loop: mi, eb, naive; PLL: eb, mi, naive (one pair swapped)


def test_the_committed_second_scorer_is_current(tmp_path):
    """docs/data/decisive-antibody/loop_model.json is what scripts/antibody_second_scorer.py writes now
    from the committed fills, runs and split; the loop model ranks native loops far above shuffled ones."""
    import json
    import runpy
    import shutil
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    run = tmp_path / "run"
    shutil.copytree(repo / "docs/data/decisive-antibody/antibody", run / "antibody")
    argv, sys.argv = sys.argv, ["antibody_second_scorer.py", str(run)]
    try:
        runpy.run_path(str(repo / "scripts/antibody_second_scorer.py"), run_name="__main__")
    finally:
        sys.argv = argv
    committed = json.loads((repo / "docs/data/decisive-antibody/loop_model.json").read_text())
    fresh = json.loads((run / "loop_model.json").read_text())
    assert {k: v for k, v in fresh.items() if k != "source"} == {k: v for k, v in committed.items() if k != "source"}
    assert committed["native"]["share_above_shuffled"] > 0.95 and committed["fills"] == 16 * 231 * 4
