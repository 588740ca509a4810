"""Where the MI sits in a VH with its CDRs masked: the head's (and, on a few contexts, the exact) MI
between masked positions, the ranks of known pairs among all masked pairs, the share of MI within
and between regions, and the figure of one VH's map.

Contexts mask the three CDRs and the invariant Cys pair (Cys23, Cys104), so the disulphide, expected
near zero as with Kunitz (both Cys are fixed in every VH), is ranked beside the Kabat H94–H101 salt
bridge at the CDR-H3 base (IMGT 106 and 116). Token index = residue position + 1 (BOS first).

    ctx = masked_contexts(backbone, rows)                  # tokens (B, N), masked (B, N)
    mi = head_mi(backbone, head, ctx.tokens)                # (B, N, N) nats
    ranks = named_pair_ranks(mi, ctx.masked, known_pairs(rows))  # pair → list of ranks (1 = highest)
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from mdm_mi.antibody.data import CDRS, REGIONS, template, VH
from mdm_mi.infra.io import atomic_path

PAIRS = ("H94-H101 salt bridge", "Cys23-Cys104")


class Contexts(NamedTuple):
    tokens: torch.Tensor  # (B, N)
    masked: torch.Tensor  # (B, N) bool


def masked_template(vh: VH) -> str:
    """The VH with the three CDRs and both Cys of the disulphide written as ``_``."""
    letters = list(template(vh, CDRS))
    for p in vh.cys_pair():
        letters[p] = "_"
    return "".join(letters)


def masked_contexts(backbone, rows: list[VH]) -> Contexts:
    tokens = backbone.encode([masked_template(r) for r in rows])
    return Contexts(tokens, tokens == backbone.mask_id)


def known_pairs(rows: list[VH]) -> dict[str, list[tuple[int, int]]]:
    """Pair name → its token indices ``(i, j)`` in each row."""
    return {PAIRS[0]: [tuple(p + 1 for p in r.salt_bridge()) for r in rows],
            PAIRS[1]: [tuple(p + 1 for p in r.cys_pair()) for r in rows]}


@torch.inference_mode()
def head_mi(backbone, head, tokens: torch.Tensor) -> torch.Tensor:
    """``(B, N, N)`` the head's MI (nats) from one backbone pass."""
    masked = tokens == backbone.mask_id
    return head(backbone(tokens).hidden, masked).float()


def named_pair_ranks(mi: torch.Tensor, masked: torch.Tensor, pairs: dict[str, list[tuple[int, int]]]) -> dict[str, dict]:
    """For each named pair, in each context: its rank among all masked pairs ``i < j`` by MI (1 =
    highest), the number of pairs and its MI → per pair: ranks, percentiles (rank / pairs), MI values."""
    out = {}
    for name, per_row in pairs.items():
        ranks, totals, values = [], [], []
        for b, (i, j) in enumerate(per_row):
            idx = masked[b].nonzero().squeeze(1)
            sub = mi[b][idx][:, idx]
            upper = sub[torch.triu(torch.ones_like(sub, dtype=torch.bool), 1)]
            value = float(mi[b, i, j])
            ranks.append(int((upper > value).sum()) + 1)
            totals.append(len(upper))
            values.append(value)
        out[name] = {"ranks": ranks, "pairs": totals, "mi": values,
                     "median_rank": float(np.median(ranks)), "median_percentile": float(np.median(np.array(ranks) / np.array(totals)))}
    return out


def region_of(row: VH) -> list[str]:
    """Each residue's region name (``fw1`` … ``fw4``), sequence order."""
    return [r for r in REGIONS for _ in row.regions[r]]


def region_shares(mi: torch.Tensor, masked: torch.Tensor, rows: list[VH]) -> dict[str, float]:
    """Share of the total MI among masked pairs (each pair once) by region pair (``cdr3–cdr3``,
    ``cdr1–cdr3``, ``cdr3–fw1`` for the Cys…), summed over contexts."""
    totals: dict[str, float] = {}
    for b, row in enumerate(rows):
        names = ["bos", *region_of(row)]
        idx = masked[b].nonzero().squeeze(1).tolist()
        for a, i in enumerate(idx):
            for j in idx[a + 1:]:
                key = "–".join(sorted((names[i], names[j])))
                totals[key] = totals.get(key, 0.0) + float(mi[b, i, j])
    whole = sum(totals.values()) or 1.0
    return dict(sorted(((k, v / whole) for k, v in totals.items()), key=lambda kv: -kv[1]))


def draw(row: VH, head: torch.Tensor, exact: torch.Tensor | None, masked: torch.Tensor, out, title: str) -> None:
    """Head MI beside the exact MI (``(N, N)`` each) among the masked positions of one VH, regions marked."""
    import matplotlib  # lazy: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: only when a figure is drawn

    idx = masked.nonzero().squeeze(1)
    names = ["bos", *region_of(row)]
    labels = [f"{names[i]}:{row.sequence[i - 1]}{i}" for i in idx.tolist()]
    mats = [("MI head", head)] + ([("exact (probing)", exact)] if exact is not None else [])
    fig, axes = plt.subplots(1, len(mats), figsize=(7 * len(mats), 6.5), squeeze=False)
    vmax = max(float(m[idx][:, idx].max()) for _, m in mats) or 1.0
    for ax, (name, m) in zip(axes[0], mats):
        im = ax.imshow(m[idx][:, idx].numpy(), cmap="viridis", vmin=0, vmax=vmax)
        ax.set_title(f"{name}, nats")
        ax.set_xticks(range(len(idx)), labels, rotation=90, fontsize=5)
        ax.set_yticks(range(len(idx)), labels, fontsize=5)
        bounds = [k for k in range(1, len(idx)) if labels[k].split(":")[0] != labels[k - 1].split(":")[0]]
        for k in bounds:
            ax.axhline(k - 0.5, color="white", lw=0.5)
            ax.axvline(k - 0.5, color="white", lw=0.5)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(out) as tmp:  # never a half-written figure
        fig.savefig(tmp, dpi=150, format=Path(out).suffix.lstrip(".") or "png")
    plt.close(fig)


def agreement(head: torch.Tensor, exact: torch.Tensor, masked: torch.Tensor) -> dict:
    """Head vs exact MI over the masked pairs ``i < j`` of contexts ``(B, N, N)``: Pearson, Spearman,
    the pairs' count and mean exact MI (the head's fidelity on CDR-masked contexts it never saw)."""
    h, e = [], []
    for b in range(len(head)):
        idx = masked[b].nonzero().squeeze(1)
        up = torch.triu(torch.ones(len(idx), len(idx), dtype=torch.bool), 1)
        h.append(head[b][idx][:, idx][up])
        e.append(exact[b][idx][:, idx][up])
    h, e = torch.cat(h).double().numpy(), torch.cat(e).double().numpy()
    from scipy.stats import pearsonr, spearmanr  # lazy: scipy.stats adds seconds to every CLI start

    return {"pairs": len(h), "pearson": float(pearsonr(h, e)[0]), "spearman": float(spearmanr(h, e)[0]),
            "mean_exact": float(e.mean()), "mean_head": float(h.mean())}
