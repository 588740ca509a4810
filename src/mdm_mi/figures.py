"""Paper figures and tables built from results already computed (``snakemake figures``).

* :func:`speed_quality` — mean passes vs accuracy, one curve per sampler, the paper's points overlaid.
* :func:`paper_table` — our rows beside the paper's Sudoku table, at the paper's settings and at
  matched mean passes.

    python -m mdm_mi figure-speed-quality --table results/x/sudoku/table.csv --out fig.png ...
"""

from __future__ import annotations

import csv
from pathlib import Path

from mdm_mi import paper
from mdm_mi.plotting import SAMPLER_STYLE, matched_table as matched, nearest, plt, save

def read_table(path: str | Path) -> list[dict]:
    """Read a tidy table written by ``sudoku-table`` (numbers as floats)."""
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("n", "accuracy", "acc_lo", "acc_hi", "mean_passes", "passes_ci", "mean_clues"):
            r[key] = float(r[key])
    return rows


def select(rows: list[dict], set_name: str, level: str = "all") -> list[dict]:
    """Rows of one evaluation set and level."""
    return [r for r in rows if r["set"] == set_name and r["level"] == level]


def speed_quality(rows: list[dict], set_name: str, out: str | Path, title: str, overlay_paper: bool) -> None:
    """Accuracy (%, Wilson 95% CI) against mean forward passes, one curve per sampler family."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    data = select(rows, set_name)
    for sampler, (label, colour) in SAMPLER_STYLE.items():
        pts = sorted((r for r in data if r["sampler"] == sampler), key=lambda r: r["mean_passes"])
        if not pts:
            continue
        x = [r["mean_passes"] for r in pts]
        y = [100 * r["accuracy"] for r in pts]
        err = [[100 * (r["accuracy"] - r["acc_lo"]) for r in pts], [100 * (r["acc_hi"] - r["accuracy"]) for r in pts]]
        ax.errorbar(x, y, yerr=err, marker="o", ms=4, capsize=2, color=colour, label=label)
    if overlay_paper:
        for sampler, label, _, passes, acc in paper.SUDOKU:
            colour = SAMPLER_STYLE[sampler][1]
            ax.scatter([passes], [acc], marker="*", s=140, color=colour, edgecolor="k", zorder=5)
        ax.scatter([], [], marker="*", s=140, color="white", edgecolor="k", label="paper (stars)")
    ax.set_xscale("log")
    ax.set_xlabel("mean forward passes per puzzle (log)")
    ax.set_ylabel("puzzles solved (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out)


def _matches(row: dict, params: dict) -> bool:
    """Whether the table row (string cells) has the given parameter values."""
    return all(str(row.get(k, "")) == str(v) for k, v in params.items())


def paper_table(rows: list[dict], set_name: str, caption: str) -> str:
    """Markdown: each paper row, ours at the paper's setting, and ours nearest in mean passes."""
    data = select(rows, set_name)
    lines = [caption, "", "| sampler | paper: passes / acc % | ours, same setting: passes / acc % [95% CI] "
             "| ours, nearest passes: setting, passes / acc % |", "|---|---|---|---|"]
    for sampler, label, params, passes, acc in paper.SUDOKU:
        same = next((r for r in data if r["sampler"] == sampler and _matches(r, params)), None)
        near = nearest(data, sampler, passes)
        lines.append(f"| {label} | {passes:.1f} / {acc:.1f} | {_fmt(same)} | "
                     f"{(near['setting'] + ', ' + _fmt(near)) if near else 'not run'} |")
    return "\n".join(lines) + "\n"


def _fmt(r: dict | None) -> str:
    if r is None:
        return "not run"
    return (f"{r['mean_passes']:.1f} / {100 * r['accuracy']:.1f} "
            f"[{100 * r['acc_lo']:.1f}, {100 * r['acc_hi']:.1f}]")


def matched_table(rows: list[dict], set_name: str) -> str:
    """Markdown: each MI-guided setting beside the EB and naive settings whose mean passes are within
    ±10% of it (the closest one of each), accuracies with Wilson 95% intervals."""
    return matched(select(rows, set_name), _fmt, "acc % [95% CI]", f", set '{set_name}'")
