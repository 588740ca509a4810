"""Configuration: YAML → JSON-schema validation with defaults → plain dict.

The schema (``workflow/schemas/config.schema.yaml``) is the one home of every default and rejects
unknown keys, so a typo fails at parse time with the offending key named.

    cfg = load_config("config/smoke.yaml")
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import jsonschema
import yaml

from mdm_mi.infra.errors import UserError
from mdm_mi.infra.schema import SCHEMA_PATH, read_schema

# A renamed key (its section, old name) → its new name in the same section, or its new path from the
# config's root (a key moved to another section); the old one is read for one release (CHANGELOG.md).
DEPRECATED_KEYS: dict[tuple[str, ...], str | tuple[str, ...]] = {
    ("sudoku", "compare", "rule_sets"): "extra_family_sets",
    **{("sudoku", "compare", f"oracle_{k}"): ("sudoku", "oracle", k) for k in ("puzzles", "divisors", "tol", "batch_size")},
    **{("protein", "family", f"oracle_{k}"): ("protein", "oracle", k) for k in ("n", "divisors", "tol", "batch_size")},
}


class ConfigError(UserError):
    """A configuration that does not satisfy the schema."""


def _with_defaults(validator_cls):
    """A validator class that also fills in ``default`` values (as Snakemake's validate does)."""
    validate_props = validator_cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(key, json.loads(json.dumps(sub["default"])))
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_cls, {"properties": set_defaults})


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    """Read the YAML JSON-schema (a fresh copy: the caller may change it)."""
    return read_schema(path)


def rename_deprecated(cfg: dict, warn=lambda line: print(line, file=sys.stderr)) -> None:
    """Move each key of :data:`DEPRECATED_KEYS` that ``cfg`` sets to its new name, in place, with one
    ``warn`` line each. The old name wins over the new one: the workflow merges a user's config over
    ``config/config.yaml``, which spells the new name, so an old name can only be the user's."""
    for (*section, old), new in DEPRECATED_KEYS.items():
        node = cfg
        for name in section:
            node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, dict) or old not in node:
            continue
        *target, key = (*section, new) if isinstance(new, str) else new
        dest = cfg
        for depth, name in enumerate(target, 1):
            dest = dest.setdefault(name, {})
            if not isinstance(dest, dict):
                raise ConfigError(f"config error at {'/'.join(target[:depth])}: expected a mapping, "
                                  f"got {type(dest).__name__}")
        over = f" (over the {key} also set)" if key in dest else ""
        dest[key] = node.pop(old)
        warn(f"config: {'/'.join(section)}/{old} is deprecated and will be removed in the next release; "
             f"it is read as {'/'.join(target)}/{key}{over}")


def validate_config(cfg: dict, schema: dict | None = None) -> dict:
    """Fill defaults into ``cfg`` in place and validate it (a deprecated key first moved to its new name:
    :func:`rename_deprecated`); raise :class:`ConfigError` naming the key."""
    rename_deprecated(cfg)
    schema = schema or load_schema()
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "<top level>"
        raise ConfigError(f"config error at {where}: {err.message}{_suggestion(err)}")
    _check_ranges(cfg)
    return cfg


def _suggestion(err) -> str:
    """``" (did you mean 'steps'?)"`` for a misspelt key close to a known one, else ``""``."""
    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return ""
    known = list(err.schema.get("properties", {}))
    for key in err.instance:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            if close:
                return f" (did you mean {close[0]!r} for {key!r}?)"
    return ""


def _check_ranges(cfg: dict) -> None:
    """Cross-field checks that JSON schema cannot express."""
    train = cfg["sudoku"]["train"]
    if train["t_min"] > train["t_max"]:
        raise ConfigError(f"config error at sudoku/train: t_min {train['t_min']} > t_max {train['t_max']}")
    model = cfg["sudoku"]["model"]
    if model["d_model"] % model["n_heads"]:
        raise ConfigError(
            f"config error at sudoku/model: d_model {model['d_model']} not divisible by n_heads {model['n_heads']}"
        )
    if cfg["hf"]["alphabet"] != "protein":
        raise ConfigError(f"config error at hf/alphabet: {cfg['hf']['alphabet']!r} cannot be scored by hf_compare, "
                          "which reads sequences as proteins; use alphabet: protein, or run label, train-head and "
                          "mi-map by hand (docs/your_model.md)")
    mi, data = cfg["protein"]["mi"], cfg["protein"]["data"]
    if cfg["protein"]["backbone"] == "pretrained" and data["source"] != "family":
        raise ConfigError("config error at protein/backbone: the shipped backbone was trained on a family "
                          "(protein/data/source: family); use backbone: trained for the generic data")
    if cfg["protein"]["architecture"] == "columns" and (data["source"] != "family" or cfg["protein"]["backbone"] == "esmc-300m"):
        raise ConfigError("config error at protein/architecture: a column model needs the family's alignment "
                          "(protein/data/source: family) and a trained or shipped backbone; set architecture: sequence "
                          "for the generic data or ESM-C 300M")
    columns = cfg["protein"]["columns"]
    if columns["model"]["d_model"] % columns["model"]["n_heads"]:
        raise ConfigError(f"config error at protein/columns/model: d_model {columns['model']['d_model']} not "
                          f"divisible by n_heads {columns['model']['n_heads']}")
    if columns["train"]["t_min"] > columns["train"]["t_max"]:
        raise ConfigError(f"config error at protein/columns/train: t_min {columns['train']['t_min']} > "
                          f"t_max {columns['train']['t_max']}")
    if cfg["protein"]["train"]["reweight_identity"] and data["source"] != "family":
        raise ConfigError("config error at protein/train/reweight_identity: the weights come from the family's "
                          "alignment (protein/data/source: family); set 0 for the generic data")
    if mi["val_contexts"] + mi["test_contexts"] > data["n_heldout_contexts"]:
        raise ConfigError(
            f"config error at protein/mi: val_contexts {mi['val_contexts']} + test_contexts {mi['test_contexts']} "
            f"> protein/data/n_heldout_contexts {data['n_heldout_contexts']} (val and test are distinct held-out crops)"
        )
    oracle, budgets = cfg["protein"]["oracle"]["divisors"], cfg["protein"]["compare"]["divisors"]
    if data["source"] == "family" and not set(oracle) <= set(budgets):
        raise ConfigError(f"config error at protein/oracle/divisors: {sorted(set(oracle) - set(budgets))} "
                          f"not among protein/compare/divisors {budgets} (the oracle copies those budgets' settings)")


def load_config(path: str | Path) -> dict:
    """Read, default-fill and validate a YAML config file."""
    try:
        cfg = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"config {path} must be a mapping, got {type(cfg).__name__}")
    return validate_config(cfg)
