"""Protein tables and figures from results already computed (``snakemake figures``).

* :func:`protein_rows` / :func:`to_markdown` — one tidy row per sampler setting (mean passes with CI,
  cluster JSD with its bias-corrected value and basic-bootstrap 95% interval, the equal-size noise floor,
  composition JSD, diversity).
* :func:`paper_table` — the paper's protein table with ours beside it; :func:`matched_table` — MI-guided
  against EB and naive at matched mean passes (±10%).
* :func:`speed_quality` — mean passes (NFE) vs JSD (plug-in points, basic-bootstrap interval bars), one
  curve per sampler, noise floor and paper points.
* :func:`protein_mi_figure` — the head's MI on a generated protein (position × position) and MI vs |i − j|.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

from mdm_mi.evaluation import paper
from mdm_mi.evaluation.plotting import SAMPLER_STYLE, matched_table as matched, nearest, plt, save
from mdm_mi.evaluation.tables import param_columns, setting_label

METRIC_COLUMNS = ["n", "mean_passes", "passes_ci", "jsd", "jsd_bc", "jsd_lo", "jsd_hi", "jsd_noise_floor",
                  "jsd_floor_analytic", "composition_jsd", "unique_fraction", "kmer_distance", "mean_longest_run",
                  "seconds"]
JSD_CAPTION = ("JSD (bits) of k-means cluster histograms vs the reference: plug-in value (the paper's metric, "
               "biased upwards), bias-corrected value (bc) and basic-bootstrap 95% interval (labels redrawn, "
               "clusters fixed; clipped at 0), which can lie below the plug-in value")


def columns(rows: list[dict]) -> list[str]:
    """The table's columns, with the parameter columns of ``rows``' samplers (:func:`param_columns`)."""
    return ["sampler", "setting", *param_columns(r["sampler"] for r in rows), *METRIC_COLUMNS]


COLUMNS = columns([])  # a table of the grid's samplers


def protein_rows(summaries: list[dict]) -> list[dict]:
    """Generation summaries → rows sorted by sampler and mean passes."""
    keys = param_columns(s["sampler"] for s in summaries)
    rows = [{"sampler": s["sampler"], "setting": setting_label(s["params"]),
             **{k: s["params"].get(k, "") for k in keys}, **{k: s.get(k, "") for k in METRIC_COLUMNS}}
            for s in summaries]
    return sorted(rows, key=lambda r: (r["sampler"], float(r["mean_passes"])))


def read_rows(path: str | Path) -> list[dict]:
    """The protein table CSV → rows with numeric metric cells."""
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in METRIC_COLUMNS:
            r[k] = float(r[k]) if r.get(k, "") != "" else float("nan")
    return rows


def _num(r: dict, key: str) -> float:
    """A metric cell as a float; NaN when missing or empty (summaries from before a field existed)."""
    value = r.get(key, "")
    return float("nan") if value in ("", None) else float(value)


def _fmt(r: dict | None) -> str:
    """``passes / plug-in JSD (bc …) [lo, hi]`` of one row; the bc part only when present."""
    if r is None:
        return "not run"
    bc = _num(r, "jsd_bc")
    return (f"{float(r['mean_passes']):.1f} / {float(r['jsd']):.3f}" + (f" (bc {bc:.3f})" if np.isfinite(bc) else "")
            + f" [{float(r['jsd_lo']):.3f}, {float(r['jsd_hi']):.3f}]")


def _floor_text(rows: list[dict]) -> str:
    """The noise floor of the first row that has one, with its analytic check when present."""
    r = next((r for r in rows if np.isfinite(_num(r, "jsd_noise_floor"))), None)
    if r is None:
        return "noise floor not computed"
    analytic = _num(r, "jsd_floor_analytic")
    text = ("noise floor (plug-in JSD expected of a perfect generator at these sample sizes; compare with the "
            f"JSD column) {_num(r, 'jsd_noise_floor'):.3f}")
    return text + (f", analytic {analytic:.3f}" if np.isfinite(analytic) else "")


def to_markdown(rows: list[dict], backbone: str) -> str:
    """All settings as a Markdown table."""
    lines = [f"Protein generation — backbone: {backbone}; {JSD_CAPTION}; {_floor_text(rows)}", "",
             "| sampler | setting | n | mean passes | JSD | bias-corrected JSD [95% CI] | composition JSD | unique "
             "| 3-mer distance |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['sampler']} | {r['setting']} | {int(float(r['n']))} | {float(r['mean_passes']):.1f} ± "
                     f"{float(r['passes_ci']):.1f} | {float(r['jsd']):.3f} | {_num(r, 'jsd_bc'):.3f} "
                     f"[{float(r['jsd_lo']):.3f}, {float(r['jsd_hi']):.3f}] | {float(r['composition_jsd']):.4f} | "
                     f"{float(r['unique_fraction']):.2f} | {float(r['kmer_distance']):.3f} |")
    return "\n".join(lines) + "\n"


def paper_table(rows: list[dict], backbone: str) -> str:
    """Markdown laid out like the paper's protein table: paper passes / JSD beside ours (same setting
    and nearest in mean passes)."""
    lines = [f"Proteins: mean passes / JSD — paper (ESM-C 300M) beside ours (backbone: {backbone}); the paper's "
             "numbers and our first JSD are plug-in values; (bc …) [95% CI]: our bias-corrected JSD and its "
             "basic-bootstrap interval", "",
             "| sampler | paper: passes / JSD | ours, same setting: passes / JSD (bc) [95% CI] "
             "| ours, nearest passes: setting, passes / JSD |", "|---|---|---|---|"]
    for sampler, label, params, passes, jsd in paper.PROTEIN:
        same = [r for r in rows if r["sampler"] == sampler and all(str(r.get(k)) == str(v) for k, v in params.items())]
        same_r = min(same, key=lambda r: float(r["jsd"])) if len(same) > 1 else (same[0] if same else None)
        near = nearest(rows, sampler, passes)
        lines.append(f"| {label} | {passes:.1f} / {jsd:.3f} | {_fmt(same_r)}"
                     f"{' (best λ)' if len(same) > 1 else ''} | {(near['setting'] + ', ' + _fmt(near)) if near else 'not run'} |")
    return "\n".join(lines) + "\n"


def matched_table(rows: list[dict]) -> str:
    """Markdown: each MI-guided setting beside the EB and naive settings within ±10% mean passes."""
    return matched(rows, _fmt, "JSD (bc) [95% CI]")


def speed_quality(rows: list[dict], out, title: str, overlay_paper: bool = True) -> None:
    """JSD against mean passes (log), one curve per sampler (MI per λ). Points are plug-in JSDs, on the
    same scale as the paper's stars and the noise floor (a perfect generator's plug-in JSD at these
    sizes); bars are the basic-bootstrap 95% interval of the true JSD, which sits below a point by
    about the plug-in bias."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["sampler"], r.get("lam", "") if r["sampler"] == "mi" else ""), []).append(r)
    for (sampler, lam), pts in sorted(groups.items()):
        label, colour = SAMPLER_STYLE.get(sampler, (sampler, "grey"))
        pts = sorted(pts, key=lambda r: float(r["mean_passes"]))
        x = [float(r["mean_passes"]) for r in pts]
        style = {"0.5": ":", "2.0": "--"}.get(str(lam), "-")
        ax.plot(x, [float(r["jsd"]) for r in pts], marker="o", ms=4, color=colour, ls=style,
                label=label + (f" λ={lam}" if lam != "" else ""))
        ax.vlines(x, [float(r["jsd_lo"]) for r in pts], [float(r["jsd_hi"]) for r in pts], color=colour, lw=2,
                  alpha=0.4)
    floor = [float(r["jsd_noise_floor"]) for r in rows if np.isfinite(float(r["jsd_noise_floor"]))]
    if floor:
        ax.axhline(floor[0], color="grey", ls="--", lw=1, label="noise floor (perfect generator, same sizes)")
    if overlay_paper:
        for sampler, _, _, passes, jsd in paper.PROTEIN:
            ax.scatter([passes], [jsd], marker="*", s=140, color=SAMPLER_STYLE[sampler][1], edgecolor="k", zorder=5)
        ax.scatter([], [], marker="*", s=140, color="white", edgecolor="k", label="paper, ESM-C 300M (stars)")
    ax.set_xscale("log")
    ax.set_xlabel("mean forward passes per sequence (NFE, log)")
    ax.set_ylabel("cluster-histogram JSD vs reference (bits)\npoints plug-in, bars 95% CI of true JSD", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, out)


