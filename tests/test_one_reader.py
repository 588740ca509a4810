"""Issue 65 item 1: one reader of sequences, templates and puzzles (:mod:`mdm_mi.infra.reader`): spaces,
line breaks, case and the mask character are read once, the same way for every verb. The defects the
issue lists (``mi-map "MKTA _ _ QRQISFV"`` drawn as 4 tokens, a multi-line FASTA miscounting masks in
``mi-map --file``, ``infill --file`` upper-casing, ``generate --reference`` ignoring case) each have a
test, and a test lists the verbs and shows none reads its inputs outside the reader."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from hf_helpers import tiny_bert, tiny_text_bert
from user_verb_helpers import save_tiny_head

pytest.importorskip("transformers")

SPACED = "MKTA _ _ QRQ _ SFV"
WRITTEN = "MKTA__QRQ_SFV"


def _main(*argv) -> int:
    from mdm_mi.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    root = tmp_path_factory.mktemp("reader")
    model = tiny_bert(root / "model")
    assert _main("import-hf", "--weights", model) == 0
    return model, save_tiny_head(root / "head", in_dim=16)


def _map_csv(bert, tmp_path, name, *source) -> str:
    out = tmp_path / f"{name}.png"
    assert _main("mi-map", *source, "--model", bert[0], "--head", bert[1], "--out", out, "--quiet") == 0
    return out.with_suffix(".csv").read_text()


def test_reader_positions_are_one_rule():
    from mdm_mi.infra.reader import canonical, masked_count, positions

    assert positions(SPACED, one_char=True) == list(WRITTEN)
    assert positions("the  _\n##s _", one_char=False) == ["the", "_", "##s", "_"]
    assert canonical("mK a", one_char=True) == "mKa"  # case kept
    assert masked_count("MK\n_ _A_", one_char=True) == 3


def test_mi_map_reads_spaces_and_fasta_line_breaks_as_every_verb(bert, tmp_path):
    """The spaced argument, the written one and a multi-line FASTA record give the same map (3 masks)."""
    fasta = tmp_path / "one.fasta"
    fasta.write_text(">s1 a protein\nMKTA_\n_QRQ\n_SFV\n")
    written = _map_csv(bert, tmp_path, "written", WRITTEN)
    assert _map_csv(bert, tmp_path, "spaced", SPACED) == written
    assert _map_csv(bert, tmp_path, "fasta", "--file", fasta) == written


def test_mi_map_cell_counts_positions_the_same_way(bert, tmp_path, capsys):
    """``--cell 5`` is the first ``_`` of the spaced form, as of the written one (not a 4-token reading)."""
    assert _main("mi-map", SPACED, "--cell", 5, "--model", bert[0], "--head", bert[1], "--out",
                 tmp_path / "c.png", "--quiet") == 0
    assert _main("mi-map", SPACED, "--cell", 2, "--model", bert[0], "--head", bert[1], "--out",
                 tmp_path / "d.png") == 2
    assert "not masked" in capsys.readouterr().err


def test_infill_file_keeps_case_and_refuses_lowercase(bert, tmp_path, capsys):
    fasta = tmp_path / "t.fasta"
    fasta.write_text(">t1\nmkta__qrq\n")
    assert _main("infill", "--file", fasta, "--model", bert[0], "--sampler", "sequential") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'m'" in err and "t1" in err


def test_infill_file_reads_word_tokens_as_the_argument_does(tmp_path, capsys):
    """A text model's FASTA template is its tokens (line breaks separate them), not one upper-cased word."""
    model = tiny_text_bert(tmp_path / "text")
    assert _main("import-hf", "--weights", model, "--alphabet", "the,cat,sat,on,mat,dog,ran,##s") == 0
    fasta = tmp_path / "t.fasta"
    fasta.write_text(">t1\nthe _ sat\non the _\n")
    capsys.readouterr()
    assert _main("infill", "--file", fasta, "--model", model, "--sampler", "sequential") == 0
    fill = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(">")][0].split()
    assert len(fill) == 6 and fill[0] == "the" and fill[2] == "sat" and "_" not in fill


def test_generate_reference_refuses_lowercase(bert, tmp_path, capsys):
    ref = tmp_path / "ref.fasta"
    ref.write_text(">r1\nMKTAYIAKQR\n>r2\nmktayiakqr\n")
    assert _main("generate", "--model", bert[0], "--reference", ref, "--n", 2, "--sampler", "sequential",
                 "--out", tmp_path / "g.fasta") == 2
    err = capsys.readouterr().err
    assert "'r2'" in err and "upper case" in err and not (tmp_path / "g.fasta").exists()


# --- no verb reads its inputs outside the reader -----------------------------------------------------

LOW_LEVEL = {"read_text_input", "read_fasta", "stdin"}  # what only the reader (and the FASTA parser) call



def _called(module) -> set[str]:
    """Names of the low-level readers a module's source calls or touches (``sys.stdin``)."""
    tree = ast.parse(inspect.getsource(module))
    names = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return names & LOW_LEVEL


def test_no_verb_reads_its_inputs_outside_the_one_reader():
    """Every verb's module (and the library modules the user verbs read through) calls no low-level
    reader: sequences, templates and puzzles come from :mod:`mdm_mi.infra.reader`."""
    import importlib

    from mdm_mi.cli import VERBS

    modules = {v.run.__module__ for v in VERBS.values()}  # the data-prep verbs too (read_data_records)
    modules |= {"mdm_mi.sudoku.puzzles", "mdm_mi.protein.sequences", "mdm_mi.hf.model", "mdm_mi.hf.map",
                "mdm_mi.protein.map", "mdm_mi.sudoku.map"}
    offenders = {m: sorted(_called(importlib.import_module(m))) for m in sorted(modules)}
    assert not {m: c for m, c in offenders.items() if c}, offenders
    assert Path(inspect.getfile(importlib.import_module("mdm_mi.infra.reader"))).name == "reader.py"
