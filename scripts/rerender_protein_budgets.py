"""Re-render a protein-compare budgets.md from its runs.json and budgets.csv (no decoding, no bootstrap),
e.g. after the markdown changed: python scripts/rerender_protein_budgets.py results/rivals/protein/budgets"""
import re
import sys
from pathlib import Path

from mdm_mi.core.sampler_table import SAMPLERS, sampler_of
from mdm_mi.evaluation.budgets import read_csv
from mdm_mi.infra.io import read_json, write_text
from mdm_mi.protein.protein_compare_job import protein_markdown

NUMBERS = ("divisor", "passes_first", "passes_second", "jsd_first", "jsd_second", "diff", "lo", "hi", "p_value")
out = Path(sys.argv[1])
rows = [r | {k: (int if k == "divisor" else float)(r[k]) for k in NUMBERS} for r in read_csv(out / "budgets.csv")]
runs = read_json(out / "runs.json")["runs"]  # written with sorted keys: back to the sampler table's order
order = ["sequential", *SAMPLERS]
natural = lambda name: [float(t) if t[:1].isdigit() else t for t in re.split(r"(\d+(?:\.\d+)?)", name)]  # λ=4 before λ=16
runs = dict(sorted(runs.items(), key=lambda kv: (order.index(sampler_of(kv[1]["family"])), natural(kv[1]["family"]))))
write_text(out / "budgets.md", protein_markdown(runs, rows))
