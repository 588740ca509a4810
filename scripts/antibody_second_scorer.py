"""Score every test fill of the AntiBERTy run with a CDR-H3 loop model that did not write them (issue 64
item 3; docs/preregistration.md, amendment 4), from committed files only:
python scripts/antibody_second_scorer.py docs/data/decisive-antibody
The model (mdm_mi.antibody.loop_model) is counted on the train split's loops (labels.tsv: lineages
disjoint from the test VH) and smoothed on the calibration split's; the run's split is
resources/resume/decisive-antibody/outputs/hf/data, its fills antibody/cdr3/fills.tsv.gz
(scripts/antibody_fills_table.py). Writes loop_model.json beside pass_adjusted.json."""
import csv
import gzip
import io
import json
import sys
from pathlib import Path

import numpy as np

from mdm_mi.antibody.data import read_vh
from mdm_mi.antibody.loop_model import fit_on
from mdm_mi.antibody.second_scorer import second_scorer_record
from mdm_mi.evaluation.prereg import ANTIBODY_MARGIN, PRIMARY_DIVISOR, REGISTERED_MI
from mdm_mi.infra.io import write_json

SPLIT = Path(__file__).resolve().parents[1] / "resources/resume/decisive-antibody/outputs/hf/data"
SHUFFLE_SEED = 0

run = Path(sys.argv[1])
train, calib, test = (read_vh(SPLIT / f"{part}.tsv") for part in ("labels", "calibration", "test"))
lineages = [{r.lineage for r in part} for part in (train, calib, test)]
assert not (lineages[0] & lineages[2]) and not (lineages[1] & lineages[2]), "the split's lineages overlap"
model, held_nats = fit_on([r.regions["cdr3"] for r in train], [r.lineage for r in train],
                          [r.regions["cdr3"] for r in calib], [r.lineage for r in calib])

with gzip.open(run / "antibody/cdr3/fills.tsv.gz", "rt") as fh:
    rows = list(csv.DictReader(io.StringIO(fh.read()), delimiter="\t"))
loops: dict[str, list] = {}
for r in rows:
    loops.setdefault(r["run"], []).append((int(r["fill"]), r["id"], r["loop"]))
ids = [vh for fill, vh, _ in loops["sequential"] if fill == 0]
native = {r.id: r.regions["cdr3"] for r in test}
assert all(len(loop) == len(native[vh]) for rs in loops.values() for _, vh, loop in rs), "a fill's length is not its native loop's"

runs = json.loads((run / "antibody/cdr3/runs.json").read_text())
summary = json.loads((run / "antibody/cdr3/summary.json").read_text())
record = second_scorer_record(runs, loops, model, ids, REGISTERED_MI, "eb", PRIMARY_DIVISOR, ANTIBODY_MARGIN)
rng = np.random.default_rng(SHUFFLE_SEED)
natives = np.array([model.score(native[vh]) for vh in ids])
shuffled = np.array([model.score("".join(rng.permutation(list(native[vh])))) for vh in ids])
pll = np.concatenate([runs[k]["pll"] for k in sorted(runs)])
loop = np.concatenate([record["per_context"][k] for k in sorted(runs)])
record |= {"source": {"fills": (run / "antibody/cdr3/fills.tsv.gz").as_posix(), "runs": (run / "antibody/cdr3/runs.json").as_posix(),
                      "split": "resources/resume/decisive-antibody/outputs/hf/data"},
           "model": model.settings() | {"train_rows": len(train), "train_lineages": len(lineages[0]),
                                        "calibration_rows": len(calib), "calibration_nats": held_nats},
           "native": {"pll": summary["native_pll"], "loop": float(natives.mean()), "loop_shuffled": float(shuffled.mean()),
                      "share_above_shuffled": float(np.mean(natives > shuffled))},
           "pearson_per_vh": float(np.corrcoef(pll, loop)[0, 1]), "fills": len(rows), "margin": ANTIBODY_MARGIN}
write_json(run / "loop_model.json", record)
