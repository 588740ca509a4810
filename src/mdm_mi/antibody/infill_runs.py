"""The runs of the antibody infilling comparison: test and calibration templates (one VH per lineage,
``regions`` masked at natural lengths), sequential's fills, every family calibrated to each budget on
the calibration templates and its fills of the test templates, and the result files.

    test = InfillSet.from_tsv(backbone, "data/test.tsv", ("cdr3",), n=48, seed=0)   # n=None: every lineage
    filler = Filler(backbone, args.seed, args.temperature, args.batch_size, store)   # store: None or a ChunkStore
    runs = calibrated_runs(filler, test, calib, families, (2, 4), 2, pairwise)  # sequential and every family at ÷2, ÷4

With a store, every fill of the test and calibration templates and each fill's scores (PLL and
recovery, :func:`fill_scores`) are kept on disk per chunk of templates, per fill and per
sampler setting: a stopped run, rerun, fills and scores only what is missing.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import torch

from mdm_mi.antibody.compare import (composition, fill_diversity, METRICS, paired_t, per_context, pll_per_residue,
                                     pll_scale, recovery)
from mdm_mi.antibody.data import read_vh, template
from mdm_mi.core.sampler_table import ALGORITHM_1, ATTENTION, HEAD, SAMPLERS, TV_HEAD
from mdm_mi.core.samplers import Sequential
from mdm_mi.evaluation.budgets import BEST_MI, by_budget, off_budget, OFF_TARGET, OFF_TARGET_NOTE, SEQUENTIAL
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.calibrate import calibrated_families, Family
from mdm_mi.evaluation.infill import Filled, Filler, max_masked, sequential_passes
from mdm_mi.evaluation.runner import Budget, ComparisonTask, run_comparison
from mdm_mi.evaluation.stats import jsd_bits
from mdm_mi.evaluation.verdicts import verdict, WORDS
from mdm_mi.infra.checkpoint import read_meta
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, write_json, write_text
from mdm_mi.infra.runtime import cpu_model
from mdm_mi.mi.pairwise import pairwise_source
from mdm_mi.models.loading import weights_identity
from mdm_mi.mi.guided import oracle_pairwise_fn, OracleMI
from mdm_mi.sampling.registry import SAMPLER_CLASSES


@dataclass(frozen=True)
class InfillSet:
    """``tokens (P, N)`` templates, ``native (P, N)`` the VH they came from, ``positions (P, N)`` bool
    (the masked ones), ``ids`` the rows' ids."""

    tokens: torch.Tensor
    native: torch.Tensor
    positions: torch.Tensor
    ids: list[str]

    @staticmethod
    def from_tsv(backbone, path: Path, regions: tuple[str, ...], n: int | None, seed: int) -> "InfillSet":
        """One VH per lineage (:func:`one_per_lineage`; ``n=None``: every lineage), ``regions`` masked."""
        picked = one_per_lineage(read_vh(path), n, seed)
        tokens = backbone.encode([template(r, tuple(regions)) for r in picked])
        native = backbone.encode([r.sequence for r in picked])
        return InfillSet(tokens, native, tokens == backbone.mask_id, [r.id for r in picked])

    def score_rows(self, backbone, filled: torch.Tensor, start: int, stop: int, batch: int) -> dict[str, np.ndarray]:
        """PLL (nats/residue) and native recovery of rows ``start:stop`` of one fill ``filled (P, N)`` of
        these templates, scored ``batch`` templates per call from ``start`` → ``(stop − start,)`` each."""
        pll, rec = [], []
        for first in range(start, stop, batch):
            rows = slice(first, min(first + batch, stop))
            pll.append(pll_per_residue(backbone, filled[rows], self.positions[rows]))
            rec.append(recovery(filled[rows], self.native[rows], self.positions[rows]))
        return {"pll": torch.cat(pll).numpy(), "recovery": torch.cat(rec).numpy()}

    def set_metrics(self, backbone, filled: torch.Tensor) -> dict:
        """Of the fills ``(k·P, N)`` as a set: ``jsd`` (bits) of their amino-acid composition at the
        filled positions to the native loops', and ``diversity (P,)``: how much a context's fills differ."""
        k = filled.shape[0] // len(self.ids)
        vocab = backbone.vocab_token_ids.cpu()
        native = composition(self.native, self.positions, vocab)
        positions = self.positions.repeat(k, 1)
        return {"jsd": jsd_bits(composition(filled, positions, vocab), native),
                "diversity": fill_diversity(filled, positions, len(self.ids)).tolist()}

    def first(self, n: int) -> "InfillSet":
        """The first ``n`` contexts."""
        return InfillSet(self.tokens[:n], self.native[:n], self.positions[:n], self.ids[:n])


