"""What every figure and table shares: the Agg backend, atomic saving, one style per sampler (its
entry's ``style`` in :data:`mdm_mi.core.sampler_table.SAMPLERS`), and the one "MI-guided beside EB and naive
at matched passes" table of both domains.

    from mdm_mi.evaluation.plotting import plt, save
    fig, ax = plt.subplots(); ...; save(fig, "out.png")
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.ticker import NullFormatter, ScalarFormatter  # noqa: E402

from mdm_mi.infra.io import atomic_path  # noqa: E402
from mdm_mi.core.sampler_table import SAMPLERS  # noqa: E402

__all__ = ["MATCH_TOLERANCE", "SAMPLER_STYLE", "log_passes_axis", "matched_table", "nearest", "plain_ticks", "plt", "save",
           "sequence_map_figure"]

if TYPE_CHECKING:
    import torch

MATCH_TOLERANCE = 0.10  # "matched mean passes": within ±10%


class _Pyplot:
    """``matplotlib.pyplot``, imported at its first use: a verb that draws nothing does not pay its
    import (about 0.2 s of every CLI start, which imports every verb's module)."""

    def __getattr__(self, name: str):
        import matplotlib.pyplot as pyplot

        return getattr(pyplot, name)


plt = _Pyplot()


class _SamplerStyles(Mapping):
    """sampler → (label, colour), read from :data:`SAMPLERS` when asked (so an entry added later is
    drawn too), in table order; samplers without a ``style`` are left out."""

    def __getitem__(self, name: str) -> tuple[str, str]:
        style = SAMPLERS[name].style if name in SAMPLERS else None
        if style is None:
            raise KeyError(name)
        return style.label, style.colour

    def __iter__(self):
        return (name for name, s in SAMPLERS.items() if s.style is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


SAMPLER_STYLE = _SamplerStyles()


def save(fig, out: str | Path) -> None:
    """Write ``fig`` to ``out`` atomically (format from the suffix) and close it."""
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight", format=Path(out).suffix.lstrip(".") or "png")
    plt.close(fig)


def plain_ticks(lo: float, hi: float) -> list[float]:
    """The 1-2-5 values (…, 2, 5, 10, 20, 50, …) within ``[lo, hi]`` (at least the two ends' neighbours)."""
    ticks = [m * 10.0 ** e for e in range(-1, 5) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    return inside or [min(ticks, key=lambda t: abs(t - lo)), min(ticks, key=lambda t: abs(t - hi))]


def log_passes_axis(ax, ticks, label: str) -> None:
    """A log x axis of mean passes with plain tick labels at ``ticks`` (``10``, not ``10¹``; no minor labels)."""
    ax.set_xscale("log")
    ax.set_xticks(list(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)


def nearest(rows: list[dict], sampler: str, passes: float) -> dict | None:
    """The row of ``sampler`` whose mean passes are closest to ``passes`` (None if it never ran)."""
    cands = [r for r in rows if r["sampler"] == sampler]
    return min(cands, key=lambda r: abs(float(r["mean_passes"]) - passes)) if cands else None


def matched_table(rows: list[dict], fmt: Callable[[dict | None], str], quality: str, where: str = "") -> str:
    """Markdown: each MI-guided row beside the EB and naive rows whose mean passes are within ±10% of
    it (the closest of each); ``fmt`` writes one row's ``passes / quality``, ``quality`` names it in
    the header, ``where`` (e.g. ``", set 'hard'"``) ends the title."""
    seq = next((r for r in rows if r["sampler"] == "sequential" and r.get("order", "entropy") == "entropy"), None)
    lines = [f"MI-guided vs baselines at matched mean passes (±{MATCH_TOLERANCE:.0%}){where}"
             + (f"; sequential: {fmt(seq)}" if seq else ""), "",
             f"| MI-guided setting | passes / {quality} | EB at matched passes | naive at matched passes |",
             "|---|---|---|---|"]
    for mi in sorted((r for r in rows if r["sampler"] == "mi"), key=lambda r: float(r["mean_passes"])):
        passes, cells = float(mi["mean_passes"]), []
        for sampler in ("eb", "naive"):
            near = nearest(rows, sampler, passes)
            ok = near and abs(float(near["mean_passes"]) - passes) <= MATCH_TOLERANCE * passes
            cells.append(f"{near['setting']}: {fmt(near)}" if ok else "none within ±10%")
        lines.append(f"| {mi['setting']} | {fmt(mi)} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def sequence_map_figure(seq: Sequence[str], pred: torch.Tensor, label, cell: int, out, backbone_name: str) -> None:
    """The MI map of one position of a sequence (a protein, your own model's tokens): bars of Î(cell, j)
    (and the exact MI) over residue positions ``j = 1..L`` (token indices; BOS at
    0), the sequence's tokens (a string's letters, or a list of whole tokens) as ticks."""
    pos = np.arange(1, len(seq) + 1)
    panels = [("MI head Î", pred)] + ([("exact probing MI", label)] if label is not None else [])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.16 * len(seq)), 3.2))
    width = 0.8 / len(panels)
    for k, (name, mat) in enumerate(panels):
        ax.bar(pos + (k - (len(panels) - 1) / 2) * width, mat[cell, 1 : len(seq) + 1].numpy(), width, label=name)
    ax.axvline(cell, color="red", lw=1.5)
    ax.set_xticks(pos, list(seq), fontsize=6)
    ax.set_xlim(0.3, len(seq) + 0.7)
    ax.set_xlabel("residue (_ = masked)")
    ax.set_ylabel("nats")
    ax.legend(fontsize=8)
    ax.set_title(f"MI of position {cell} (red) with every other — backbone: {backbone_name}", fontsize=9)
    save(fig, out)
