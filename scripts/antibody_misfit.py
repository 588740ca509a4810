"""Issue 64 item 4, the scale of the map's reading against what the AntiBERTy comparison resolves (added
after the results): the exact testbed's gain of Algorithm 1 (exact MI) over EB at ÷ 4, per site, in every
regime where it beats EB, beside the half-width of AntiBERTy's Algorithm 1 − EB interval at ÷ 4 (nats per
residue) and the oracle's contrasts there.

    python scripts/antibody_misfit.py docs/data/antibody-oracle/misfit.json

Both are nats per position: the testbed's KL(p‖q) difference over the chain's sites, AntiBERTy's PLL
difference per CDR-H3 residue. They are different scores of one kind of quantity, so their ratio says
whether a gain of the testbed's size could be seen there, not what AntiBERTy's gain is.
"""
import csv
import json
import sys
from pathlib import Path

DIVISOR = "4"
MAP, REGIMES = Path("docs/data/testbed/map.csv"), Path("docs/data/testbed/regimes.csv")
ANTIBODY = Path("docs/data/decisive-antibody/antibody/cdr3/budgets.csv")
ORACLE = Path("docs/data/antibody-oracle/oracle.json")


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


sites = {r["regime"]: int(r["sites"]) for r in rows(REGIMES)}
testbed = {}
for r in rows(MAP):
    if r["rule"] == "mi-exact" and r["divisor"] == DIVISOR and r["verdict"] == "beats":
        n = sites[r["regime"]]
        # a gain is −Δ KL, so the interval's ends swap
        testbed[r["regime"]] = {"sites": n, "gain_lo": -float(r["diff_hi"]) / n, "gain_hi": -float(r["diff_lo"]) / n,
                                "gain": -float(r["diff"]) / n}
(primary,) = [r for r in rows(ANTIBODY) if r["metric"] == "pll" and r["divisor"] == DIVISOR
              and r["first"] == "mi λ=1" and r["second"] == "eb"]
lo, hi = float(primary["lo"]), float(primary["hi"])
largest = max(t["gain"] for t in testbed.values())
oracle = json.loads(ORACLE.read_text())["divisors"][DIVISOR]["contrasts"]
record = {"divisor": int(DIVISOR), "sources": [str(p) for p in (MAP, REGIMES, ANTIBODY, ORACLE)],
          "testbed_gain_per_site": testbed, "largest_gain_per_site": largest,
          "smallest_gain_per_site": min(t["gain"] for t in testbed.values()),
          "antibody": {"diff": float(primary["diff"]), "lo": lo, "hi": hi, "half_width": (hi - lo) / 2, "n": int(primary["n"])},
          "half_width_over_largest_gain": (hi - lo) / 2 / largest,
          "oracle": {k: {m: c[m] for m in ("diff", "lo", "hi", "p_value")} for k, c in oracle.items()}}
Path(sys.argv[1]).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
print(json.dumps(record, indent=2, ensure_ascii=False))
