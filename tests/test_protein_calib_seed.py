"""A second calibration seed for the protein comparison (issue 31's two-seed check): it moves the
calibration draw only, and a part's key names it only when given (the default's parts are unchanged)."""

from __future__ import annotations

import numpy as np

from mdm_mi.protein.compare import ProteinCompareSpec, calibration_lengths
from mdm_mi.protein.decode_flags import DecodeFlags

LENGTHS = list(range(50, 100))


def _spec(calib_seed=None) -> ProteinCompareSpec:
    return ProteinCompareSpec(20, 16, (2,), DecodeFlags(), 3, 8, 0, calib_seed)


def test_calibration_seed_defaults_to_the_seed():
    assert np.array_equal(calibration_lengths(LENGTHS, _spec()), calibration_lengths(LENGTHS, _spec(0)))


def test_a_second_calibration_seed_draws_other_calibration_lengths():
    assert not np.array_equal(calibration_lengths(LENGTHS, _spec()), calibration_lengths(LENGTHS, _spec(1)))
    assert _spec(1).seed == _spec().seed  # the test decodes keep their seed


def test_part_key_names_the_calibration_seed_only_when_given():
    import dataclasses

    from mdm_mi.cli import build_parser
    from mdm_mi.protein.compare_jobs import ProteinComparePartArgs, _part_key

    def parsed(argv):
        ns = build_parser().parse_args(argv)
        return ProteinComparePartArgs(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(ProteinComparePartArgs)})

    base = ["protein-compare-part", "--part", "eb", "--model", "m", "--head", "h", "--reference", "r.fasta",
            "--out-dir", "o", "--calib-n", "4", "--divisors", "2", "--mi-lambda", "1", "--on-reject", "skip",
            "--indep-cap", "--two-budget-delta", "--no-charge-first"]
    plain, seeded = parsed(base), parsed(base + ["--calib-seed", "1"])
    assert "calib_seed" not in _part_key(plain) and _part_key(seeded)["calib_seed"] == 1


def test_family_verdicts_side_by_side_in_r(tmp_path):
    """Two family-compare folders' verdicts side by side, written in r (not percentage points), with
    the count of agreeing words; a flip is marked."""
    from mdm_mi.cli import main
    from mdm_mi.evaluation.budgets import write_csv
    from mdm_mi.protein.family.covariation import FIELDS

    def row(diff, verdict):
        return {"set": "family", "divisor": 2, "metric": "corrected_mi_r", "first": "mi*", "second": "eb", "n": 10,
                "passes_first": 26.5, "passes_second": 26.5, "value_first": 0.5, "value_second": 0.5 - diff,
                "diff": diff, "lo": diff - 0.04, "hi": diff + 0.04, "p_value": 0.5, "se": 0.02, "df": 29,
                "role": "primary", "family_size": 7, "p_holm": 1.0, "p_tost": 0.01, "p_tost_holm": 0.03,
                "verdict": verdict}

    for name, diff, verdict in (("a", 0.012, "equivalent"), ("b", 0.03, "not resolved")):
        (tmp_path / name).mkdir()
        write_csv([row(diff, verdict), row(diff, verdict) | {"metric": "c_ij_r"}], tmp_path / name / "covariation.csv", FIELDS)
    out = tmp_path / "v.md"
    assert main(["family-verdicts", "--runs", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "+0.012 [-0.028, +0.052]" in text and "**no**" in text and "0 of 1 verdicts agree" in text
    assert main(["family-verdicts", "--runs", str(tmp_path / "a"), "--out", str(out)]) == 2
