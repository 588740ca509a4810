"""Sample sizes of the pre-registration (mdm_mi.evaluation.power), checked by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from mdm_mi.evaluation.paired import mcnemar_exact
from mdm_mi.evaluation.power import mcnemar_pairs, mcnemar_power, mean_pairs_for_half_width, mean_pairs_for_power


def test_mcnemar_pairs_give_the_stated_power_in_simulation():
    delta, psi = 0.05, 0.15
    n = mcnemar_pairs(delta, psi)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=600)
    power = np.mean([mcnemar_exact(int(b), int(c)) < 0.05 for b, c, _ in counts])
    assert abs(power - 0.80) < 0.06, (n, power)
    assert mcnemar_power(n, delta, psi) == pytest.approx(0.80, abs=0.01)


def test_a_mean_interval_of_the_planned_size_has_the_planned_half_width():
    sd, half = 0.34, 0.05
    n = mean_pairs_for_half_width(sd, half)
    rng = np.random.default_rng(1)
    widths = [1.96 * rng.normal(0, sd, n).std(ddof=1) / np.sqrt(n) for _ in range(200)]
    assert np.median(widths) == pytest.approx(half, rel=0.05)
    assert mean_pairs_for_power(0.1, sd) > mean_pairs_for_half_width(sd, 0.1)  # power asks more than width


@pytest.mark.parametrize(("delta", "psi"), [(0.0, 0.1), (0.2, 0.1), (0.05, 1.5)])
def test_impossible_designs_are_refused(delta, psi):
    with pytest.raises(ValueError):
        mcnemar_pairs(delta, psi)
