"""The testbed's tables as CSV and markdown, and its two figures (the map and the KL-vs-passes curves).

    write_tables(result, out_dir)                # regimes.csv, runs.csv, map.csv
    print(render_table("docs/data/testbed/map.csv"))
    figure_map(read_table(out_dir / "map.csv"), "map.png")

:func:`render_table` builds the markdown from the data file alone, quoting its values as written (the
numbers the docs' prose states are these strings), so a doc renderer can regenerate the table between
``<!-- render: testbed <file> -->`` and ``<!-- /render -->`` from the file.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Callable

import numpy as np

from matplotlib.ticker import NullFormatter

from mdm_mi.evaluation.plotting import SAMPLER_STYLE, plt, save
from mdm_mi.infra.io import write_text

TABLES = ("regimes", "runs", "map")  # the data files, <name>.csv
RULE_NAMES = {"sequential": "sequential", "naive": "naive top-k", "eb": "EB-Sampler",
              "mi-exact": "Algorithm 1, exact MI", "mi-noisy": "Algorithm 1, noisy MI"}
RULE_STYLE = {"naive": "naive", "eb": "eb", "mi-exact": "mi-oracle", "mi-noisy": "mi"}  # → SAMPLER_STYLE
SYMBOLS = {"k": "k", "gamma": "γ"}
MAP_CLIP = 2.0  # the map's colour scale: log2 of the KL ratio, clipped to ±2 (×4)


def write_tables(result, out_dir: Path) -> list[Path]:
    """The study's three tables (:class:`~mdm_mi.testbed.study.StudyResult`) as ``<name>.csv`` in ``out_dir``."""
    return [write_rows(getattr(result, name), out_dir / f"{name}.csv") for name in TABLES]


def write_rows(rows: list[dict], path: Path) -> Path:
    """``rows`` (dicts with the same keys) as a CSV file, written atomically → ``path``."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buf.getvalue())
    return path


def read_table(path: str | Path) -> list[dict[str, str]]:
    """A table's rows, values as the strings written."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _interval(row: dict, key: str) -> str:
    return f"{row[key]} [{row[key + '_lo']}, {row[key + '_hi']}]"


def _budget(row: dict) -> str:
    return f"÷{row['divisor']} ({float(row['target']):g})"


Column = tuple[str, Callable[[dict], str]]
LAYOUTS: dict[str, list[Column]] = {
    "regimes": [("regime", lambda r: r["regime"]), ("what it is", lambda r: r["description"]),
                ("sites × states", lambda r: f"{r['sites']} × {r['states']}"),
                ("site entropy (nats)", lambda r: r["site_entropy"]),
                ("total correlation (nats)", lambda r: r["total_correlation"]),
                ("largest pair MI", lambda r: r["max_mi"]),
                ("near-independent sites", lambda r: r["independent_share"]),
                ("p's valid mass", lambda r: r["valid_mass"]),
                ("noise σ", lambda r: r["noise_sigma"]), ("noise Pearson r", lambda r: r["noise_pearson"])],
    "runs": [("regime", lambda r: r["regime"]), ("rule", lambda r: RULE_NAMES[r["rule"]]),
             ("budget", _budget), ("parameter (weight × value)", lambda r: f"{SYMBOLS[r['param']]} = {r['setting']}" if r["param"] else ""),
             ("passes", lambda r: f"{r['passes']} ± {r['passes_se']}"),
             ("KL(p‖q)", lambda r: f"{r['kl_pq']} ± {r['kl_pq_se']}"),
             ("KL(q‖p)", lambda r: f"{r['kl_qp']} ± {r['kl_qp_se']}"),
             ("broken", lambda r: r["broken_share"])],
    "map": [("regime", lambda r: r["regime"]), ("budget", _budget), ("rule", lambda r: RULE_NAMES[r["rule"]]),
            ("passes EB / Alg. 1", lambda r: f"{r['passes_eb']} / {r['passes_mi']}"),
            ("KL(p‖q) EB", lambda r: r["kl_eb"]), ("KL(p‖q) Alg. 1", lambda r: r["kl_mi"]),
            ("Alg. 1 − EB [95% CI]", lambda r: _interval(r, "diff")),
            ("Alg. 1 / EB [95% CI]", lambda r: _interval(r, "ratio")),
            ("verdict", lambda r: f"**{r['verdict']}**" if r["verdict"] != "ties" else r["verdict"]),
            ("KL(q‖p): Alg. 1 − EB [95% CI]", lambda r: _interval(r, "diff_qp"))],
}


