"""The one validator of the verbs' flags: every field of a verb's argument dataclass has a :class:`FlagCheck`,
and :func:`validate` applies them all before the verb does any work (the CLI calls it on every verb).

A field's check is its type's (a number is finite and >= 0, a string is non-empty and not padded with
spaces), then :data:`BY_NAME`'s for its name (``batch_size`` >= 1, ``out`` an output file, ``model`` an
existing folder), then what the field declares itself (``flags.h(..., low=-1)``, ``kind=OUT_FOLDER``):

    n: int = field(default=20, metadata=h("sequences", low=1, item_bytes=lambda a: 8 * a.max_length))
    validate(args)   # InputError "--n 1000000000000 needs about 800 GB, more than the 16 GB of memory"

Inputs are read-only checks (exists, the right kind, readable, text when text is meant); outputs are
checked without writing: not a folder where a file is meant, the nearest existing parent a writable
folder. A refusal is one :class:`~mdm_mi.infra.errors.InputError` naming the flag.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union, get_args, get_origin, get_type_hints

from mdm_mi.infra.errors import InputError

# what a path flag names
FILE = "file"  # an existing, readable file (binary allowed)
TEXT = "text"  # an existing, readable text file (UTF-8, no NUL bytes)
FOLDER = "folder"  # an existing, readable folder
ENTRY = "entry"  # an existing, readable file or folder
SEARCHED = "searched"  # a folder searched when it exists (``--results``): if it exists, a readable folder
OUT_FILE = "out-file"  # a file to write: not a folder; its nearest existing parent a writable folder
OUT_FOLDER = "out-folder"  # a folder to write into: a writable folder, or creatable
PATH_KINDS = (FILE, TEXT, FOLDER, ENTRY, SEARCHED, OUT_FILE, OUT_FOLDER)
INPUT_KINDS = (FILE, TEXT, FOLDER, ENTRY)
TEXT_PROBE = 1 << 16  # bytes of a text input read to check it is text

Bound = Union[float, Callable[[object], float], None]


@dataclass(frozen=True)
class FlagCheck:
    """What one flag accepts. ``low``/``high``: inclusive bounds of a number (a function of the verb's
    arguments for a bound that depends on another flag, or that returns None where none applies);
    ``above``: ``low`` excluded; ``below``: ``high`` excluded (``0 < x < 1``: ``above=True, high=1,
    below=True``); ``min_items``: the fewest values a list flag takes (``--runs`` two or more); ``kind``: what a
    path names (:data:`PATH_KINDS`); ``choices`` / ``pattern``: a string's allowed values (case
    counts); ``item_bytes``: a count's memory per item (a function of the arguments, or bytes), so
    ``value × item_bytes`` must fit in the machine's memory; ``stdin``: ``-`` means standard input;
    ``file_or_text``: a string naming a file when one exists there (``--alphabet``); ``raw``: a string
    handed whole to a reader (a positional puzzle or template), not a word."""

    low: Bound = 0
    high: Bound = None
    above: bool = False
    below: bool = False
    min_items: int = 0
    kind: str | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None
    item_bytes: Bound = None
    stdin: bool = False
    file_or_text: bool = False
    raw: bool = False


CHECK_KEYS = tuple(f.name for f in dataclasses.fields(FlagCheck))
DEVICE = r"auto|cpu|cuda(:\d+)?"
TRACKING_URI = r"none|sqlite:///\S+|file:\S+|https?://\S+"  # where a job's MLflow record goes
NAME_TAG = r"[A-Za-z_][\w-]*"  # a rule's name, a wildcard's key
WILDCARD = NAME_TAG + r"=\S*"
PATTERNS = {DEVICE: "auto, cpu, cuda or cuda:<index>",  # how a pattern reads in an error line
            TRACKING_URI: "none, sqlite:///PATH, file:PATH or http(s)://HOST", NAME_TAG: "a name (letters, digits, _ or -)",
            WILDCARD: "KEY=VALUE (a name, then = and a value without spaces)"}

# The checks of the flags many verbs share, by field name; a field's own declaration wins.
BY_NAME: dict[str, dict] = {
    # outputs
    "out": {"kind": OUT_FILE}, "out_dir": {"kind": OUT_FOLDER}, "figure_dir": {"kind": OUT_FOLDER},
    "chunks": {"kind": OUT_FOLDER}, "dest": {"kind": OUT_FOLDER}, "markdown": {"kind": OUT_FILE},
    "summary_out": {"kind": OUT_FILE}, "per_puzzle": {"kind": OUT_FILE}, "ranks": {"kind": OUT_FILE},
    "fit": {"kind": OUT_FILE}, "csv": {"kind": OUT_FILE}, "json": {"kind": OUT_FILE},
    # inputs
    "model": {"kind": FOLDER}, "head": {"kind": FOLDER}, "tv_head": {"kind": FOLDER}, "embedder": {"kind": FOLDER},
    "init_from": {"kind": FOLDER}, "data_dir": {"kind": FOLDER}, "budgets_dir": {"kind": FOLDER},
    "compare_dir": {"kind": FOLDER}, "parts": {"kind": FOLDER}, "results": {"kind": SEARCHED},
    "sequences": {"kind": FILE}, "solutions": {"kind": FILE}, "labels": {"kind": FILE}, "val": {"kind": FILE},
    "test": {"kind": FILE}, "inputs": {"kind": TEXT}, "table": {"kind": TEXT}, "puzzles": {"kind": TEXT},
    "reference": {"kind": TEXT}, "reference2": {"kind": TEXT}, "fasta": {"kind": TEXT}, "generated": {"kind": TEXT},
    "alignment": {"kind": TEXT}, "tsv": {"kind": TEXT}, "radcliffe": {"kind": TEXT}, "easy": {"kind": TEXT},
    "scores": {"kind": TEXT}, "covariation": {"kind": TEXT}, "references": {"kind": TEXT}, "loss": {"kind": TEXT},
    "about": {"kind": TEXT}, "data": {"kind": ENTRY}, "testbed_runs": {"kind": TEXT}, "config": {"kind": TEXT},
    "file": {"kind": TEXT, "stdin": True}, "weights": {"kind": FOLDER}, "a2m": {"kind": TEXT},
    "reference_fasta": {"kind": TEXT}, "train_fasta": {"kind": TEXT}, "train": {"kind": TEXT},
    "summary": {"kind": TEXT}, "root": {"kind": FOLDER}, "runs": {"kind": ENTRY},
    # counts: at least one, and what one costs in memory (a lower bound) where they allocate
    "n": {"low": 1, "item_bytes": 64}, "n_contexts": {"low": 1, "item_bytes": 64},
    "batch_size": {"low": 1, "item_bytes": 64}, "n_test": {"low": 1, "item_bytes": 64},
    "n_calibration": {"low": 1, "item_bytes": 64}, "calib_puzzles": {"low": 1, "item_bytes": 64},
    "test_puzzles": {"low": 1, "item_bytes": 64}, "puzzles_n": {"low": 1}, "bootstrap": {"low": 1, "item_bytes": 8},
    "n_noise_contexts": {"low": 1, "item_bytes": 64}, "fills": {"low": 2, "item_bytes": 64},
    "n_shards": {"low": 1}, "shard": {"high": lambda a: a.n_shards - 1}, "steps": {"low": 1},
    "hidden": {"low": 1, "item_bytes": 64}, "heads": {"low": 1}, "rank": {"low": 1}, "clusters": {"low": 2},
    "d_model": {"low": 1, "item_bytes": 64}, "n_heads": {"low": 1}, "n_layers": {"low": 1}, "ff_mult": {"low": 1},
    "divisors": {"low": 1}, "divisor": {"low": 1}, "oracle_divisors": {"low": 1}, "log_every": {"low": 1},
    "k": {"low": 1}, "hidden_layer": {"low": None}, "max_length": {"low": 1}, "min_length": {"low": 1},
    "graded_per_level": {"low": 1},
    # rates and tolerances
    "lr": {"above": True}, "tol": {"above": True}, "oracle_tol": {"above": True}, "t_min": {"high": 1},
    "t_max": {"high": 1}, "ema": {"high": 1}, "dropout": {"high": 1}, "mask_fraction": {"high": 1},
    "calibration_fraction": {"high": 1}, "test_fraction": {"high": 1}, "rates": {"high": 1},
    "heldout_fraction": {"above": True, "high": 1, "below": True},  # some held out, some kept: 0 < f < 1
    # words
    "device": {"pattern": DEVICE}, "tracking_uri": {"pattern": TRACKING_URI}, "method": {"choices": ("exact", "certified", "topk")},
    "split": {"choices": ("all", "val", "test")}, "target": {"choices": ("mi", "tv")},
    "on_reject": {"choices": ("skip", "stop")}, "mi_on_reject": {"choices": ("skip", "stop")},
    "loss_weight": {"choices": ("none", "elbo")}, "order": {"choices": ("entropy", "margin")},
}

def flag_name(f: dataclasses.Field) -> str:
    """How the CLI spells a field: ``--foo-bar``, or ``FOO`` for a positional argument."""
    return f.name.upper() if f.metadata.get("positional") else "--" + f.name.replace("_", "-")


def base_type(tp):
    """``(element type, is a tuple)`` of a field's type: ``int | None`` → ``(int, False)``,
    ``tuple[Path, ...]`` → ``(Path, True)``."""
    origin, targs = get_origin(tp), get_args(tp)
    if origin is tuple:
        return base_type(targs[0])[0], True
    if targs and type(None) in targs:
        return next(a for a in targs if a is not type(None)), False
    return tp, False


def check_of(f: dataclasses.Field, tp) -> FlagCheck:
    """The field's check: its type's, then :data:`BY_NAME`'s, then its own (``metadata["check"]``)."""
    element, _ = base_type(tp)
    check = FlagCheck(low=0) if element in (int, float) else FlagCheck(low=None, raw=bool(f.metadata.get("positional")))
    by_name = BY_NAME.get(f.name, {})
    if element is not Path:  # a count named like a file flag (``--puzzles 300``)
        by_name = {k: v for k, v in by_name.items() if k not in ("kind", "stdin")}
    return dataclasses.replace(check, **(by_name | f.metadata.get("check", {})))


