"""The Sudoku reports, built from results already computed: the tidy evaluation table
(``sudoku-table``), the speed-quality figure and the paper table (``snakemake figures``), and the MI
map of one cell drawn on the 9×9 grid.

* :func:`tidy_rows` — one row per (set, sampler, parameters, level) with n, accuracy and its Wilson
  95% interval, mean passes and its 95% CI;
* :func:`speed_quality` — mean passes vs accuracy, one curve per sampler, the paper's points overlaid;
* :func:`paper_table` — our rows beside the paper's Sudoku table, at the paper's settings and at
  matched mean passes;
* :func:`mi_map_figure` — Î and the exact MI of one cell with every other, on the grid.

    python -m mdm_mi sudoku-table --inputs results/x/sudoku/eval/*/*.json --out results/x/sudoku/table.csv ...
    python -m mdm_mi figure-speed-quality --table results/x/sudoku/table.csv --out fig.png ...
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from mdm_mi.evaluation import paper
from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL, by_budget, diff_cell, disagree_note
from mdm_mi.evaluation.paired import bootstrap_curves
from mdm_mi.evaluation.plotting import (SAMPLER_STYLE, log_passes_axis, matched_table as matched, nearest, plain_ticks,
                                        plt, save)
from mdm_mi.evaluation.tables import param_columns, setting_label
from mdm_mi.sudoku.grid import MASK_ID, SIDE

BEST_MI_LABEL = "mi*: MI-guided at the λ that scored best on calibration, per budget"

METRIC_COLUMNS = ["n", "accuracy", "acc_lo", "acc_hi", "mean_passes", "passes_ci", "mean_clues"]


def columns(rows: list[dict]) -> list[str]:
    """The tidy table's columns, with the parameter columns of ``rows``' samplers (:func:`param_columns`)."""
    return ["set", "sampler", "setting", *param_columns(r["sampler"] for r in rows), "level", *METRIC_COLUMNS]


COLUMNS = columns([])  # a table of the grid's samplers


def tidy_rows(summaries: list[dict]) -> list[dict]:
    """Flatten evaluation summaries into rows sorted by set, sampler, params and level."""
    rows = []
    keys = param_columns(s["sampler"] for s in summaries)
    for s in summaries:
        params = {k: s["params"].get(k, "") for k in keys}
        for level, m in s["levels"].items():
            rows.append({"set": s["set"], "sampler": s["sampler"], "setting": setting_label(s["params"]),
                         **params, "level": level, **{k: m[k] for k in METRIC_COLUMNS}})
    return sorted(rows, key=lambda r: (r["set"], r["sampler"], r["setting"], r["level"] != "all", r["level"]))


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


def read_rows(path: str | Path) -> list[dict]:
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


# --- the MI map on the grid ---------------------------------------------------------------------------


def _draw_grid(ax, values: np.ndarray, puzzle: np.ndarray, cell: int, title: str, vmax: float) -> None:
    """One 9×9 panel: colour = MI with ``cell`` (nats, printed), givens as digits."""
    grid = values.reshape(SIDE, SIDE)
    ax.imshow(grid, cmap="viridis", vmin=0, vmax=vmax)
    for r in range(SIDE):
        for c in range(SIDE):
            i = r * SIDE + c
            if i == cell:
                ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
            if puzzle[i] != MASK_ID:
                ax.text(c, r, str(int(puzzle[i]) + 1), ha="center", va="center", fontsize=11, color="white",
                        fontweight="bold")
            elif i != cell:
                ax.text(c, r, f"{grid[r, c]:.2f}", ha="center", va="center", fontsize=6.5,
                        color="black" if grid[r, c] > 0.6 * vmax else "white")
    for k in range(0, SIDE + 1, 3):
        ax.axhline(k - 0.5, color="k", lw=2)
        ax.axvline(k - 0.5, color="k", lw=2)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


def mi_map_figure(puzzle: np.ndarray, pred, label, cell: int, out, backbone_name: str) -> None:
    """Head Î (and exact MI) of ``cell`` with every other cell, drawn on the grid."""
    panels = [("MI head Î", pred)] + ([("exact probing MI", label)] if label is not None else [])
    vmax = max(float(m[cell].max()) for _, m in panels) or 1.0
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.8))
    for ax, (name, mat) in zip(np.atleast_1d(axes), panels):
        row = mat[cell].numpy().copy()
        _draw_grid(ax, row, puzzle, cell, f"{name}: I(X_{cell}; X_j | C) in nats", vmax)
    fig.suptitle(f"MI of cell r{cell // SIDE + 1}c{cell % SIDE + 1} (red) — backbone: {backbone_name}", fontsize=10)
    save(fig, out)


# --- accuracy at calibrated budgets (sudoku-compare) ------------------------------------------------------


def curve_figure(runs: dict, out: Path, set_name: str, n_boot: int, seed: int) -> None:
    """Accuracy at budget (interpolated between calibrated points, paired-bootstrap 95% bands)."""
    table = by_budget(runs)
    families = [f for f in dict.fromkeys(f for fams in table.values() for f in fams)]
    solved = {f: np.stack([table[d][f]["solved"] for d in table]) for f in families}
    passes = {f: np.array([np.mean(table[d][f]["passes"]) for d in table]) for f in families}
    lo = max(min(p.min() for p in passes.values()), 1.0)
    hi = max(p.max() for p in passes.values())
    grid = np.geomspace(lo, hi, 60)
    curves = bootstrap_curves(solved, passes, grid, n_boot, seed)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for f, c in curves.items():
        if f == BEST_MI:  # wide and under the rest: it coincides with one λ's curve at each budget
            ax.plot(grid, 100 * c["acc"], color="0.5", lw=5, alpha=0.35, zorder=1, label=BEST_MI_LABEL)
            continue
        line, = ax.plot(grid, 100 * c["acc"], label=f, zorder=2)
        ax.fill_between(grid, 100 * c["lo"], 100 * c["hi"], color=line.get_color(), alpha=0.15)
    seq = runs[SEQUENTIAL]
    ax.scatter([np.mean(seq["passes"])], [100 * np.mean(seq["solved"])], color="black", zorder=3, label="sequential")
    log_passes_axis(ax, plain_ticks(lo, hi), "mean forward passes (calibrated budgets, log)")
    ax.set_ylabel("solved % (test split)")
    ax.set_title(f"Sudoku {set_name}: accuracy at budget, paired-bootstrap 95% bands")
    ax.legend(fontsize=8)
    save(fig, out)


def ceiling_markdown(result: dict, set_name: str) -> str:
    """One row per budget: sequential, head and oracle accuracy @ passes, and the paired gaps; the
    oracle's seconds, or (decoded in chunks) every chunk's CPU time summed under the table."""
    chunks = result.get("chunks")
    seconds = ["oracle s"] if not chunks else []
    lines = [f"**{set_name}**, {result['n']} test puzzles, oracle = certified probing MI (±{result['tol']:g} nats)", "",
             "| " + " | ".join(["budget", "sequential", "MI head (mi*)", "MI oracle", "oracle − head",
                                "oracle − sequential", *seconds]) + " |",
             "|" + "---|" * (6 + len(seconds))]
    for d, r in sorted(result["divisors"].items(), key=lambda item: int(item[0])):  # JSON keys sort as text
        def cell(k):
            return f"{100 * r[k + '_accuracy']:.1f} @ {r[k + '_passes']:.1f}"

        diffs = [diff_cell(r["differences"][k]) for k in ("oracle-head", "oracle-sequential")]
        lines.append("| " + " | ".join([f"1/{d}", cell("sequential"), cell("head"), cell("oracle"), *diffs,
                                        *([f"{r['seconds']:.0f}"] if seconds else [])]) + " |")
    note = [] if not chunks else ["", f"Decoded in chunks of 100 puzzles ({chunks['read']} read back, {chunks['decoded']} "
                                      f"decoded by the invocation that wrote this): the decodes' CPU time "
                                      f"{chunks['decode_cpu_seconds'] / 60:.1f} min, by commits "
                                      f"{', '.join(c[:7] for c in chunks['commits'])}."]
    return "\n".join(lines + disagree_note(lines) + note) + "\n"


def ceiling_block(path: Path) -> str:
    """A ``sudoku-oracle-ceiling`` output's ``ceiling.json`` (``path``) as :func:`ceiling_markdown` writes
    it (an older file without its set's name: the folder's)."""
    result = json.loads(Path(path).read_text())
    return ceiling_markdown(result, result.get("set", Path(path).parent.name))


def screen_block(path: Path) -> str:
    """``benchmarks/dev_screen.py``'s ``screen.json`` (``path``) as a table: each rule at each budget with
    its accuracy and mean passes, paired against sequential and EB (pp, 95% Newcombe interval, McNemar p),
    and its wall-clock seconds per puzzle at batch 1 and batched; sequential first."""
    screen = json.loads(Path(path).read_text())
    cell = lambda c: f"{100 * c['diff']:+.1f} [{100 * c['lo']:+.1f}, {100 * c['hi']:+.1f}] p={c['p']:.2g}" if c else ""
    lines = [f"{screen['n_test']} development puzzles, calibrated on {screen['n_calib']} others; wall-clock on "
             f"{screen['cpu']}, {screen['threads']} threads.", "",
             "| rule | budget | accuracy % | passes | − sequential (pp) | − EB (pp) | s/puzzle, batch 1 | s/puzzle, batched |",
             "|---|---|---|---|---|---|---|---|"]
    order = sorted(screen["runs"].items(), key=lambda kv: (kv[0] != SEQUENTIAL, kv[1]["divisor"], kv[0]))
    for run_id, r in order:
        budget = "" if r["divisor"] == 1 else f"÷{r['divisor']}" + ("" if r["on_target"] else " †")
        lines.append(f"| {r['family']} | {budget} | {100 * r['accuracy']:.1f} | {r['passes']:.2f} | "
                     f"{cell(r.get('vs_sequential'))} | {cell(r.get('vs_eb'))} | {r['seconds_per_puzzle_batch1']:.3f} | "
                     f"{r['seconds_per_puzzle_batched']:.4f} |")
    if any(not r["on_target"] for r in screen["runs"].values()):
        lines += ["", "† the test passes miss the budget by more than 3% (the rule cannot reach it)"]
    return "\n".join(lines) + "\n"


def confirm_block(path: Path) -> str:
    """``benchmarks/confirm_63.py``'s ``result.json`` (``path``): the registered rule and EB at their budget
    on the registered test puzzles (accuracy, passes, seconds per puzzle), the registered contrast with its
    interval, p, TOST p and verdict, and each against sequential (descriptive)."""
    r = json.loads(Path(path).read_text())
    reg = r["registration"]
    cell = lambda c: f"{100 * c['diff']:+.1f} [{100 * c['lo']:+.1f}, {100 * c['hi']:+.1f}] p={c['p']:.2g}"
    lines = [f"{r['n_test']:,} registered test puzzles, calibrated on {r['n_calib']}; ÷{reg['divisor']} of sequential's "
             f"passes; wall-clock on {r['cpu']}, {r['threads']} threads.", "",
             "| rule | accuracy % | passes | − sequential (pp, descriptive) | s/puzzle, batch 1 | s/puzzle, batched |",
             "|---|---|---|---|---|---|"]
    for name, label, vs in (("rule", reg["rule"], "vs_sequential"), ("eb", "eb", "eb_vs_sequential")):
        run, sec = r[name], r["seconds_per_puzzle"][name]
        lines.append(f"| {label} | {100 * run['accuracy']:.1f} | {run['passes']:.2f} | {cell(r[vs])} | "
                     f"{sec['batch1']:.3f} | {sec['batched']:.4f} |")
    lines.append(f"| sequential (the registered run) | {100 * r['sequential']['accuracy']:.1f} |  |  |  |  |")
    p = r["primary"]
    lines += ["", f"Registered contrast, {reg['rule']} − eb: {cell(p)}, TOST p at ±{100 * reg['margin']:g} pp "
                  f"{p['tost_p']:.2g}: **{r['verdict']}**. EB reproduces the registered run's outcomes puzzle for "
                  f"puzzle: {'yes' if r['eb']['reproduces_registered'] else 'no'}."]
    return "\n".join(lines) + "\n"


def screen_figure(paths: list[Path], out: Path) -> None:
    """Accuracy against mean passes of every family of the development screens ``paths`` (``screen.json``
    files of ``benchmarks/dev_screen.py``; a family's budgets joined by a line), sequential as the
    horizontal line to reach, written to ``out``."""
    from mdm_mi.evaluation.plotting import plt, save

    runs = {}
    for path in paths:
        runs |= json.loads(Path(path).read_text())["runs"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    families = sorted({r["family"] for r in runs.values() if r["divisor"] > 1})
    for i, family in enumerate(families):
        points = sorted((r["passes"], 100 * r["accuracy"]) for r in runs.values() if r["family"] == family)
        ax.plot(*zip(*points), marker="os^vD<>"[i % 7], color=plt.cm.tab20(i % 20), label=family,
                linestyle="-" if family == "eb" else "--", linewidth=2 if family == "eb" else 1)
    seq = runs.get(SEQUENTIAL)
    if seq is not None:
        ax.axhline(100 * seq["accuracy"], color="black", linewidth=1,
                   label=f"sequential ({seq['passes']:.0f} passes)")
    budgets = sorted({round(r["passes"], 1) for r in runs.values() if r["divisor"] > 1})
    log_passes_axis(ax, budgets, "mean forward passes per puzzle")
    ax.set_ylabel("puzzles solved (%)")
    ax.set_title("Development screen, paper-shape Sudoku backbone")
    ax.legend(fontsize=7, ncol=2)
    save(fig, out)
