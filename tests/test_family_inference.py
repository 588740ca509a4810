"""family-compare's paired intervals have their nominal size and coverage: 120 simulated comparisons
per scenario on natural Kunitz sequences (26 of the 53 match columns, 200 sequences per set, to run
in under a minute; ``benchmarks/family_inference.py`` runs the full columns at 300 sequences).

- two disjoint natural sets (true difference 0, nothing shared);
- two copies of one natural set with the same 30% of columns shuffled with two seeds (true
  difference 0, strongly paired: the stand-in for one sampler against itself with another seed);
- a natural set against one with 30% of its columns shuffled, paired (the same set) and unpaired
  (a disjoint set): the true difference is E r(natural) − E r(shuffled) at this size, the mean over
  the other draws.
Size: p < 0.05 in 3–7% of the null comparisons; coverage: 90–97% of the 95% intervals hold the
true difference (pooled over scenarios and metrics; each scenario alone within a wider band, its
Monte Carlo error being ±2 points)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family.covariation import METRICS, Reference, covariation_stats, jackknife_difference

KUNITZ = Path(__file__).resolve().parents[1] / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
DRAWS, N, COLUMNS = 120, 200, 26
COMPARISONS = {"null, unpaired": ("A", "B"), "null, paired": ("A1", "A2"),
               "shift, paired": ("A", "A1"), "shift, unpaired": ("B", "A1")}


def _draw(pool: np.ndarray, shuffled: np.ndarray, d: int) -> dict[str, list[str]]:
    perm = np.random.default_rng([d, 99]).permutation(len(pool))
    sets = {"A": pool[perm[:N]], "B": pool[perm[N:2 * N]]}
    for k in (1, 2):
        x = sets["A"].copy()
        x[:, shuffled] = np.random.default_rng([d, k]).permuted(x[:, shuffled], axis=0)
        sets[f"A{k}"] = x
    return {k: ["".join(fam.COLUMN_ALPHABET[c] for c in row) for row in v] for k, v in sets.items()}


@pytest.mark.slow
def test_paired_intervals_have_their_size_and_coverage():
    train, _, reference = fam.cluster_split(fam.drop_nonstandard(fam.parse_a2m(KUNITZ))[0], seed=0)
    pool = fam.encode_columns([r.columns[:COLUMNS] for r in train])
    ref = Reference.of([r.columns[:COLUMNS] for r in reference], seed=0)
    shuffled = np.random.default_rng(5).choice(COLUMNS, round(0.3 * COLUMNS), replace=False)
    values, results = [], []
    for d in range(DRAWS):
        stats = covariation_stats(_draw(pool, shuffled, d), ref, seed=d)
        values.append({k: s.value for k, s in stats.items()})
        results.append({c: jackknife_difference(stats, a, b) for c, (a, b) in COMPARISONS.items()})
    size, cover = {}, {}
    for m in METRICS:
        natural = np.array([(v["A"][m] + v["B"][m]) / 2 for v in values])
        shuffled_r = np.array([(v["A1"][m] + v["A2"][m]) / 2 for v in values])
        truth = (natural.sum() - natural - shuffled_r.sum() + shuffled_r) / (DRAWS - 1)  # from the other draws
        for c in COMPARISONS:
            lo, hi = (np.array([r[c][m][k] for r in results]) for k in ("lo", "hi"))
            if c.startswith("null"):
                size[c, m] = np.mean([r[c][m]["p_value"] < 0.05 for r in results])
                truth_c = 0.0
            else:
                truth_c = truth
            cover[c, m] = np.mean((lo <= truth_c) & (truth_c <= hi))
    report = f"size {size}, coverage {cover}"
    assert 0.03 <= np.mean(list(size.values())) <= 0.07, report
    assert 0.90 <= np.mean([v for (c, _), v in cover.items() if c.startswith("shift")]) <= 0.97, report
    assert all(0.01 <= v <= 0.10 for v in size.values()) and all(0.87 <= v <= 0.99 for v in cover.values()), report
