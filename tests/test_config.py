"""Properties of :mod:`mdm_mi.infra.config`: every shipped config loads, typos and out-of-range values
are rejected with the key named, and the schema's defaults are filled in."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from conftest import REPO
from mdm_mi.infra.config import ConfigError, load_config, load_schema, validate_config

CONFIG_FILES = sorted((REPO / "config").glob("*.yaml"))


def write_yaml(tmp_path, obj, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj))
    return path


def schema_defaults(schema: dict, prefix=()) -> dict[tuple, object]:
    """Every (key path → default) in the schema, descending through objects."""
    out = {}
    for key, sub in schema.get("properties", {}).items():
        path = (*prefix, key)
        if "default" in sub and sub.get("type") != "object":
            out[path] = sub["default"]
        if sub.get("type") == "object":
            out.update(schema_defaults(sub, path))
    return out


def get_path(cfg: dict, path: tuple):
    for key in path:
        cfg = cfg[key]
    return cfg


def test_config_folder_is_not_empty():
    assert {p.name for p in CONFIG_FILES} >= {"config.yaml", "smoke.yaml", "paper.yaml"}


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    cfg = load_config(path)
    raw = yaml.safe_load(path.read_text())
    assert cfg["name"] == raw["name"]
    for key, value in raw.get("sudoku", {}).get("train", {}).items():
        assert cfg["sudoku"]["train"][key] == value  # given values are kept
    assert cfg["sudoku"]["train"]["t_min"] <= cfg["sudoku"]["train"]["t_max"]


def test_defaults_are_filled_from_the_schema(tmp_path):
    cfg = load_config(write_yaml(tmp_path, {}))
    defaults = schema_defaults(load_schema())
    assert len(defaults) > 30
    for path, value in defaults.items():
        assert get_path(cfg, path) == value, path
    assert cfg["tracking"]["uri"] == "sqlite:///results/mlflow.db"
    assert cfg["sudoku"]["train"]["steps"] == 3000


def test_an_empty_file_is_all_defaults(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_config(path) == load_config(write_yaml(tmp_path, {}, "braces.yaml"))


def test_defaults_fill_around_given_values(tmp_path):
    cfg = load_config(write_yaml(tmp_path, {"sudoku": {"train": {"steps": 7}}}))
    assert cfg["sudoku"]["train"]["steps"] == 7
    assert cfg["sudoku"]["train"]["batch_size"] == 128
    assert cfg["sudoku"]["model"]["d_model"] == 128


def test_defaults_are_not_shared_between_loads(tmp_path):
    """Filling a mutable default (a list) must copy it, not alias the schema's object."""
    a = load_config(write_yaml(tmp_path, {}))
    a["sudoku"]["samplers"]["naive_k"].append(99)
    b = load_config(write_yaml(tmp_path, {}, "again.yaml"))
    assert 99 not in b["sudoku"]["samplers"]["naive_k"]


@pytest.mark.parametrize(
    ("cfg", "where", "key"),
    [
        ({"sede": 1}, "<top level>", "sede"),
        ({"sudoku": {"trian": {}}}, "sudoku", "trian"),
        ({"sudoku": {"train": {"stpes": 10}}}, "sudoku/train", "stpes"),
        ({"sudoku": {"samplers": {"eb_gama": [0.1]}}}, "sudoku/samplers", "eb_gama"),
        ({"sudoku": {"model": {"dmodel": 64}}}, "sudoku/model", "dmodel"),
        ({"tracking": {"url": "none"}}, "tracking", "url"),
        ({"protein": {"train": {"reweight_identiy": 0.8}}}, "protein/train", "reweight_identiy"),
    ],
)
def test_misspelt_key_is_named(tmp_path, cfg, where, key):
    with pytest.raises(ConfigError) as info:
        load_config(write_yaml(tmp_path, cfg))
    message = str(info.value)
    assert f"'{key}'" in message and f"at {where}" in message, message


