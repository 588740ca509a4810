"""Find the trained models that the workflow wrote, so the user verbs need no paths.

The workflow writes each configuration's results under ``results/<name>/`` (``name:`` in the
config): the Sudoku MDM in ``sudoku/model`` and its MI head in ``sudoku/head``; a protein backbone
in ``protein/model`` and its head in ``protein/head`` (or ``protein/mi/head``). A folder counts when
it holds a ``meta.json``. The run named by ``run`` (or the ``MDM_MI_RUN`` environment variable) wins;
otherwise the most recently written one.

    model = find_model("sudoku")                       # e.g. results/cpu-default/sudoku/model
    head = find_head("sudoku", model=model)            # the head beside it: results/cpu-default/sudoku/head
"""

from __future__ import annotations

import os
from pathlib import Path

from mdm_mi.models.domains import DOMAINS
from mdm_mi.infra.checkpoint import META
from mdm_mi.infra.errors import InputError

RUN_ENV = "MDM_MI_RUN"
DEFAULT_RESULTS = Path("results")


def find_model(domain: str, results_root: str | Path = DEFAULT_RESULTS, run: str | None = None) -> Path:
    """The backbone checkpoint folder of ``domain`` under ``results_root`` (see the module doc)."""
    entry = _dirs(domain)
    return _find(entry.model_dirs, f"{domain} model", "--model", Path(results_root), run, entry.train_hint)


def find_head(
    domain: str, results_root: str | Path = DEFAULT_RESULTS, run: str | None = None, model: str | Path | None = None
) -> Path:
    """The MI head folder of ``domain``: with ``model``, the one beside it (``<model>/../head``: a head
    only fits the backbone it was trained on), else as :func:`find_model` searches."""
    rel = _dirs(domain).head_dirs
    if model is None:
        return _find(rel, f"{domain} MI head", "--head", Path(results_root), run, _dirs(domain).train_hint)
    beside = [Path(model).parent / Path(sub).relative_to(domain) for sub in rel]
    for path in beside:
        if (path / META).is_file():
            return path
    raise InputError(f"no {domain} MI head beside the model {model} (searched {', '.join(map(str, beside))}); "
                     f"{_dirs(domain).train_hint}, or pass --head PATH")


def _dirs(domain: str):
    """The :data:`~mdm_mi.models.domains.DOMAINS` entry whose checkpoint folders are searched."""
    if domain not in DOMAINS:
        raise InputError(f"unknown domain {domain!r}; known: {', '.join(DOMAINS)}")
    return DOMAINS[domain]


def _find(rel: tuple[str, ...], what: str, flag: str, root: Path, run: str | None, hint: str) -> Path:
    """The newest ``root/<run>/<rel>`` holding a meta.json, or the one of ``run``; else one-line error
    ending in ``hint`` (how the domain trains one)."""
    run = run or os.environ.get(RUN_ENV) or None
    runs = [run] if run else ["*"]
    found = [p.parent for r in runs for sub in rel for p in root.glob(f"{r}/{sub}/{META}") if p.is_file()]
    if found:
        return max(found, key=lambda p: (p / META).stat().st_mtime)
    searched = ", ".join(str(root / runs[0] / sub) for sub in rel)
    others = sorted({p.parents[len(Path(sub).parts)].name for sub in rel for p in root.glob(f"*/{sub}/{META}")})
    also = f"; runs that have one: {', '.join(others)}" if others else ""
    raise InputError(f"no trained {what} found (searched {searched}{also}); {hint}, or pass {flag} PATH")
