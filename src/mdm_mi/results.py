"""Gather per-job summaries into one tidy table (CSV + Markdown).

One row per (set, sampler, parameters, level) with n, accuracy and its Wilson 95% interval, mean
passes and its 95% CI.

    python -m mdm_mi sudoku-table --inputs results/sudoku/eval/*/*.json --out results/sudoku/table.csv
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.io import read_json, write_text

PARAM_COLUMNS = ["order", "k", "gamma", "lam", "on_reject", "charge_first"]
METRIC_COLUMNS = ["n", "accuracy", "acc_lo", "acc_hi", "mean_passes", "passes_ci", "mean_clues"]
COLUMNS = ["set", "sampler", "setting", *PARAM_COLUMNS, "level", *METRIC_COLUMNS]


def setting_label(params: dict) -> str:
    """Human-readable setting, e.g. ``k=4`` or ``gamma=0.3 lam=1.0`` (display only, never parsed)."""
    return " ".join(f"{k}={params[k]}" for k in PARAM_COLUMNS if k in params)


def tidy_rows(summaries: list[dict]) -> list[dict]:
    """Flatten evaluation summaries into rows sorted by set, sampler, params and level."""
    rows = []
    for s in summaries:
        params = {k: s["params"].get(k, "") for k in PARAM_COLUMNS}
        for level, m in s["levels"].items():
            rows.append({"set": s["set"], "sampler": s["sampler"], "setting": setting_label(s["params"]),
                         **params, "level": level, **{k: m[k] for k in METRIC_COLUMNS}})
    return sorted(rows, key=lambda r: (r["set"], r["sampler"], r["setting"], r["level"] != "all", r["level"]))


def to_csv(rows: list[dict], columns: list[str] = COLUMNS) -> str:
    """Rows → CSV text with ``columns`` (default: the Sudoku table's :data:`COLUMNS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def to_markdown(rows: list[dict], level: str = "all") -> str:
    """The ``level`` rows as a Markdown table: accuracy [95% CI] and mean passes ± CI."""
    lines = ["| set | sampler | setting | n | accuracy % [95% CI] | mean passes |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["level"] != level:
            continue
        acc = f"{100 * r['accuracy']:.1f} [{100 * r['acc_lo']:.1f}, {100 * r['acc_hi']:.1f}]"
        lines.append(f"| {r['set']} | {r['sampler']} | {r['setting']} | {r['n']} | {acc} | "
                     f"{r['mean_passes']:.1f} ± {r['passes_ci']:.1f} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class GatherArgs:
    inputs: tuple[Path, ...] = field(metadata={"help": "evaluation summary JSONs"})
    out: Path = field(metadata={"help": "tidy CSV"})
    markdown: Path = field(metadata={"help": "Markdown table of the 'all' rows"})


def gather(args: GatherArgs, tracker) -> None:
    rows = tidy_rows([read_json(p) for p in args.inputs])
    write_text(args.out, to_csv(rows))
    write_text(args.markdown, to_markdown(rows))
    tracker.log_metrics({"n_rows": len(rows)})
    tracker.log_artifact(args.out)
    tracker.log_artifact(args.markdown)
