"""The calibrated fallbacks of a model: the parameters a user who omits them gets (``solve --sampler
mi`` without ``--gamma``), read from the ``calibrated`` block of the model folder's MANIFEST.json.
That block is written when the backbone's own calibration ran (a comparison's settings at
sequential's passes ÷ ``at``), so the fallbacks always belong to the model that decodes; a shipped
backbone carries one (``tests/test_pretrained.py`` fails otherwise) and ``import-pretrained`` copies
it into the run's model folder. A model without one (trained by the workflow, imported from Hugging
Face) has no fallbacks: the user gives the parameter.

    calibrated = read_calibrated("resources/pretrained/sudoku")
    calibrated.params("mi")     # {"gamma": 0.3626, "lam": 1.0}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import MANIFEST

KEY = "calibrated"  # the MANIFEST.json block


@dataclass(frozen=True)
class Calibrated:
    """A model's calibrated settings: ``samplers`` (sampler → parameters) found at sequential's passes
    ÷ ``at`` on the measured run ``source`` names; ``where`` is the model folder (for messages)."""

    samplers: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    at: int | None = None
    source: str = ""
    where: str = "the model"

    def params(self, sampler: str) -> Mapping[str, float]:
        """The calibrated parameters of ``sampler`` (empty when none were calibrated)."""
        return self.samplers.get(sampler, {})

    def value(self, sampler: str, name: str, settings_of: str | None = None) -> float:
        """Parameter ``name`` of ``sampler`` (or of the entry ``settings_of`` whose settings it
        takes); a one-line :class:`InputError` naming the flag to give when the model has none."""
        found = self.params(settings_of or sampler)
        if name not in found:
            flag = f"--{name.replace('_', '-')}"
            raise InputError(f"{flag} not given, and {self.where} has no calibrated {name} for {sampler} "
                             f"(no '{KEY}' block in its {MANIFEST}, or none for this sampler): pass {flag}")
        return found[name]


def block_problems(block, samplers: Mapping, algorithm_1: str) -> list[str]:
    """What is wrong with a MANIFEST's ``calibrated`` block (empty: nothing): ``at`` a divisor ≥ 2, a
    ``source`` naming the measured run, and for each sampler of ``samplers`` (the sampler table) it
    names, numbers for flags that sampler takes; ``algorithm_1`` (``solve --sampler mi``) must be
    among them."""
    if not isinstance(block, Mapping):
        return [f"no '{KEY}' block"]
    problems = [] if isinstance(block.get("at"), int) and block["at"] >= 2 else [f"'at' is {block.get('at')!r}"]
    problems += [] if block.get("source") else ["no 'source' (which measured run the values come from)"]
    found = block.get("samplers") or {}
    problems += [] if algorithm_1 in found else [f"no setting for {algorithm_1}"]
    for name, params in found.items():
        if name not in samplers:
            problems.append(f"unknown sampler {name!r}")
            continue
        for flag, value in params.items():
            if flag not in samplers[name].flags or not isinstance(value, (int, float)) or isinstance(value, bool):
                problems.append(f"{name}: {flag}={value!r} is not a number flag of {name}")
    return problems


def read_calibrated(folder: str | Path) -> Calibrated:
    """The ``calibrated`` block of ``folder/MANIFEST.json`` (empty when the folder has no manifest or
    the manifest has no block)."""
    path = Path(folder) / MANIFEST
    where = f"the model {folder}"
    if not path.is_file():
        return Calibrated(where=where)
    try:
        block = json.loads(path.read_text()).get(KEY) or {}
    except (json.JSONDecodeError, AttributeError) as exc:
        raise InputError(f"{path} is not a JSON object: {exc}") from None
    return Calibrated(block.get("samplers", {}), block.get("at"), block.get("source", ""), where)
