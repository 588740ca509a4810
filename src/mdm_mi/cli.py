"""Command line: ``mdm-mi <verb> --flag value ...`` (or ``python -m mdm_mi``).

Each verb is a frozen dataclass of arguments plus one library function. The parser is derived from
the dataclass fields (``foo_bar`` → ``--foo-bar``; a field without default is required; a field
marked ``h(..., positional=True)`` is an optional positional argument), so the CLI only parses and
calls; no logic lives here. Workflow verbs also take the tracking flags (``--tracking-uri``,
``--experiment``, ``--rule``, ``--wildcard k=v``, ``--config-hash``); user verbs
(``verb(..., user=True)``) do not track. A verb returns its exit code (None = 0); bad input is one
``error: ...`` line on stderr and exit code 2.

    mdm-mi solve --help
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
USER_VERBS: set[str] = set()  # verbs people run by hand: no tracking flags
EXAMPLES: dict[str, str] = {}  # verb → examples shown at the end of its --help


def h(text: str, positional: bool = False, group: str | None = None) -> dict:
    """Field metadata carrying a flag's help text: ``field(metadata=h("..."))``; ``positional=True``
    makes the field an optional positional argument instead of a ``--flag``; ``group`` lists the flag
    under that heading in ``--help``."""
    return {"help": text, "positional": positional, "group": group}


def verb(name: str, args_cls: type, help_text: str, user: bool = False, examples: str = ""):
    """Register ``fn(args, tracker) -> exit code | None`` as CLI verb ``name`` parsing into
    ``args_cls``; ``user=True`` for verbs people run by hand (no tracking flags); ``examples`` end its
    ``--help``."""

    def deco(fn):
        VERBS[name] = (args_cls, fn, help_text)
        if user:
            USER_VERBS.add(name)
        if examples:
            EXAMPLES[name] = examples
        return fn

    return deco


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks and shows each flag's default when it has a value."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, [], argparse.SUPPRESS) and action.option_strings and text:
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one ``error: ...`` line (exit code 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def _add_field(parser: argparse.ArgumentParser, f: dataclasses.Field, hints: dict, groups: dict) -> None:
    """Add one dataclass field as a ``--flag`` (or an optional positional argument)."""
    flag, tp = "--" + f.name.replace("_", "-"), hints[f.name]
    kw: dict = {"help": f.metadata.get("help", ""), "dest": f.name}
    has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    if has_default:
        kw["default"] = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    else:
        kw["required"] = True
    if f.metadata.get("positional"):  # e.g. the PUZZLE of ``mdm-mi solve PUZZLE``
        flag = f.name
        kw = {"help": kw["help"], "default": kw.get("default"), "nargs": "?", "metavar": f.name.upper()}
    origin, targs = typing.get_origin(tp), typing.get_args(tp)
    if tp is bool:
        kw["action"] = argparse.BooleanOptionalAction
    elif origin is tuple:
        kw.update(nargs="*" if has_default else "+", type=targs[0])
    elif origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        kw["type"] = next(a for a in targs if a is not type(None))
    else:
        kw["type"] = tp
    group = f.metadata.get("group")
    if group and group not in groups:
        groups[group] = parser.add_argument_group(group)
    (groups[group] if group else parser).add_argument(flag, **kw)


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
    parser = _Parser(prog="mdm-mi", description="Masked diffusion models with mutual-information heads.",
                     epilog="Using the trained models: mdm-mi solve --help, mdm-mi mi-map --help, "
                            "mdm-mi evaluate --help.")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, (args_cls, _, help_text) in sorted(VERBS.items()):
        user = name in USER_VERBS
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                           formatter_class=_HelpFormatter)
        hints, groups = typing.get_type_hints(args_cls), {}
        for f in dataclasses.fields(args_cls):
            _add_field(p, f, hints, groups)
        if not user:
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
    from mdm_mi import jobs, user  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the verb → its exit code; expected errors become one line on stderr
    and exit code 2 (usage errors exit through argparse with the same one line)."""
    from mdm_mi.errors import USER_ERRORS
    from mdm_mi.tracking import NullTracker, open_tracker

    ns = build_parser().parse_args(argv)
    args_cls, fn, _ = VERBS[ns.verb]
    args = args_cls(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(args_cls)})
    try:
        if ns.verb in USER_VERBS:
            return fn(args, NullTracker()) or 0
        with open_tracker(_tracking_args(ns, args)) as tracker:
            return fn(args, tracker) or 0
    except USER_ERRORS as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)  # always one line
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


