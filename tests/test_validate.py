"""The one validator of the verbs' flags (``infra/validate.py``): every flag of every verb has a check
that its default passes, every path flag says what it names, and what cannot be seen as root (an
unreadable input, a read-only output folder) is refused in one line naming the flag."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mdm_mi.cli import VERBS
from mdm_mi.infra import validate as v
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h


@dataclass(frozen=True)
class Toy:
    sequences: Path = field(metadata=h("input"))
    out: Path = field(metadata=h("output"))
    n_shards: int = field(default=1, metadata=h("shards"))
    shard: int = field(default=0, metadata=h("shard"))
    temperature: float = field(default=1.0, metadata=h("t"))
    n: int = field(default=1, metadata=h("items", item_bytes=lambda a: 1000))
    method: str = field(default="exact", metadata=h("how"))


def toy(tmp_path: Path, **changes) -> Toy:
    (tmp_path / "s.npy").write_bytes(b"\x93NUMPY")
    return Toy(**{"sequences": tmp_path / "s.npy", "out": tmp_path / "o" / "x.json"} | changes)


def refused(args) -> str:
    with pytest.raises(InputError) as exc:
        v.validate(args)
    return str(exc.value)


def test_a_good_toy_passes_and_writes_nothing(tmp_path):
    v.validate(toy(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npy"]


@pytest.mark.parametrize("change, expect", [
    ({"temperature": float("nan")}, "--temperature must be a finite number, got nan"),
    ({"temperature": float("-inf")}, "--temperature must be a finite number"),
    ({"temperature": -0.5}, "--temperature must be >= 0, got -0.5"),
    ({"n_shards": 0}, "--n-shards must be >= 1, got 0"),
    ({"shard": 2, "n_shards": 2}, "--shard must be <= 1, got 2"),
    ({"n": 10 ** 15}, "--n 1e+15 needs about 1000.0 PB"),
    ({"method": "EXACT"}, "--method must be one of exact, certified, topk, got 'EXACT'"),
    ({"method": ""}, "--method must be a non-empty word"),
    ({"sequences": Path("nope.npy")}, "--sequences nope.npy: file not found"),
])
def test_bad_values_are_refused_naming_the_flag(tmp_path, change, expect):
    assert expect in refused(toy(tmp_path, **change))


def test_a_folder_given_as_a_file_and_a_file_under_a_file(tmp_path):
    assert refused(toy(tmp_path, sequences=tmp_path)) == f"--sequences {tmp_path} is a folder; give a file"
    assert refused(toy(tmp_path, out=tmp_path)) == f"--out {tmp_path} is a folder; give a file name"
    assert "is a file, not a folder" in refused(toy(tmp_path, out=tmp_path / "s.npy" / "x.json"))


def test_an_unreadable_input_and_a_read_only_output_folder(tmp_path, monkeypatch):
    """Root reads and writes everything, so the permission the validator asks for is denied here."""
    args = toy(tmp_path)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == args.sequences else real(p, mode))
    assert refused(args) == f"--sequences {args.sequences} is not readable (permission denied)"
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    assert refused(args) == f"--out {args.out}: the folder {tmp_path} is not writable"


def test_binary_junk_where_text_is_meant(tmp_path):
    junk = tmp_path / "p.csv"
    junk.write_bytes(b"puzzle\n\x00\xff\xfe")
    with pytest.raises(InputError, match="is not a text file"):
        v._check_path("--puzzles", junk, v.FlagCheck(kind=v.TEXT))
    cut = tmp_path / "long.txt"  # a character cut by the probe's end is still text
    cut.write_bytes(b"a" * (v.TEXT_PROBE - 1) + "é".encode() + b"b")
    v._check_path("--puzzles", cut, v.FlagCheck(kind=v.TEXT))


def test_h_refuses_an_unknown_check_key():
    with pytest.raises(TypeError, match="unknown check keys"):
        h("x", minimum=1)


def test_every_path_flag_of_every_verb_says_what_it_names():
    unnamed = [f"{name} {v.flag_name(f)}" for name, verb in VERBS.items() for f, element, check in v.checks(verb.args)
               if element is Path and check.kind not in v.PATH_KINDS]
    assert unnamed == []


def test_every_default_passes_its_own_check():
    """A flag's default (the schema's, or the field's) is never refused: the checks and the defaults agree."""
    bad = []
    for name, verb in VERBS.items():
        for f, element, check in v.checks(verb.args):
            default = f.default
            if default is dataclasses.MISSING or default is None or callable(check.high) or element is Path:
                continue
            for item in default if isinstance(default, tuple) else (default,):
                try:
                    v._check_value(v.flag_name(f), item, element, check, None)
                except InputError as exc:
                    bad.append(f"{name}: {exc}")
    assert bad == []


# writers of a file outside infra/io.py's atomic helpers (a temporary name, then renamed); the comparison
# loops' antibody figure is left to their refactor, and the code generator rewrites source files
NOT_ATOMIC_YET = {"antibody/infill_runs.py", "sampling/codegen.py"}
DIRECT_WRITE = re.compile(r"open\([\"']w|\.savefig\((?!tmp)|(?<!tmp)\.write_(text|bytes)\(|np\.save\((?!fh)|torch\.save\(")


def test_every_output_is_written_atomically():
    """Nothing half-written is left behind: outputs go through ``atomic_path`` (infra/io.py) and its helpers."""
    src = Path(__file__).resolve().parents[1] / "src" / "mdm_mi"
    direct = [f"{p.relative_to(src)}:{n}" for p in sorted(src.rglob("*.py")) if str(p.relative_to(src)) not in NOT_ATOMIC_YET
              for n, line in enumerate(p.read_text().splitlines(), 1) if DIRECT_WRITE.search(line) and "tmp" not in line]
    assert direct == []
