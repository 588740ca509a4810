"""The pre-registered analysis (issue 48, docs/preregistration.md): its constants match the committed
design, each contrast lands in its family, Holm runs inside each family only, and the decision rule
maps verdicts to answers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mdm_mi.evaluation import prereg

REPO = Path(__file__).resolve().parents[1]


def test_constants_are_the_committed_designs():
    design = json.loads((REPO / "docs/data/preregistration/design.json").read_text())["sudoku"]
    assert prereg.PRIMARY_DIVISOR == design["divisors"][0]
    assert prereg.SUDOKU_MARGIN == design["margin"]
    antibody = json.loads((REPO / "docs/data/preregistration/design.json").read_text())["antibody"]
    assert prereg.PRIMARY_DIVISOR in antibody["divisors"] and prereg.ANTIBODY_MARGIN == antibody["margin"]


def test_antibody_rows_from_the_comparisons_csv(tmp_path):
    """The pilot's CSV (÷2, ÷3, ÷4, ÷6): the primary is mi λ=1 − EB in PLL at ÷4 alone, recovery is its
    own family, and the TOST uses the registered ±0.10 nats/residue, not the comparison's own margin."""
    from mdm_mi.evaluation.budgets import read_csv
    rows = prereg.antibody_prereg_rows(read_csv(REPO / "docs/figures/antibody/cdr3/budgets.csv"))
    primary = prereg.primary_row(rows)
    assert (primary["metric"], primary["first"], primary["second"], primary["divisor"]) == ("pll", "mi λ=1", "eb", 4)
    assert primary["family_size"] == 1 and primary["p_holm"] == primary["p_value"]
    recovery = [r for r in rows if r["role"] == prereg.RECOVERY_FAMILY]
    assert len(recovery) == 4 and all(r["family_size"] == 4 for r in recovery)
    from mdm_mi.evaluation.stats import tost_t
    assert primary["p_tost"] == tost_t(primary["diff"], primary["se"], primary["df"], 0.10)


def test_the_antibody_page_block_renders_the_registered_rows_and_the_answer():
    """`prereg-antibody` (the block docs/answer.md shows once the decisive AntiBERTy run is committed),
    here on the pilot's CSV: one table row per registered contrast, the primary in words."""
    from mdm_mi.jobs.docs import RENDERERS
    from mdm_mi.evaluation.budgets import read_csv

    path = REPO / "docs/figures/antibody/cdr3/budgets.csv"
    text = RENDERERS["prereg-antibody"](path)
    rows = prereg.antibody_prereg_rows(read_csv(path))
    assert text.count("\n| ") == len(rows) and "| primary | mi λ=1 − eb | pll | 1/4 " in text
    primary = prereg.primary_row(rows)
    assert f"= {primary['diff']:+.3f} nats/residue" in text and "(the paper makes no antibody claim)" in text
    assert "refuted" not in text  # issue 64: no claim of the paper's to refute in a new domain



def test_the_answer_lines_read_a_pre_registered_antibody_csv(tmp_path):
    """`answer-lines` with ``prereg_csv`` (the decisive AntiBERTy run's entry): the count of test VH and
    the primary clause the `prereg-antibody` block prints, from the same rows."""
    from mdm_mi.jobs.docs import RENDERERS
    from mdm_mi.evaluation.budgets import read_csv
    from mdm_mi.evaluation.doc_tables import antibody_primary_clause

    path = REPO / "docs/figures/antibody/cdr3/budgets.csv"
    spec = tmp_path / "answer.json"
    spec.write_text(json.dumps({"ab": {"title": "AntiBERTy", "prereg_csv": str(path)}}))
    text = RENDERERS["answer-lines"](spec)
    primary = prereg.primary_row(prereg.antibody_prereg_rows(read_csv(path)))
    assert text == f"- **AntiBERTy**: {primary['n']:,} test VH; primary {antibody_primary_clause(primary)}.\n"

@pytest.mark.parametrize("first, second, divisor, role", [
    ("mi λ=1", "eb", 4, prereg.PRIMARY),
    ("mi λ=1", "eb", 8, "secondary: the other budgets"),
    ("mi λ=1", "naive", 4, "secondary: against naive"),
    ("mi λ=1", "sequential", 16, "secondary: against sequential"),
    ("mi*", "eb", 4, prereg.BEST_MI_FAMILY),
    ("mi*", "naive", 4, prereg.EXPLORATORY),
    ("mi λ=2", "eb", 4, prereg.EXPLORATORY),
    ("mi λ=1", "threshold", 4, prereg.EXPLORATORY),
])
def test_each_contrast_has_its_family(first, second, divisor, role):
    assert prereg.prereg_role({"first": first, "second": second, "divisor": divisor}) == role


