"""The budgets table: every sampler at every calibrated budget, with paired differences.

Input is a comparison's runs (``run id → {family, divisor, solved (P,), passes (P,), ...}``, one
``sequential`` run and one run per calibrated family and budget, all on the same P test items).
Contenders (the families of samplers that read a pairwise matrix, ``SamplerSpec.contender`` in
:data:`mdm_mi.core.sampler_table.SAMPLERS`, and ``mi*``: at each budget the λ with the best *calibration*
score — Sudoku accuracy, protein −JSD — so the choice never sees the test items) are compared with every baseline by
:func:`mdm_mi.evaluation.paired.paired_difference`, and ``mi*`` with every other contender (the rules beyond
Algorithm 1 and the rivals of docs/record/rivals.md): :func:`contrast_pairs`.

    rows = budget_rows(runs, set_name="hard")          # long format, one row per comparison
    write_csv(rows, "budgets.csv"); print(markdown(rows, runs, "hard"))
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from mdm_mi.core.sampler_table import ALGORITHM_1, SAMPLERS, Calibration, is_algorithm_1, sampler_of
from mdm_mi.evaluation.paired import interval_agrees, paired_difference
from mdm_mi.evaluation.stats import wilson_interval
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path

SEQUENTIAL = "sequential"
BEST_MI = "mi*"  # MI-guided with λ chosen per budget on the calibration split
FIELDS = ["set", "divisor", "target", "first", "second", "n", "passes_first", "passes_second", "acc_first",
          "acc_second", "diff", "lo", "hi", "b", "c", "p_value", "detectable", "verdict"]


def is_contender(family: str) -> bool:
    """Whether a calibrated family's rows are compared with the baselines: its sampler reads MI."""
    spec = SAMPLERS.get(sampler_of(family))
    return spec is not None and spec.contender


def best_mi_run(runs: dict[str, dict], divisor: int) -> str:
    """The run id of ``mi*`` at ``divisor`` in a comparison's ``runs``: the MI-guided λ with the best
    ``calib_score`` (first of ties, as in :func:`by_budget`). One-line error when there is none."""
    mi = [k for k, r in runs.items() if is_algorithm_1(r["family"]) and r["divisor"] == divisor]
    if not mi:
        raise InputError(f"the comparison has no MI-guided run at divisor {divisor}")
    return max(mi, key=lambda k: runs[k]["calib_score"])


def by_budget(runs: dict[str, dict]) -> dict[int, dict[str, dict]]:
    """divisor → family → run, with ``mi*`` added (best ``calib_score`` among MI-guided λ)."""
    table: dict[int, dict[str, dict]] = {}
    for run in runs.values():
        if run["family"] != SEQUENTIAL:
            table.setdefault(run["divisor"], {})[run["family"]] = run
    for fams in table.values():
        mi = [f for f in fams if is_algorithm_1(f)]
        if mi:
            best = max(mi, key=lambda f: fams[f]["calib_score"])  # first of ties: the lowest λ
            fams[BEST_MI] = fams[best] | {"chosen": best}
    return dict(sorted(table.items()))


def contrast_pairs(families) -> list[tuple[str, str]]:
    """The (first, second) contrasts of one budget whose families (``mi*`` included, sequential not) are
    ``families``: each contender and ``mi*`` minus each baseline and sequential, then ``mi*`` minus each
    contender that is not one of Algorithm 1's families (``mi-2b δ=0.1``, ``demask ε=0.5``: the
    verdicts' ``contender`` role). Baselines against sequential are the caller's to add."""
    firsts = [f for f in families if is_contender(f) or f == BEST_MI]
    seconds = [f for f in families if f not in firsts] + [SEQUENTIAL]
    pairs = [(a, b) for a in firsts for b in seconds]
    if BEST_MI in firsts:
        pairs += [(BEST_MI, f) for f in firsts if f != BEST_MI and not is_algorithm_1(f)]
    return pairs


