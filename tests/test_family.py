"""The Kunitz family (Pfam PF00014) as aligned records: A2M parsing, the non-standard-letter policy,
identity-cluster splits, and the site-independent baselines (column profile, losses, draws)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mdm_mi.infra.errors import InputError
from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family import metrics as fm

REPO = Path(__file__).resolve().parents[1]
KUNITZ = REPO / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
N_KUNITZ, N_NONSTANDARD = 4219, 10
SUBSET = 1500  # records for the tests that do not need the whole family


@pytest.fixture(scope="module")
def records() -> list[fam.FamilyRecord]:
    return fam.parse_a2m(KUNITZ)


@pytest.fixture(scope="module")
def kept(records) -> list[fam.FamilyRecord]:
    return fam.drop_nonstandard(records)[0]


@pytest.fixture(scope="module")
def split(kept):
    return fam.cluster_split(kept, identity=0.8, seed=0)


def _raw_rows(path: Path) -> list[str]:
    return [row.replace("\n", "") for row in re.split(r"^>.*\n", path.read_text(), flags=re.MULTILINE)[1:]]


def test_parse_keeps_53_columns_and_the_protein_sequence(records):
    rows = _raw_rows(KUNITZ)
    assert len(records) == len(rows) == N_KUNITZ
    assert {len(r.columns) for r in records} == {fam.KUNITZ_MATCH_COLUMNS}
    for rec, row in zip(records, rows):
        assert rec.sequence == re.sub(r"[.\-]", "", row).upper()
        assert rec.columns == re.sub(r"[a-z.]", "", row)
        assert rec.row == row.replace(".", "")


def test_tiny_a2m_parses_as_expected(tmp_path):
    path = tmp_path / "tiny.a2m"
    path.write_text(">one first record\n..aC-D\nE.f.G\n\n>two\n.CW.D-..G.\n")
    assert fam.parse_a2m(path) == [
        fam.FamilyRecord("one", "ACDEFG", "C-DEG", "aC-DEfG"),
        fam.FamilyRecord("two", "CWDG", "CWD-G", "CWD-G"),
    ]


@pytest.mark.parametrize("text, needle", [
    ("ACD\n>a\nACD\n", "before the first"),
    (">a\nAC-D\n>b\nACD\n", "'b' has 3 match columns"),
    (">a\nAC*D\n", "'a' has characters outside"),
    (">a\nAC1D\n", "'a' has characters outside"),
    (">a\nACD\n>b\n--.-\n", "'b' has no residues"),
    (">a\nACD\n>\nACD\n", "has no name"),
    ("", "has no records"),
])
def test_malformed_a2m_is_an_input_error_naming_file_and_record(tmp_path, text, needle):
    path = tmp_path / "bad.a2m"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(needle)) as err:
        fam.parse_a2m(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_a2m_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not found"):
        fam.parse_a2m(tmp_path / "absent.a2m")


def test_nonstandard_letters_drop_the_record_and_are_reported(records, tmp_path):
    kept, report = fam.drop_nonstandard(records)
    assert len(report) == N_NONSTANDARD and len(kept) == N_KUNITZ - N_NONSTANDARD
    assert all(set(r.sequence) <= set(fam.AMINO_ACIDS) for r in kept)
    dropped = {d["name"] for d in report}
    assert not dropped & {r.name for r in kept}
    path = tmp_path / "x.a2m"
    path.write_text(">ok\nACD\n>ins\nAxCD\n>zed\nA-B\n")
    kept, report = fam.drop_nonstandard(fam.parse_a2m(path))
    assert [r.name for r in kept] == ["ok"]
    assert report == [{"name": "ins", "letters": "X", "positions": [2]},
                      {"name": "zed", "letters": "B", "positions": [2]}]


def test_pad_insertions_keeps_columns_and_residues(kept):
    sub = kept[:300]
    padded, reference = fam.pad_insertions([r.row for r in sub])
    assert {len(p) for p in padded} == {len(reference)} and reference.count("x") == fam.KUNITZ_MATCH_COLUMNS
    for rec, row in zip(sub, padded):
        assert "".join(c for c, m in zip(row, reference) if m == "x") == rec.columns
        assert row.replace("-", "").upper() == rec.sequence


def test_identity_counts_shared_residues_over_shared_columns():
    codes = fam.encode_columns(["ACDEFGHIKL", "ACDEFGHIKL", "ACDEFGHIKW", "ACDEF-----", "-----GHIKL",
                                "----FGHIKL"])
    ident = fam.pairwise_identity(codes, codes)
    assert np.allclose(np.diag(ident), 1.0) and np.allclose(ident, ident.T)
    assert ident[0, 1] == pytest.approx(1.0) and ident[0, 2] == pytest.approx(0.9)
    assert ident[0, 3] == pytest.approx(1.0)  # a fragment: 5 shared columns, all identical
    assert ident[3, 4] == pytest.approx(0.0)  # no shared column; gap = gap does not count
    assert ident[3, 5] == pytest.approx(1 / 2.5)  # 1 shared column, floored at half of 5 residues


def test_splits_are_disjoint_cover_everything_and_keep_clusters_whole(kept, split):
    names = [[r.name for r in part] for part in split]
    assert sum(map(len, names)) == len(kept) and set().union(*map(set, names)) == {r.name for r in kept}
    for got, want in zip(map(len, split), fam.DEFAULT_FRACTIONS):
        assert abs(got / len(kept) - want) < 0.02
    codes = [fam.encode_columns([r.columns for r in part]) for part in split]
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        assert fam.pairwise_identity(codes[a], codes[b]).max() < 0.8


def test_split_seed_reproducibility(kept):
    sub = kept[:SUBSET]
    first = [[r.name for r in part] for part in fam.cluster_split(sub, seed=3)]
    again = [[r.name for r in part] for part in fam.cluster_split(sub, seed=3)]
    other = [[r.name for r in part] for part in fam.cluster_split(sub, seed=4)]
    assert first == again and first != other


def test_bad_split_arguments_are_input_errors(kept):
    with pytest.raises(InputError, match="fractions"):
        fam.cluster_split(kept[:10], fractions=(0.5, 0.5, 0.5))
    with pytest.raises(InputError, match="identity"):
        fam.cluster_split(kept[:10], identity=0.0)


def test_column_profile_rows_are_distributions_with_pseudocounts(split):
    profile = fam.column_profile(split[0], pseudocount=0.5)
    assert profile.shape == (fam.KUNITZ_MATCH_COLUMNS, fam.N_LETTERS)
    assert np.allclose(profile.sum(1), 1) and profile.min() > 0
    one = fam.column_profile([fam.FamilyRecord("a", "AC", "A-C")], pseudocount=0.0)
    assert one[0, 0] == 1 and one[1, fam.GAP_INDEX] == 1 and one[2, 1] == 1


def test_baseline_losses_by_hand():
    train = [fam.FamilyRecord("t", "AC", "AC")]
    comp = fam.residue_composition(train, pseudocount=1.0)  # A, C: 2/22, others 1/22
    profile = fam.column_profile(train, pseudocount=1.0)  # own letter 2/22, others and gap 1/22
    heldout = [fam.FamilyRecord("h", "AKC", "A-", "Ak-c")]  # A at column 0; K and C are insertions
    want = -(np.log((2 / 22) / (21 / 22)) + np.log(1 / 22) + np.log(2 / 22)) / 3
    assert fam.profile_loss(profile, comp, heldout) == pytest.approx(want)
    assert fam.composition_loss(comp, heldout) == pytest.approx(-(2 * np.log(2 / 22) + np.log(1 / 22)) / 3)


def test_profile_beats_composition_on_the_reference(split):
    train, _, reference = split
    losses = fam.baseline_losses(train, reference)
    assert losses["profile_nats"] < losses["composition_nats"] - 0.5
    assert 2.5 < losses["composition_nats"] < np.log(20)
    assert losses["n_tokens"] == sum(len(r.sequence) for r in reference)


def test_profile_draws_match_sites_and_have_no_pair_structure(split):
    profile = fam.column_profile(split[0])
    draws = fam.sample_profile(profile, 800, np.random.default_rng(0))
    assert all(r.sequence == r.columns.replace("-", "") and r.sequence for r in draws)
    cols = [r.columns for r in draws]
    assert fm.pearson(fm.site_frequencies(cols), profile) > 0.99

    def noise_ratio(columns):  # Σ C² relative to its expectation for independent columns
        c, f = fm.connected_correlations(columns), fm.site_frequencies(columns)
        v = f * (1 - f)
        i, j = np.triu_indices(len(f), k=1)
        return (c**2).sum() * len(columns) / (v[i][:, :, None] * v[j][:, None, :]).sum()

    assert noise_ratio(cols) == pytest.approx(1.0, abs=0.1)
    assert noise_ratio([r.columns for r in split[0][:800]]) > 2.0
    assert abs(fm.correlation_r(cols, [r.columns for r in split[0]])) < 0.05


def test_profile_draws_are_seeded_and_follow_a_degenerate_profile():
    profile = np.zeros((3, fam.N_LETTERS))
    profile[0, 0], profile[1, fam.GAP_INDEX], profile[2, 4] = 1, 1, 1
    draws = fam.sample_profile(profile, 5, np.random.default_rng(1))
    assert {(r.columns, r.sequence) for r in draws} == {("A-F", "AF")}
    rand = np.full((4, fam.N_LETTERS), 1 / fam.N_LETTERS)
    a = fam.sample_profile(rand, 20, np.random.default_rng(7))
    assert a == fam.sample_profile(rand, 20, np.random.default_rng(7))
