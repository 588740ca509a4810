"""The package's shape: imports run one way (no cycle; library → verbs → CLI; every domain apart;
lazy imports included), each of the verb, sampler and domain tables is one literal dict whose keys
are unique and match their entries, no module's file name repeats its package's name, and no public
name means two things in two modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

SRC = REPO / "src"
PACKAGE = "mdm_mi"


def _modules(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    mods = {}
    for path in (src / package).rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The package module that ``name`` (a module or an attribute of one) belongs to."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(src: Path = SRC, package_name: str = PACKAGE) -> dict[str, set[str]]:
    """Module → the package modules it imports anywhere in its body (lazy imports count)."""
    mods, graph = _modules(src, package_name), {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {_owner(a.name, mods) for a in node.names if a.name.startswith(package_name)}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base.startswith(package_name):
                    deps |= {_owner(f"{base}.{a.name}", mods) for a in node.names}
        graph[mod] = deps - {mod, None}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or None (iterative DFS)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_find_cycle_finds_a_hand_made_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_package_import_graph_has_no_cycle():
    graph = import_graph()
    assert "mdm_mi.cli" in graph and graph["mdm_mi.cli"]  # the graph was read
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))


def package_graph(src: Path = SRC, package_name: str = PACKAGE) -> dict[str, set[str]]:
    """Package (a directory: ``mdm_mi``, ``mdm_mi.core``, ``mdm_mi.protein.family``) → the packages its
    library modules import. A verb module is not counted: the verbs are the top layer wherever their
    file sits (``sudoku/jobs.py``), kept one way by :func:`wrong_way_imports`."""
    mods = _modules(src, package_name)

    def package(mod: str) -> str:
        return mod if mods[mod].name == "__init__.py" else mod.rpartition(".")[0]

    graph = {package(mod): set() for mod in mods}
    for mod, deps in import_graph(src, package_name).items():
        if not is_verb_module(mod):
            graph[package(mod)] |= {package(dep) for dep in deps} - {package(mod)}
    return graph


def test_the_packages_import_each_other_one_way():
    graph = package_graph()
    assert {"mdm_mi", "mdm_mi.core", "mdm_mi.protein.family"} <= set(graph)
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))


def test_the_package_check_finds_a_cycle_between_directories(tmp_path):
    pkg = tmp_path / "toy"
    for name, text in {"__init__.py": "", "registry.py": "from toy.core import base\nfrom toy.sudoku import grid\n",
                       "core/__init__.py": "", "core/base.py": "", "sudoku/__init__.py": "",
                       "sudoku/grid.py": "from toy.core import base\n", "sudoku/jobs.py": "from toy import registry\n",
                       "core/lazy.py": "def f():\n    from toy.sudoku import grid  # a lazy import counts\n"}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert find_cycle(package_graph(tmp_path, "toy")) == ["toy.core", "toy.sudoku", "toy.core"]
    (pkg / "core/lazy.py").write_text("")  # a verb importing the registry above its package is no cycle
    assert package_graph(tmp_path, "toy") == {"toy": {"toy.core", "toy.sudoku"}, "toy.core": set(),
                                              "toy.sudoku": {"toy.core"}}
    assert find_cycle(package_graph(tmp_path, "toy")) is None


def test_only_the_cli_and_main_import_the_cli():
    importers = {m for m, deps in import_graph().items() if "mdm_mi.cli" in deps}
    assert importers <= {"mdm_mi.__main__"}, importers


def is_verb_module(mod: str) -> bool:
    """The CLI, ``__main__``, every ``jobs`` / ``*_job`` / ``*_jobs`` module (verbs and report verbs)
    and everything under ``user/`` (the verbs run by hand) or the top-level ``jobs/`` (the verbs of no
    one domain); every other module is library."""
    parts = mod.split(".")
    last = parts[-1]
    return (last in ("cli", "__main__", "jobs") or last.endswith(("_job", "_jobs")) or "user" in parts[1:]
            or parts[1:2] == ["jobs"])


# Every domain package: each entry of domain.DOMAINS (checked below) and antibody, which uses an
# hf model. A domain never imports another; what two need lives below them (infra.fasta,
# evaluation.plotting, core.hf_folder: the hf domain's name and alphabet, which antibody's AntiBERTy writes).
DOMAIN_PACKAGES = ("sudoku", "protein", "hf", "antibody")


def _domain(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOMAIN_PACKAGES else None


def wrong_way_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports that break the layering: a library module importing a verb module, a verb module
    importing another verb module (only the CLI and ``__main__`` import verbs: what two verbs share
    belongs in the library), or one domain package importing the other."""
    bad = []
    for mod, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if is_verb_module(dep) and not is_verb_module(mod):
                bad.append(f"library {mod} imports verb module {dep}")
            elif is_verb_module(dep) and mod.split(".")[-1] not in ("cli", "__main__"):
                bad.append(f"verb module {mod} imports verb module {dep}")
            if _domain(mod) and _domain(dep) and _domain(mod) != _domain(dep):
                bad.append(f"{mod} imports the other domain's {dep}")
    return bad