@pytest.mark.parametrize(
    ("cfg", "where"),
    [
        ({"sudoku": {"train": {"steps": -5}}}, "sudoku/train/steps"),
        ({"sudoku": {"train": {"steps": 0}}}, "sudoku/train/steps"),
        ({"sudoku": {"train": {"loss_weight": "foo"}}}, "sudoku/train/loss_weight"),
        ({"sudoku": {"train": {"lr": 0}}}, "sudoku/train/lr"),
        ({"sudoku": {"train": {"t_max": 1.5}}}, "sudoku/train/t_max"),
        ({"sudoku": {"train": {"batch_size": "big"}}}, "sudoku/train/batch_size"),
        ({"sudoku": {"samplers": {"naive_k": [0]}}}, "sudoku/samplers/naive_k/0"),
        ({"sudoku": {"samplers": {"eb_gamma": [0.1, -0.2]}}}, "sudoku/samplers/eb_gamma/1"),
        ({"sudoku": {"samplers": {"sequential": ["random"]}}}, "sudoku/samplers/sequential/0"),
        ({"sudoku": {"eval": {"sets": ["medium"]}}}, "sudoku/eval/sets/0"),
        ({"sudoku": {"data": {"graded_givens": [10]}}}, "sudoku/data/graded_givens/0"),
        ({"device": "tpu"}, "device"),
        ({"threads": 0}, "threads"),
        ({"sudoku": {"train": {"t_min": 0.8, "t_max": 0.2}}}, "sudoku/train"),
        ({"sudoku": {"model": {"d_model": 30, "n_heads": 8}}}, "sudoku/model"),
        ({"protein": {"train": {"reweight_identity": 1.5}}}, "protein/train/reweight_identity"),
        ({"protein": {"train": {"dropout": 1.0}}}, "protein/train/dropout"),
        ({"protein": {"train": {"eval_every": -1}}}, "protein/train/eval_every"),
        ({"protein": {"train": {"eval_every": 0.5}}}, "protein/train/eval_every"),
        ({"protein": {"data": {"source": "generic"}, "backbone": "trained", "architecture": "sequence",
                      "train": {"reweight_identity": 0.8}}}, "protein/train/reweight_identity"),
        ({"protein": {"data": {"source": "generic"}, "backbone": "trained"}}, "protein/architecture"),
        ({"protein": {"backbone": "esmc-300m", "architecture": "columns"}}, "protein/architecture"),
        ({"protein": {"architecture": "aligned"}}, "protein/architecture"),
        ({"protein": {"columns": {"model": {"d_model": 30, "n_heads": 4}}}}, "protein/columns/model"),
        ({"protein": {"columns": {"train": {"lambda_j": -1}}}}, "protein/columns/train/lambda_j"),
    ],
)
def test_out_of_range_value_raises_naming_where(tmp_path, cfg, where):
    with pytest.raises(ConfigError, match=f"config error at {where}:"):
        load_config(write_yaml(tmp_path, cfg))


def test_a_shipped_protein_backbone_needs_the_family_data(tmp_path):
    cfg = {"protein": {"backbone": "pretrained", "architecture": "sequence", "data": {"source": "generic"}}}
    with pytest.raises(ConfigError, match="protein/backbone: the shipped backbone was trained on a family"):
        load_config(write_yaml(tmp_path, cfg))


def test_the_protein_oracle_budget_must_be_a_compared_budget(tmp_path):
    cfg = {"protein": {"compare": {"divisors": [2]}, "oracle": {"divisors": [4]}}}
    with pytest.raises(ConfigError, match=r"protein/oracle/divisors: \[4\] not among"):
        load_config(write_yaml(tmp_path, cfg))
    cfg["protein"]["oracle"]["divisors"] = [2]
    assert load_config(write_yaml(tmp_path, cfg))["protein"]["oracle"]["divisors"] == [2]


def test_t_min_above_t_max_message_names_both(tmp_path):
    with pytest.raises(ConfigError, match=r"t_min 0.8 > t_max 0.2"):
        load_config(write_yaml(tmp_path, {"sudoku": {"train": {"t_min": 0.8, "t_max": 0.2}}}))


