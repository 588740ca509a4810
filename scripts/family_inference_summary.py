"""The size and coverage tables of benchmarks/family_inference.log (the simulation behind docs/methods.md's
co-variation intervals) as JSON, so the page's prose can bind each number to its own field:
python scripts/family_inference_summary.py benchmarks/family_inference.log docs/data/family-inference/summary.json
(procedure → reference → comparison → metric → size_pct, coverage_pct, half_width, sd, true_diff; draws and
the Monte Carlo error from the log's header)."""
import json
import re
import sys
from pathlib import Path

from mdm_mi.infra.io import write_text

FIELDS = ("size_pct", "coverage_pct", "half_width", "sd", "true_diff")
MONTE_CARLO = re.compile(r"±([\d.]+) points at (\d+) draws, ±([\d.]+) at (\d+)")


def number(cell: str):
    cell = cell.strip().rstrip("%")
    return None if cell == "—" else float(cell)


out, procedure, reference = {"procedures": {}}, None, None
for line in Path(sys.argv[1]).read_text().splitlines():
    if line.startswith("## "):
        procedure = line[3:].split(":")[0]
        out["procedures"][procedure] = {}
    elif line.startswith("### "):
        reference = line[4:].strip()
        out["procedures"][procedure][reference] = {}
    elif line.startswith("| ") and procedure and reference and not line.startswith("| comparison"):
        comparison, metric, *cells = [c.strip() for c in line.strip("|").split("|")]
        out["procedures"][procedure][reference].setdefault(comparison, {})[metric] = dict(zip(FIELDS, map(number, cells)))
    elif (m := MONTE_CARLO.search(line)):
        out["monte_carlo_points"] = {m[2]: float(m[1]), m[4]: float(m[3])}
write_text(sys.argv[2], json.dumps(out, indent=2, ensure_ascii=False) + "\n")
