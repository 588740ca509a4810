"""The workflow's config schema, read once: the one home of each config key's default.

A workflow verb's flag fed from the config takes its default from here (:func:`mdm_mi.infra.flags.from_schema`),
so the number is written only in ``workflow/schemas/config.schema.yaml``:

    schema_default("sudoku.eval.batch_size")  # → 1000
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"
# libyaml's loader when pyyaml has it: it reads the schema in ~10 ms, the pure-Python one in ~130 ms, and
# every `import mdm_mi.cli` reads it (the verbs' defaults)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_schema(path: Path = SCHEMA_PATH) -> dict:
    """The YAML JSON-schema at ``path``, freshly parsed (the caller may change it)."""
    return yaml.load(Path(path).read_text(), Loader=_LOADER)


@functools.cache
def _schema() -> dict:
    """The schema, parsed once per process; never handed out (its dicts are shared)."""
    return read_schema()


def schema_default(key: str):
    """The schema's default of the config key ``key`` (``"section.sub.name"``); a list becomes a tuple
    (the verbs' list flags are tuples). KeyError names a key the schema lacks or gives no default."""
    node = _schema()
    *sections, name = key.split(".")
    for section in sections:
        node = node["properties"][section]
    try:
        value = node["properties"][name]["default"]
    except KeyError:
        raise KeyError(f"the config schema has no default for {key}") from None
    return tuple(value) if isinstance(value, list) else value
