"""The remasking study on small chains (mdm_mi.testbed.remask_study): the one runner over exact
enumerations: sequential is exact, every rule spends its budget, and each is set against EB."""

from __future__ import annotations

import pytest

from mdm_mi.testbed.regimes import REGIMES
from mdm_mi.testbed.remask_study import SITES, RemaskSettings, remask_families, run_remask_study


@pytest.fixture(scope="module")
def tables():
    return run_remask_study([REGIMES["hard"]], RemaskSettings(divisors=(2,), n_calibration=1, n_test=2),
                            log=lambda line: None)


def test_sequential_is_exact_and_every_rule_spends_its_budget(tables):
    rows = {r["rule"]: r for r in tables["runs"]}
    assert rows["sequential"]["passes"] == SITES and abs(rows["sequential"]["kl_pq"]) < 1e-5
    for fam in remask_families():
        row = rows[fam.label]
        assert row["target"] == SITES / 2
        if row["on_budget"]:
            assert row["passes"] == pytest.approx(SITES / 2, rel=0.03)


def test_every_rule_but_eb_is_set_against_eb(tables):
    assert [r["rule"] for r in tables["against_eb"]] == [f.label for f in remask_families() if f.label != "eb"]
    for r in tables["against_eb"]:
        assert r["kl_pq_lo"] <= r["kl_pq_diff"] <= r["kl_pq_hi"]
        assert r["kl_pq_verdict"] in ("lower", "higher", "tie")
