"""Table helpers every report shares: the sampler-parameter columns, a setting's label, CSV text.

    setting_label({"gamma": 0.3, "lam": 1.0})      # "gamma=0.3 lam=1.0"
    text = to_csv(rows, ["set", "sampler", ...])
"""

from __future__ import annotations

import csv
import io

PARAM_COLUMNS = ["order", "k", "gamma", "lam", "on_reject", "charge_first"]


def setting_label(params: dict) -> str:
    """Human-readable setting, e.g. ``k=4`` or ``gamma=0.3 lam=1.0`` (display only, never parsed)."""
    return " ".join(f"{k}={params[k]}" for k in PARAM_COLUMNS if k in params)


def to_csv(rows: list[dict], columns: list[str]) -> str:
    """Rows → CSV text with ``columns``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
