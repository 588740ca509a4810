"""Table helpers every report shares: the sampler-parameter columns, a setting's label, CSV text,
and a table verb's two files.

    setting_label({"gamma": 0.3, "lam": 1.0})      # "gamma=0.3 lam=1.0"
    text = to_csv(rows, ["set", "sampler", ...])
    write_table(rows, columns, args.out, markdown_text, args.markdown, tracker)
"""

from __future__ import annotations

import csv
import io
from typing import Iterable

from mdm_mi.core.sampler_table import SAMPLERS
from mdm_mi.infra.io import write_text


def param_columns(samplers: Iterable[str] = ()) -> list[str]:
    """A results table's parameter columns: the flags of every sampler the workflow's grid decodes
    (so its columns do not depend on a config's grid) and of the other ``samplers`` it holds, in
    :data:`SAMPLERS` order."""
    held = set(samplers)
    return list(dict.fromkeys(f for name, s in SAMPLERS.items() if s.grid or name in held for f in s.flags))


def setting_label(params: dict) -> str:
    """Human-readable setting, e.g. ``k=4`` or ``gamma=0.3 lam=1.0`` (display only, never parsed)."""
    return " ".join(f"{k}={params[k]}" for k in param_columns(SAMPLERS) if k in params)


def to_csv(rows: list[dict], columns: list[str]) -> str:
    """Rows → CSV text with ``columns``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def write_table(rows: list[dict], columns: list[str], csv_path, markdown: str, markdown_path, tracker) -> None:
    """A table verb's files: ``rows`` as CSV with ``columns`` and their ``markdown`` text, each written
    atomically, then both mirrored to the tracker."""
    write_text(csv_path, to_csv(rows, columns))
    write_text(markdown_path, markdown)
    tracker.log_artifact(csv_path)
    tracker.log_artifact(markdown_path)
