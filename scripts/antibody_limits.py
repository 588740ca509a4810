"""Write the numbers behind answer.md's AntiBERTy limitations (issue 64) from the committed run:
python scripts/antibody_limits.py docs/data/decisive-antibody
(its pass gap between Algorithm 1 and EB, and the native loops' PLL beside sequential fills')."""
import json
import sys
from pathlib import Path

from mdm_mi.evaluation.budgets import read_csv
from mdm_mi.evaluation.pass_gap import pass_gap
from mdm_mi.infra.io import write_text

run = Path(sys.argv[1])
rows = read_csv(run / "antibody/cdr3/budgets.csv")
summary = json.loads((run / "antibody/cdr3/summary.json").read_text())
sequential = {r["value_second"] for r in rows if r["second"] == "sequential" and r["metric"] == "pll"}
assert len(sequential) == 1, sequential  # one sequential run, the same in every row
record = {"source": (run / "antibody/cdr3/budgets.csv").as_posix(), "pass_gap": pass_gap(rows, "mi λ=1", "eb", "pll"),
          "native_pll": summary["native_pll"], "sequential_pll": sequential.pop()}
write_text(run / "limits.json", json.dumps(record, indent=2, ensure_ascii=False) + "\n")