def checks(cls) -> list[tuple[dataclasses.Field, type, FlagCheck]]:
    """Every field of the argument dataclass ``cls`` with its element type and check."""
    hints = get_type_hints(cls)
    return [(f, base_type(hints[f.name])[0], check_of(f, hints[f.name])) for f in dataclasses.fields(cls)]


def validate(args) -> None:
    """Apply every field's check to the verb arguments ``args`` (a dataclass instance), in field order
    (those whose bounds read other flags last); the first refusal is one :class:`InputError` naming its
    flag. Writes nothing; reads only the first :data:`TEXT_PROBE` bytes of a text input."""
    # a bound read from another flag (``--shard`` <= ``--n-shards`` - 1) is checked after every plain one
    ordered = sorted(checks(type(args)), key=lambda c: any(map(callable, (c[2].low, c[2].high, c[2].item_bytes))))
    for f, element, check in ordered:
        value = getattr(args, f.name)
        if isinstance(value, (tuple, list)) and len(value) < check.min_items:
            raise InputError(f"{flag_name(f)} needs at least {check.min_items} "
                             f"value{'s' if check.min_items > 1 else ''}, got {len(value)}")
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if item is not None:
                _check_value(flag_name(f), item, element, check, args)


def _check_value(flag: str, value, element, check: FlagCheck, args) -> None:
    if element is bool:
        return
    if element in (int, float):
        _check_number(flag, value, check, args)
    elif element is Path or check.kind is not None:
        _check_path(flag, Path(value), check)
    elif element is str:
        _check_text(flag, value, check)


