"""The change paths of docs/developing.md, each walked by a toy: a native backbone (one class and one
domain entry) and a new domain (its package, its entry) reach the library's verbs and functions. The
last tests make each change as a contributor does (a config key, a native backbone, a domain: the edits
on a copy of the tree), check it works there, and check that docs/developing.md's heading states the
number of files edited. (A sampler: tests/test_sampler_registry.py; a Hugging Face backbone: tests/test_hf.py.)"""

from __future__ import annotations

import json

import pytest
import torch

from mdm_mi.core.backbone import GRID, SEQUENCE, BackboneOutput, Capabilities, capabilities
from mdm_mi.core.map_domain import MapDomain
from mdm_mi.core.samplers import decode
from mdm_mi.models.domains import DOMAINS, Domain, register_domain
from mdm_mi.models.loading import load_model
from mdm_mi.mi.probe import exact_mi
from mdm_mi.sampling.registry import build_sampler

V, N = 4, 6


class ToyBackbone(torch.nn.Module):
    """A native backbone: the protocol's four attributes, a forward and its capabilities. Its logits
    depend on the tokens, so probing sees dependence."""

    vocab_size, mask_id, hidden_dim = V, V, 8
    capabilities = Capabilities(GRID, fixed_length=N, embeds=False)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(V + 1, 8)
        self.out = torch.nn.Linear(8, V)
        self.register_buffer("vocab_token_ids", torch.arange(V), persistent=False)

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        h = self.emb(tokens)
        h = h + h.mean(1, keepdim=True)  # every position sees the others
        return BackboneOutput(logits=self.out(h), hidden=h)


def _load_toy(directory, meta, device):
    return ToyBackbone().to(device).eval()


class ToyMap(MapDomain):
    def check(self, text): return text
    def tokens(self, context, backbone, device): return torch.full((N,), V, device=device)
    def parse_cell(self, spec, context): return 0
    def name(self, i, context): return f"cell {i}"
    def draw(self, context, pred, label, cell, out, backbone_name): pass


@pytest.fixture
def toy_domain(tmp_path):
    """The one table entry a new domain (or a native backbone of its own kind) adds."""
    entry = Domain("toy", ("toy/model",), ("toy/head",), (".toy",), _load_toy, lambda: None,
                   lambda meta: "toy backbone", lambda: ToyMap())
    register_domain(entry)
    folder = tmp_path / "results" / "run" / "toy" / "model"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"domain": "toy"}))
    yield folder
    DOMAINS.pop("toy")


def test_a_native_backbone_decodes_and_is_probed_through_the_one_loader(toy_domain):
    backbone, meta = load_model(toy_domain, "cpu", "toy")
    assert meta["domain"] == "toy" and capabilities(backbone).fixed_length == N
    tokens = torch.full((3, N), V)
    out = decode(backbone, tokens, build_sampler("eb", gamma=0.5), torch.Generator().manual_seed(0))
    assert (out.tokens < V).all() and (out.passes >= 1).all()  # every mask filled, passes counted
    label = exact_mi(backbone, torch.full((N,), V)).label
    assert label.shape == (N, N) and (label >= -1e-9).all()


def test_a_new_domain_is_found_by_the_user_verbs(toy_domain):
    """``find_model`` searches the entry's folders; ``backbone_name`` describes it; mi-map's input is
    its ``mapper``."""
    from mdm_mi.models.domains import backbone_name
    from mdm_mi.models.locate import find_model

    assert find_model("toy", toy_domain.parents[2]) == toy_domain
    assert backbone_name(toy_domain) == "toy backbone"
    assert isinstance(DOMAINS["toy"].mapper(), ToyMap)


def test_a_backbone_without_declared_capabilities_is_a_sequence_model_of_any_length():
    class Plain:
        pass

    caps = capabilities(Plain())
    assert caps == Capabilities(SEQUENCE, None, embeds=False)


# --- the change paths as a contributor makes them: the edits on a copy of the tree, the files they touch ----------
# Each path is a list of edits (file, the line the text goes after — or None for a new file —, how many times
# that line occurs, the text), applied to a copy of the package, the schema, the rules and the structure test;
# a check then runs in that copy, and docs/developing.md's heading must state the number of files touched.