def distance_profile(pred: torch.Tensor, label: torch.Tensor, masked: torch.Tensor, max_dist: int):
    """Mean label and head MI over masked pairs by sequence separation ``|i - j|`` = 1..max_dist →
    ``(d, label_mean, head_mean, count)`` arrays. pred/label ``(C, N, N)``, masked ``(C, N)``."""
    n = label.shape[1]
    idx = torch.arange(n)
    dist = (idx[:, None] - idx[None, :]).abs()
    pair = masked[:, :, None] & masked[:, None, :]
    d, lab, hed, cnt = [], [], [], []
    for k in range(1, min(max_dist, n - 1) + 1):
        sel = pair & (dist == k)
        c = int(sel.sum())
        if c:
            d.append(k), lab.append(float(label[sel].mean())), hed.append(float(pred[sel].mean())), cnt.append(c)
    return np.array(d), np.array(lab), np.array(hed), np.array(cnt)


def protein_mi_figure(matrix: np.ndarray, seq: str, profile, out, title: str) -> None:
    """Left: the head's Î over a generated protein's masked context (position × position, nats).
    Right: mean MI against separation |i − j| on held-out contexts (labels and head)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    im = a.imshow(matrix, cmap="viridis", origin="upper")
    fig.colorbar(im, ax=a, shrink=0.85, label="Î(X_i; X_j | C) (nats)")
    a.set_xlabel("position j")
    a.set_ylabel("position i")
    a.set_title(f"MI head on a generated protein (L={len(seq)}), half masked", fontsize=9)
    d, lab, hed, _ = profile
    b.plot(d, lab, "o-", ms=3, label="probing label (held-out contexts)")
    b.plot(d, hed, "s-", ms=3, label="MI head Î")
    b.set_ylim(bottom=0)
    b.set_xlabel("sequence separation |i − j|")
    b.set_ylabel("mean MI over masked pairs (nats)")
    b.grid(alpha=0.3)
    b.legend(fontsize=8)
    b.set_title("MI vs separation: sequence-local dependence", fontsize=9)
    fig.suptitle(title, fontsize=10)
    save(fig, out)
