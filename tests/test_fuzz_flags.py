"""The flag fuzzer: bad values for every flag of every verb of ``mdm-mi --help`` (NaN, ±inf, below or
above a bound, huge counts, empty, padded with spaces, wrong case, a missing, unreadable or binary file,
a folder where a file is meant and the reverse, an output under a file or in a read-only folder), each
through the real parser and validator in-process. Each must exit 2 with exactly one ``error:`` line
naming the flag, no traceback, nothing on stdout and nothing written: the validator refuses it before
the verb does any work.

The other flags of a case hold values their checks accept (:func:`good_value`); the table of cases is
exhaustive and seeded, and a hypothesis property draws further bad numbers and words.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import get_type_hints

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mdm_mi import cli
from mdm_mi.cli import VERBS
from mdm_mi.infra import validate as v
from mdm_mi.infra.flags import TrackingFlags

GOOD_FILE, GOOD_DIR, JUNK = "ok.txt", "okdir", "junk.bin"
UNREADABLE = "unreadable.txt"  # os.access says no (root reads everything, so the test denies it)
READ_ONLY = "readonly"  # a folder os.access calls not writable
TOO_FEW = "<too few values>"  # a list flag given one value fewer than its min_items (none for 1)


def _fields(verb: str):
    """The verb's fields with their element type and check, without the ones no value can make bad
    (booleans: a switch; a raw positional: handed whole to the verb's reader)."""
    return [(f, element, check) for f, element, check in v.checks(VERBS[verb].args)
            if element is not bool and not (element is str and check.raw)]


def _plain(bound) -> float | None:
    return None if bound is None or callable(bound) else bound


def good_value(f, element, check) -> str:
    """A value ``check`` accepts, for the flags of a case other than the one made bad."""
    if element in (int, float):
        low, high = _plain(check.low), _plain(check.high)
        value = (low or 0) + (1 if check.above else 0) if low is not None else 0
        value = min(value, high) if high is not None else value
        if check.below and high is not None and value >= high:  # an excluded upper bound: just under it
            value = (max(low or 0, high - 1) + high) / 2 if element is float else high - 1
        return str(int(value) if element is int else float(value))
    if element is Path:
        kind = check.kind
        return {v.FILE: GOOD_FILE, v.TEXT: GOOD_FILE, v.FOLDER: GOOD_DIR, v.ENTRY: GOOD_DIR, v.SEARCHED: GOOD_DIR,
                v.OUT_FILE: f"out/{f.name}.txt", v.OUT_FOLDER: f"out/{f.name}"}[kind]
    if check.choices:
        return check.choices[0]
    return {v.DEVICE: "cpu", v.TRACKING_URI: "none", v.WILDCARD: "k=v"}.get(check.pattern, "word")


def case_args(verb: str) -> SimpleNamespace:
    """The arguments of a case of ``verb`` but its bad flag: the defaults, and the good values of the
    required flags (what a bound that is a function of the arguments reads)."""
    hints = get_type_hints(VERBS[verb].args)

    def typed(f, element, check):
        one = good_value(f, element, check)
        one = element(one) if element in (int, float) else Path(one) if element is Path else one
        return (one,) * max(1, check.min_items) if v.base_type(hints[f.name])[1] else one
    return SimpleNamespace(**{f.name: typed(f, element, check) if f.default is v.dataclasses.MISSING else f.default
                              for f, element, check in v.checks(VERBS[verb].args)})


def bad_values(element, check, args=None) -> list[str]:
    """Values ``check`` must refuse, by the flag's type and what it declares (``args``: the case's
    other arguments, which a bound that is a function of them reads)."""
    bad = [TOO_FEW] if check.min_items else []
    if element in (int, float):
        bad += ["nan", "inf", "-inf"] if element is float else ["1.5", "ten"]
        low, high = _plain(check.low), _plain(check.high)
        if low is not None:
            bad.append(str(low) if check.above else str(low - 1))
        if high is not None:
            bad.append(str(high) if check.below else str(high + 1))
        if callable(check.high) and (args is None or check.high(args) is not None):
            bad.append("999")
        if check.item_bytes is not None:
            bad.append(str(10 ** 18))
        return bad
    if element is Path:
        bad += ["", " padded"]
        if check.kind in (v.FILE, v.TEXT):
            bad += ["missing.txt", GOOD_DIR, UNREADABLE]
        if check.kind == v.TEXT:
            bad.append(JUNK)
        if check.kind in (v.FOLDER, v.SEARCHED):
            bad += [GOOD_FILE, f"{UNREADABLE}"]
        if check.kind == v.FOLDER:
            bad.append("missing-folder")
        if check.kind == v.ENTRY:
            bad += ["missing", UNREADABLE]
        if check.kind in (v.OUT_FILE, v.OUT_FOLDER):
            bad += [f"{GOOD_FILE}/under-a-file", f"{READ_ONLY}/x"]
        if check.kind == v.OUT_FILE:
            bad.append(GOOD_DIR)
        if check.kind == v.OUT_FOLDER:
            bad.append(GOOD_FILE)
        return bad
    bad += ["", " word", "word "]
    if check.choices:
        bad.append(check.choices[0].upper())
    if check.pattern == v.DEVICE:
        bad.append("CPU")
    return bad


def argv_for(verb: str, bad_field: str, bad: str) -> list[str]:
    """``verb`` with every required flag given a good value and ``bad_field`` given ``bad``."""
    argv = [verb]
    for f, element, check in v.checks(VERBS[verb].args):
        required = f.default is v.dataclasses.MISSING and f.default_factory is v.dataclasses.MISSING
        if f.name != bad_field and not required:
            continue
        flag = v.flag_name(f)
        if element is bool:
            argv.append(flag)
            continue
        good = good_value(f, element, check)
        value = bad if f.name == bad_field else good
        if value == TOO_FEW:
            argv += [flag, *[good] * (check.min_items - 1)]
        elif check.min_items > 1:  # the values apart: one after "=" is the flag's only value
            assert not value.startswith("-"), (verb, f.name, value)
            argv += [flag, value, *[good] * (check.min_items - 1)]
        else:
            argv.append(value if f.metadata.get("positional") else f"{flag}={value}")  # = keeps "-inf" a value
    return argv


CASES = [(verb, f.name, bad) for verb in sorted(VERBS) for f, element, check in _fields(verb)
         for bad in bad_values(element, check, case_args(verb))]


TRACKED = [verb for verb in sorted(VERBS) if not VERBS[verb].user]  # the verbs that take the tracking flags
TRACKING = [(f, element, check) for f, element, check in v.checks(TrackingFlags)]


def tracking_bad_values(f, element, check) -> list[str]:
    """:func:`bad_values`, and for the patterned words what their pattern refuses."""
    more = {"tracking_uri": ["ftp://host", "sqlite://", "None"], "wildcard": ["oops", "=v", "k=a b", "1k=v"],
            "rule": ["two words", "-x"]}
    return bad_values(element, check) + more.get(f.name, [])


TRACKING_CASES = [(verb, f.name, bad) for verb in TRACKED for f, element, check in TRACKING
                  for bad in tracking_bad_values(f, element, check)]


def listed_verbs() -> set[str]:
    """The verbs ``mdm-mi --help`` lists."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["--help"])
    return set(re.findall(r"^    ([a-z][a-z0-9-]+)\s", out.getvalue(), flags=re.M))


def test_the_fuzzer_covers_every_verb_of_the_help():
    covered = {verb for verb, _, _ in CASES}
    assert listed_verbs() == set(VERBS)
    assert listed_verbs() - covered == set()


def test_every_flag_that_can_be_bad_gets_a_bad_value():
    covered = {(verb, name) for verb, name, _ in CASES}
    assert all((verb, f.name) in covered for verb in VERBS for f, _, _ in _fields(verb))


@pytest.fixture(scope="module")
def fast_parser():
    """One parser for every case (building it costs ~50 ms, parsing ~1 ms)."""
    built = functools.cache(cli.build_parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "build_parser", built)
        yield


@pytest.fixture
def field(tmp_path, monkeypatch, fast_parser):
    """A working folder with the good inputs, the junk file, and what os.access denies."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / GOOD_FILE).write_text("x\n")
    (tmp_path / UNREADABLE).write_text("x\n")
    (tmp_path / JUNK).write_bytes(b"\x00\xff\xfe junk")
    (tmp_path / GOOD_DIR).mkdir()
    (tmp_path / READ_ONLY).mkdir()
    denied = {os.path.abspath(UNREADABLE): os.R_OK, os.path.abspath(READ_ONLY): os.W_OK}
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if denied.get(os.path.abspath(p), 0) & mode
                        else real(p, mode))
    return tmp_path


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def run_case(argv: list[str], flag: str, root: Path) -> None:
    before = snapshot(root)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # usage errors exit through argparse
            code = exc.code
    lines = err.getvalue().splitlines()
    assert code == 2, (argv, err.getvalue())
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err.getvalue())
    assert flag in lines[0], (argv, lines[0])
    assert "Traceback" not in err.getvalue() and out.getvalue() == "", argv
    assert snapshot(root) == before, argv


