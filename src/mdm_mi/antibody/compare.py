"""CDR infilling compared paired by context: every sampler fills the same test VH templates, at
sequential's passes ÷ d, and is scored by the model's own pseudo-log-likelihood of the filled loop.

Per fill: ``pll`` (mean over the filled positions of ``log p(x_i | x_{-i})`` under the backbone, one
pass per position, :func:`pll_per_residue`) and ``recovery`` (share of the native residues
recovered). Per context, the mean over its fills. A contrast (first − second) is the mean over
contexts of the per-context difference, with Student's t on the ``P − 1`` degrees of freedom of
the paired differences (contexts are the unit; fills within a context are not independent); its
verdict words, roles and Holm families come from :mod:`mdm_mi.evaluation.verdicts` (``mi*`` − EB
primary; equivalence by TOST at ±:data:`PLL_MARGIN` nats per residue).

    pll = pll_per_residue(backbone, filled, masked)          # (B,) nats/residue
    rows = contrast_rows(runs)                              # classified, with verdict words
"""

from __future__ import annotations

import math

import numpy as np
import torch

from mdm_mi.evaluation.budgets import BEST_MI, by_budget, contrast_pairs, is_contender, SEQUENTIAL
from mdm_mi.evaluation.stats import t_quantile, tost_t
from mdm_mi.evaluation.verdicts import classify, role, Scale

PLL_MARGIN = 0.05  # nats per residue: a difference inside ±PLL_MARGIN counts as equivalent (TOST)
METRICS = ("pll", "recovery")  # pll is the primary metric; recovery's contrasts are secondary
PLL_BATCH = 128  # single-masked copies per backbone call


@torch.inference_mode()
def pll_per_residue(backbone, tokens: torch.Tensor, positions: torch.Tensor, batch: int = PLL_BATCH) -> torch.Tensor:
    """tokens ``(B, N)`` complete, positions ``(B, N)`` bool → ``(B,)`` mean over each row's positions
    of ``log p(x_i | x_{-i})`` (one copy with position i masked per position; nats per residue)."""
    assert tokens.shape == positions.shape and tokens.ndim == 2, (tokens.shape, positions.shape)
    rows, cols = positions.nonzero(as_tuple=True)
    copies = tokens[rows].clone()
    copies[torch.arange(len(rows)), cols] = backbone.mask_id
    index = {int(t): k for k, t in enumerate(backbone.vocab_token_ids.tolist())}
    target = torch.tensor([index[int(t)] for t in tokens[rows, cols]], dtype=torch.long)
    scores = []
    for start in range(0, len(rows), batch):
        sl = slice(start, start + batch)
        logp = torch.log_softmax(backbone(copies[sl]).logits.float(), -1)
        scores.append(logp[torch.arange(len(copies[sl])), cols[sl], target[sl]])
    total = torch.zeros(tokens.shape[0], dtype=torch.float64).index_add_(0, rows, torch.cat(scores).double())
    return (total / positions.sum(1).clamp(min=1)).float()


def recovery(filled: torch.Tensor, native: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``(B,)`` share of the filled positions whose residue is the native one."""
    same = (filled == native) & positions
    return same.sum(1).float() / positions.sum(1).clamp(min=1)


def composition(tokens: torch.Tensor, positions: torch.Tensor, vocab_ids: torch.Tensor) -> np.ndarray:
    """``(V,)`` share of each vocabulary token among the residues of ``tokens (B, N)`` at ``positions``."""
    counts = (tokens[positions][:, None] == vocab_ids[None]).sum(0).double()
    return (counts / counts.sum().clamp(min=1)).numpy()


def fill_diversity(filled: torch.Tensor, positions: torch.Tensor, n_contexts: int) -> np.ndarray:
    """``(P,)`` per context: the mean share of filled positions at which two of its fills differ (over
    every pair of its fills; fill ``k`` of context ``p`` at row ``k·P + p`` of ``filled (k·P, N)``)."""
    k = filled.shape[0] // n_contexts
    fills = filled.reshape(k, n_contexts, -1)
    pos = positions[:n_contexts]
    pairs = [((fills[a] != fills[b]) & pos).sum(1).float() / pos.sum(1).clamp(min=1)
             for a in range(k) for b in range(a + 1, k)]
    return torch.stack(pairs).mean(0).numpy() if pairs else np.zeros(n_contexts)


def per_context(values: np.ndarray, n_contexts: int) -> np.ndarray:
    """``(n·P,)`` per-fill values (fill k of context p at row k·P + p) → ``(P,)`` per-context means."""
    return np.asarray(values, dtype=float).reshape(-1, n_contexts).mean(0)


def paired_t(first: np.ndarray, second: np.ndarray) -> dict:
    """Mean of the paired differences ``first − second`` (``(P,)`` each) with its Student 95% interval,
    two-sided p, SE and degrees of freedom."""
    d = np.asarray(first, dtype=float) - np.asarray(second, dtype=float)
    n = len(d)
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    df = n - 1.0
    from scipy.stats import t  # lazy: scipy.stats adds seconds to every CLI start

    p = 1.0 if se == 0 and mean == 0 else (0.0 if se == 0 else float(2 * t.sf(abs(mean) / se, df)))
    half = t_quantile(df) * se
    return {"diff": mean, "lo": mean - half, "hi": mean + half, "p_value": p, "se": se, "df": df}


def infill_role(row: dict) -> str:
    """``primary``: mi* − EB in PLL; ``secondary``: mi*'s other PLL contrasts and all its recovery
    contrasts; ``exploratory``: the rest."""
    base = role(row)
    return "secondary" if base == "primary" and row["metric"] != METRICS[0] else base


def contrast_rows(runs: dict[str, dict], set_name: str) -> list[dict]:
    """Every contender (and ``mi*``) minus every baseline and sequential, ``mi*`` minus every other
    contender (:func:`mdm_mi.evaluation.budgets.contrast_pairs`), and every baseline minus sequential, at each budget, in each metric; classified (Holm within set and role, TOST at ±PLL_MARGIN
    for PLL, ±0.02 for recovery)."""
    seq = runs[SEQUENTIAL]
    rows = []
    for d, fams in by_budget(runs).items():
        pairs = contrast_pairs(fams) + [(a, SEQUENTIAL) for a in fams if not is_contender(a) and a != BEST_MI]
        for a, b in pairs:
            first, second = fams[a], fams.get(b, seq)  # sequential is not among a budget's families
            for m in METRICS:
                r = paired_t(np.asarray(first[m]), np.asarray(second[m]))
                rows.append({"set": set_name, "divisor": d, "metric": m, "first": a, "second": b,
                             "n": len(first[m]), "passes_first": float(np.mean(first["passes"])),
                             "passes_second": float(np.mean(second["passes"])),
                             "value_first": float(np.mean(first[m])), "value_second": float(np.mean(second[m])), **r})
    margins = {"pll": PLL_MARGIN, "recovery": 0.02}
    return classify(rows, role_of=infill_role,
                    equivalence_p=lambda r: tost_t(r["diff"], r["se"], r["df"], margins[r["metric"]]))


def pll_scale() -> Scale:
    """How PLL contrasts are written: nats/residue to three places, the band ±PLL_MARGIN, the 90% t interval."""
    def interval90(r: dict) -> tuple[float, float]:
        half = t_quantile(r["df"], 0.90) * r["se"]
        return r["diff"] - half, r["diff"] + half

    return Scale(lambda x: f"{x:+.3f}", " nats/residue", " in PLL", f"±{PLL_MARGIN:g} nats/residue", interval90)