def budget_rows(runs: dict[str, dict], set_name: str) -> list[dict]:
    """One row per pair of :func:`contrast_pairs` and per (budget, baseline, sequential): accuracies,
    passes, difference [95% Newcombe], discordant counts, exact McNemar p, the difference this set
    resolves, and the verdict."""
    seq = runs[SEQUENTIAL]
    rows = []
    for d, fams in by_budget(runs).items():
        pairs = contrast_pairs(fams)
        pairs += [(f, SEQUENTIAL) for f in fams if not is_contender(f) and f != BEST_MI]  # every baseline vs sequential
        for first, second in pairs:
            base = fams.get(second, seq)  # sequential is not among a budget's families
            pd = paired_difference(fams[first]["solved"], base["solved"])
            rows.append({
                "set": set_name, "divisor": d, "target": fams[first].get("target", float("nan")),
                "first": first, "second": second, "n": pd.n,
                "passes_first": float(np.mean(fams[first]["passes"])), "passes_second": float(np.mean(base["passes"])),
                "acc_first": pd.acc_first, "acc_second": pd.acc_second, "diff": pd.diff, "lo": pd.lo,
                "hi": pd.hi, "b": pd.b, "c": pd.c, "p_value": pd.p_value, "detectable": pd.detectable,
                "verdict": pd.verdict(),
            })
    return rows


def write_csv(rows: list[dict], path: str | Path, fields: list[str] = FIELDS) -> None:
    """A long-format budgets table as CSV (atomically); ``fields`` are its columns."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


OVER_BUDGET = 0.05  # "best" ignores families whose test passes exceed the budget by more than this
OFF_TARGET = "†"  # the calibration missed its target passes by more than ±5%
OFF_TARGET_NOTE = f"{OFF_TARGET} calibration missed the target passes by more than 5% (the sampler cannot reach it)"


def table_order(runs: dict[str, dict]) -> dict[str, dict]:
    """``runs`` (run id → run with its ``family``, e.g. read back from a ``runs.json`` written with
    sorted keys) in the sampler table's order: sequential first, then by sampler as in
    :data:`SAMPLERS`, within one sampler by its swept value numerically (``λ=4`` before ``λ=16``)."""
    order = [SEQUENTIAL, *SAMPLERS]
    natural = lambda name: [(0, float(t), "") if t[:1].isdigit() else (1, 0.0, t)
                            for t in re.split(r"(\d+(?:\.\d+)?)", name)]
    return dict(sorted(runs.items(), key=lambda kv: (order.index(sampler_of(kv[1]["family"])),
                                                     natural(kv[1]["family"]))))


def off_budget(table: dict[int, dict[str, dict]]) -> set[tuple[int, str]]:
    """``(divisor, family)`` of every run of a :func:`by_budget` table whose calibration missed its
    budget (``on_target`` false; ``mi*`` too when its chosen λ did): the cells and contrasts marked
    :data:`OFF_TARGET`."""
    return {(d, f) for d, fams in table.items() for f, r in fams.items() if not r.get("on_target", True)}


def _acc_cell(run: dict) -> str:
    k, n = float(np.sum(run["solved"])), len(run["solved"])  # a matched run's expected count may be fractional
    lo, hi = wilson_interval(k, n)
    mark = "" if run.get("on_target", True) else OFF_TARGET
    return f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] @ {np.mean(run['passes']):.1f}{mark}"


NEAR_ONE = 0.99


def _param_cell(run: dict) -> str:
    """A family's calibrated parameter (its entry's ``calibration``) as ``γ=0.1``, one searched on the
    ``log1m`` scale and close to 1 as ``τ=1−0.001``; for a run matched by two settings, both with
    their weights (``γ=0.1 ×0.40 + γ=0.2 ×0.60``)."""
    cal: Calibration = SAMPLERS[sampler_of(run["family"])].calibration
    if len(run.get("settings", ())) > 1:
        return " + ".join(f"{_param_text(cal, s['params'])} ×{s['weight']:.2f}" for s in run["settings"])
    return _param_text(cal, run["params"])


def _param_text(cal: Calibration, params: dict) -> str:
    """One setting's calibrated parameter, ``γ=0.1`` or ``τ=1−0.001``."""
    value = params[cal.param]
    if cal.scale == "log1m" and value > NEAR_ONE:  # close to 1: show how close
        return f"{cal.symbol}=1−{1 - value:.2g}"
    return f"{cal.symbol}={value:.4g}"


