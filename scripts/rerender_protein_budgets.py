"""Re-render a protein-compare budgets.md from its runs.json and budgets.csv (no decoding, no bootstrap),
e.g. after the markdown changed: python scripts/rerender_protein_budgets.py results/rivals/protein/budgets"""
import sys
from pathlib import Path

from mdm_mi.evaluation.budgets import read_csv, table_order
from mdm_mi.infra.io import read_json, write_text
from mdm_mi.protein.compare_jobs import protein_markdown

NUMBERS = ("divisor", "passes_first", "passes_second", "jsd_first", "jsd_second", "diff", "lo", "hi", "p_value")
out = Path(sys.argv[1])
rows = [r | {k: (int if k == "divisor" else float)(r[k]) for k in NUMBERS} for r in read_csv(out / "budgets.csv")]
runs = table_order(read_json(out / "runs.json")["runs"])  # written with sorted keys: back to the sampler table's order
write_text(out / "budgets.md", protein_markdown(runs, rows))
