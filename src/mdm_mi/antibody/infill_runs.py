"""The runs of the antibody infilling comparison: test and calibration templates (one VH per lineage,
``regions`` masked at natural lengths), sequential's fills, every family calibrated to each budget on
the calibration templates and its fills of the test templates, and the result files.

    test = InfillSet.from_tsv(backbone, "data/test.tsv", ("cdr3",), n=48, seed=0)
    runs = {"sequential": sequential_run(backbone, test, args)} | calibrated_runs(backbone, test, calib, args, pairwise)
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mdm_mi.antibody.compare import METRICS, per_context, pll_per_residue, pll_scale, recovery
from mdm_mi.antibody.data import read_vh, template
from mdm_mi.core.sampler_table import build_sampler
from mdm_mi.evaluation.budgets import BEST_MI, SEQUENTIAL, by_budget
from mdm_mi.evaluation.infill import calibrate_to, family_of, fill, max_masked
from mdm_mi.evaluation.verdicts import WORDS, verdict
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import write_json, write_text


@dataclass(frozen=True)
class InfillSet:
    """``tokens (P, N)`` templates, ``native (P, N)`` the VH they came from, ``positions (P, N)`` bool
    (the masked ones), ``ids`` the rows' ids."""

    tokens: torch.Tensor
    native: torch.Tensor
    positions: torch.Tensor
    ids: list[str]

    @staticmethod
    def from_tsv(backbone, path: Path, regions: tuple[str, ...], n: int, seed: int) -> "InfillSet":
        """One VH per lineage (:func:`one_per_lineage`), ``regions`` masked."""
        picked = one_per_lineage(read_vh(path), n, seed)
        tokens = backbone.encode([template(r, tuple(regions)) for r in picked])
        native = backbone.encode([r.sequence for r in picked])
        return InfillSet(tokens, native, tokens == backbone.mask_id, [r.id for r in picked])

    def score(self, backbone, filled: torch.Tensor) -> dict[str, np.ndarray]:
        """Per-fill PLL and recovery of ``filled (k·P, N)`` → per-context means ``(P,)`` each."""
        k = filled.shape[0] // len(self.ids)
        pos, nat = self.positions.repeat(k, 1), self.native.repeat(k, 1)
        per_fill = {"pll": pll_per_residue(backbone, filled, pos).numpy(), "recovery": recovery(filled, nat, pos).numpy()}
        return {m: per_context(v, len(self.ids)) for m, v in per_fill.items()}


def one_per_lineage(rows: list, n: int, seed: int) -> list:
    """``n`` rows, one per lineage: the first of each lineage in a seeded shuffle, first ``n`` lineages."""
    order = np.random.default_rng(seed).permutation(len(rows))
    picked, seen = [], set()
    for i in order:
        if rows[i].lineage not in seen:
            seen.add(rows[i].lineage)
            picked.append(rows[i])
    if len(picked) < n:
        raise InputError(f"the table has {len(picked)} lineages, fewer than the {n} contexts asked for")
    return picked[:n]


def _run(test: InfillSet, backbone, filled, family: str, divisor: int, params: dict, extra: dict) -> dict:
    scores = test.score(backbone, filled.tokens)
    passes = per_context(filled.passes.numpy(), len(test.ids))
    return {"family": family, "divisor": divisor, "params": params, "passes": passes.tolist(),
            "mean_passes": float(passes.mean()), **{m: scores[m].tolist() for m in METRICS}, **extra}


def sequential_run(backbone, test: InfillSet, args) -> dict:
    """Sequential decoding (lowest entropy first, one position per pass) on the test templates."""
    filled = fill(backbone, test.tokens, build_sampler("sequential", order="entropy"), args.fills, args.seed,
                  args.temperature, None, args.batch_size)
    return _run(test, backbone, filled, SEQUENTIAL, 1, {"order": "entropy"}, {"calib_score": 0.0})


def _families(args, with_head: bool, most: int) -> list:
    shared = {"mi_on_reject": args.mi_on_reject, "mi_charge_first": args.mi_charge_first}
    fams = [family_of(s, most, {}) for s in args.samplers]
    if with_head:
        fams += [family_of("mi", most, {"mi_lambda": lam, **shared}) for lam in args.mi_lambda]
    return fams