def render_table(path: str | Path) -> str:
    """The markdown table of one data file (``regimes.csv``, ``runs.csv`` or ``map.csv``), from its rows
    alone; ends with a newline."""
    layout = LAYOUTS[Path(path).stem]
    lines = ["| " + " | ".join(h for h, _ in layout) + " |", "|" + "---|" * len(layout)]
    lines += ["| " + " | ".join(fn(row) for _, fn in layout) + " |" for row in read_table(path)]
    return "\n".join(lines) + "\n"


REMASK_LAYOUTS: dict[str, list[Column]] = {  # testbed-remask's tables (mdm_mi.testbed.remask_study)
    "runs": [("regime", lambda r: r["regime"]), ("rule", lambda r: r["rule"]), ("budget", _budget),
             ("setting (value × weight)", lambda r: r["setting"]), ("passes", lambda r: r["passes"]),
             ("KL(p‖q)", lambda r: f"{r['kl_pq']} ± {r['kl_pq_se']}"),
             ("KL(q‖p)", lambda r: f"{r['kl_qp']} ± {r['kl_qp_se']}")],
    "against_eb": [("regime", lambda r: r["regime"]), ("budget", lambda r: f"÷{r['divisor']}"), ("rule", lambda r: r["rule"]),
                   ("KL(p‖q): rule − EB [95% CI]", lambda r: f"{r['kl_pq_diff']} [{r['kl_pq_lo']}, {r['kl_pq_hi']}]"),
                   ("verdict", lambda r: f"**{r['kl_pq_verdict']}**" if r["kl_pq_verdict"] != "tie" else "tie"),
                   ("KL(q‖p): rule − EB [95% CI]", lambda r: f"{r['kl_qp_diff']} [{r['kl_qp_lo']}, {r['kl_qp_hi']}]"),
                   ("verdict ", lambda r: f"**{r['kl_qp_verdict']}**" if r["kl_qp_verdict"] != "tie" else "tie")],
}


OFF_BUDGET_MARK = "†"
REMASK_OFF_BUDGET_NOTE = (f"{OFF_BUDGET_MARK} the rule cannot reach the budget (its expected passes, in brackets, "
                          "exceed it by more than 3%): its difference from EB is not at equal passes")


def render_remask_table(path: str | Path) -> str:
    """testbed-remask's ``runs.csv`` or ``against_eb.csv`` as a markdown table, a rule that misses its
    budget marked :data:`OFF_BUDGET_MARK` (``against_eb``: read from the ``runs.csv`` beside it); ends
    with a newline."""
    path = Path(path)
    rows = read_table(path)
    runs = {(r["regime"], r["rule"], r["divisor"]): r for r in read_table(path.with_name("runs.csv"))}
    for r in rows:
        run = runs[(r["regime"], r["rule"], r["divisor"])]
        if run["on_budget"] != "True":
            r["rule"] = f"{r['rule']} {OFF_BUDGET_MARK} ({run['passes']})" if path.stem != "runs" else f"{r['rule']} {OFF_BUDGET_MARK}"
    layout = REMASK_LAYOUTS[path.stem]
    lines = ["| " + " | ".join(h for h, _ in layout) + " |", "|" + "---|" * len(layout)]
    lines += ["| " + " | ".join(fn(row) for _, fn in layout) + " |" for row in rows]
    if any(OFF_BUDGET_MARK in line for line in lines):
        lines += ["", REMASK_OFF_BUDGET_NOTE]
    return "\n".join(lines) + "\n"


def _map_grid(rows: list[dict], rule: str) -> tuple[list[str], list[str], np.ndarray, list[list[str]]]:
    """(regimes, budgets, log2 ratio ``(R, D)``, cell labels) of one Algorithm 1 rule."""
    mine = [r for r in rows if r["rule"] == rule]
    regimes = list(dict.fromkeys(r["regime"] for r in mine))
    budgets = sorted(dict.fromkeys(r["divisor"] for r in mine), key=int)
    grid = np.full((len(regimes), len(budgets)), np.nan)
    labels = [["" for _ in budgets] for _ in regimes]
    for r in mine:
        i, j = regimes.index(r["regime"]), budgets.index(r["divisor"])
        ratio = float(r["ratio"])
        grid[i, j] = math.log2(ratio) if ratio > 0 else -MAP_CLIP
        labels[i][j] = f"×{float(r['ratio']):.2f}\n{r['verdict']}"
    return regimes, budgets, grid, labels


