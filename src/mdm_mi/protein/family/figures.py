"""The protein-family figures: co-variation and HMM pass rate against mean passes, and the MI head's
map of one Kunitz context beside the family's own column-pair MI, both over the alignment's match
columns.

    python -m mdm_mi figure-family-covariation --scores family/scores.json --runs budgets/runs.json \
        --covariation family/covariation.csv --references family/{ceiling,ardca,floor}.json --out cov.png
    python -m mdm_mi figure-family-pass-rate --inputs family/*.json --scores family/scores.json \
        --runs budgets/runs.json --out pass_rate.png
    python -m mdm_mi figure-family-mi --model model --head head --data-dir data --out mi.png --csv mi.csv

The co-variation points are family-compare's values (``scores.json``: the estimates its differences
are taken of; the reference rows' lines (ceiling, ArDCA, floor) are family-score's, whose MI correction shuffles whole
columns instead of within jackknife groups); the intervals are family-compare's paired
grouped-jackknife 95% intervals of ``mi*`` minus each baseline (``covariation.csv``), the only
intervals it writes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import torch

from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL
from mdm_mi.evaluation.plotting import SAMPLER_STYLE, log_passes_axis, plt, save
from mdm_mi.evaluation.stats import wilson_interval
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, read_json
from mdm_mi.protein.family.covariation import FIELDS
from mdm_mi.protein.family.scores import REFERENCE_ROWS

METRIC_LABELS = {"corrected_mi_r": "corrected column-pair MI r", "c_ij_r": "C_ij r (20 × 20 residue pairs)",
                 "hmm_pass_rate": "HMM pass rate"}
REFERENCE_STYLE = {"ceiling": ("ceiling: natural training-split set", "0.35", "--"),  # one per scores.REFERENCE_ROWS
                   "ardca": ("ArDCA: autoregressive Potts samples", "tab:olive", "-."),
                   "floor": ("floor: site-independent profile draws", "0.35", ":")}
PASS_TICKS = (5, 10, 20, 50)
DODGE = 0.015  # relative shift of neighbouring curves' bars on the log passes axis


# --- reading --------------------------------------------------------------------------------------------


def read_input_json(path: Path, what: str, keys: tuple[str, ...]) -> dict:
    """A JSON object holding ``keys``; a one-line :class:`InputError` when missing, malformed or short."""
    if not Path(path).is_file():
        raise InputError(f"{what} not found: {path}")
    try:
        obj = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not a {what} JSON: {exc}") from None
    missing = [k for k in keys if not isinstance(obj, dict) or k not in obj]
    if missing:
        raise InputError(f"{path} is not a {what} JSON: no {missing[0]!r}")
    return obj


def calibrated_points(scores: dict, runs: dict) -> list[dict]:
    """family-compare's ``scores`` (run id → metrics) and protein-compare's ``runs`` (run id → run) →
    one point per run: ``{id, family, divisor, mean_passes, n, <metrics>}``, sequential included."""
    missing = sorted(set(scores) - set(runs))
    if missing:
        raise InputError(f"scored run {missing[0]!r} is not in runs.json: the budgets and scores are of different runs")
    return [{"id": k, "family": runs[k]["family"], "divisor": runs[k].get("divisor"),
             "mean_passes": float(runs[k]["mean_passes"]), **v} for k, v in scores.items()]


def read_covariation(path: Path) -> list[dict]:
    """covariation.csv → its rows with numeric cells; one-line error when a column is missing."""
    if not Path(path).is_file():
        raise InputError(f"covariation table not found: {path}")
    with Path(path).open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [k for k in FIELDS if k not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path} is not family-compare's covariation.csv: no {missing[0]!r} column")
        rows = list(reader)
    numeric = ("passes_first", "passes_second", "value_first", "value_second", "diff", "lo", "hi", "p_value")
    return [r | {k: float(r[k]) for k in numeric} | {"divisor": int(r["divisor"])} for r in rows]


# --- curves -----------------------------------------------------------------------------------------------


def by_family(points: list[dict], group: str = "family") -> dict[str, list[dict]]:
    """Points → ``group`` value → its points sorted by mean passes; sequential left out (it is one
    point, drawn apart)."""
    out: dict[str, list[dict]] = {}
    for p in points:
        if p[group] != SEQUENTIAL:
            out.setdefault(p[group], []).append(p)
    return {g: sorted(pts, key=lambda p: p["mean_passes"]) for g, pts in sorted(out.items())}


def curves(points: list[dict], key: str, group: str = "family") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Points → ``group`` value → ``(mean passes (k,), key (k,))`` sorted by passes, sequential left out."""
    return {g: (np.array([p["mean_passes"] for p in pts]), np.array([float(p[key]) for p in pts]))
            for g, pts in by_family(points, group).items()}


