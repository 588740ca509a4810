"""Command line: ``python -m mdm_mi <verb> --flag value ...``.

Each verb is a frozen dataclass of arguments plus one library function. The parser is derived from
the dataclass fields (``foo_bar`` → ``--foo-bar``; a field without default is required), so the CLI
only parses and calls; no logic lives here. Every verb also takes the tracking flags
(``--tracking-uri``, ``--experiment``, ``--rule``, ``--wildcard k=v``, ``--config-hash``).

    python -m mdm_mi evaluate --help
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import typing
from typing import Callable

from mdm_mi.errors import InputError
from mdm_mi.tracking import TrackingArgs

VERBS: dict[str, tuple[type, Callable, str]] = {}


def h(text: str) -> dict:
    """Field metadata carrying a flag's help text: ``field(metadata=h("..."))``."""
    return {"help": text}


def verb(name: str, args_cls: type, help_text: str):
    """Register ``fn(args, tracker)`` as CLI verb ``name`` parsing into ``args_cls``."""

    def deco(fn):
        VERBS[name] = (args_cls, fn, help_text)
        return fn

    return deco


def _add_field(parser: argparse.ArgumentParser, f: dataclasses.Field, hints: dict) -> None:
    """Add one dataclass field as a ``--flag``."""
    flag, tp = "--" + f.name.replace("_", "-"), hints[f.name]
    kw: dict = {"help": f.metadata.get("help", ""), "dest": f.name}
    has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    if has_default:
        kw["default"] = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    else:
        kw["required"] = True
    origin, targs = typing.get_origin(tp), typing.get_args(tp)
    if tp is bool:
        kw["action"] = argparse.BooleanOptionalAction
    elif origin is tuple:
        kw.update(nargs="*" if has_default else "+", type=targs[0])
    elif origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        kw["type"] = next(a for a in targs if a is not type(None))
    else:
        kw["type"] = tp
    parser.add_argument(flag, **kw)


def _add_tracking(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("tracking (MLflow mirror of the files this job writes)")
    g.add_argument("--tracking-uri", default="none", help="MLflow URI, or 'none' to skip tracking")
    g.add_argument("--experiment", default="mdm-mi")
    g.add_argument("--rule", default="cli", help="rule name tag")
    g.add_argument("--wildcard", action="append", default=[], metavar="KEY=VALUE", help="wildcard tag")
    g.add_argument("--config-hash", default="", help="tag value; default: hash of this job's arguments")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per registered verb."""
    _register_all()
    parser = argparse.ArgumentParser(prog="mdm-mi", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, (args_cls, _, help_text) in sorted(VERBS.items()):
        p = sub.add_parser(name, help=help_text, description=help_text)
        hints = typing.get_type_hints(args_cls)
        for f in dataclasses.fields(args_cls):
            _add_field(p, f, hints)
        _add_tracking(p)
    return parser


def _tracking_args(ns: argparse.Namespace, args) -> TrackingArgs:
    """Tracking settings; the config-hash tag defaults to a hash of the job's own arguments, so it
    changes exactly when this job's configuration does."""
    wildcards = {}
    for item in ns.wildcard:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--wildcard expects KEY=VALUE, got {item!r}")
        wildcards[key] = value
    return TrackingArgs(ns.tracking_uri, ns.experiment, ns.rule, wildcards, ns.config_hash or args_hash(args))


def args_hash(args) -> str:
    """Short stable hash of a verb's argument dataclass."""
    text = json.dumps(dataclasses.asdict(args), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _register_all() -> None:
    """Import the modules that define verbs (each registers itself)."""
    from mdm_mi import jobs  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the verb; expected errors become one line on stderr and exit code 2."""
    from mdm_mi.errors import USER_ERRORS
    from mdm_mi.tracking import open_tracker

    ns = build_parser().parse_args(argv)
    args_cls, fn, _ = VERBS[ns.verb]
    args = args_cls(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(args_cls)})
    try:
        with open_tracker(_tracking_args(ns, args)) as tracker:
            fn(args, tracker)
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


