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
    from mdm_mi.protein.compare_job import ProteinComparePartArgs, _part_key

    def parsed(argv):
        ns = build_parser().parse_args(argv)
        return ProteinComparePartArgs(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(ProteinComparePartArgs)})

    base = ["protein-compare-part", "--part", "eb", "--model", "m", "--head", "h", "--reference", "r.fasta",
            "--out-dir", "o", "--calib-n", "4", "--divisors", "2", "--mi-lambda", "1", "--on-reject", "skip",
            "--indep-cap", "--two-budget-delta", "--no-charge-first"]
    plain, seeded = parsed(base), parsed(base + ["--calib-seed", "1"])
    assert "calib_seed" not in _part_key(plain) and _part_key(seeded)["calib_seed"] == 1