COPIED = ("src/mdm_mi", "workflow/schemas", "workflow/rules", "tests/conftest.py", "tests/test_structure.py")


def _files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _changed(tmp_path_factory, name: str, edits, check: str):
    """Copy the tree, apply ``edits``, run ``check`` there → (the files the edits touched, what it printed)."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import REPO

    root = tmp_path_factory.mktemp(name)
    for part in COPIED:
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / part, root / part)
    before = _files(root)
    for rel, anchor, times, text in edits:
        path = root / rel
        if anchor is None:
            assert not path.exists(), rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            continue
        source = path.read_text()
        assert source.count(anchor) == times, (rel, anchor, source.count(anchor))
        path.write_text(source.replace(anchor, anchor + text))
    after = _files(root)
    touched = sorted(rel for rel in after if before.get(rel) != after[rel])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root / "tests")]), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return touched, json.loads(out.stdout.splitlines()[-1])


def _heading_count(title: str) -> int | None:
    """N of docs/developing.md's ``## <title> (N files and a test)``."""
    import re

    from conftest import REPO

    found = re.search(rf"^## {title} \((\d+) files? and a test\)$", (REPO / "docs/developing.md").read_text(), re.M)
    return found and int(found.group(1))


# a config key: its schema entry (with its one default) and one field of its verb's dataclass
KEY_EDITS = (
    ("workflow/schemas/config.schema.yaml", "default: [hard, easy, levels, graded]\n"
     "          batch_size: {type: integer, minimum: 1, default: 1000}\n", 1,
     "          toy_key: {type: integer, minimum: 1, default: 3, description: a toy key}\n"),
    ("src/mdm_mi/sudoku/jobs.py", '    batch_size: int = from_schema("sudoku.eval.batch_size", "puzzles decoded together")\n',
     1, '    toy_key: int = from_schema("sudoku.eval.toy_key", "a toy key")\n'),
)

KEY_CHECK = r'''
import dataclasses, json, re, shlex
from pathlib import Path
import yaml
from mdm_mi.cli import VERBS, build_parser
from mdm_mi.infra.config import load_config

Path("cfg.yaml").write_text(yaml.safe_dump({"sudoku": {"eval": {"toy_key": 7}}}))
config = load_config("cfg.yaml")
common = Path("workflow/rules/common.smk").read_text()
exec(re.search(r"^def cli_flags\(.*?(?=^\S)", common, re.S | re.M).group(0))  # the rules' one flag builder
rule = Path("workflow/rules/sudoku.smk").read_text().split("rule sudoku_evaluate:")[1].split("\nrule ")[0]
options = eval(re.search(r"options=(cli_flags\(.*\)),\n", rule).group(1), {"cli_flags": cli_flags, "SUDOKU": config["sudoku"]})
verb = VERBS["sudoku-evaluate"]
def settings(*flags):
    ns = build_parser().parse_args(["sudoku-evaluate", "--puzzles", "p.csv", *flags])
    return verb.args(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(verb.args)})  # as cli.main builds them
field = next(f for f in dataclasses.fields(verb.args) if f.name == "toy_key")
print(json.dumps({"options": options, "given": settings(*shlex.split(options)).toy_key,
                  "default": settings().toy_key, "config": field.metadata["config"]}))
'''


@pytest.fixture(scope="module")
def key_added(tmp_path_factory):
    return _changed(tmp_path_factory, "key_tree", KEY_EDITS, KEY_CHECK)


def test_a_config_key_in_the_schema_and_one_field_reaches_its_verbs_settings(key_added, tmp_path):
    """A config file's ``sudoku.eval.toy_key`` is accepted, reaches ``sudoku-evaluate``'s command line
    through its rule's whole-section flags, and its typed settings; the default is the schema's."""
    import yaml

    from mdm_mi.infra.config import ConfigError, load_config

    touched, seen = key_added
    assert touched == ["src/mdm_mi/sudoku/jobs.py", "workflow/schemas/config.schema.yaml"]
    assert "--toy-key 7" in seen["options"] and seen["given"] == 7
    assert seen["default"] == 3 and seen["config"] == "sudoku.eval.toy_key"
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({"sudoku": {"eval": {"toy_key": 7}}}))
    with pytest.raises(ConfigError, match="toy_key"):  # the unchanged tree refuses the key
        load_config(tmp_path / "cfg.yaml")