def _runs(rng, n=400):
    """A toy comparison: sequential, naive, EB and two λ at ÷4 and ÷8; λ=1 solves 30 puzzles more than
    EB at ÷4, the same at ÷8; λ = 0.5 has the better calibration score (so it is mi*)."""
    solved = lambda p: (rng.random(n) < p).astype(float)  # noqa: E731
    eb4, eb8 = solved(0.5), solved(0.4)
    better = eb4.copy()
    better[np.flatnonzero(eb4 == 0)[:30]] = 1.0
    runs = {"sequential": {"family": "sequential", "divisor": 1, "solved": solved(0.6), "passes": np.full(n, 50.0)}}
    for d, eb, mi in ((4, eb4, better), (8, eb8, eb8)):
        for fam, s, score in (("naive", solved(0.3), 0), ("eb", eb, 0), ("mi λ=1", mi, 0.1), ("mi λ=0.5", eb, 0.2)):
            runs[f"{fam}@1/{d}"] = {"family": fam, "divisor": d, "solved": s, "passes": np.full(n, 50.0 / d),
                                    "target": 50.0 / d, "calib_score": score}
    return runs


def test_the_primary_is_alone_and_holm_stays_inside_families():
    rows = prereg.prereg_rows(_runs(np.random.default_rng(0)), "toy")
    primary = prereg.primary_row(rows)
    assert (primary["first"], primary["second"], primary["divisor"]) == ("mi λ=1", "eb", 4)
    assert primary["family_size"] == 1 and primary["p_holm"] == primary["p_value"]
    assert primary["verdict"] == "better" and prereg.answer_of(primary) == "confirmed"
    best = [r for r in rows if r["role"] == prereg.BEST_MI_FAMILY]
    assert len(best) == 2 and all(r["family_size"] == 2 for r in best)  # mi* = λ 0.5 = EB: two rows
    assert all(r["diff"] == 0 for r in best)
    assert rows[0] is not None and rows[0]["role"] == prereg.PRIMARY  # primary first
    assert all(r["role"] != prereg.EXPLORATORY for r in rows)


@pytest.mark.parametrize("verdict, answer", [("better", "confirmed"), ("worse", "refuted"),
                                             ("equivalent", "refuted"), ("not resolved", "not answered")])
def test_the_decision_rule(verdict, answer):
    assert prereg.answer_of({"verdict": verdict}) == answer


def test_a_comparison_without_the_primary_contrast_is_refused():
    runs = _runs(np.random.default_rng(1))
    runs = {k: v for k, v in runs.items() if not k.startswith("mi λ=1@1/4")}
    with pytest.raises(ValueError, match="no mi λ=1 − EB row at ÷4"):
        prereg.primary_row(prereg.prereg_rows(runs, "toy"))


def test_below_p_is_the_upper_half_of_the_tost():
    """The one-sided test against a bound: TOST at ±m is the larger of the two halves, so its upper half
    at +m never exceeds it; a bound the estimate passes gives 1; a farther bound a smaller p."""
    from mdm_mi.evaluation.paired import below_p, tost_p
    table = (732, 104, 116, 948)  # the pre-registered primary's shape: −0.6 pp on 1,900 puzzles
    assert below_p(*table, 0.02) <= tost_p(*table, 0.02)
    assert below_p(*table, 0.026) < below_p(*table, 0.02) < 0.001
    assert below_p(*table, -0.02) == 1.0


def test_the_committed_exclusion_record_is_what_the_library_computes():
    """docs/data/decisive-sudoku/excluded.json (scripts/exclusion_record.py, added after the results):
    the paper's +2.6 pp excluded below 5%, its numbers those of the registered primary row."""
    from mdm_mi.evaluation.doc_tables import read_sudoku_comparison
    from mdm_mi.evaluation.exclusion import exclusion_record
    committed = json.loads((REPO / "docs/data/decisive-sudoku/excluded.json").read_text())
    set_name, runs = read_sudoku_comparison(REPO / committed["runs"])
    fresh = json.loads(json.dumps(exclusion_record(runs, set_name), ensure_ascii=False))
    assert {k: v for k, v in committed.items() if k != "runs"} == fresh, "run scripts/exclusion_record.py"
    assert committed["below"]["paper"]["bound"] == 0.026 and committed["below"]["paper"]["p"] < 0.05
