"""Write what the pre-registered Sudoku primary excludes (issue 64) from its committed runs and outcomes:
python scripts/exclusion_record.py docs/data/decisive-sudoku/sudoku/budgets/hard/runs.json docs/data/decisive-sudoku/excluded.json"""
import json
import sys
from pathlib import Path

from mdm_mi.evaluation.doc_tables import read_sudoku_comparison
from mdm_mi.evaluation.exclusion import exclusion_record
from mdm_mi.infra.io import write_text

runs_path, out = Path(sys.argv[1]), Path(sys.argv[2])
set_name, runs = read_sudoku_comparison(runs_path)
record = {"runs": runs_path.as_posix(), **exclusion_record(runs, set_name)}
write_text(out, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