def test_imports_run_one_way_library_then_verbs_then_cli():
    assert wrong_way_imports(import_graph()) == []


def test_every_domain_is_one_of_the_packages_kept_apart():
    """Each domain of the domain table is a package checked by :func:`wrong_way_imports` (antibody too,
    which has no entry: it decodes ``hf`` models)."""
    from mdm_mi.models.domains import DOMAINS

    assert set(DOMAINS) <= set(DOMAIN_PACKAGES)
    assert all((SRC / PACKAGE / name / "__init__.py").is_file() for name in DOMAIN_PACKAGES)


def test_the_layering_check_fails_on_a_library_module_importing_a_verb(tmp_path):
    pkg = tmp_path / "toy"
    for name, text in {"__init__.py": "", "cli.py": "from toy import jobs\n", "jobs.py": "from toy import lib\n",
                       "lib.py": "def f():\n    from toy.jobs import run  # a lazy import counts\n",
                       "sudoku/__init__.py": "", "sudoku/grid.py": "import toy.protein.fasta\n",
                       "protein/__init__.py": "", "protein/fasta.py": "", "user/__init__.py": "",
                       "user/solve.py": "from toy.user import common\n", "user/common.py": ""}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    bad = wrong_way_imports(import_graph(tmp_path, "toy"))
    assert bad == ["library toy.lib imports verb module toy.jobs",
                   "toy.sudoku.grid imports the other domain's toy.protein.fasta",
                   "verb module toy.user.solve imports verb module toy.user.common"]
    (pkg / "lib.py").write_text("")
    (pkg / "sudoku/grid.py").write_text("")
    (pkg / "user/solve.py").write_text("from toy import lib\n")
    assert wrong_way_imports(import_graph(tmp_path, "toy")) == []


PACKAGE_MAY_IMPORT = {"infra": {"infra"}, "core": {"infra", "core"}, "evaluation": {"infra", "core", "evaluation"}}


