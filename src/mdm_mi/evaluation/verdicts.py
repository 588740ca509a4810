"""Verdict words of the budgets tables, written from their numbers: "better", "worse",
"equivalent" or "not resolved", each with a sentence that README and docs can quote.

In each set's table the **primary** contrast is ``mi*`` − EB (one test per budget); the other
``mi*`` contrasts with a baseline (naive top-k, the threshold, sequential) are **secondary**; ``mi*``
against every other contender (a rule that reads a pairwise matrix: mi-indep, mi-2b, the rivals of
docs/record/rivals.md) is **contender**; every other row (each λ and rule against each baseline, each
baseline against sequential) is **exploratory**. p-values are
Holm-corrected within (set, role), so each family of tests keeps a 5% family-wise error:

- better / worse: Holm-adjusted p < 0.05, by the sign of the difference;
- equivalent: TOST at ±2 pp (Holm-adjusted over the same family) — the difference is shown to lie
  within ±2 pp, not merely not shown to differ;
- not resolved: neither.

    rows = classify(read_csv("budgets.csv"))           # adds role, p_holm, p_tost, p_tost_holm, verdict
    word, sentence = verdict(rows[0])
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable

from mdm_mi.evaluation.budgets import is_contender
from mdm_mi.evaluation.paired import ALPHA, holm, newcombe_interval, tost_p

PRIMARY_FIRST, PRIMARY_SECOND = "mi*", "eb"
EQUIVALENCE_MARGIN = 0.02  # ±2 pp
WORDS = ("better", "worse", "equivalent", "not resolved")
VERDICT_FIELDS = ["role", "family_size", "p_holm", "p_tost", "p_tost_holm"]  # added to the budgets CSV's columns


def role(row: dict) -> str:
    """``primary`` (mi* − EB), ``secondary`` (mi* − another baseline), ``contender`` (mi* − another
    contender) or ``exploratory``."""
    if row["first"] != PRIMARY_FIRST:
        return "exploratory"
    if row["second"] == PRIMARY_SECOND:
        return "primary"
    return "contender" if is_contender(row["second"]) else "secondary"


def cells(row: dict) -> tuple[float, float, float, float]:
    """The paired table (a, b, c, d) of a budgets row, from n, the accuracies and b, c."""
    n, b, c = row["n"], row["b"], row["c"]
    a = row["acc_first"] * n - b
    return a, b, c, n - a - b - c


def classify(rows: list[dict], margin: float = EQUIVALENCE_MARGIN, alpha: float = ALPHA, role_of=role,
             equivalence_p=None) -> list[dict]:
    """``rows`` (long-format budgets rows of one or more sets) with each row's role, the size of its
    Holm family (set, role), its Holm-adjusted p, its TOST p at ±``margin`` raw and adjusted, and
    its verdict word; new dicts, in the same order. ``role_of`` and ``equivalence_p`` (row → TOST p)
    default to the Sudoku tables' (:func:`role`; TOST on the paired cells at ±``margin``); the
    protein co-variation table passes its own (a metric in its role, Student's TOST)."""
    equivalence_p = equivalence_p or (lambda r: tost_p(*cells(r), margin))
    out = [dict(r, role=role_of(r), p_tost=equivalence_p(r)) for r in rows]
    families: dict[tuple, list[int]] = {}
    for i, r in enumerate(out):
        families.setdefault((r["set"], r["role"]), []).append(i)
    for idx in families.values():
        for key, adjusted in (("p_holm", holm([out[i]["p_value"] for i in idx])),
                              ("p_tost_holm", holm([out[i]["p_tost"] for i in idx]))):
            for i, p in zip(idx, adjusted):
                out[i][key] = p
        for i in idx:
            out[i]["family_size"] = len(idx)
    for r in out:
        r["verdict"] = verdict_word(r, alpha)
    return out


def verdict_word(row: dict, alpha: float = ALPHA) -> str:
    """better / worse (Holm p < alpha), equivalent (Holm TOST p < alpha) or not resolved."""
    if row["p_holm"] < alpha:
        return "better" if row["diff"] > 0 else "worse"
    if row["p_tost_holm"] < alpha:
        return "equivalent"
    return "not resolved"


def _pp(x: float) -> str:
    return f"{100 * x:+.1f}"


def _p(x: float) -> str:
    return f"{x:.2g}"


@dataclass(frozen=True)
class Scale:
    """How one kind of table writes a contrast in a sentence: ``number`` formats a difference and
    ``unit`` follows it, ``metric`` (after the contrast) names what is compared, ``band`` is the
    equivalence margin as written and ``interval90`` gives a row's 90% interval, the TOST's."""

    number: Callable[[float], str]
    unit: str
    metric: str
    band: str
    interval90: Callable[[dict], tuple[float, float]]


def _newcombe90(row: dict, alpha: float = ALPHA) -> tuple[float, float]:
    return newcombe_interval(*cells(row), z=NormalDist().inv_cdf(1 - alpha))


SUDOKU_SCALE = Scale(_pp, " pp", "", f"±{100 * EQUIVALENCE_MARGIN:g} pp", _newcombe90)  # accuracy, paired cells


def verdict(row: dict, scale: Scale = SUDOKU_SCALE, alpha: float = ALPHA) -> tuple[str, str]:
    """The verdict word of a classified row and one sentence that states it with its numbers, written
    on ``scale`` (Sudoku accuracy in pp by default; the protein co-variation table passes its own)."""
    word, n = verdict_word(row, alpha), scale.number
    head = (f"{row['set']}, 1/{row['divisor']} ({row['passes_first']:.1f} passes): {row['first']} − {row['second']}"
            f"{scale.metric} = {n(row['diff'])}{scale.unit} [{n(row['lo'])}, {n(row['hi'])}]")
    test = f"p = {_p(row['p_value'])}, Holm-adjusted p = {_p(row['p_holm'])} ({row['family_size']} {row['role']} tests)"
    lo90, hi90 = scale.interval90(row)
    if word in ("better", "worse"):
        tail = f"{word}."
    elif word == "equivalent":
        tail = (f"equivalent within {scale.band} (90% interval [{n(lo90)}, {n(hi90)}], TOST p = {_p(row['p_tost'])}, "
                f"Holm {_p(row['p_tost_holm'])}).")
    else:
        tail = (f"not resolved: no difference at 5%, and equivalence within {scale.band} is not shown either "
                f"(90% interval [{n(lo90)}, {n(hi90)}], TOST Holm p = {_p(row['p_tost_holm'])}).")
    return word, f"{head}, {test}: {tail}"


def primary_sentences(rows: list[dict], scale: Scale = SUDOKU_SCALE) -> list[str]:
    """One sentence per primary row (mi* − EB at each set and budget) of classified ``rows``."""
    return [verdict(r, scale)[1] for r in rows if r["role"] == "primary"]


def verdict_markdown(rows: list[dict]) -> str:
    """The primary verdicts as a list, then a count of every verdict word per set and role."""
    lines = ["Primary contrast, mi* − EB at identical test passes (Holm over the set's budgets; equivalence: "
             f"TOST at ±{100 * EQUIVALENCE_MARGIN:g} pp):", ""]
    lines += [f"- {s}" for s in primary_sentences(rows)]
    lines += ["", "| set | role | tests | " + " | ".join(WORDS) + " |", "|---|---|---|" + "---|" * len(WORDS)]
    for key in dict.fromkeys((r["set"], r["role"]) for r in rows):
        rs = [r for r in rows if (r["set"], r["role"]) == key]
        counts = [sum(r["verdict"] == w for r in rs) for w in WORDS]
        lines.append(f"| {key[0]} | {key[1]} | {len(rs)} | " + " | ".join(map(str, counts)) + " |")
    return "\n".join(lines) + "\n"


def side_by_side(runs: dict[str, list[dict]], roles=("primary", "secondary"), scale: Scale = SUDOKU_SCALE) -> str:
    """Two or more runs' classified rows (name → rows) as one table: each contrast of ``roles`` at
    each set and budget, each run's difference (written on ``scale``), Holm p and verdict, and whether
    the words agree."""
    _pp = scale.number
    names = list(runs)
    keyed = {name: {(r["set"], r["divisor"], r["first"], r["second"]): r for r in rs if r["role"] in roles}
             for name, rs in runs.items()}
    keys = list(dict.fromkeys(k for rows in keyed.values() for k in rows))
    lines = ["| set | budget | contrast | " + " | ".join(names) + " | same |", "|---|---|---|" + "---|" * (len(names) + 1)]
    flips = 0
    for key in keys:
        cells_, words = [], []
        for name in names:
            r = keyed[name].get(key)
            cells_.append(f"{_pp(r['diff'])} [{_pp(r['lo'])}, {_pp(r['hi'])}] p_Holm={_p(r['p_holm'])} **{r['verdict']}**"
                          if r else "")
            words.append(r["verdict"] if r else None)
        same = len(set(words)) == 1
        flips += not same
        lines.append(f"| {key[0]} | 1/{key[1]} | {key[2]} − {key[3]} | " + " | ".join(cells_) + f" | {'yes' if same else '**no**'} |")
    lines += ["", f"{len(keys) - flips} of {len(keys)} verdicts agree."]
    return "\n".join(lines) + "\n"