def calibrated_runs(backbone, test: InfillSet, calib: InfillSet, args, pairwise) -> dict[str, dict]:
    """Every family at every budget: calibrated on ``calib`` (one cache per family, cheapest budget
    first), then filling ``test``. ``calib_score`` (mi*'s choice of λ) is the calibration fills' PLL."""
    runs = {}
    several_mi = len(args.mi_lambda) > 1 and pairwise is not None
    most = max(max_masked(backbone, calib.tokens), max_masked(backbone, test.tokens))
    for fam in _families(args, pairwise is not None, most):
        cache: dict = {}
        pf = pairwise if fam.sampler == "mi" else None
        for d in sorted(args.divisors, reverse=True):
            point = calibrate_to(backbone, calib.tokens, fam, d, args.seed, args.temperature, pf, cache,
                                 log=lambda s: print(s, flush=True), batch_size=args.batch_size)
            sampler = fam.build(point.value)
            score = 0.0
            if several_mi and fam.sampler == "mi":
                cal = fill(backbone, calib.tokens, sampler, 1, args.seed, args.temperature, pf, args.batch_size)
                score = float(calib.score(backbone, cal.tokens)["pll"].mean())
            filled = fill(backbone, test.tokens, sampler, args.fills, args.seed, args.temperature, pf, args.batch_size)
            runs[f"{fam.slug}@{d}"] = _run(test, backbone, filled, fam.label, d, sampler.params(), {
                "target": point.target, "calib_passes": point.passes, "on_target": point.on_target,
                "calib_score": score})
            print(f"{fam.label} 1/{d}: {fam.param}={point.value:.4g}, calibration {point.passes:.2f} passes "
                  f"(target {point.target:.2f}); test {runs[f'{fam.slug}@{d}']['mean_passes']:.2f} passes, "
                  f"PLL {np.mean(runs[f'{fam.slug}@{d}']['pll']):.3f}", flush=True)
    return runs


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        return next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name")), platform.processor())
    except OSError:
        return platform.processor()


def markdown(runs: dict[str, dict], rows: list[dict], set_name: str, native_pll: float, n: int, fills: int) -> str:
    """The values table (PLL / recovery % @ passes per family and budget), mi*'s contrasts, the
    primary verdict sentences and the count of verdict words."""
    seq = runs[SEQUENTIAL]
    cell = lambda r: f"{np.mean(r['pll']):.3f} / {100 * np.mean(r['recovery']):.0f}% @ {r['mean_passes']:.1f}"
    table = by_budget(runs)
    fams = list(dict.fromkeys(f for fs in table.values() for f in fs))
    lines = [f"**{set_name}** ({n} test contexts, one VH per lineage, {fills} fills each; PLL nats/residue / native "
             f"recovery @ mean passes; sequential {cell(seq)}; native loops' PLL {native_pll:.3f})", "",
             "| budget | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for d, fs in table.items():
        lines.append(f"| 1/{d} | " + " | ".join(cell(fs[f]) if f in fs else "" for f in fams) + " |")
    lines += ["", f"{BEST_MI} minus each baseline, paired by context (mean difference [Student 95%], p, Holm p, verdict):",
              "", "| budget | metric | contrast | difference | p | Holm p | verdict |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["first"] == BEST_MI:
            lines.append(f"| 1/{r['divisor']} | {r['metric']} | {r['first']} − {r['second']} | {r['diff']:+.3f} "
                         f"[{r['lo']:+.3f}, {r['hi']:+.3f}] | {r['p_value']:.2g} | {r['p_holm']:.2g} | **{r['verdict']}** |")
    lines += ["", "Primary (mi* − EB in PLL):", ""]
    lines += [f"- {verdict(r, pll_scale())[1]}" for r in rows if r["role"] == "primary"]
    lines += ["", "| role | tests | " + " | ".join(WORDS) + " |", "|---|---|" + "---|" * len(WORDS)]
    for role_ in ("primary", "secondary", "exploratory"):
        rs = [r for r in rows if r["role"] == role_]
        lines.append(f"| {role_} | {len(rs)} | " + " | ".join(str(sum(r['verdict'] == w for r in rs)) for w in WORDS) + " |")
    return "\n".join(lines) + "\n"


def write_results(out: Path, runs: dict, rows: list[dict], args, n_test: int, native_pll: float, seconds: float) -> None:
    """runs.json, budgets.csv (classified rows), budgets.md, and summary.json (cost, CPU, sizes)."""
    import csv

    from mdm_mi.infra.io import atomic_path

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "runs.json", runs)
    with atomic_path(out / "budgets.csv") as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    write_text(out / "budgets.md", markdown(runs, rows, args.set_name, native_pll, n_test, args.fills))
    write_json(out / "summary.json", {"seconds": seconds, "cpu": _cpu(), "threads": args.threads, "n_test": n_test,
                                      "n_calibration": args.n_calibration, "fills": args.fills,
                                      "set": args.set_name, "divisors": list(args.divisors),
                                      "native_pll": native_pll})
    print((out / "budgets.md").read_text())