def package_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that leave a package's allowed set: ``infra/`` imports only itself; ``core/`` only
    ``infra/`` and itself; ``evaluation/`` only ``core/``, ``infra/`` and itself (it never sees a domain
    or a verb)."""
    def top(mod: str) -> str:
        return mod.split(".")[1] if mod.count(".") >= 2 else ""

    return [f"{mod} imports {dep}" for mod, deps in sorted(graph.items()) if top(mod) in PACKAGE_MAY_IMPORT
            for dep in sorted(deps) if top(dep) not in PACKAGE_MAY_IMPORT[top(mod)]]


def test_infra_and_evaluation_import_only_below_them():
    graph = import_graph()
    assert {"mdm_mi.infra.io", "mdm_mi.evaluation.calibrate"} <= set(graph)
    assert package_violations(graph) == []
    toy = {"mdm_mi.infra.io": {"mdm_mi.models.domains"}, "mdm_mi.evaluation.stats": {"mdm_mi.sudoku.grid"}}
    assert package_violations(toy) == ["mdm_mi.evaluation.stats imports mdm_mi.sudoku.grid",
                                       "mdm_mi.infra.io imports mdm_mi.models.domains"]


def _literal_keys(path: Path, name: str) -> list[str]:
    """The keys of the dict literal assigned to ``name`` at module level of ``path``."""
    for node in ast.parse(path.read_text()).body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name:
            assert isinstance(node.value, ast.Dict), f"{name} in {path.name} is not a dict literal"
            return [k.value for k in node.value.keys]
    raise AssertionError(f"no {name} table in {path}")


@pytest.mark.parametrize("module, table", [("cli.py", "VERBS"), ("core/sampler_entries.py", "SAMPLERS"),
                                           ("models/domains.py", "DOMAINS")])
def test_each_table_is_one_literal_without_repeated_names(module, table):
    keys = _literal_keys(SRC / PACKAGE / module, table)
    assert keys and len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]


def test_table_entries_match_their_names():
    import dataclasses

    from mdm_mi.cli import VERBS
    from mdm_mi.core.sampler_table import SAMPLERS
    from mdm_mi.models.domains import DOMAINS
    from mdm_mi.sampling.registry import SAMPLER_CLASSES

    assert list(SAMPLER_CLASSES) == list(SAMPLERS)  # the settings and the class of each sampler, in one order
    assert all(cls.name == name for name, cls in SAMPLER_CLASSES.items())
    assert all(d.name == name for name, d in DOMAINS.items())
    assert all(dataclasses.is_dataclass(v.args) and callable(v.run) and v.help for v in VERBS.values())


def test_every_rule_is_named_after_the_verb_it_runs():
    """``rule sudoku_pretrain`` runs ``python -m mdm_mi sudoku-pretrain``: one name for a stage, in the
    workflow, the CLI and the MLflow tags; and every verb a rule runs is in the verb table."""
    import re

    from mdm_mi.cli import VERBS

    pairs = []
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"\n\s*rule ", "\n" + smk.read_text())[1:]:
            name = block.split(":", 1)[0].strip()
            verb = re.search(r"python -m mdm_mi ([\w-]+)", block)
            if verb:
                pairs.append((name, verb.group(1)))
    assert len(pairs) >= 25, pairs
    assert [(r, v) for r, v in pairs if r.replace("_", "-") != v] == []
    assert {v for _, v in pairs} <= set(VERBS)


# The low-level loaders, by the module that defines each; only loading (and the domain table's
# ``load`` entries in domain, which it calls) may reach them; the protein entry dispatches to the
# column model by meta "kind".
LOW_LEVEL_LOADERS = {"load_sudoku_model": "mdm_mi.sudoku.model", "load_protein_model": "mdm_mi.protein.model",
                     "load_column_model": "mdm_mi.protein.family.columns", "load_hf_model": "mdm_mi.hf.model",
                     "load_head": "mdm_mi.mi.head"}
MAY_CALL_LOW_LEVEL = {"mdm_mi.models.loading", "mdm_mi.models.domains"}


def low_level_loader_uses(src: Path = SRC) -> list[str]:
    """``module: name`` for every import of a low-level loader from its defining module outside
    :data:`MAY_CALL_LOW_LEVEL` (an import is the only way to call one: none is re-exported)."""
    uses = []
    for mod, path in _modules(src).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in LOW_LEVEL_LOADERS.values():
                uses += [f"{mod}: {a.name}" for a in node.names
                         if LOW_LEVEL_LOADERS.get(a.name) == node.module and mod not in MAY_CALL_LOW_LEVEL]
    return uses


def test_every_verb_loads_models_through_the_one_loader():
    assert low_level_loader_uses() == []
    text = (SRC / PACKAGE / "models" / "domains.py").read_text()
    imported = {a.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ImportFrom) for a in node.names}
    assert {"load_sudoku_model", "load_protein_model", "load_column_model", "load_hf_model"} <= imported


def test_the_loader_check_finds_a_verb_calling_a_low_level_loader(tmp_path):
    pkg = tmp_path / PACKAGE / "sudoku"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "report_jobs.py").write_text("def f():\n    from mdm_mi.sudoku.model import load_sudoku_model\n")
    assert low_level_loader_uses(tmp_path) == ["mdm_mi.sudoku.report_jobs: load_sudoku_model"]


# Module files that still repeat their package's name, each pending its own change (none left).
NAME_REPEATS_PENDING: set[str] = set()


def name_repeats(src: Path = SRC, package: str = PACKAGE) -> list[str]:
    """Module files (relative to the package) whose name repeats a package they sit in, as a whole
    name or as words of it (``sudoku/sudoku_compare.py``, ``protein/family/protein_oracle_job.py``): the
    directory already says which domain a module belongs to, so each domain names a role by the role
    alone (``model.py``, ``data.py``, ``compare.py``, ``jobs.py``, ...) and one domain reads like another."""
    root = src / package
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        words = path.stem.split("_")
        for pkg in (package, *rel.parts[:-1]):
            n = len(pkg.split("_"))
            if any(words[i:i + n] == pkg.split("_") for i in range(len(words) - n + 1)):
                found.append(rel.as_posix())
                break
    return found


def verb_module_style_breaks(modules) -> list[str]:
    """The verb modules (dotted names) whose name breaks the one style: ``jobs`` or ``<topic>_jobs`` in a
    domain package, or any module of the packages that hold only verbs (``mdm_mi.jobs``, ``mdm_mi.user``)."""
    verb_packages = {f"{PACKAGE}.jobs", f"{PACKAGE}.user"}
    return sorted(m for m in modules if m.rpartition(".")[0] not in verb_packages
                  and not (m.rpartition(".")[2] == "jobs" or m.endswith("_jobs")))


def test_every_verb_module_has_the_one_suffix_style():
    from mdm_mi.cli import VERBS

    assert verb_module_style_breaks({v.run.__module__ for v in VERBS.values()}) == []
    toy = {"mdm_mi.sudoku.jobs", "mdm_mi.sudoku.compare_job", "mdm_mi.jobs.docs", "mdm_mi.protein.run"}
    assert verb_module_style_breaks(toy) == ["mdm_mi.protein.run", "mdm_mi.sudoku.compare_job"]


def test_no_module_repeats_its_package_name():
    assert set(name_repeats()) <= NAME_REPEATS_PENDING, sorted(set(name_repeats()) - NAME_REPEATS_PENDING)


def test_the_name_check_finds_a_module_repeating_its_package(tmp_path):
    pkg = tmp_path / "toy"
    for name in ("__init__.py", "toy_cli.py", "sudoku/__init__.py", "sudoku/sudoku_compare.py", "sudoku/model.py",
                 "sudoku/grid_sudoku.py", "protein/family/family_jobs.py", "protein/family/protein_oracle_job.py",
                 "protein/family/jobs.py", "protein/sequences.py", "user/mi_map.py"):
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text("")
    assert name_repeats(tmp_path, "toy") == ["protein/family/family_jobs.py", "protein/family/protein_oracle_job.py",
                                             "sudoku/grid_sudoku.py", "sudoku/sudoku_compare.py", "toy_cli.py"]


# Public top-level names defined in more than one module, each with the one meaning they share: the
# same role in parallel places (two domains' reports, trainers, models). Any other name is defined once;
# a second module wanting a name it means differently picks a name that says what it is.
SHARED_NAMES: dict[str, tuple[set[str], str]] = {
    "COLUMNS": ({"protein/report.py", "sudoku/report.py"}, "each domain's tidy-table columns for the grid's samplers"),
    "DOMAIN": ({"core/hf_folder.py", "mi/head.py", "protein/model.py", "quality/head.py", "sudoku/model.py"},
               "the meta.json ``domain`` of the checkpoints each module writes and loads (a model's, or a head's)"),
    "EVAL_BATCH": ({"mi/head.py", "quality/train.py"}, "rows per chunk when each head's trainer scores held-out data"),
    "EXAMPLES": ({"user/check_config.py", "user/infill.py", "user/mi_map.py", "user/solve.py"},
                 "each user verb's help examples (printed after its flags)"),
    "FIELDS": ({"evaluation/budgets.py", "protein/family/covariation.py"},
               "a comparison's per-budget contrasts CSV's columns (budgets.csv, a protein family's covariation.csv)"),
    "GRAD_CLIP": ({"mi/head.py", "quality/train.py"}, "each head trainer's max global gradient norm per step"),
    "LOG_POINTS": ({"mi/head.py", "quality/train.py"},
                   "the history rows each head trainer logs over a run (plus the last step)"),
    "MASK_ID": ({"protein/family/columns.py", "sudoku/grid.py"}, "the mask token's id in each domain's own encoding"),
    "METRICS": ({"antibody/compare.py", "protein/family/covariation.py"},
                "the metrics each domain's comparison contrasts, one paired difference each"),
    "METRIC_COLUMNS": ({"protein/report.py", "sudoku/report.py"}, "each domain's tidy-table metric columns"),
    "SETS": ({"antibody/data.py", "sudoku/compare.py"},
             "each domain's comparison sets, by name (antibody: name → the regions it masks)"),
    "ceiling_markdown": ({"protein/family/oracle_jobs.py", "sudoku/report.py"},
                         "each domain's MI-oracle ceiling result as Markdown"),
    "columns": ({"protein/report.py", "sudoku/report.py"}, "each domain's tidy-table columns for its rows' samplers"),
    "composition": ({"antibody/compare.py", "protein/metrics.py"},
                    "the residue composition (share of each residue) of a sample, on each domain's encoding"),
    "diffusion_loss": ({"protein/train.py", "sudoku/train.py"}, "each domain's masked-diffusion training loss"),
    "matched_table": ({"evaluation/plotting.py", "protein/report.py", "sudoku/report.py"},
                      "the MI-guided-vs-baselines-at-matched-passes Markdown: the shared builder and each domain's"),
    "mi_map_figure": ({"protein/family/figures.py", "sudoku/report.py"},
                      "the head's MI map beside its reference, on each domain's layout (family columns, 9×9 grid)"),
    "n_params": ({"protein/family/columns.py", "sudoku/model.py"}, "a model's parameter count"),
    "paper_table": ({"protein/report.py", "sudoku/report.py"}, "each domain's paper table with ours beside it"),
    "read_rows": ({"protein/report.py", "sudoku/report.py"}, "each domain's tidy table CSV read back, numbers as floats"),
    "sample_batch": ({"protein/family/column_train.py", "protein/train.py"},
                     "one masked training batch (inputs, targets, t) for each trainer"),
    "speed_quality": ({"protein/report.py", "sudoku/report.py"}, "each domain's quality-against-mean-passes figure"),
    "to_markdown": ({"protein/report.py", "sudoku/report.py"}, "each domain's tidy table as Markdown"),
}


def public_definitions(src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """Public top-level name (not ``_private``; UPPER constants included) → the modules (paths relative
    to the package) that define it by ``def``, ``class`` or assignment (each name of ``A, B = ...`` too)."""
    defs: dict[str, set[str]] = {}
    root = src / package
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [n.id for t in node.targets for n in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
                         if isinstance(n, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            for name in names:
                if not name.startswith("_"):
                    defs.setdefault(name, set()).add(path.relative_to(root).as_posix())
    return defs


def names_with_two_meanings(src: Path = SRC, package: str = PACKAGE,
                            shared: dict[str, tuple[set[str], str]] = SHARED_NAMES) -> list[str]:
    """``name: modules`` for each public name defined in more than one module where :data:`SHARED_NAMES`
    does not give exactly those modules one meaning."""
    return [f"{name}: {sorted(mods)}" for name, mods in sorted(public_definitions(src, package).items())
            if len(mods) > 1 and shared.get(name, (set(), ""))[0] != mods]


def test_public_names_have_one_meaning():
    assert names_with_two_meanings() == []


def test_every_shared_name_is_still_shared():
    """An entry of :data:`SHARED_NAMES` whose name is now defined once (or not at all) goes."""
    defs = public_definitions()
    assert [n for n in SHARED_NAMES if len(defs.get(n, ())) < 2] == []


def test_the_meaning_check_finds_a_name_defined_twice(tmp_path):
    pkg = tmp_path / "toy"
    for name, text in (("__init__.py", ""), ("a.py", "def solve(x):\n    pass\nN_MAX = 3\n_helper = 1\n"),
                       ("sub/b.py", "class solve:\n    pass\nN_MAX, _helper = 4, 2\ndef shared(): pass\n"),
                       ("sub/c.py", "shared = None\n"), ("d.py", "def shared(): pass\n")):
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    # constants count, a tuple's names too; private names do not
    assert names_with_two_meanings(tmp_path, "toy", {}) == ["N_MAX: ['a.py', 'sub/b.py']",
                                                            "shared: ['d.py', 'sub/b.py', 'sub/c.py']",
                                                            "solve: ['a.py', 'sub/b.py']"]
    # a shared name is allowed in exactly the modules given, not in a third
    allowed = {"shared": ({"sub/b.py", "sub/c.py"}, "one meaning"), "solve": ({"a.py", "sub/b.py"}, "one meaning"),
               "N_MAX": ({"a.py", "sub/b.py"}, "one meaning")}
    assert names_with_two_meanings(tmp_path, "toy", allowed) == ["shared: ['d.py', 'sub/b.py', 'sub/c.py']"]


def test_tests_import_their_helpers_as_pytest_puts_them_on_the_path():
    """CI runs plain `pytest`, which puts tests/ (not the repository root) on sys.path: `tests.x` fails there."""
    wrong = []
    for path in sorted((REPO / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            wrong += [f"{path.name}:{node.lineno}" for name in names if name == "tests" or name.startswith("tests.")]
    assert not wrong, f"import helpers as `from conftest import …`, not through `tests.`: {wrong}"