def test_developing_md_counts_the_files_a_config_key_touched(key_added):
    assert _heading_count("Adding a config key") == len(key_added[0]), key_added[0]


# a native backbone of an existing domain: its module (class and load function) and its kind in the entry's loader
TOY_BACKBONE = '''"""A toy native backbone (tests/test_change_paths.py adds it to a copy of the tree)."""

from __future__ import annotations

import torch

from mdm_mi.core.backbone import GRID, BackboneOutput, Capabilities

V, N = 4, 6


class ToyBackbone(torch.nn.Module):
    vocab_size, mask_id, hidden_dim = V, V, 8
    capabilities = Capabilities(GRID, fixed_length=N, embeds=False)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(V + 1, 8)
        self.out = torch.nn.Linear(8, V)
        self.register_buffer("vocab_token_ids", torch.arange(V), persistent=False)

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        h = self.emb(tokens)
        h = h + h.mean(1, keepdim=True)
        return BackboneOutput(logits=self.out(h), hidden=h)


def load_toy_backbone(directory, meta, device):
    return ToyBackbone().to(device).eval()
'''

BACKBONE_EDITS = (
    ("src/mdm_mi/protein/toy_backbone.py", None, 0, TOY_BACKBONE),
    ("src/mdm_mi/models/domains.py",
     "    from mdm_mi.protein.model import KIND_COLUMNS, load_protein_model  # lazy: on demand (esm: seconds)\n\n", 1,
     '    if meta.get("kind") == "toy":\n'
     "        from mdm_mi.protein.toy_backbone import load_toy_backbone  # lazy: each backbone loads on demand\n\n"
     "        return load_toy_backbone(directory, meta, device)\n"),
)

MODEL_CHECK = r'''
import json
from pathlib import Path
import torch
from mdm_mi.core.backbone import capabilities, check_backbone, check_output
from mdm_mi.core.samplers import decode
from mdm_mi.mi.probe import exact_mi
from mdm_mi.models.loading import load_model
from mdm_mi.sampling.registry import build_sampler

DOMAIN, KIND = {domain!r}, {kind!r}
folder = Path("results/run") / DOMAIN / "model"
folder.mkdir(parents=True)
(folder / "meta.json").write_text(json.dumps({{"domain": DOMAIN, **({{"kind": KIND}} if KIND else {{}})}}))
backbone, meta = load_model(folder, "cpu", DOMAIN)
check_backbone(backbone)
tokens = torch.full((3, 6), backbone.mask_id)
check_output(backbone, backbone(tokens), tokens)
out = decode(backbone, tokens, build_sampler("eb", gamma=0.5), torch.Generator().manual_seed(0))
label = exact_mi(backbone, tokens[0]).label
seen = {{"class": type(backbone).__name__, "fixed_length": capabilities(backbone).fixed_length,
        "filled": bool((out.tokens < backbone.vocab_size).all()), "passes": int(out.passes.min()),
        "mi": list(label.shape)}}
'''


@pytest.fixture(scope="module")
def backbone_added(tmp_path_factory):
    check = MODEL_CHECK.format(domain="protein", kind="toy") + "print(json.dumps(seen))\n"
    return _changed(tmp_path_factory, "backbone_tree", BACKBONE_EDITS, check)


def test_a_native_backbone_in_its_module_and_its_kind_loads_passes_the_checks_and_decodes(backbone_added):
    """A ``meta.json`` of kind ``toy`` in the protein domain loads through ``load_model`` as the toy,
    passes ``check_backbone`` and ``check_output``, decodes with EB and is probed."""
    touched, seen = backbone_added
    assert touched == ["src/mdm_mi/models/domains.py", "src/mdm_mi/protein/toy_backbone.py"]
    assert seen["class"] == "ToyBackbone" and seen["fixed_length"] == 6
    assert seen["filled"] and seen["passes"] >= 1 and seen["mi"] == [6, 6]


def test_developing_md_counts_the_files_a_native_backbone_touched(backbone_added):
    assert _heading_count("Adding a backbone") == len(backbone_added[0]), backbone_added[0]