def differences(rows: list[dict], metric: str) -> dict[str, list[dict]]:
    """covariation.csv rows of ``mi*`` minus each baseline in ``metric`` → baseline → rows by passes."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["first"] == BEST_MI and r["metric"] == metric:
            out.setdefault(r["second"], []).append(r)
    return {k: sorted(v, key=lambda r: r["passes_first"]) for k, v in out.items()}


def style(family: str) -> tuple[str, str, str]:
    """A calibrated family (``eb``, ``mi λ=2``, ``threshold``) or fixed-grid group → (label, colour, line):
    its sampler's style (brown if it has none) with the family's setting, dashed and dotted lines for
    the MI-guided λ other than 1."""
    sampler, _, setting = family.partition(" ")
    label, colour = SAMPLER_STYLE.get(sampler, (sampler, "tab:brown"))
    lam = family.partition(" λ=")[2]
    line = {"": "-", "1": "-", "1.0": "-", "0.5": ":"}.get(lam, "--")
    return label + (f" {setting}" if setting else ""), colour, line


def _reference_lines(ax, refs: dict[str, dict], key: str, scale: float = 1.0) -> None:
    """Horizontal lines of the reference rows' ``key`` (ceiling, ArDCA, floor)."""
    for name, r in refs.items():
        label, colour, line = REFERENCE_STYLE[name]
        ax.axhline(scale * float(r[key]), color=colour, ls=line, lw=1.2, label=f"{label} ({scale * float(r[key]):.3g})")


def _passes_axis(ax, label: str = "mean forward passes per sequence (log)") -> None:
    """A log mean-passes axis with plain tick labels (5, 10, 20, 50)."""
    log_passes_axis(ax, PASS_TICKS, label)
    ax.grid(alpha=0.3)


def _dodge(k: int, n: int) -> float:
    """Factor on the passes of the ``k``-th of ``n`` curves, so their bars stand apart on a log axis."""
    return 1 + DODGE * (k - (n - 1) / 2)


def _curve_panel(ax, points: list[dict], refs: dict[str, dict], key: str, scale: float = 1.0,
                 interval=None) -> None:
    """One curve per family of ``points``' ``key`` against mean passes (``interval(point) → (lo, hi)``
    bars when given, curves dodged apart), sequential as a star, the reference rows as lines."""
    families = by_family(points)
    for k, (fam, pts) in enumerate(families.items()):
        label, colour, line = style(fam)
        x = np.array([p["mean_passes"] for p in pts]) * (_dodge(k, len(families)) if interval else 1)
        y = scale * np.array([float(p[key]) for p in pts])
        ax.plot(x, y, marker="o", ms=4, color=colour, ls=line, label=label)
        if interval:
            lo, hi = (scale * np.array(v) for v in zip(*map(interval, pts)))
            ax.vlines(x, lo, hi, color=colour, lw=2, alpha=0.3)
    for p in (p for p in points if p["family"] == SEQUENTIAL):
        ax.scatter([p["mean_passes"]], [scale * p[key]], marker="*", s=160, color="black", zorder=5,
                   label=f"sequential ({p['mean_passes']:.1f} passes)")
        if interval:
            ax.vlines(p["mean_passes"], *(scale * v for v in interval(p)), color="black", lw=2, alpha=0.3)
    _reference_lines(ax, refs, key, scale)
    _passes_axis(ax)


