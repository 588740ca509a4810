"""Write the AntiBERTy run's pass-adjusted contrast (docs/preregistration.md, amendment 4) from its
committed runs.json: python scripts/antibody_pass_adjusted.py docs/data/decisive-antibody
(mi λ=1 − EB read at mi λ=1's own mean passes, ÷4 primary, ÷3 and ÷6 one Holm family, TOST at the
registered margin) into docs/data/decisive-antibody/pass_adjusted.json."""
import json
import sys
from pathlib import Path

from mdm_mi.antibody.pass_adjust import pass_adjusted_rows
from mdm_mi.evaluation.prereg import ANTIBODY_MARGIN, PRIMARY_DIVISOR, REGISTERED_MI
from mdm_mi.infra.io import write_json

AMENDMENT = "214e355"  # the commit that wrote the method down, alone, before this was computed

run = Path(sys.argv[1])
runs = json.loads((run / "antibody/cdr3/runs.json").read_text())
rows = pass_adjusted_rows(runs, REGISTERED_MI, "eb", "pll", primary=PRIMARY_DIVISOR, margin=ANTIBODY_MARGIN)
write_json(run / "pass_adjusted.json", {
    "source": (run / "antibody/cdr3/runs.json").as_posix(), "method": "docs/preregistration.md, amendment 4",
    "amendment_commit": AMENDMENT, "margin": ANTIBODY_MARGIN, "rows": {str(r["divisor"]): r for r in rows}})
