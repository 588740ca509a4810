"""ArDCA, the family table's autoregressive Potts row, on hand-built alignments: draws are match-column
strings of the right shape and alphabet, the same seed draws the same sequences, a column that copies
an earlier one is reproduced (a site-independent draw is not), column 1 is its weighted frequencies,
and ``family-ardca`` writes ``n_score`` sequences to the floor's folder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mdm_mi.cli import main
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS, read_fasta, write_fasta
from mdm_mi.protein.family import alignment as fam, ardca

COPY_LETTERS = "ACDE"  # column 1 and its copy, column 3
N_COPY = 300  # training rows of the copy alignment


def _copy_alignment(rng: np.random.Generator) -> list[str]:
    """Three match columns: column 1 uniform over A C D E (one row in ten a gap), column 2 independent
    of it, column 3 a copy of column 1."""
    first = rng.choice(list(COPY_LETTERS + fam.GAP), size=N_COPY, p=[0.225] * 4 + [0.1])
    second = rng.choice(list("KLMN"), size=N_COPY)
    return [f"{a}{b}{a}" for a, b in zip(first, second)]


@pytest.fixture(scope="module")
def copy_model():
    columns = _copy_alignment(np.random.default_rng(0))
    codes = fam.encode_columns(columns)
    return codes, ardca.fit(codes)


def test_samples_are_match_column_strings_of_the_family_alphabet(copy_model):
    _, model = copy_model
    records = ardca.sample(model, 50, np.random.default_rng(1))
    assert len(records) == 50 and [r.name for r in records[:2]] == ["ardca_0", "ardca_1"]
    assert all(len(r.columns) == 3 and set(r.columns) <= set(fam.COLUMN_ALPHABET) for r in records)
    assert all(r.sequence and set(r.sequence) <= set(AMINO_ACIDS) for r in records)  # all-gap draws redrawn
    assert all(r.sequence == r.columns.replace(fam.GAP, "") for r in records)
    codes = ardca.sample_codes(model, 200, np.random.default_rng(2))
    assert codes.shape == (200, 3) and set(codes[:, 1].tolist()) <= set(fam.encode_columns(["KLMN"])[0].tolist())


def test_same_seed_same_sequences(copy_model):
    _, model = copy_model
    draw = [ardca.sample(model, 40, np.random.default_rng(seed)) for seed in (5, 5, 6)]
    assert draw[0] == draw[1] and draw[0] != draw[2]
    codes, _ = copy_model
    again = ardca.fit(codes)  # the fit is deterministic too
    assert np.array_equal(again.fields, copy_model[1].fields) and np.array_equal(again.couplings, copy_model[1].couplings)


def test_a_copied_column_stays_copied_unlike_a_site_independent_draw(copy_model):
    codes, model = copy_model
    drawn = ardca.sample_codes(model, 2000, np.random.default_rng(3))
    kept = (drawn[:, 2] == drawn[:, 0]).mean()
    profile = np.ones((3, fam.N_LETTERS)) * 1e-9 + fam.column_counts(codes)
    floor = fam.encode_columns([r.columns for r in fam.sample_profile(profile, 2000, np.random.default_rng(3))])
    assert kept > 0.97  # 1.0 in the data
    assert (floor[:, 2] == floor[:, 0]).mean() < 0.4  # ~0.21 (Σ p²) without the coupling


def test_first_column_is_its_weighted_frequencies(copy_model):
    codes, model = copy_model
    weights = np.where(codes[:, 0] == 0, 3.0, 1.0)  # A rows count three times
    weighted = ardca.fit(codes[:, :1], weights)
    expected = np.bincount(codes[:, 0], weights=weights, minlength=fam.N_LETTERS) / weights.sum()
    assert np.allclose(np.exp(weighted.fields[0]), expected)
    assert np.allclose(np.exp(model.fields[0]), np.bincount(codes[:, 0], minlength=fam.N_LETTERS) / len(codes))
    drawn = ardca.sample_codes(model, 4000, np.random.default_rng(4))
    assert np.abs(np.bincount(drawn[:, 0], minlength=fam.N_LETTERS) / 4000 - np.exp(model.fields[0])).max() < 0.03


def test_letters_a_column_never_holds_are_never_drawn_and_a_constant_column_is_constant():
    columns = ["AWC", "CWC", "AWD", "DWC"] * 10  # column 2 always W
    model = ardca.fit(fam.encode_columns(columns))
    drawn = ardca.sample_codes(model, 500, np.random.default_rng(0))
    letters = [{fam.COLUMN_ALPHABET[c] for c in drawn[:, i]} for i in range(3)]
    assert letters[0] <= set("ACD") and letters[1] == {"W"} and letters[2] <= set("CD")


def test_identity_weights_count_near_duplicates():
    columns = ["ACDEFGHIKL", "ACDEFGHIKL", "ACDEFGHIKM", "WWWWWYYYYY"]  # 3 at ≥ 0.9 identity, 1 alone
    weights = ardca.identity_weights(fam.encode_columns(columns), identity=0.8)
    assert np.allclose(weights, [1 / 3, 1 / 3, 1 / 3, 1.0])
    with pytest.raises(InputError, match="identity"):
        ardca.identity_weights(fam.encode_columns(columns), identity=0)


def test_family_ardca_writes_n_score_sequences_like_the_floor(tmp_path):
    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    for split in fam.SPLIT_NAMES:
        write_fasta(data / f"{split}.a2m", [(f"{split}{k}", c) for k, c in enumerate(_copy_alignment(rng))])
    (data / "summary.json").write_text(json.dumps({"n_score": 25}))
    outs = []
    for name in ("a", "b"):
        argv = ["family-ardca", "--data-dir", str(data), "--out", str(tmp_path / f"{name}.fasta"),
                "--fit", str(tmp_path / f"{name}.json"), "--seed", "0"]
        assert main(argv) == 0
        outs.append(read_fasta(tmp_path / f"{name}.fasta"))
    assert len(outs[0]) == 25 and outs[0] == outs[1]
    fit = json.loads((tmp_path / "a.json").read_text())
    assert fit["n"] == 25 and fit["n_train"] == N_COPY and 0 < fit["n_effective"] <= N_COPY