def _difference_panel(ax, rows: list[dict], metric: str) -> None:
    """``mi*`` minus each baseline in ``metric`` against mi*'s mean passes, paired grouped-jackknife 95% bars."""
    for k, (second, rs) in enumerate(differences(rows, metric).items()):
        label, colour, _ = style(second)
        x = np.array([r["passes_first"] for r in rs]) * _dodge(k, 4)
        y = np.array([r["diff"] for r in rs])
        err = np.array([[r["diff"] - r["lo"] for r in rs], [r["hi"] - r["diff"] for r in rs]])
        ax.errorbar(x, y, yerr=err, marker="o", ms=4, capsize=2, color=colour, label=f"mi* − {label}")
    ax.axhline(0, color="k", lw=0.8)
    _passes_axis(ax, "mean forward passes of mi* (log)")
    ax.set_ylabel(f"mi* − baseline, {METRIC_LABELS[metric]}\n(paired jackknife, 95% interval)", fontsize=8)


def covariation_figure(points: list[dict], rows: list[dict], refs: dict[str, dict], out, title: str) -> None:
    """Top: corrected-MI r and C_ij r against mean passes, one curve per calibrated family, sequential
    a star, the reference rows as lines. Bottom: ``mi*`` minus each baseline with its 95% interval."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), layout="constrained", sharex="col")
    for col, metric in enumerate(("corrected_mi_r", "c_ij_r")):
        _curve_panel(axes[0, col], points, refs, metric)
        axes[0, col].set_ylabel(f"{METRIC_LABELS[metric]} with the reference")
        _difference_panel(axes[1, col], rows, metric)
    axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, 0.94))
    axes[1, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save(fig, out)


def fixed_grid_points(scores: list[dict]) -> tuple[list[dict], dict[str, dict]]:
    """family-score JSONs → (sampler rows with a group ``sampler`` or ``mi λ=…``, {reference row: its JSON})."""
    refs = {s["row"]: s for s in scores if s["row"] in REFERENCE_ROWS}
    rows = []
    for s in scores:
        if s["row"] in REFERENCE_ROWS:
            continue
        if s.get("mean_passes") is None:
            raise InputError(f"family score {s['row']!r} has no mean passes: score it with --summary")
        lam = s.get("params", {}).get("lam")
        rows.append(s | {"family": s["sampler"] + (f" λ={lam:g}" if lam is not None else ""),
                         "mean_passes": float(s["mean_passes"])})
    return rows, refs


def wilson(p: dict) -> tuple[float, float]:
    """Wilson 95% interval of a point's HMM pass rate over its ``n`` sequences."""
    return wilson_interval(round(p["hmm_pass_rate"] * p["n"]), p["n"])


def pass_rate_figure(grid: list[dict], calibrated: list[dict], refs: dict[str, dict], out, title: str) -> None:
    """HMM pass rate (%) against mean passes: left the fixed-grid settings, right the calibrated budgets;
    Wilson 95% bars, sequential a star, the reference rows as lines."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained", sharey=True)
    for ax, points, name in ((axes[0], grid, "fixed-grid settings"), (axes[1], calibrated, "calibrated budgets")):
        _curve_panel(ax, points, refs, "hmm_pass_rate", scale=100, interval=wilson)
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("HMM pass rate (%), Wilson 95% bars")
    fig.suptitle(title, fontsize=10)
    save(fig, out)


# --- the MI map over match columns ------------------------------------------------------------------------


def match_positions(row: str) -> np.ndarray:
    """An A2M row (upper case or ``-`` per match column, lower case inserted) → ``(M,)`` the position
    in the unaligned sequence of each match column's residue, −1 where the column is a gap."""
    out, pos = [], 0
    for c in row:
        if c == "-":
            out.append(-1)
        elif c.isupper():
            out.append(pos)
        if c.isalpha():
            pos += 1
    return np.array(out, dtype=int)


