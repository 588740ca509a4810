"""Re-render an antibody-compare budgets.md from its runs.json and summary.json (no decoding), e.g. after the
markdown changed: python scripts/rerender_antibody_budgets.py results/antibody-rivals/cdr3"""
import json, sys
from pathlib import Path
from mdm_mi.antibody.compare import contrast_rows
from mdm_mi.antibody.infill_runs import antibody_markdown
from mdm_mi.evaluation.budgets import table_order
from mdm_mi.infra.io import write_text
out = Path(sys.argv[1])
runs = table_order(json.loads((out / "runs.json").read_text()))  # written with sorted keys: back to the table's order
s = json.loads((out / "summary.json").read_text())
rows = contrast_rows(runs, s["set"])
write_text(out / "budgets.md", antibody_markdown(runs, rows, s["set"], s["native_pll"], s["n_test"], s["fills"], {}))