def one_per_lineage(rows: list, n: int | None, seed: int) -> list:
    """``n`` rows, one per lineage: the first of each lineage in a seeded shuffle, first ``n`` lineages
    (``n=None``: every lineage, in that order)."""
    order = np.random.default_rng(seed).permutation(len(rows))
    picked, seen = [], set()
    for i in order:
        if rows[i].lineage not in seen:
            seen.add(rows[i].lineage)
            picked.append(rows[i])
    if n is not None and len(picked) < n:
        raise InputError(f"the table has {len(picked)} lineages, fewer than the {n} contexts asked for")
    return picked[:n]


def chunk_store(model: Path, heads: tuple, chunks: Path | None, seed: int, temperature: float,
                batch_size: int) -> ChunkStore | None:
    """The fills' :class:`ChunkStore` in ``chunks`` (None: no store), keyed by the model's and the
    ``heads`` folders' weights (None entries skipped), the model's hidden layer, the device type, the seed
    and the temperature, in chunks of ``batch_size`` templates (one decode batch each)."""
    if chunks is None:
        return None
    identity = weights_identity(model, heads, "cpu", seed=seed, temperature=temperature,
                                hidden_layer=read_meta(model).get("hidden_layer"))
    return ChunkStore(chunks, identity, chunk_items=batch_size)


