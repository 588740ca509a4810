"""Write what the samplers' specs imply, so that a new sampler is one file and one list entry:

    python -m mdm_mi.sampling.codegen           # rewrite core/sampler_entries.py and the schema's sampler keys
    python -m mdm_mi.sampling.codegen --check   # exit 1 naming the files that are stale (a test runs it)

From the ``spec`` of each class in :data:`mdm_mi.sampling.registry.SAMPLER_LIST`, in its order, it writes
:mod:`mdm_mi.core.sampler_entries` (torch-free: the workflow reads it at DAG build): the table
``SAMPLERS`` (name → :class:`~mdm_mi.core.sampler_spec.SamplerSpec`), the decoding verbs' flags
``SamplerFlags`` (one field per flag an entry takes, written by the entry that introduces it), the
comparisons' ``SweptFlags`` (one required list per swept setting) and each comparison's lists with the
defaults of its schema section (``SudokuSweptFlags`` and ``ProteinSweptFlags``: every list;
``AntibodySweptFlags``: those beyond Algorithm 1's, whose λ list ``antibody-compare`` declares). In the schema it
adds each grid or swept setting's key that a section lacks, above that section's marker line
(``# sampler keys of <section>: ...``), as an empty list; keys written by hand stay as they are.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import yaml

from mdm_mi.core.sampler_spec import ALGORITHM_1, CALIBRATED_HELP, HEAD, ORACLE, TV_HEAD, SamplerSpec
from mdm_mi.core.sampler_table import swept_entries
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.schema import SCHEMA_PATH
from mdm_mi.sampling.registry import SAMPLER_LIST

ENTRIES_PATH = Path(__file__).resolve().parents[1] / "core" / "sampler_entries.py"
MARKER = "# sampler keys of "  # then the section, e.g. "sudoku.compare: ..."; new keys go above it
GRID_SECTIONS = ("sudoku.samplers", "protein.samplers")
SWEPT_SECTIONS = ("sudoku.compare", "protein.compare", "antibody.compare")
# (class, schema section, base, what a family reading each matrix needs): each comparison's swept lists,
# every one's default its section's; a class over SweptFlags gives all its lists (Algorithm 1's too) a
# default, one without gives those beyond Algorithm 1's
OPTIONAL_SWEPT = (("SudokuSweptFlags", "sudoku.compare", "SweptFlags", {}),
                  ("ProteinSweptFlags", "protein.compare", "SweptFlags", {}),
                  ("AntibodySweptFlags", "antibody.compare", None, {HEAD: "needs --head", TV_HEAD: "needs --tv-head"}))


def specs() -> dict[str, SamplerSpec]:
    """name → spec of every listed class, in list order; InputError for a class without a spec, a name
    given twice, or a ``uses_pairwise`` that disagrees with its spec."""
    out = {}
    for cls in SAMPLER_LIST:
        if not isinstance(cls.spec, SamplerSpec):
            raise InputError(f"sampler class {cls.__name__} has no spec (a SamplerSpec class attribute)")
        if cls.name in out:
            raise InputError(f"sampler name {cls.name!r} is given by two classes of SAMPLER_LIST")
        if cls.uses_pairwise != (cls.spec.pairwise is not None):
            raise InputError(f"sampler {cls.name!r}: uses_pairwise is {cls.uses_pairwise} but its spec's pairwise is {cls.spec.pairwise!r}")
        out[cls.name] = cls.spec
    return out


def _changed(value) -> list[tuple[str, object]]:
    """A dataclass's (field, value) pairs that differ from the field's default, in field order."""
    out = []
    for f in dataclasses.fields(value):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if getattr(value, f.name) != default:
            out.append((f.name, getattr(value, f.name)))
    return out


def code(value) -> str:
    """Python source for a spec's value: dataclasses with only their non-default fields, by keyword."""
    if dataclasses.is_dataclass(value):
        return f"{type(value).__name__}({', '.join(f'{k}={code(v)}' for k, v in _changed(value))})"
    if isinstance(value, tuple):
        inner = ", ".join(code(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {code(v)}" for k, v in value.items()) + "}"
    return repr(value)


def spec_lines(name: str, spec: SamplerSpec) -> list[str]:
    """One table entry, a line per non-default field."""
    return [f"    {name!r}: SamplerSpec(", *(f"        {k}={code(v)}," for k, v in _changed(spec)), "    ),"]


def _users(table: dict[str, SamplerSpec], flag: str) -> str:
    """The samplers taking ``flag`` for its help: the user ones, else all."""
    takers = [n for n, s in table.items() if flag in s.flags]
    return ", ".join([n for n in takers if table[n].user] or takers)


def flag_fields(table: dict[str, SamplerSpec]) -> list[str]:
    """``SamplerFlags``' field lines: ``sampler``, each flag in order of first use, ``oracle_tol``."""
    owners: dict[str, tuple[str, object]] = {}
    for name, spec in table.items():
        for flag, f in spec.own_flags.items():
            if flag in owners:
                raise InputError(f"flag {flag!r} is introduced by both {owners[flag][0]} and {name} (own_flags): keep one")
            owners[flag] = (name, f)
    lines = [f"    sampler: str = field(default={next(iter(table))!r}, metadata=h({' | '.join(table)!r}))"]
    for flag in dict.fromkeys(f for s in table.values() for f in s.flags):
        if flag not in owners:
            raise InputError(f"flag {flag!r} of {_users(table, flag)}: no entry introduces it (add it to one spec's own_flags)")
        f = owners[flag][1]
        text = f"{_users(table, flag)}: {f.help}" + (f"; {CALIBRATED_HELP}" if f.calibrated else "")
        if f.schema:
            lines.append(f"    {flag}: {f.type} = from_schema({f.schema!r}, {text!r})")
        else:
            lines.append(f"    {flag}: {f.type} = field(default={f.default!r}, metadata=h({text!r}))")
    oracle = ", ".join(n for n, s in table.items() if s.pairwise == ORACLE)
    lines.append(f"    oracle_tol: float = field(default=1e-3, metadata=h({oracle + ': certified probing tolerance (nats)'!r}))")
    return lines


def swept_fields(table: dict[str, SamplerSpec]) -> list[str]:
    """``SweptFlags``' field lines: one required list per swept setting (a rule's may be given empty)."""
    return [f"    {s.key}: tuple[float, ...] = field(metadata=h({s.help!r}, empty={name != ALGORITHM_1}))  # {name}'s"
            for name, s in swept_entries(table)]


def optional_fields(table: dict[str, SamplerSpec], section: str, needs: dict, every: bool) -> list[str]:
    """Field lines of the swept lists with their defaults from ``section``: every one, or (``every``
    false) those beyond Algorithm 1's."""
    lines = []
    for name, s in swept_entries(table):
        if name == ALGORITHM_1 and not every:
            continue
        text = s.help + (f"; {needs[table[name].pairwise]}" if table[name].pairwise in needs else "")
        lines.append(f"    {s.key}: tuple[float, ...] = from_schema({section + '.' + s.key!r}, {text!r}, kw_only=True, "
                     f"empty={name != ALGORITHM_1})")
    return lines


def entries_source(table: dict[str, SamplerSpec]) -> str:
    """The text of :mod:`mdm_mi.core.sampler_entries`."""
    optional = []
    for cls, section, base, needs in OPTIONAL_SWEPT:
        which = "Every swept list" if base else "The swept lists beyond Algorithm 1's"
        optional += ["", "", "@dataclass(frozen=True, kw_only=True)", f"class {cls}{f'({base})' if base else ''}:",
                     f'    """{which}, optional: their defaults are {section}\'s."""', "",
                     *optional_fields(table, section, needs, every=base is not None)]
    return "\n".join([
        '"""GENERATED by ``python -m mdm_mi.sampling.codegen`` from the ``spec`` of each class in',
        ":data:`mdm_mi.sampling.registry.SAMPLER_LIST`: do not edit; edit a spec and rerun it (a test fails while",
        "this file is stale). Read through :mod:`mdm_mi.core.sampler_table`; imports nothing heavy.\"\"\"",
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass, field",
        "",
        "from mdm_mi.core.sampler_spec import Calibration, Flag, SamplerSpec, Setting, Style",
        "from mdm_mi.infra.flags import from_schema, h",
        "",
        "SAMPLERS: dict[str, SamplerSpec] = {",
        *(line for name, spec in table.items() for line in spec_lines(name, spec)),
        "}",
        "",
        "",
        "@dataclass(frozen=True, kw_only=True)",
        "class SamplerFlags:",
        '    """The decoding flags of ``sudoku-evaluate``, ``solve``, ``generate`` and ``infill`` (inherited by their',
        "    arguments): one field per flag an entry of :data:`SAMPLERS` takes. Each sampler reads the ones its",
        "    entry names; an omitted (``None``) number takes the model's calibrated value",
        '    (:mod:`mdm_mi.core.fallbacks`)."""',
        "",
        *flag_fields(table),
        "",
        "",
        "@dataclass(frozen=True, kw_only=True)",
        "class SweptFlags:",
        '    """The comparison verbs\' flags of the swept settings (one per calibrated entry with an ``each``, in',
        '    table order): a tuple of values each, required here (each comparison\'s class below gives them its',
        '    schema section\'s defaults)."""',
        "",
        *swept_fields(table),
        *optional,
        "",
    ])


def _section(schema: dict, dotted: str) -> dict:
    node = schema
    for part in dotted.split("."):
        node = node["properties"][part]
    return node.get("properties", {})


def schema_source(text: str, table: dict[str, SamplerSpec]) -> str:
    """The schema's text with every grid and swept key a section lacks added above its marker."""
    schema = yaml.safe_load(text)
    wanted = {sec: [(s.key, f"{name}: {s.flag} values of the workflow's fixed grid, one run each; none: no runs")
                    for name, spec in table.items() for s in spec.grid if spec.grid] for sec in GRID_SECTIONS}
    wanted |= {sec: [(s.key, s.help) for _, s in swept_entries(table)] for sec in SWEPT_SECTIONS}
    lines, out = text.splitlines(keepends=True), []
    seen = set()
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(MARKER):
            sec = stripped[len(MARKER):].split(":", 1)[0]
            if sec not in wanted:
                raise InputError(f"{SCHEMA_PATH.name}: marker for {sec!r}, which the code generator does not know")
            seen.add(sec)
            have, pad = set(_section(schema, sec)), line[:len(line) - len(stripped)]
            for key, help_text in dict(wanted[sec]).items():
                if key not in have:
                    out.append(f"{pad}{key}: {{type: array, items: {{type: number, minimum: 0}}, default: [], "
                               f"description: {json.dumps(help_text, ensure_ascii=False)}}}\n")
        out.append(line)
    if seen != set(wanted):
        raise InputError(f"{SCHEMA_PATH.name}: no marker line for {', '.join(sorted(set(wanted) - seen))}")
    return "".join(out)


def stale(write: bool) -> list[str]:
    """The generated files whose text differs from what the specs give; rewritten when ``write``."""
    table = specs()
    targets = {ENTRIES_PATH: entries_source(table)}
    targets[SCHEMA_PATH] = schema_source(SCHEMA_PATH.read_text(), table)
    changed = [p for p, t in targets.items() if not p.is_file() or p.read_text() != t]
    if write:
        for p in changed:
            p.write_text(targets[p])
    return [str(p) for p in changed]


def codegen_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mdm_mi.sampling.codegen", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    args = ap.parse_args(argv)
    try:
        changed = stale(write=not args.check)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verb = "stale (run python -m mdm_mi.sampling.codegen)" if args.check else "written"
    print(f"{verb}: {', '.join(changed)}" if changed else "up to date", file=sys.stderr if changed and args.check else sys.stdout)
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(codegen_main())