@pytest.mark.parametrize(("text", "match"), [("- a\n- b\n", "must be a mapping"), ("a: [1,\n", "cannot read")])
def test_non_mapping_or_broken_yaml_raises(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(path)


def test_missing_file_raises(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.yaml")


def test_validate_config_fills_in_place():
    cfg: dict = {}
    assert validate_config(cfg) is cfg
    assert cfg["sudoku"]["eval"]["sets"] == ["hard", "easy", "levels", "graded"]




def leaf_paths(d: dict, prefix: tuple = ()) -> set[tuple]:
    """Key paths of a nested dict's non-dict values."""
    out = set()
    for key, value in d.items():
        out |= leaf_paths(value, (*prefix, key)) if isinstance(value, dict) else {(*prefix, key)}
    return out


# configs run for one target only → the sections that target never reads (config/hf.yaml: `snakemake hf`)
ONE_TARGET_CONFIGS = {"hf.yaml": ("sudoku", "protein"), "antibody.yaml": ("sudoku", "protein"),
                      "sudoku_paper.yaml": ("protein",), "decisive_sudoku.yaml": ("protein",),
                      "decisive_antibody.yaml": ("sudoku", "protein")}


# Overlays of the default run: they take its every value on purpose and change only the keys they name
# (config/rivals.yaml: the default's backbone, labels and heads, more families in the comparison).
OVERLAY_CONFIGS = {"rivals.yaml", "antibody-rivals.yaml"}  # antibody-rivals: over antibody.yaml


@pytest.mark.parametrize("path", [p for p in CONFIG_FILES if p.name != "config.yaml" and p.name not in OVERLAY_CONFIGS],
                         ids=lambda p: p.name)
def test_other_configs_set_every_key_the_default_sets(path):
    """Snakemake merges --configfile over config/config.yaml, so a key the default sets and another
    config does not would leak the default's value into it."""
    default = yaml.safe_load((path.parent / "config.yaml").read_text())
    other = yaml.safe_load(path.read_text())
    unread = ONE_TARGET_CONFIGS.get(path.name, ())
    missing = {".".join(p) for p in leaf_paths(default) if not _has(other, p) and p[0] not in unread}
    assert not missing, f"{path.name} lacks {sorted(missing)}"


def _has(cfg: dict, path: tuple) -> bool:
    for key in path:
        if not isinstance(cfg, dict) or key not in cfg:
            return False
        cfg = cfg[key]
    return True


# --- the schema is the one home of defaults --------------------------------------------------------

def verb_sections() -> dict[str, tuple[str, ...]]:
    """Each workflow verb → the config sections its rule passes as flags, as its argument dataclass
    declares them (``CONFIG_SECTIONS``, next to its fields). "section/prefix": only the keys with that
    prefix, without it (no verb needs one now: each oracle ceiling has its own section). A verb without
    (label, whose flags the rule's label_options renames per split; the figures) reads none whole."""
    from mdm_mi.cli import VERBS

    return {verb: v.args.CONFIG_SECTIONS for verb, v in VERBS.items() if hasattr(v.args, "CONFIG_SECTIONS")}


def shared_flags() -> dict[str, str]:
    """A sampler grid's config key → the verbs' flag (mi_on_reject → --on-reject): the sampler table's
    ``shared`` settings, which the rules pass from ``<domain>.samplers``."""
    from mdm_mi.core.sampler_table import SAMPLERS

    return {s.key: s.flag for spec in SAMPLERS.values() for s in spec.shared}


def section_keys(schema: dict, where: str) -> dict[str, tuple[str, dict]]:
    """Flag name → (config key, its schema entry) of the non-object keys of one section (``"a.b"`` or
    ``"a.b/prefix"``); a sampler grid (``<domain>.samplers``) gives its shared settings by their flags;
    a deprecated alias (no default: it is read as its new key) is left out."""
    dotted, _, prefix = where.partition("/")
    node = schema
    for key in dotted.split("."):
        node = node["properties"][key]
    grid = dotted.endswith(".samplers")
    out = {}
    for key, sub in node["properties"].items():
        if sub.get("type") == "object" or sub.get("deprecated") or not key.startswith(prefix):
            continue
        flag = shared_flags().get(key, key) if grid else key.removeprefix(prefix)
        out[flag] = (f"{dotted}.{key}", sub)
    return out


def section_defaults(schema: dict, where: str) -> dict:
    """Flag name → schema default of one section's keys (:func:`section_keys`)."""
    return {flag: sub["default"] for flag, (_, sub) in section_keys(schema, where).items()}


VERBS_WITH_SECTIONS = sorted(verb_sections())


@pytest.mark.parametrize("verb", VERBS_WITH_SECTIONS)
def test_workflow_verbs_defaults_are_the_schemas(verb):
    """A workflow verb's flag fed from the config has no default of its own, or the schema's (a None
    default is 'not given': a flag the rule passes for some jobs only, e.g. sudoku-compare's per-set sizes).
    A flag that names the key it reads (``from_schema``), one of the keys the verb is fed, is compared with
    that key only: two sections may hold a key of one name (``protein.oracle.n`` and ``protein.generate.n``)."""
    import dataclasses

    from mdm_mi.cli import VERBS

    schema = load_schema()
    fed: dict[str, dict[str, object]] = {}  # flag → {config key: its default}
    for where in verb_sections()[verb]:
        for name, (key, sub) in section_keys(schema, where).items():
            fed.setdefault(name, {})[key] = sub["default"]
    for f in dataclasses.fields(VERBS[verb].args):
        if f.default is dataclasses.MISSING or f.default is None or f.name not in fed:
            continue
        keys = fed[f.name]
        if f.metadata.get("config") in keys:
            keys = {f.metadata["config"]: keys[f.metadata["config"]]}
        mine = list(f.default) if isinstance(f.default, tuple) else f.default
        for key, default in keys.items():
            assert mine == default, f"{verb} --{f.name.replace('_', '-')}: {mine!r}, schema {key}: {default!r}"


@pytest.mark.parametrize("verb", VERBS_WITH_SECTIONS)
def test_a_config_fed_default_is_written_only_in_the_schema(verb):
    """Each flag a verb's sections feed has no default, 'not given' (None), or one read from the schema
    (``infra/flags.from_schema``, which names the key in the field's metadata): no literal default
    beside the schema's. The key it reads is one of the keys the verb's sections feed that flag (or the
    same key of the other domain's section, for a flags class two domains share: their equality is
    :func:`test_workflow_verbs_defaults_are_the_schemas`')."""
    import dataclasses

    from mdm_mi.cli import VERBS

    schema = load_schema()
    fed: dict[str, set] = {}
    for where in verb_sections()[verb]:
        for flag, (key, _) in section_keys(schema, where).items():
            fed.setdefault(flag, set()).add(key)
    for f in dataclasses.fields(VERBS[verb].args):
        if f.name not in fed or f.default is dataclasses.MISSING or (f.default is None and "config" not in f.metadata):
            continue
        key = f.metadata.get("config")
        assert key, f"{verb} --{f.name.replace('_', '-')}: literal default {f.default!r}; use from_schema({sorted(fed[f.name])[0]!r}, ...)"
        same_key = {k.split(".", 1)[1] for k in fed[f.name]}
        assert key in fed[f.name] or key.split(".", 1)[1] in same_key, f"{verb} --{f.name}: reads {key}, fed {fed[f.name]}"


# The input paths a verb requires though the schema gives them a default: null, which switches the
# workflow's target off (hf-data cannot run without the model and the sequences hf.model and hf.sequences
# name), or a data file relative to the workflow's folder (as a default it would name no file when the
# verb runs elsewhere).
REQUIRED_INPUTS = {("hf-data", "model"), ("hf-data", "sequences"), ("prepare-family", "a2m")}


def fed_keys(schema: dict, verb: str) -> dict[str, tuple[str, dict]]:
    """Flag name → (config key, its schema entry) of every key that feeds a workflow verb: its sections'
    (:func:`section_keys`) and the config's top-level settings (``seed``, ``threads``, ``device``)."""
    top = {key: (key, sub) for key, sub in schema["properties"].items() if sub.get("type") != "object"}
    for where in verb_sections()[verb]:
        top |= section_keys(schema, where)
    return top


@pytest.mark.parametrize("verb", VERBS_WITH_SECTIONS)
def test_no_flag_with_a_schema_default_is_required(verb):
    """A flag fed from a config key that has a default in the schema has that default on the command
    line too (``from_schema``), so a command gives only what differs from the schema; only the input
    paths of :data:`REQUIRED_INPUTS` stay required."""
    import dataclasses

    from mdm_mi.cli import VERBS

    fed = fed_keys(load_schema(), verb)
    required = [f.name for f in dataclasses.fields(VERBS[verb].args)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    with_default = {name: fed[name][0] for name in required if "default" in fed.get(name, (None, {}))[1]}
    wrong = [f"--{name.replace('_', '-')}: from_schema({key!r}, ...)" for name, key in with_default.items()
             if (verb, name) not in REQUIRED_INPUTS]
    assert not wrong, f"{verb} requires flags the schema gives a default: {'; '.join(wrong)}"
    exempt = {name for v, name in REQUIRED_INPUTS if v == verb}
    assert exempt <= set(with_default), f"{verb}: {exempt - set(with_default)} no longer required; drop from the list"


@pytest.mark.parametrize("verb", VERBS_WITH_SECTIONS)
def test_help_shows_each_default_as_it_is_typed(verb, capsys, monkeypatch):
    """``--help`` ends each flag's help with its default (a list's values spaced, ``none`` for an empty
    one), but a None default's (its help says what an omitted flag means)."""
    import dataclasses

    from mdm_mi.cli import VERBS, main

    monkeypatch.setenv("COLUMNS", "2000")  # one line per flag: no wrapping inside a default
    with pytest.raises(SystemExit) as info:
        main([verb, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for f in dataclasses.fields(VERBS[verb].args):
        if f.default is dataclasses.MISSING or f.default is None or f.metadata.get("positional"):
            continue
        shown = (" ".join(map(str, f.default)) or "none") if isinstance(f.default, tuple) else str(f.default)
        assert f"{f.metadata['help']} (default: {shown})" in out, f"{verb} --{f.name}"


def test_the_workflow_verb_table_covers_every_section_a_verb_reads():
    """Every section a verb declares exists, every verb that declares one is a workflow verb of the
    CLI, and every verb whose rule passes a whole section declares it."""
    from mdm_mi.cli import VERBS

    schema = load_schema()
    sections = verb_sections()
    for verb, wheres in sections.items():
        assert not VERBS[verb].user, verb
        for where in wheres:
            section_keys(schema, where)  # KeyError if the section is not in the schema
    assert {"sudoku-compare", "hf-compare", "protein-oracle-ceiling", "train-head"} <= set(sections)


def test_a_default_changed_in_the_schema_is_the_verbs_default(tmp_path):
    """The schema is the one home of a config-fed default: in a copy of the package and the schema with
    three defaults changed (a number, a list of a shared flags class, a sampler grid's setting), the CLI
    parses the new ones and the dataclasses carry them."""
    import shutil
    import subprocess
    import sys

    for part in ("src/mdm_mi", "workflow/schemas"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "workflow/schemas/config.schema.yaml"
    schema = yaml.safe_load(path.read_text())
    sudoku, protein = schema["properties"]["sudoku"]["properties"], schema["properties"]["protein"]["properties"]
    sudoku["eval"]["properties"]["batch_size"]["default"] = 777
    protein["compare"]["properties"]["indep_cap"]["default"] = [0.25]
    sudoku["samplers"]["properties"]["mi_on_reject"]["default"] = "stop"
    path.write_text(yaml.safe_dump(schema, sort_keys=False))
    code = """if True:
        import dataclasses, json
        from mdm_mi.cli import VERBS, build_parser
        ns = build_parser().parse_args(["sudoku-evaluate", "--puzzles", "p.csv"])
        cap = next(f.default for f in dataclasses.fields(VERBS["protein-compare"].args) if f.name == "indep_cap")
        print(json.dumps([ns.batch_size, ns.on_reject, list(cap)]))"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=tmp_path).stdout
    assert json.loads(out) == [777, "stop", [0.25]]


def test_each_protein_decoding_key_is_one_flags_field_and_tells_parts_apart():
    """protein.generate's keys are exactly GenerateFlags' fields (DecodeFlags: how every protein verb
    decodes), and each but batch_size is in the key that makes protein-compare's parts one comparison."""
    import dataclasses

    from mdm_mi.protein.decode_flags import GenerateFlags
    from mdm_mi.protein.compare_jobs import PART_KEYS

    fields = {f.name for f in dataclasses.fields(GenerateFlags)}
    assert set(section_defaults(load_schema(), "protein.generate")) == fields
    assert fields - {"batch_size"} <= set(PART_KEYS)  # the swept lists (λ, ε, θ) are comparison flags, not these


def test_the_deprecated_rule_sets_key_is_read_as_extra_family_sets_with_one_warning(tmp_path, capsys):
    """``sudoku.compare.rule_sets`` (its name until 2026-12) is accepted for one release: it becomes
    ``extra_family_sets`` with one line on stderr, also over an ``extra_family_sets`` of the config
    it is merged over (the workflow's ``config/config.yaml`` under a user's ``--configfile``)."""
    path = tmp_path / "old.yaml"
    path.write_text("sudoku:\n  compare:\n    rule_sets: [graded]\n")
    cfg = load_config(path)
    assert cfg["sudoku"]["compare"]["extra_family_sets"] == ["graded"] and "rule_sets" not in cfg["sudoku"]["compare"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rule_sets is deprecated" in err[0] and "extra_family_sets" in err[0]
    path.write_text("sudoku:\n  compare:\n    rule_sets: [graded]\n    extra_family_sets: [hard]\n")
    assert load_config(path)["sudoku"]["compare"]["extra_family_sets"] == ["graded"]
    assert "over the extra_family_sets also set" in capsys.readouterr().err


def test_an_oracle_key_of_its_old_section_is_read_into_the_oracle_section_with_one_warning(tmp_path, capsys):
    """``sudoku.compare.oracle_puzzles`` and ``protein.family.oracle_n`` (their places until 2026-12) are
    accepted for one release: each moves to its oracle section (``sudoku.oracle.puzzles``,
    ``protein.oracle.n``) with one line on stderr, over a value the new key also has."""
    path = tmp_path / "old.yaml"
    path.write_text("sudoku:\n  compare:\n    oracle_puzzles: 7\n  oracle: {puzzles: 3}\n"
                    "protein:\n  family:\n    oracle_n: 5\n")
    cfg = load_config(path)
    assert cfg["sudoku"]["oracle"]["puzzles"] == 7 and "oracle_puzzles" not in cfg["sudoku"]["compare"]
    assert cfg["protein"]["oracle"]["n"] == 5 and "oracle_n" not in cfg["protein"]["family"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "sudoku/compare/oracle_puzzles is deprecated" in err[0]
    assert "read as sudoku/oracle/puzzles (over the puzzles also set)" in err[0] and "read as protein/oracle/n" in err[1]

def test_each_deprecated_key_is_a_documented_alias_of_a_schema_key():
    """The schema lists each old name (``deprecated: true``, no default) beside its new one, and only those."""
    from mdm_mi.infra.config import DEPRECATED_KEYS

    def aliases(node: dict, path: tuple = ()) -> dict:
        found = {}
        for key, sub in node.get("properties", {}).items():
            if sub.get("deprecated"):
                assert "default" not in sub and "deprecated alias of" in sub["description"], key
                found[path + (key,)] = node["properties"]
            found |= aliases(sub, path + (key,))
        return found

    schema = load_schema()
    found = aliases(schema)
    assert set(found) == set(DEPRECATED_KEYS)
    for old, new in DEPRECATED_KEYS.items():
        if isinstance(new, str):  # renamed within its section
            assert new in found[old], old
        else:  # moved to another section: its new path is a key of the schema with a default
            node = schema
            for key in new:
                node = node["properties"][key]
            assert "default" in node and f"deprecated alias of {'.'.join(new)}" in found[old][old[-1]]["description"], old