def fill_scores(filler: Filler, infill: InfillSet, sampler, filled: Filled) -> dict[str, np.ndarray]:
    """PLL and recovery of ``sampler``'s fills ``filled (n·P, N)`` of ``infill``'s templates (fill ``k`` of
    template ``p`` at row ``k·P + p``) → {pll, recovery: ``(n·P,)``}. With the filler's store, fill ``k``'s
    scores are kept beside it (part ``score fill k``). Scoring runs the model: call it outside a
    :func:`mdm_mi.mi.pairwise.pairwise_source` block, whose captured pass would see it."""
    size, scores = len(infill.ids), []
    for k in range(len(filled.tokens) // size):
        rows = filled.tokens[k * size : (k + 1) * size]
        score = lambda start, stop: infill.score_rows(filler.backbone, rows, start, stop, filler.batch_size)
        scores.append(score(0, size) if filler.store is None else
                      filler.store.decode(infill.tokens.numpy(), sampler, score, part=filler.part(k, "score fill")))
    return {m: np.concatenate([s[m] for s in scores]) for m in METRICS}


def scored_fills(filler: Filler, infill: InfillSet, sampler, n: int, pairwise_fn=None) -> tuple[Filled, dict]:
    """``n`` fills of ``infill``'s templates (:class:`mdm_mi.evaluation.infill.Filler`) and their scores
    (:func:`fill_scores`) → (:class:`Filled` ``(n·P, N)``, {pll, recovery: ``(n·P,)``})."""
    filled = filler(infill.tokens, sampler, n, pairwise_fn)
    return filled, fill_scores(filler, infill, sampler, filled)


def _run(test: InfillSet, backbone, fills: tuple[Filled, dict], family: str, divisor: int, params: dict,
         extra: dict) -> dict:
    """The record of one sampler's ``fills`` of the test templates (:func:`scored_fills`): per-context
    passes, PLL and recovery ``(P,)`` lists, the set metrics and ``extra``."""
    filled, scores = fills
    passes = per_context(filled.passes.numpy(), len(test.ids))
    return {"family": family, "divisor": divisor, "params": params, "passes": passes.tolist(),
            "mean_passes": float(passes.mean()), **{m: per_context(scores[m], len(test.ids)).tolist() for m in METRICS},
            **test.set_metrics(backbone, filled.tokens), **extra}


def sequential_run(filler: Filler, test: InfillSet, fills: int, order: str = "entropy", kept: dict | None = None) -> dict:
    """Sequential decoding (one position per pass: lowest entropy first, or with ``order="margin"`` the
    largest top-1/top-2 margin, Kim et al. 2025) on the test templates, ``fills`` fills each; with
    ``kept``, its fills' tokens go there under the run's name."""
    fills = scored_fills(filler, test, Sequential(order=order), fills)
    name = SEQUENTIAL if order == "entropy" else f"{SEQUENTIAL} ({order} order)"
    if kept is not None:
        kept[name] = fills[0].tokens.numpy()
    return _run(test, filler.backbone, fills, name, 1, {"order": order}, {"calib_score": 0.0})


@dataclass(frozen=True)
class OracleSettings:
    """The exact-MI oracle's share of the comparison: the first ``contexts`` test contexts, at the
    budgets ``divisors``, probing MI certified to ±``tol`` nats."""

    contexts: int
    divisors: tuple[int, ...]
    tol: float


def oracle_runs(filler: Filler, test: InfillSet, runs: dict, oracle: OracleSettings, n_fills: int) -> dict[int, dict]:
    """Algorithm 1 fed the certified probing MI (±``oracle.tol`` nats) in place of the head, at mi*'s
    calibrated setting of each of ``oracle.divisors``, ``n_fills`` fills of the first ``oracle.contexts``
    test contexts; paired by context with the head (mi*) and sequential on the same contexts. The
    oracle's probing passes (``≤ 1 + |M|·20`` per step) are not counted, as in the Sudoku ceiling. With
    a store, its fills are kept under the label ``oracle tol=<tol>``."""
    sub, n = test.first(oracle.contexts), oracle.contexts
    probe = oracle_pairwise_fn(filler.backbone, method="certified", tol=oracle.tol)
    filler = dataclasses.replace(filler, label=f"oracle tol={oracle.tol}")
    table, out = by_budget(runs), {}
    for d in oracle.divisors:
        head = table[d][BEST_MI]
        t0 = time.time()
        fills = scored_fills(filler, sub, OracleMI(**head["params"]), n_fills, probe)
        run = _run(sub, filler.backbone, fills, "mi-oracle", d, head["params"], {"seconds": time.time() - t0})
        arms = {"head": head, "sequential": runs[SEQUENTIAL]}
        run["contrasts"] = {f"oracle − {a}": paired_t(np.asarray(run["pll"]), np.asarray(r["pll"][:n]))
                            for a, r in arms.items()}
        run["head_pll"], run["sequential_pll"] = float(np.mean(head["pll"][:n])), float(np.mean(runs[SEQUENTIAL]["pll"][:n]))
        out[d] = run
        print(f"oracle 1/{d}: PLL {np.mean(run['pll']):.3f} @ {run['mean_passes']:.2f} passes vs head "
              f"{run['head_pll']:.3f} on the same {n} contexts ({run['seconds']:.0f} s)", flush=True)
    return out


def antibody_families(baselines: tuple[str, ...], settings: Mapping, with_head: bool, with_tv: bool,
                        most: int) -> list[Family]:
    """The calibrated families, built as every comparison's (:func:`mdm_mi.evaluation.calibrate.calibrated_families`
    of ``settings``, config key → value, in the sampler table's order): the calibrated ``baselines``, then
    each value of every swept setting (Algorithm 1's λ and the generated ``AntibodySweptFlags``), but none
    reading a matrix the comparison lacks (the MI head, the TV head; the attention is the model's own)."""
    known = [n for n, spec in SAMPLERS.items() if spec.calibration and spec.calibration.each is None]
    if not set(baselines) <= set(known):
        raise InputError(f"--samplers takes calibrated baselines ({', '.join(known)}), got {', '.join(baselines)}")
    have = {None, ATTENTION} | ({HEAD} if with_head else set()) | ({TV_HEAD} if with_tv else set())
    return [f for f in calibrated_families(max(2, most), settings, SAMPLER_CLASSES) if SAMPLERS[f.sampler].pairwise in have
            and (SAMPLERS[f.sampler].calibration.each is not None or f.sampler in baselines)]


@dataclass
class AntibodyTask(ComparisonTask):
    """The antibody comparison for :func:`mdm_mi.evaluation.runner.run_comparison`: each family calibrated
    on ``calib``'s templates (one fill each), then ``fills`` fills of ``test`` at the calibrated setting,
    scored (PLL, recovery) → :func:`_run`'s record with target, calib_passes, on_target and
    ``calib_score``: the calibration fills' PLL for Algorithm 1 when several λ compete (mi* picks by it),
    else 0. ``pairwise`` is the MI head's Î, ``tv_fn`` the TV head's T̂ (each family reads its own,
    :func:`mdm_mi.mi.pairwise.pairwise_source`). Run ids are ``<slug>@<d>``. ``kept``: run id → its test
    fills' tokens ``(fills·P, N)`` (:func:`write_fills`)."""

    filler: Filler
    test: InfillSet
    calib: InfillSet
    fills: int
    pairwise: object
    tv_fn: object = None
    several_mi: bool = False
    kept: dict = dataclasses.field(default_factory=dict)

    def calibration_passes(self) -> float:
        return sequential_passes(self.filler.backbone, self.calib.tokens)

    def measure(self, sampler) -> tuple[float, dict]:
        with pairwise_source(self.filler.backbone, sampler, self.pairwise, self.tv_fn) as pf:
            res = self.filler(self.calib.tokens, sampler, 1, pf)
        return float(res.passes.float().mean()), {}

    def reference_runs(self) -> dict[str, dict]:
        return {SEQUENTIAL: sequential_run(self.filler, self.test, self.fills, kept=self.kept)}

    def run_id(self, family: Family, divisor: int) -> str:
        return f"{family.slug}@{divisor}"

    def test_run(self, budget: Budget) -> dict:
        fam, point, sampler, backbone = budget.family, budget.point, budget.sampler, self.filler.backbone
        score = 0.0
        if self.several_mi and fam.sampler == ALGORITHM_1:
            pll = scored_fills(self.filler, self.calib, sampler, 1, self.pairwise)[1]["pll"]
            score = float(per_context(pll, len(self.calib.ids)).mean())
        with pairwise_source(backbone, fam.sampler, self.pairwise, self.tv_fn) as pf:
            filled = self.filler(self.test.tokens, sampler, self.fills, pf)
        self.kept[self.run_id(fam, budget.divisor)] = filled.tokens.numpy()
        fills = (filled, fill_scores(self.filler, self.test, sampler, filled))
        return _run(self.test, backbone, fills, fam.label, budget.divisor, sampler.params(), {
            "target": point.target, "calib_passes": point.passes, "on_target": point.on_target, "calib_score": score})


def calibrated_runs(filler: Filler, test: InfillSet, calib: InfillSet, families: list[Family], divisors, n_fills: int,
                    pairwise, tv_fn=None, kept: dict | None = None) -> dict[str, dict]:
    """Sequential and every family at every budget sequential's passes ÷ each of ``divisors``,
    ``n_fills`` fills per test context (:class:`AntibodyTask`); mi* scores its calibration fills when
    several of Algorithm 1's λ compete. With ``kept``, every run's test fills' tokens go there (run id →
    ``(n_fills·P, N)``)."""
    several_mi = pairwise is not None and sum(f.sampler == ALGORITHM_1 for f in families) > 1
    task = AntibodyTask(filler, test, calib, n_fills, pairwise, tv_fn, several_mi, {} if kept is None else kept)
    return run_comparison(task, families, divisors, log=lambda s: print(s, flush=True))[0]


def write_fills(path: Path, test: InfillSet, backbone, kept: dict[str, np.ndarray]) -> None:
    """Every run's test fills as one ``.npz`` (for a scorer that did not write them): ``fill/<run id>``
    ``(fills·P, N)`` token ids (fill ``k`` of context ``p`` at row ``k·P + p``), the templates' ``positions``
    and ``native`` tokens ``(P, N)``, their ``ids``, and the backbone's ``alphabet`` with its ``vocab_ids``."""
    arrays = {f"fill/{k}": v.astype(np.int32) for k, v in kept.items()}
    arrays |= {"positions": test.positions.numpy(), "native": test.native.numpy().astype(np.int32),
               "ids": np.asarray(test.ids), "alphabet": np.asarray(backbone.alphabet),
               "vocab_ids": backbone.vocab_token_ids.cpu().numpy()}
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.savez_compressed(fh, **arrays)


def draw_budgets(runs: dict, references: dict, set_name: str, native_pll: float, path: Path) -> None:
    """PLL and recovery against mean passes: one line per calibrated family, sequential (and its margin
    order) as points, the native loops' PLL as a dashed line; the oracle as stars."""
    import matplotlib  # lazy: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: only when a figure is drawn

    table = by_budget(runs)
    fams = [f for f in dict.fromkeys(f for fs in table.values() for f in fs) if f != BEST_MI]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, m in zip(axes, METRICS):
        for f in fams:
            pts = sorted((fs[f]["mean_passes"], np.mean(fs[f][m])) for fs in table.values() if f in fs)
            ax.plot(*zip(*pts), marker="o", label=f)
        for r, mk in ((runs[SEQUENTIAL], "s"), (references.get("margin"), "D")):
            if r:
                ax.plot(r["mean_passes"], np.mean(r[m]), mk, color="black", label=r["family"])
        orc = references.get("oracle") or {}
        if orc:
            ax.plot([r["mean_passes"] for r in orc.values()], [np.mean(r[m]) for r in orc.values()], "*",
                    markersize=12, color="tab:purple", label="mi-oracle (subset)")
        if m == "pll":
            ax.axhline(native_pll, ls="--", color="grey", label="native loops")
        ax.set(xlabel="mean forward passes", ylabel="PLL (nats/residue)" if m == "pll" else "native recovery",
               title=f"{set_name}: {m}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def set_metric_lines(runs: dict[str, dict], references: dict) -> list[str]:
    """The fills as sets: composition JSD (bits) to the native loops and diversity (share of filled
    positions where a context's two fills differ) per family and budget; sequential's orders first."""
    cell = lambda r: f"{r['jsd']:.3f} / {np.mean(r['diversity']):.2f}"
    table = by_budget(runs)
    fams = list(dict.fromkeys(f for fs in table.values() for f in fs))
    seq = [runs[SEQUENTIAL]] + ([references["margin"]] if references.get("margin") else [])
    lines = ["Composition JSD to the native loops (bits) / diversity of fills: "
             + "; ".join(f"{r['family']} {cell(r)}" for r in seq), "",
             "| budget | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    lines += [f"| 1/{d} | " + " | ".join(cell(fs[f]) if f in fs else "" for f in fams) + " |" for d, fs in table.items()]
    return lines


def reference_lines(runs: dict[str, dict], references: dict) -> list[str]:
    """Sequential in margin order against entropy order, and the exact-MI oracle against the head (mi*)
    and sequential on its contexts, paired by context (PLL, nats/residue)."""
    fmt = lambda c: f"{c['diff']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}], p = {c['p_value']:.2g}"
    lines = []
    margin = references.get("margin")
    if margin:
        c = paired_t(np.asarray(margin["pll"]), np.asarray(runs[SEQUENTIAL]["pll"]))
        lines += [f"Sequential in margin order (Kim et al. 2025): PLL {np.mean(margin['pll']):.3f}, recovery "
                  f"{100 * np.mean(margin['recovery']):.0f}%; margin − entropy order {fmt(c)} (exploratory).", ""]
    oracle = references.get("oracle") or {}
    if oracle:
        n = len(next(iter(oracle.values()))["pll"])
        lines += [f"Exact-MI oracle (Algorithm 1 with certified probing MI at mi*'s setting; its probing passes not "
                  f"counted) on the first {n} test contexts (exploratory):", "",
                  "| budget | oracle PLL @ passes | head (mi*) PLL | sequential PLL | oracle − head | oracle − sequential | s |",
                  "|---|---|---|---|---|---|---|"]
        for d, r in oracle.items():
            lines.append(f"| 1/{d} | {np.mean(r['pll']):.3f} @ {r['mean_passes']:.1f} | {r['head_pll']:.3f} | "
                         f"{r['sequential_pll']:.3f} | {fmt(r['contrasts']['oracle − head'])} | "
                         f"{fmt(r['contrasts']['oracle − sequential'])} | {r['seconds']:.0f} |")
        lines.append("")
    return lines


def antibody_markdown(runs: dict[str, dict], rows: list[dict], set_name: str, native_pll: float, n: int, fills: int,
                      references: dict | None = None) -> str:
    """The values table (PLL / recovery % @ passes per family and budget), the set metrics (composition
    JSD, diversity), mi*'s contrasts, the primary verdict sentences, the count of verdict words and
    the references (margin order, exact-MI oracle)."""
    references = references or {}
    seq = runs[SEQUENTIAL]
    cell = lambda r: (f"{np.mean(r['pll']):.3f} / {100 * np.mean(r['recovery']):.0f}% @ {r['mean_passes']:.1f}"
                      + ("" if r.get("on_target", True) else OFF_TARGET))
    table = by_budget(runs)
    fams = list(dict.fromkeys(f for fs in table.values() for f in fs))
    lines = [f"**{set_name}** ({n} test contexts, one VH per lineage, {fills} fills each; PLL nats/residue / native "
             f"recovery @ mean passes; sequential {cell(seq)}; native loops' PLL {native_pll:.3f})", "",
             "| budget | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for d, fs in table.items():
        lines.append(f"| 1/{d} | " + " | ".join(cell(fs[f]) if f in fs else "" for f in fams) + " |")
    off = off_budget(table)
    if off:
        lines += ["", OFF_TARGET_NOTE + "; its contrasts are not at the same passes"]
    lines += ["", *set_metric_lines(runs, references)]
    lines += ["", f"{BEST_MI} minus each baseline and each other contender, paired by context (mean difference "
              "[Student 95%], p, Holm p, verdict):",
              "", "| budget | metric | contrast | difference | p | Holm p | verdict |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["first"] == BEST_MI:
            mark = OFF_TARGET if (r["divisor"], r["second"]) in off or (r["divisor"], BEST_MI) in off else ""
            lines.append(f"| 1/{r['divisor']} | {r['metric']} | {r['first']} − {r['second']}{mark} | {r['diff']:+.3f} "
                         f"[{r['lo']:+.3f}, {r['hi']:+.3f}] | {r['p_value']:.2g} | {r['p_holm']:.2g} | **{r['verdict']}** |")
    lines += ["", "Primary (mi* − EB in PLL):", ""]
    lines += [f"- {verdict(r, pll_scale())[1]}" for r in rows if r["role"] == "primary"]
    lines += ["", "| role | tests | " + " | ".join(WORDS) + " |", "|---|---|" + "---|" * len(WORDS)]
    for role_ in [r for r in ("primary", "secondary", "contender", "exploratory") if any(x["role"] == r for x in rows)]:
        rs = [r for r in rows if r["role"] == role_]
        lines.append(f"| {role_} | {len(rs)} | " + " | ".join(str(sum(r['verdict'] == w for r in rs)) for w in WORDS) + " |")
    lines += ["", *reference_lines(runs, references)]
    return "\n".join(lines) + "\n"


def write_results(out: Path, runs: dict, rows: list[dict], sizes: dict, native_pll: float, seconds: float,
                  references: dict | None = None, store: ChunkStore | None = None) -> None:
    """runs.json, references.json (margin order, oracle), budgets.csv (classified rows), budgets.md,
    budgets.png (PLL and recovery against passes) and summary.json (cost, CPU, ``sizes``: set, threads,
    n_test, n_calibration, fills, divisors; with the run's ``store``, ``chunks``: how many chunks were read
    back and decoded, and by which commits)."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "runs.json", runs)
    write_json(out / "references.json", {"margin": (references or {}).get("margin"),
                                         "oracle": {str(d): r for d, r in ((references or {}).get("oracle") or {}).items()}})
    with atomic_path(out / "budgets.csv") as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    write_text(out / "budgets.md", antibody_markdown(runs, rows, sizes["set"], native_pll, sizes["n_test"], sizes["fills"],
                                                     references))
    draw_budgets(runs, references or {}, sizes["set"], native_pll, out / "budgets.png")
    write_json(out / "summary.json", {"seconds": seconds, "cpu": cpu_model(), "native_pll": native_pll} | sizes
               | ({} if store is None else {"chunks": store.record()}))
    print((out / "budgets.md").read_text())
