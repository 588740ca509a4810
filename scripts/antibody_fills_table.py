"""Every test fill of the AntiBERTy run as committed text, for a scorer that did not write them (issue
64 item 3): the CDR-H3 letters each run filled, read from antibody-compare's fills.npz (its rerun on the
restored chunks, resources/resume/README.md):
python scripts/antibody_fills_table.py results/decisive-antibody/antibody/cdr3/fills.npz docs/data/decisive-antibody/antibody/cdr3/fills.tsv.gz
(one row per run, fill and test VH: run id, fill index, VH id, loop; gzip without a timestamp)."""
import gzip
import io
import sys

import numpy as np

from mdm_mi.antibody.second_scorer import fill_loops
from mdm_mi.infra.io import atomic_path

loops = fill_loops(np.load(sys.argv[1]))
text = io.StringIO()
text.write("run\tfill\tid\tloop\n")
for run in sorted(loops):
    for fill, vh, loop in loops[run]:
        text.write(f"{run}\t{fill}\t{vh}\t{loop}\n")
with atomic_path(sys.argv[2]) as tmp, tmp.open("wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
    gz.write(text.getvalue().encode())
print(f"{sum(map(len, loops.values()))} fills of {len(loops)} runs → {sys.argv[2]}")
