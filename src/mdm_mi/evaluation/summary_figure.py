"""One summary figure of calibrated comparisons: quality against mean test passes, one panel per
comparison (a Sudoku set, the antibody loops, ...), one line per calibrated family (every rule of the
sampler table, the rivals of docs/record/rivals.md included), sequential as a black square.

A comparison is read from its ``runs.json`` (``sudoku-compare``, ``protein-compare``: ``{"runs": {run:
...}}``; ``antibody-compare``: ``{run: ...}``); each run has ``family``, ``divisor``, ``mean_passes``
and its quality: Sudoku ``accuracy`` (drawn in %), antibody ``pll`` (per-context mean log-likelihood
per residue, nats; drawn as its mean), protein ``jsd`` (cluster JSD to the reference, bits).

    panels = [read_panel("results/rivals/sudoku/budgets/hard/runs.json", "Sudoku hard")]
    summary_figure(panels, "summary.png")

Several ``runs.json`` of one comparison (the same test set at other budgets) join as one panel
(:func:`merge_panels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mdm_mi.core.sampler_table import sampler_of
from mdm_mi.evaluation.budgets import SEQUENTIAL
from mdm_mi.evaluation.plotting import SAMPLER_STYLE, log_passes_axis, plain_ticks, plt, save
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import read_json

QUALITIES = {"accuracy": ("accuracy (%)", 100.0), "pll": ("PLL (nats/residue)", 1.0),
             "jsd": ("cluster JSD to the reference (bits; lower is better)", 1.0)}  # run key → (axis label, scale)
LINESTYLES = ("-", "--", ":", "-.")  # the second, third, ... family of one sampler (λ, ε values)


@dataclass(frozen=True)
class Panel:
    """One comparison: ``title``, the quality's axis ``label``, ``curves`` family → ``(passes (D,),
    quality (D,))`` sorted by passes, and ``sequential`` (passes, quality)."""

    title: str
    label: str
    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    sequential: tuple[float, float]


def _quality(run: dict) -> tuple[str, float]:
    """The run's quality key and value (scaled for drawing)."""
    key = next((k for k in QUALITIES if k in run), None)
    if key is None:
        raise InputError(f"a run of family {run.get('family')!r} has none of {', '.join(QUALITIES)}")
    return key, QUALITIES[key][1] * float(np.mean(run[key]))


def read_panel(path: str | Path, title: str) -> Panel:
    """A comparison's ``runs.json`` as a :class:`Panel` (one-line errors for a missing or foreign file)."""
    if not Path(path).is_file():
        raise InputError(f"comparison runs not found: {path}")
    data = read_json(path)
    runs = data.get("runs", data)
    if SEQUENTIAL not in runs:
        raise InputError(f"{path}: no sequential run (not a sudoku-compare or antibody-compare runs.json)")
    key, seq_quality = _quality(runs[SEQUENTIAL])
    points: dict[str, list[tuple[float, float]]] = {}
    for name, run in runs.items():
        if name != SEQUENTIAL:
            points.setdefault(run["family"], []).append((float(run["mean_passes"]), _quality(run)[1]))
    curves = {f: tuple(np.array(v) for v in zip(*sorted(pts))) for f, pts in points.items()}
    return Panel(title, QUALITIES[key][0], curves, (float(runs[SEQUENTIAL]["mean_passes"]), seq_quality))


def merge_panels(panels: list[Panel]) -> Panel:
    """Panels of one comparison read from several ``runs.json`` (e.g. the same test set at two lists of
    budgets) as one: each family's points joined and sorted by passes, the first panel's sequential
    (the runs share it). One-line error if the quality axes differ."""
    if len({p.label for p in panels}) != 1:
        raise InputError(f"panel {panels[0].title!r} joins runs of different qualities: {sorted({p.label for p in panels})}")
    points: dict[str, list[tuple[float, float]]] = {}
    for panel in panels:
        for family, (x, y) in panel.curves.items():
            points.setdefault(family, []).extend(zip(x.tolist(), y.tolist()))
    curves = {f: tuple(np.array(v) for v in zip(*sorted(pts))) for f, pts in points.items()}
    return Panel(panels[0].title, panels[0].label, curves, panels[0].sequential)


def _style(family: str, seen: dict[str, int]) -> dict:
    """Colour of the family's sampler (grey if it has none), line style by its rank within that sampler."""
    sampler = sampler_of(family)
    rank = seen[sampler] = seen.get(sampler, -1) + 1
    colour = SAMPLER_STYLE[sampler][1] if sampler in SAMPLER_STYLE else "grey"
    return {"color": colour, "linestyle": LINESTYLES[rank % len(LINESTYLES)]}


def summary_figure(panels: list[Panel], out: str | Path) -> None:
    """Draw ``panels`` side by side (log passes axis each) with one legend of every family; save to ``out``."""
    if not panels:
        raise InputError("no comparison to draw")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    handles: dict[str, object] = {}
    for ax, panel in zip(axes[0], panels):
        seen: dict[str, int] = {}
        for family, (x, y) in panel.curves.items():
            (line,) = ax.plot(x, y, marker="o", markersize=3, lw=1.2, label=family, **_style(family, seen))
            handles.setdefault(family, line)
        (seq,) = ax.plot(*panel.sequential, "s", color="black", label=SEQUENTIAL)
        handles.setdefault(SEQUENTIAL, seq)
        xs = np.concatenate([x for x, _ in panel.curves.values()] + [np.array([panel.sequential[0]])])
        log_passes_axis(ax, plain_ticks(xs.min(), xs.max()), "mean test passes")
        ax.set_ylabel(panel.label)
        ax.set_title(panel.title, fontsize=10)
        ax.grid(alpha=0.3)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(6, len(handles)), fontsize=8,
               bbox_to_anchor=(0.5, -0.02 - 0.045 * ((len(handles) - 1) // 6)))
    fig.tight_layout(rect=(0, 0.06 + 0.045 * ((len(handles) - 1) // 6), 1, 1))
    save(fig, out)