def test_every_bad_value_of_every_flag_is_one_error_line_and_writes_nothing(field):
    """The whole table (a few thousand cases) in one test: in-process, so it takes seconds."""
    for verb, name, bad in CASES:
        f = next(f for f, _, _ in v.checks(VERBS[verb].args) if f.name == name)
        run_case(argv_for(verb, name, bad), v.flag_name(f), field)


def test_every_bad_tracking_flag_of_every_workflow_verb_is_one_error_line_and_writes_nothing(field):
    """The tracking flags (:class:`TrackingFlags`) of every verb that tracks: refused by the same validator,
    before the job opens a run or does any work."""
    assert {f.name for f, _, _ in TRACKING} == {"tracking_uri", "experiment", "rule", "wildcard", "config_hash"}
    for verb, name, bad in TRACKING_CASES:
        flag = v.flag_name(next(f for f, _, _ in TRACKING if f.name == name))
        run_case(argv_for(verb, None, None) + [f"{flag}={bad}"], flag, field)


NUMBERS = [(verb, f, element, check) for verb in sorted(VERBS) for f, element, check in _fields(verb)
           if element is float and _plain(check.low) is not None]


def _refused_float(check, x: float) -> bool:
    low, high = _plain(check.low), _plain(check.high)
    return (not math.isfinite(x) or x < low or (check.above and x <= low) or (high is not None and x > high)
            or (check.below and high is not None and x >= high))


@settings(max_examples=150, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_drawn_bad_numbers_and_words_are_refused(field, data):
    """Seeded (derandomized) draws beyond the table: any out-of-range or non-finite float of any float
    flag, and any word with surrounding whitespace of any word flag."""
    if data.draw(st.booleans()):
        verb, f, element, check = data.draw(st.sampled_from(NUMBERS))
        x = data.draw(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: _refused_float(check, x)))
        bad = repr(x)
    else:
        verb, f, element, check = data.draw(st.sampled_from(
            [(verb, f, e, c) for verb in sorted(VERBS) for f, e, c in _fields(verb) if e is str]))
        word = data.draw(st.text(alphabet="abcXYZ-_.", min_size=1, max_size=8))
        bad = data.draw(st.sampled_from([" ", "\t", "  "])) + word
    run_case(argv_for(verb, f.name, bad), v.flag_name(f), field)