DISAGREES = "§"  # a contrast whose 95% interval and p disagree at 5% (mdm_mi.evaluation.paired.interval_agrees)
DISAGREES_NOTE = (f"{DISAGREES} the 95% interval (Newcombe's, approximate) and the paired p (exact McNemar; the "
                  "sign-flip test for a two-setting mixture) disagree at 5%, as they can near the 5% line or with few "
                  "discordant puzzles; the verdict follows p")


def diff_cell(r: dict) -> str:
    """A contrast as ``+1.2 [−0.3, +2.7] p=0.11`` (pp), marked :data:`DISAGREES` when its interval and
    p disagree at 5%, with the Holm-adjusted p of a classified row."""
    cell = f"{100 * r['diff']:+.1f} [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}] p={r['p_value']:.2g}"
    cell += "" if interval_agrees(r["lo"], r["hi"], r["p_value"]) else DISAGREES
    if "p_holm" in r:  # classified rows (mdm_mi.evaluation.verdicts): the Holm-adjusted p
        cell += f" (Holm {r['p_holm']:.2g})"
    return cell


def disagree_note(cells: list[str]) -> list[str]:
    """The footnote of :data:`DISAGREES` when a shown contrast carries it, else nothing."""
    return ["", DISAGREES_NOTE] if any(DISAGREES in c for c in cells) else []


def markdown(rows: list[dict], runs: dict[str, dict], set_name: str, off_target_note: str = OFF_TARGET_NOTE) -> str:
    """Two tables for one set: accuracy % [Wilson 95%] @ mean passes of every family at each budget,
    and ``mi*`` minus each baseline and each other contender (pp, 95% Newcombe interval, paired sign-flip p — exact McNemar
    for binary outcomes — and, for classified rows, Holm's p and the verdict)."""
    table = by_budget(runs)
    families = list(dict.fromkeys(f for fams in table.values() for f in fams))
    seq = runs[SEQUENTIAL]
    n = len(seq["solved"])
    lines = [f"**{set_name}** ({n} test puzzles; sequential {_acc_cell(seq)})", "",
             "| budget (target passes) | " + " | ".join(families) + " |",
             "|---|" + "---|" * len(families)]
    for d, fams in table.items():
        target = next(iter(fams.values())).get("target", float("nan"))
        cells = [(_acc_cell(fams[f]) + (f" (λ={fams[f]['chosen'].split('=')[1]})" if f == BEST_MI else "")
                  if f in fams else "") for f in families]
        lines.append(f"| 1/{d} ({target:.1f}) | " + " | ".join(cells) + " |")
    if off_budget(table):
        lines += ["", off_target_note]
    matched = any(len(r.get("settings", ())) > 1 for fams in table.values() for r in fams.values())
    lines += ["", "Calibrated settings (on the calibration split" + ("; two settings: each one's weight in the "
              "mixture that spends the budget's test passes" if matched else "") + "):", "",
              "| budget | " + " | ".join(f for f in families if f != BEST_MI) + " |",
              "|---|" + "---|" * (len(families) - (BEST_MI in families))]
    for d, fams in table.items():
        lines.append(f"| 1/{d} | " + " | ".join(_param_cell(fams[f]) if f in fams else ""
                                               for f in families if f != BEST_MI) + " |")
    mine = [r for r in rows if r["first"] == BEST_MI]
    seconds = list(dict.fromkeys(r["second"] for r in mine))
    if mine:
        lines += ["", f"{BEST_MI} minus each baseline and each other contender on the same puzzles (pp, 95% interval, "
                  "paired sign-flip p" + ("; Holm-adjusted p and verdict: mi* − eb over the budgets, mi* − the other "
                                          "contenders over theirs, the rest over the table" if "p_holm" in mine[0]
                     else "") + "):", "",
                  "| budget | " + " | ".join(seconds) + " | resolves ± (pp) |", "|---|" + "---|" * (len(seconds) + 1)]
        for d in table:
            rs = {r["second"]: r for r in mine if r["divisor"] == d}
            res = np.median([r["detectable"] for r in rs.values()])
            lines.append(f"| 1/{d} | " + " | ".join(diff_cell(rs[s]) + (f" **{rs[s]['verdict']}**" if "p_holm" in rs[s] else "")
                                                   if s in rs else "" for s in seconds)
                         + f" | {100 * res:.1f} |")
        lines += disagree_note(lines)
    return "\n".join(lines) + "\n"