# a domain: its package (backbone module and mi-map input), its DOMAINS entry, and its name among the packages
# the structure test keeps apart
TOY_MAP = '''"""The toy domain's ``mi-map`` input: six cells, written as digits (``_`` masked)."""

from __future__ import annotations

import torch

from mdm_mi.core.map_domain import MapDomain


class ToyMap(MapDomain):
    def check(self, text):
        return text

    def tokens(self, context, backbone, device):
        return torch.tensor([backbone.mask_id if c == "_" else int(c) for c in context], device=device)

    def parse_cell(self, spec, context):
        return None if spec is None else int(spec) - 1

    def name(self, i, context):
        return f"cell {i + 1}"

    def draw(self, context, pred, label, cell, out, backbone_name):
        pass
'''

DOMAIN_EDITS = (
    ("src/mdm_mi/toy/__init__.py", None, 0, '"""A toy domain (tests/test_change_paths.py adds it to a copy of the tree)."""\n'),
    ("src/mdm_mi/toy/model.py", None, 0, TOY_BACKBONE),
    ("src/mdm_mi/toy/map.py", None, 0, TOY_MAP),
    ("src/mdm_mi/models/domains.py", "    return load_hf_model(directory, device, meta=meta)[0]\n", 1,
     "\n\ndef _load_toy(directory, meta, device):\n"
     "    from mdm_mi.toy.model import load_toy_backbone  # lazy: each domain loads on demand\n\n"
     "    return load_toy_backbone(directory, meta, device)\n\n\n"
     "def _toy_mapper():\n"
     "    from mdm_mi.toy.map import ToyMap  # lazy: each domain loads on demand\n\n"
     "    return ToyMap()\n"),
    ("src/mdm_mi/models/domains.py", "                 _hf_mapper, sequences=True, train_hint=HF_TRAIN_HINT),\n", 1,
     '    "toy": Domain("toy", ("toy/model",), ("toy/head",), (".toy",), _load_toy, lambda: None,\n'
     '                  lambda meta: "toy backbone", _toy_mapper),\n'),
    ("tests/test_structure.py", 'DOMAIN_PACKAGES = ("sudoku", "protein", "hf", "antibody"', 1, ', "toy"'),
)

DOMAIN_CHECK = MODEL_CHECK.format(domain="toy", kind=None) + r'''
from types import SimpleNamespace
from mdm_mi.models.domains import DOMAINS, backbone_name, set_domain
from mdm_mi.models.locate import find_model
from mdm_mi.user.mi_map import _model_and_domain
import test_structure

mapper = DOMAINS["toy"].mapper()
test_structure.test_every_domain_is_one_of_the_packages_kept_apart()
test_structure.test_imports_run_one_way_library_then_verbs_then_cli()
seen |= {"found": str(find_model("toy", "results")), "mi-map": _model_and_domain(SimpleNamespace(model=str(folder)), "")[1],
         "described": backbone_name(folder), "set": set_domain("x.toy"),
         "map tokens": mapper.tokens(mapper.check("1_2__3"), backbone, "cpu").tolist()}
print(json.dumps(seen))
'''


@pytest.fixture(scope="module")
def domain_added(tmp_path_factory):
    return _changed(tmp_path_factory, "domain_tree", DOMAIN_EDITS, DOMAIN_CHECK)


def test_a_domain_in_its_package_and_one_entry_is_found_by_the_user_verbs(domain_added):
    """The toy domain's model folder is found in a run (``find_model``), read by ``mi-map`` as a toy
    model, described, loaded, checked and decoded; its input reads through its ``MapDomain``; the
    structure test keeps its package apart from the other domains."""
    touched, seen = domain_added
    assert touched == ["src/mdm_mi/models/domains.py", "src/mdm_mi/toy/__init__.py", "src/mdm_mi/toy/map.py",
                       "src/mdm_mi/toy/model.py", "tests/test_structure.py"]
    assert seen["found"] == "results/run/toy/model" and seen["mi-map"] == "toy" and seen["set"] == "toy"
    assert seen["described"] == "toy backbone" and seen["map tokens"] == [1, 4, 2, 4, 4, 3]
    assert seen["class"] == "ToyBackbone" and seen["filled"] and seen["mi"] == [6, 6]


def test_developing_md_counts_the_files_a_domain_touched(domain_added):
    assert _heading_count("Adding a domain") == len(domain_added[0]), domain_added[0]