def to_match_columns(matrix: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """A position × position ``matrix (L, L)`` → symmetric ``(M, M)`` over match columns (the mean of
    both directions); NaN where a column is a gap, where ``matrix`` is NaN and on the diagonal."""
    sym = (matrix + matrix.T) / 2
    ok = positions >= 0
    idx = np.where(ok, positions, 0)
    out = np.where(ok[:, None] & ok[None, :], sym[np.ix_(idx, idx)], np.nan)
    np.fill_diagonal(out, np.nan)
    return out


def square(condensed: np.ndarray, m: int) -> np.ndarray:
    """Values of the pairs ``i < j`` in row-major order ``(m(m−1)/2,)`` → symmetric ``(m, m)``, NaN diagonal."""
    assert condensed.shape == (m * (m - 1) // 2,), (condensed.shape, m)
    out = np.full((m, m), np.nan)
    i, j = np.triu_indices(m, k=1)
    out[i, j] = out[j, i] = condensed
    return out


def map_agreement(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Pearson r of two ``(M, M)`` maps over the pairs ``i < j`` where both are finite → (r, pairs)."""
    i, j = np.triu_indices(len(a), k=1)
    x, y = a[i, j], b[i, j]
    ok = np.isfinite(x) & np.isfinite(y)
    r = float(np.corrcoef(x[ok], y[ok])[0, 1]) if ok.sum() > 2 else float("nan")
    return r, int(ok.sum())


def head_matrix(backbone, head, seq: str, mask_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The head's Î ``(L, L)`` (nats) over ``seq`` with a seeded ``mask_fraction`` of it masked, NaN at
    pairs with an unmasked position (their MI given the context is 0), and the mask ``(L,)``."""
    tokens = backbone.encode([seq])[0]
    hide = torch.rand(len(seq), generator=torch.Generator().manual_seed(seed)) < mask_fraction
    tokens[1 : len(seq) + 1][hide.to(tokens.device)] = backbone.mask_id
    masked = tokens == backbone.mask_id
    with torch.inference_mode():
        pred = head(backbone(tokens[None]).hidden, masked[None])[0].float().cpu().numpy()
    inner, hidden = pred[1 : len(seq) + 1, 1 : len(seq) + 1], hide.numpy()
    return np.where(hidden[:, None] & hidden[None, :], inner, np.nan), hidden


def mi_map_figure(head_map: np.ndarray, natural: np.ndarray, out, title: str, left: str, right: str) -> None:
    """Two ``(M, M)`` match-column maps side by side, each with its own colour scale from 0 (grey: NaN)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.4), layout="constrained")
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
    for ax, values, name in ((axes[0], head_map, left), (axes[1], natural, right)):
        vmax = float(np.nanpercentile(values, 99.5)) if np.isfinite(values).any() else 1.0
        extent = (0.5, len(values) + 0.5, len(values) + 0.5, 0.5)  # match columns numbered from 1
        im = ax.imshow(values, cmap=cmap, vmin=0, vmax=vmax or 1.0, extent=extent, interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.85, extend="both", label="nats")
        ax.set_xlabel("match column j")
        ax.set_ylabel("match column i")
        ax.set_title(name, fontsize=9)
    fig.suptitle(title, fontsize=10)
    save(fig, out)


def write_map_csv(path, head_map: np.ndarray, natural: np.ndarray) -> None:
    """Both maps as CSV rows ``i, j, head, natural`` over match columns ``i < j`` (1-based; empty = NaN)."""
    def cell(v):
        return "" if not np.isfinite(v) else f"{v:.6g}"

    i, j = np.triu_indices(len(head_map), k=1)
    with atomic_path(path) as tmp:
        tmp.write_text("i,j,head,natural\n" + "".join(
            f"{a + 1},{b + 1},{cell(head_map[a, b])},{cell(natural[a, b])}\n" for a, b in zip(i, j)))