def figure_map(rows: list[dict], out: str | Path) -> None:
    """The map: KL(p‖q) of Algorithm 1 ÷ EB's at equal passes, per regime (rows) and budget (columns),
    one panel for the exact MI and one for the noisy MI; blue where Algorithm 1 is better."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.7 * len({r["regime"] for r in rows}) + 1.6), sharey=True)
    for ax, rule in zip(axes, ("mi-exact", "mi-noisy")):
        regimes, budgets, grid, labels = _map_grid(rows, rule)
        im = ax.imshow(np.clip(grid, -MAP_CLIP, MAP_CLIP), cmap="RdBu_r", vmin=-MAP_CLIP, vmax=MAP_CLIP, aspect="auto")
        for i, j in np.ndindex(grid.shape):
            ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(budgets)), [f"N ÷ {b}" for b in budgets])
        ax.set_yticks(range(len(regimes)), regimes)
        ax.set_title(RULE_NAMES[rule])
    fig.colorbar(im, ax=axes, label="log₂ KL(p‖q) ratio, Algorithm 1 / EB")
    fig.suptitle("Exact testbed: Algorithm 1 against EB-Sampler at equal passes", y=1.02)
    save(fig, out)


def figure_curves(rows: list[dict], out: str | Path) -> None:
    """KL(p‖q) against mean passes (±1.96 SE), one panel per regime, one line per rule (sequential's KL is
    0 at N passes and not drawn on the log scale)."""
    regimes = list(dict.fromkeys(r["regime"] for r in rows))
    fig, axes = plt.subplots(1, len(regimes), figsize=(3.4 * len(regimes), 3.0), squeeze=False)
    for ax, regime in zip(axes[0], regimes):
        for rule, style in RULE_STYLE.items():
            mine = sorted((r for r in rows if r["regime"] == regime and r["rule"] == rule), key=lambda r: float(r["passes"]))
            label, colour = SAMPLER_STYLE[style]
            ax.errorbar([float(r["passes"]) for r in mine], [float(r["kl_pq"]) for r in mine],
                        yerr=[1.96 * float(r["kl_pq_se"]) for r in mine], color=colour, marker="o", ms=3,
                        capsize=2, label=RULE_NAMES[rule])
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(regime)
        ax.set_xlabel("mean passes")
    axes[0][0].set_ylabel("KL(p‖q), nats")
    axes[0][-1].legend(fontsize=7)
    save(fig, out)


def render_placement(path: str | Path) -> str:
    """The placement table of ``testbed-place``'s JSON (``path``): one row per testbed regime and per
    backbone, with each regime's verdict on the map (Algorithm 1 with exact MI against EB, at the same
    budget, from ``map.csv`` beside it); ends with a newline."""
    found = json.loads(Path(path).read_text())
    divisor = str(found["divisor"])
    map_csv = Path(path).parent / "map.csv"
    verdicts = {r["regime"]: r["verdict"] for r in read_table(map_csv)
                if r["rule"] == "mi-exact" and r["divisor"] == divisor} if map_csv.is_file() else {}
    lines = [f"| | EB's γ at ÷{divisor} | contexts (EB admits ≥ 2) | positions EB admits | their entropy (nats) | "
             "their pairwise MI (nats) | dependence share [95% CI] | strongest pair MI ÷ mean entropy | "
             f"near-independent positions | on the map at ÷{divisor} |", "|" + "---|" * 10]
    regimes = [(r, verdicts.get(r["name"])) for r in found["rows"] if r["kind"] == "testbed regime"]
    for r in found["rows"]:
        where = (verdicts.get(r["name"], "—") if r["kind"] == "testbed regime" else
                 f"share {_side(r, regimes, 'share')}; pairwise MI {_side(r, regimes, 'pair_mi')}")
        lines.append(f"| {r['name']} ({r['kind']}) | {r['gamma']:g} | {r['contexts']} ({r['pass_contexts']}) | "
                     f"{r['admitted']:g} | {r['entropy']:g} | {r['pair_mi']:g} | "
                     f"{r['share']:g} [{r['share_lo']:g}, {r['share_hi']:g}] | "
                     f"{r['max_ratio']:g} | {r['independent']:g} | {where} |")
    return "\n".join(lines) + "\n"


def _side(row: dict, regimes: list[tuple[dict, str | None]], key: str) -> str:
    """Where ``row[key]`` falls against the regimes' values: above every regime where Algorithm 1 beats
    EB, below every tie, or between the highest tie and the lowest beat."""
    beats = [r[key] for r, v in regimes if v == "beats"]
    ties = [r[key] for r, v in regimes if v == "ties"]
    if beats and row[key] > max(beats):
        return "above every beats regime"
    if ties and row[key] < min(ties):
        return "below every tie"
    if beats and ties and max(ties) < row[key] < min(beats):
        return "between the ties and the beats"
    return "among the beats" if beats and row[key] >= min(beats) else "among the ties"