def read_csv(path: str | Path) -> list[dict]:
    """A budgets CSV written by :func:`write_csv`, numbers as floats/ints (every column but the names)."""
    ints, names = {"divisor", "n", "family_size"}, {"set", "first", "second", "verdict", "role", "metric"}
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in r:
            if k in ints:
                r[k] = int(r[k])
            elif k not in names:
                r[k] = float(r[k])
    return rows


def summary_baselines() -> tuple[str, ...]:
    """What the who-wins summary sets ``mi*`` against: the MI-guided entry's ``against``, then any other
    calibrated baseline of :data:`SAMPLERS` in table order."""
    listed = SAMPLERS[ALGORITHM_1].calibration.against
    return listed + tuple(name for name, s in SAMPLERS.items()
                          if s.calibration and not s.contender and name not in listed)


def winners(rows: list[dict], against: tuple[str, ...] | None = None) -> list[dict]:
    """Per set and budget: the family with the best test accuracy among those within 5% of the budget's
    passes (and its paired difference to sequential when the rows hold it), and ``mi*`` minus each of
    ``against`` (default :func:`summary_baselines`, then every other contender the rows set ``mi*``
    against; difference, 95% interval, p and verdict at p < 0.05), from long-format rows."""
    if against is None:
        against = summary_baselines()
        against += tuple(dict.fromkeys(r["second"] for r in rows if r["first"] == BEST_MI and is_contender(r["second"])))
    out = []
    for key in dict.fromkeys((r["set"], r["divisor"]) for r in rows):
        rs = [r for r in rows if (r["set"], r["divisor"]) == key]
        acc = {r["first"]: (r["acc_first"], r["passes_first"]) for r in rs if r["first"] != BEST_MI}
        acc |= {r["second"]: (r["acc_second"], r["passes_second"]) for r in rs if r["second"] != SEQUENTIAL}
        target = rs[0]["target"]
        # a family whose test passes exceed the budget by > 5% (it cannot reach it, †) cannot be best
        eligible = [f for f in acc if acc[f][1] <= target * (1 + OVER_BUDGET)] or list(acc)
        best = max(eligible, key=lambda f: acc[f][0])
        mine = {r["second"]: r for r in rs if r["first"] == BEST_MI}
        best_vs_seq = next((r for r in rs if r["first"] == best and r["second"] == SEQUENTIAL), None)
        out.append({"set": key[0], "divisor": key[1], "passes": mine[against[0]]["passes_first"] if against[0] in mine
                    else float("nan"), "best": best, "best_acc": acc[best][0], "best_vs_sequential": best_vs_seq,
                    "vs": {a: mine[a] for a in against if a in mine}})
    return out


def summary_markdown(rows: list[dict]) -> str:
    """Who wins at each budget, every set: the best family and ``mi*`` against each baseline."""
    table = winners(rows)
    against = list(dict.fromkeys(a for w in table for a in w["vs"]))
    lines = ["| set | budget | passes | best (acc %) | best − sequential | "
             + " | ".join(f"{BEST_MI} − {a}" for a in against) + " |", "|---|---|---|---|---|" + "---|" * len(against)]
    for w in table:
        cells = [(f"{diff_cell(w['vs'][a])} **{w['vs'][a]['verdict']}**" if a in w["vs"] else "") for a in against]
        vs_seq = w["best_vs_sequential"]
        seq_cell = f"{diff_cell(vs_seq)} **{vs_seq['verdict']}**" if vs_seq else ""
        lines.append(f"| {w['set']} | 1/{w['divisor']} | {w['passes']:.1f} | {w['best']} ({100 * w['best_acc']:.1f}) | "
                     + seq_cell + " | " + " | ".join(cells) + " |")
    return "\n".join(lines + disagree_note(lines)) + "\n"
