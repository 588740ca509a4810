"""Markdown blocks of the AntiBERTy run's additions after its results, rendered into
docs/answer.md by ``render-docs`` from their committed data: the pass-adjusted contrast
(``pass_adjusted.json``, docs/preregistration.md amendment 4) and the second scorer's table
(``loop_model.json``).

    pass_adjusted_block(Path("docs/data/decisive-antibody/pass_adjusted.json"))
"""

from __future__ import annotations

import json
from pathlib import Path

from mdm_mi.evaluation.budgets import SEQUENTIAL


def _diff(r: dict) -> str:
    return f"{r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"


def pass_adjusted_block(path: Path) -> str:
    """One row per budget: both rules' own mean passes, the EB runs read (and w), the scores, the
    pass-adjusted difference [95%], p, Holm p, TOST p, verdict."""
    data = json.loads(path.read_text())
    lines = [f"| family (Holm inside) | budget | passes: {{first}} / EB at the budget | EB read between (w) | "
             f"{{first}} | EB at {{first}}'s passes | difference [95%] | p | Holm p | TOST p (±{data['margin']:g}) | verdict |",
             "|" + "---|" * 11]
    first = None
    for r in sorted(data["rows"].values(), key=lambda r: (r["role"] != "primary", r["divisor"])):
        first = r["first"]
        between = " and ".join(b.replace("@", " ÷") for b in r["between"])
        note = ", extrapolated" if r["extrapolated"] else ""
        lines.append(f"| {r['role']} | 1/{r['divisor']} | {r['passes_first']:.2f} / {r['passes_second_same_budget']:.2f} | "
                     f"{between} ({r['weight']:.2f}{note}) | {r['value_first']:.3f} | {r['value_second']:.3f} | "
                     f"{_diff(r)} | {r['p_value']:.2g} | {r['p_holm']:.2g} | {r['p_tost_holm']:.2g} | **{r['verdict']}** |")
    lines[0] = lines[0].replace("{first}", first or "first")
    return "\n".join(lines) + "\n"


def second_scorer_block(path: Path) -> str:
    """Each rule's mean score under AntiBERTy's PLL and the loop model at each budget (with its passes),
    the rank it gets under each, and Algorithm 1 − EB under the loop model, raw and pass-adjusted."""
    data = json.loads(path.read_text())
    runs, ranks = data["runs"], data["ranking"]
    lines = ["| budget | rule | passes | AntiBERTy PLL (rank) | loop model (rank) |", "|---|---|---|---|---|"]
    for d in sorted(ranks["pll"], key=int):
        for f in ranks["pll"][d]:
            r = next(x for x in runs.values() if x["family"] == f and str(x["divisor"]) == d)
            lines.append(f"| 1/{d} | {f} | {r['passes']:.2f} | {r['pll']:.3f} ({ranks['pll'][d].index(f) + 1}) | "
                         f"{r['loop']:.3f} ({ranks['loop'][d].index(f) + 1}) |")
    seq = runs[SEQUENTIAL]
    lines.append(f"| — | sequential | {seq['passes']:.2f} | {seq['pll']:.3f} | {seq['loop']:.3f} |")
    nat = data["native"]
    lines.append(f"| — | native loops | — | {nat['pll']:.3f} | {nat['loop']:.3f} |")
    first, second = data["first"], data["second"]
    lines += ["", f"Loop model, nats/residue [95%], paired by VH (Kendall τ: the two scorers' rankings of the rules "
              f"at the budget):", "",
              f"| budget | Kendall τ | {first} − {second}, same budget | {first} − {second}, pass-adjusted "
              f"(TOST ±{data['margin']:g}) | sequential − {first} | sequential − {second} |", "|---|---|---|---|---|---|"]
    for d in sorted(ranks["pll"], key=int):
        raw, adj, seq = data["raw"][d], data["pass_adjusted"][d], data["sequential_minus"][d]
        lines.append(f"| 1/{d} | {data['kendall_tau'][d]:+.2f} | {_diff(raw)}, p {raw['p_value']:.2g} | "
                     f"{_diff(adj)}, p {adj['p_value']:.2g}: {adj['verdict']} | {_diff(seq[first])}, p {seq[first]['p_value']:.2g} | "
                     f"{_diff(seq[second])}, p {seq[second]['p_value']:.2g} |")
    return "\n".join(lines) + "\n"


ORACLE_ARMS = {"oracle": "Algorithm 1, exact MI (oracle)", "head": "Algorithm 1, the MI head", "eb": "EB",
               "sequential": "sequential"}


def oracle_markdown(result: dict) -> str:
    """``antibody-oracle-ceiling``'s result (``oracle.json``'s dict): per budget, each arm's mean PLL and
    passes on the same contexts, then the paired contrasts [95%], p."""
    lines = [f"{result['n']} test contexts (the first of {result['n_test']}), {result['fills']} fills each; the "
             f"oracle at {result['family']}'s setting, certified MI within ±{result['tol']:g} nats, its probing "
             f"passes not counted; {result['cpu']}, {result['threads']} threads.", "",
             "| budget | arm | PLL (nats/residue) | passes |", "|---|---|---|---|"]
    for d, r in sorted(result["divisors"].items(), key=lambda kv: int(kv[0])):
        for arm, label in ORACLE_ARMS.items():
            a = r["arms"][arm]
            lines.append(f"| 1/{d} | {label} | {a['pll']:.3f} | {a['passes']:.2f} |")
    lines += ["", "| budget | contrast | difference [95%] | p | seconds (oracle) |", "|---|---|---|---|---|"]
    for d, r in sorted(result["divisors"].items(), key=lambda kv: int(kv[0])):
        for name, c in r["contrasts"].items():
            lines.append(f"| 1/{d} | {name.replace('-', ' − ')} | {_diff(c)} | {c['p_value']:.2g} | {r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def oracle_block(path: Path) -> str:
    """The docs block of a committed ``oracle.json``."""
    return oracle_markdown(json.loads(Path(path).read_text()))