def _bound(bound: Bound, args):
    return bound(args) if callable(bound) else bound


def _check_number(flag: str, value, check: FlagCheck, args) -> None:
    if not math.isfinite(value):
        raise InputError(f"{flag} must be a finite number, got {value}")
    low, high = _bound(check.low, args), _bound(check.high, args)
    if low is not None and (value <= low if check.above else value < low):
        raise InputError(f"{flag} must be {'>' if check.above else '>='} {low:g}, got {value:g}")
    if high is not None and (value >= high if check.below else value > high):
        raise InputError(f"{flag} must be {'<' if check.below else '<='} {high:g}, got {value:g}")
    if check.item_bytes is not None:
        fits_in_memory(flag, value, _bound(check.item_bytes, args))


def memory_bytes() -> int:
    """This machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return ""


def fits_in_memory(flag: str, count: float, item_bytes: float) -> None:
    """Refuse ``count`` items of ``item_bytes`` each when they would not fit in this machine's memory:
    estimated before anything is allocated (an allocator's error is a traceback)."""
    need, have = count * item_bytes, memory_bytes()
    if need > have:
        raise InputError(f"{flag} {count:g} needs about {_size(need)}, more than this machine's {_size(have)} "
                         "of memory: give a smaller value")


def _check_text(flag: str, value: str, check: FlagCheck) -> None:
    if check.file_or_text and os.path.lexists(value):
        _check_path(flag, Path(value), dataclasses.replace(check, kind=TEXT))
        return
    if check.raw:
        return
    if value != value.strip() or not value:
        raise InputError(f"{flag} must be a non-empty word without leading or trailing spaces, got {value!r}")
    if check.choices is not None and value not in check.choices:
        raise InputError(f"{flag} must be one of {', '.join(check.choices)}, got {value!r}")
    if check.pattern is not None and not re.fullmatch(check.pattern, value):
        raise InputError(f"{flag} must be {PATTERNS.get(check.pattern, check.pattern)}, got {value!r}")


def _check_path(flag: str, path: Path, check: FlagCheck) -> None:
    text = str(path)
    if not text or text != text.strip() or "\0" in text:
        raise InputError(f"{flag} must name a path without leading or trailing spaces, got {text!r}")
    if check.stdin and text == "-":
        return
    if check.kind in INPUT_KINDS or (check.kind == SEARCHED and os.path.lexists(path)):
        _check_input(flag, path, FOLDER if check.kind == SEARCHED else check.kind)
    elif check.kind in (OUT_FILE, OUT_FOLDER):
        check_writable(flag, path, folder=check.kind == OUT_FOLDER)


def _check_input(flag: str, path: Path, kind: str) -> None:
    if not path.exists():
        what = {FOLDER: "folder", ENTRY: "file or folder"}.get(kind, "file")
        raise InputError(f"{flag} {path}: {what} not found")
    if kind in (FILE, TEXT) and path.is_dir():
        raise InputError(f"{flag} {path} is a folder; give a file")
    if kind == FOLDER and not path.is_dir():
        raise InputError(f"{flag} {path} is a file; give a folder")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise InputError(f"{flag} {path} is not readable (permission denied)")
    if kind == TEXT and not _is_text(path):
        raise InputError(f"{flag} {path} is not a text file (binary or not UTF-8)")


def _is_text(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(TEXT_PROBE)
    except OSError:
        return False
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the probe's end is still text
        return len(head) == TEXT_PROBE and exc.start >= len(head) - 3
    return True


def check_writable(flag: str, path: Path, folder: bool = False) -> None:
    """An output path is usable, checked without writing anything: a file is not an existing folder (a
    folder not an existing file), and the nearest existing parent is a writable folder."""
    if path.is_dir() and not folder:
        raise InputError(f"{flag} {path} is a folder; give a file name")
    if path.exists() and folder and not path.is_dir():
        raise InputError(f"{flag} {path} is a file; give a folder")
    parent = path if folder and path.is_dir() else path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: the folder {parent} is not writable")
