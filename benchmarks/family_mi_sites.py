"""Where does the family model's MI sit? For the held-out label contexts of a family run, the probing
MI (the labels, i.e. the backbone's own pairwise MI) between masked positions at the family's six
most conserved cysteine columns, and at the column pairs that co-vary most in the natural training
sequences, against all other masked pairs.

    python benchmarks/family_mi_sites.py --run results/cpu-default/protein --top 50
"""

from __future__ import annotations

import argparse
import glob
from itertools import combinations

import numpy as np
from safetensors.torch import load_file

from mdm_mi.protein.family import metrics as fm
from mdm_mi.protein.family.alignment import AMINO_ACIDS, parse_a2m
from mdm_mi.protein.tokens import protein_tokens

N_CYS = 6  # Kunitz domains hold three disulfide bonds


def column_maps(records) -> dict[str, list[int | None]]:
    """sequence → match column of each residue (None for insertions), from the A2M rows."""
    out = {}
    for r in records:
        cols, c = [], 0
        for ch in r.row:
            if ch.isupper():
                cols.append(c)
                c += 1
            elif ch == "-":
                c += 1
            elif ch.islower():
                cols.append(None)
        out[r.sequence] = cols
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a family run's protein folder (data/, labels/)")
    ap.add_argument("--top", type=int, default=50, help="most co-varying natural column pairs")
    args = ap.parse_args()
    train, val, ref = (parse_a2m(f"{args.run}/data/{n}.a2m") for n in ("train", "val", "reference"))
    cols = [r.columns for r in train]
    c_freq = np.array([[c[i] == "C" for c in cols] for i in range(len(cols[0]))]).mean(1)
    cys = set(np.argsort(-c_freq)[:N_CYS].tolist())
    nat = fm.corrected_mi(cols, seed=0, residues_only=True)
    i_idx, j_idx = np.triu_indices(len(cols[0]), k=1)
    top = {(int(i), int(j)) for i, j in zip(i_idx[np.argsort(-nat)[:args.top]], j_idx[np.argsort(-nat)[:args.top]])}
    maps, tok = column_maps(val + ref), protein_tokens()
    aa_of = {t: a for t, a in zip(tok.aa_ids, AMINO_ACIDS)}
    seqs = np.load(f"{args.run}/data/heldout_contexts.npy")
    groups = {"conserved Cys pairs": [], f"top {args.top} natural co-varying pairs": [], "all other pairs": []}
    for path in sorted(glob.glob(f"{args.run}/labels/test/*.safetensors")):
        d = load_file(path)
        for row, label, masked in zip(d["sequence_row"], d["label"], d["masked"]):
            seq = "".join(aa_of[int(t)] for t in seqs[int(row)] if int(t) in aa_of)
            colmap = maps.get(seq)
            if colmap is None:
                continue
            pos = [p for p in np.flatnonzero(masked.numpy()) if 1 <= p <= len(seq)]
            for a, b in combinations(pos, 2):
                ca, cb = colmap[a - 1], colmap[b - 1]
                key = "all other pairs"
                if ca is not None and cb is not None:
                    if ca in cys and cb in cys:
                        key = "conserved Cys pairs"
                    elif (min(ca, cb), max(ca, cb)) in top:
                        key = f"top {args.top} natural co-varying pairs"
                groups[key].append(float(label[a, b]))
    print("conserved Cys columns (C frequency): " + ", ".join(f"{c}:{c_freq[c]:.2f}" for c in sorted(cys)))
    print("| masked pairs | n | mean MI (nats) | median | share above the overall 95th percentile |")
    print("|---|---|---|---|---|")
    q95 = np.quantile([x for v in groups.values() for x in v], 0.95)
    for key, vals in groups.items():
        v = np.array(vals)
        print(f"| {key} | {len(v)} | {v.mean():.4f} | {np.median(v):.4f} | {100 * (v > q95).mean():.0f}% |")


if __name__ == "__main__":
    main()
