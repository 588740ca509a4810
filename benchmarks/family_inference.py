"""Size and coverage of family-compare's co-variation intervals, by simulation on the Kunitz family
(issue 24): the paired half-samples used until 2026-12-03 ("old") against the paired grouped
jackknife of :mod:`mdm_mi.protein.family.covariation` ("new", second-order corrected; its tables without
the correction are printed too). The log of the run quoted in docs/record/proteins.md is
``benchmarks/family_inference.log`` (200 old draws, 400 new, 300 sequences per set).

Every draw takes, from the training split (3,369 natural sequences, Pfam match columns), two
disjoint random sets A and B of ``--n`` sequences, and two copies A1, A2 of A in which a fixed 30%
of the columns (16 of 53, seeded once) are shuffled across sequences with two seeds. Four
comparisons, each r against the reference:
- ``null, unpaired``   A − B: two natural sets, true difference 0, nothing shared;
- ``null, paired``     A1 − A2: a stand-in for "sequential against sequential with another seed"
  (model sequences cost far too much to draw 200 times): two exchangeable generators that share
  70% of their columns exactly, true difference 0, strongly paired;
- ``shift, paired``    A − A1 and ``shift, unpaired`` B − A1: natural against natural with 30% of
  the columns decoupled, a known nonzero difference. Its true value is the difference of each
  metric's expected value at this set size, E r(natural) − E r(30% shuffled), estimated by the mean
  over all *other* draws (so the truth is independent of the draw it judges).
Each comparison is made against the reference split held fixed (630 sequences: inference
conditional on the reference, as family-compare does) and against a reference of 630 sequences
redrawn from the training split in each draw, disjoint from A and B (does the conditional interval
also cover the difference averaged over references?). Size: the share of p < 0.05 in the null
comparisons (target 3–7%); coverage: the share of 95% intervals holding the true difference (target
90–97%). Every set, shuffle and reference uses the draw's seed, as family-compare uses one seed.

The old procedure is re-implemented here with fast pair counts (the library no longer has it) and
matches the code of commit 8a5d215 (``compare.bootstrap_differences`` with 100 half-samples, one
shuffle against the reference's one-shuffle MI; tabled r's with three shuffles against the
reference's three-shuffle MI) to 1e-12 (the ``check`` verb).

    nice -n 19 python benchmarks/family_inference.py run --procedure old --first 0 --draws 100 --out OUT/old0.jsonl
    python benchmarks/family_inference.py summary OUT/*.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mdm_mi.evaluation.paired import ALPHA
from mdm_mi.evaluation.stats import jackknife_t
from mdm_mi.protein.family import alignment as fam
from mdm_mi.protein.family import jackknife as jk
from mdm_mi.protein.family.covariation import METRICS, Reference, SetStats, jackknife_difference, set_stats
from mdm_mi.protein.family.metrics import MI_SHUFFLES

KUNITZ = Path(__file__).resolve().parents[1] / "resources" / "data" / "protein" / "pf00014_kunitz_pfam_full.a2m"
SHUFFLED_FRACTION = 0.3
N_REF = 630
OLD_HALVES = 100
COMPARISONS = {"null, unpaired": ("A", "B"), "null, paired": ("A1", "A2"),
               "shift, paired": ("A", "A1"), "shift, unpaired": ("B", "A1")}
NATURAL, SHUFFLED = ("A", "B"), ("A1", "A2")


def load() -> tuple[np.ndarray, list[str]]:
    """The training split's codes ``(3369, 53)`` (the pool) and the reference split's columns."""
    train, _, reference = fam.cluster_split(fam.drop_nonstandard(fam.parse_a2m(KUNITZ))[0], seed=0)
    return fam.encode_columns([r.columns for r in train]), [r.columns for r in reference]


def decode(codes: np.ndarray) -> list[str]:
    return ["".join(fam.COLUMN_ALPHABET[c] for c in row) for row in codes]


def draw_sets(pool: np.ndarray, n: int, d: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Draw ``d``'s four sets (A, B, A1, A2) and its redrawn reference's codes."""
    perm = np.random.default_rng([d, 99]).permutation(len(pool))
    a, b, ref = pool[perm[:n]], pool[perm[n:2 * n]], pool[perm[2 * n:2 * n + N_REF]]
    cols = np.random.default_rng(5).choice(pool.shape[1], round(SHUFFLED_FRACTION * pool.shape[1]), replace=False)
    sets = {"A": a, "B": b}
    for k in (1, 2):
        x = a.copy()
        x[:, cols] = np.random.default_rng([d, k]).permuted(a[:, cols], axis=0)
        sets[f"A{k}"] = x
    return sets, ref


# --- the old procedure (half-samples), with fast pair counts ---------------------------------------------


def _pair_counts(codes: np.ndarray) -> np.ndarray:
    """Residue pair counts ``(P, 20, 20)``."""
    cells = jk._cells(codes)
    return np.bincount(cells[cells >= 0], minlength=cells.shape[1] * 400).reshape(-1, 20, 20)


def _residue_mi(joint: np.ndarray) -> np.ndarray:
    """:func:`mdm_mi.protein.family.metrics.residue_mi` from pair counts ``(P, 20, 20)``."""
    first, second = joint.sum(2), joint.sum(1)
    n = first.sum(1)
    t = jk._xlogx(int(n.max()))
    return jk._mi(t[joint].sum((1, 2)), t[first].sum(1), t[second].sum(1), n)


def old_corrected(codes: np.ndarray, seed: int, shuffles: int) -> tuple[np.ndarray, np.ndarray]:
    """metrics.corrected_mi(residues_only=True) (whole-column shuffles) and the pair counts."""
    rng = np.random.default_rng(seed)
    joint = _pair_counts(codes)
    null = np.mean([_residue_mi(_pair_counts(rng.permuted(codes, axis=0))) for _ in range(shuffles)], axis=0)
    return _residue_mi(joint) - null, joint


def _connected(joint: np.ndarray, codes: np.ndarray) -> np.ndarray:
    return jk._connected(joint.ravel(), jk._site_counts(codes), len(codes))


def old_set(codes: np.ndarray, refs: dict[str, dict], seed: int, halves: list[np.ndarray]) -> dict:
    """One set's old statistics against each reference: value (1 shuffle vs the reference's 1-shuffle
    MI), tabled (3 shuffles vs 3), and the 100 half-sample replicates of the value."""
    mi1, joint = old_corrected(codes, seed, 1)
    mi3, _ = old_corrected(codes, seed, MI_SHUFFLES)
    cij = _connected(joint, codes)
    reps_mi, reps_c = [], {k: [] for k in refs}
    for h in halves:
        mi_h, joint_h = old_corrected(codes[h], seed, 1)
        reps_mi.append(mi_h)
        c_h = _connected(joint_h, codes[h])
        for k, ref in refs.items():
            reps_c[k].append(jk.pearson_rows(c_h, ref["cij"]))
    out = {}
    for k, ref in refs.items():
        out[k] = {"value": {"corrected_mi_r": float(jk.pearson_rows(mi1, ref["mi_boot"])),
                            "c_ij_r": float(jk.pearson_rows(cij, ref["cij"]))},
                  "tabled": {"corrected_mi_r": float(jk.pearson_rows(mi3, ref["mi_point"])),
                             "c_ij_r": float(jk.pearson_rows(cij, ref["cij"]))},
                  "reps": {"corrected_mi_r": jk.pearson_rows(np.array(reps_mi), ref["mi_boot"]),
                           "c_ij_r": np.array(reps_c[k])}}
    return out


def old_reference(codes: np.ndarray, seed: int) -> dict:
    mi1, joint = old_corrected(codes, seed, 1)
    return {"mi_boot": mi1, "mi_point": old_corrected(codes, seed, MI_SHUFFLES)[0], "cij": _connected(joint, codes)}


def old_difference(a: dict, b: dict) -> dict:
    """The old paired_difference: centred half-sample replicates, basic interval, share p."""
    out = {}
    for m in METRICS:
        diff = a["value"][m] - b["value"][m]
        boot = a["reps"][m] - b["reps"][m]
        centred = boot - boot.mean()
        q_lo, q_hi = np.quantile(centred, [ALPHA / 2, 1 - ALPHA / 2])
        p = float(np.mean(np.abs(centred) >= abs(diff))) if diff != 0 else 1.0
        out[m] = {"diff": diff, "lo": diff - q_hi, "hi": diff - q_lo, "p_value": p,
                  "tabled_diff": a["tabled"][m] - b["tabled"][m]}
    return out


def run_old(sets: dict[str, np.ndarray], refs: dict[str, np.ndarray], d: int, n_halves: int = OLD_HALVES) -> dict:
    n = len(sets["A"])
    rng = np.random.default_rng([d, 11])  # compare.half_samples of 8a5d215
    halves = [rng.choice(n, size=n // 2, replace=False) for _ in range(n_halves)]
    ref_stats = {k: old_reference(r, d) for k, r in refs.items()}
    per_set = {name: old_set(x, ref_stats, d, halves) for name, x in sets.items()}
    return {k: {"values": {s: per_set[s][k]["value"] for s in sets},
                "comparisons": {c: old_difference(per_set[a][k], per_set[b][k]) for c, (a, b) in COMPARISONS.items()}}
            for k in refs}


# --- the new procedure (the library's) --------------------------------------------------------------------


def plain_jackknife(stats: dict, a: str, b: str) -> dict:
    """The paired grouped jackknife without its second-order correction (t on G − 1 df)."""
    out = {}
    for m in METRICS:
        diff = stats[a].value[m] - stats[b].value[m]
        out[m] = {"diff": diff, **jackknife_t(diff, stats[a].loo[m] - stats[b].loo[m])}
    return out


def set_stats_for(codes: np.ndarray, refs: dict[str, Reference], seed: int) -> dict[str, SetStats]:
    """compare.set_stats against each reference, the reference-free part (the corrected MI and its
    jackknife) computed once."""
    labels = jk.group_labels(len(codes), seed)
    counts = jk.PairCounts.of(codes, labels)
    mi = jk.corrected_mi_jackknife(codes, labels, seed, MI_SHUFFLES, counts)
    out = {}
    for k, ref in refs.items():
        r = [jk.pearson_rows(x, ref.mi) for x in mi]
        c = jk.correlation_r_jackknife(codes, labels, ref.cij, counts)
        out[k] = SetStats(len(codes), {"corrected_mi_r": float(r[0]), "c_ij_r": c[0]},
                          {"corrected_mi_r": r[1], "c_ij_r": c[1]}, {"corrected_mi_r": r[2], "c_ij_r": c[2]})
    return out


def run_new(sets: dict[str, np.ndarray], refs: dict[str, np.ndarray], d: int) -> dict:
    references = {k: Reference.of(decode(r), d) for k, r in refs.items()}
    per_set = {name: set_stats_for(x, references, d) for name, x in sets.items()}
    out = {}
    for k in refs:
        stats = {name: per_set[name][k] for name in sets}
        out[k] = {"values": {s: stats[s].value for s in sets},
                  "comparisons": {c: jackknife_difference(stats, a, b) for c, (a, b) in COMPARISONS.items()},
                  "plain": {c: plain_jackknife(stats, a, b) for c, (a, b) in COMPARISONS.items()}}
    return out


# --- driver and summary -----------------------------------------------------------------------------------


def run(args) -> None:
    pool, ref_cols = load()
    fixed = fam.encode_columns(ref_cols)
    out = Path(args.out)
    done = {json.loads(line)["draw"] for line in out.read_text().splitlines()} if out.exists() else set()
    fn = run_old if args.procedure == "old" else run_new
    for d in range(args.first, args.first + args.draws):
        if d in done:
            continue
        t0 = time.process_time()
        sets, redrawn = draw_sets(pool, args.n, d)
        result = fn(sets, {"fixed": fixed, "redrawn": redrawn}, d)
        record = {"draw": d, "procedure": args.procedure, "n": args.n, "cpu_s": time.process_time() - t0, **result}
        with out.open("a") as f:
            f.write(json.dumps(record, default=float) + "\n")


LABELS = {"old": "old: paired half-samples (100), 1 shuffle against the reference's 1-shuffle MI",
          "new": "new: paired grouped jackknife, second-order corrected (the library)",
          "plain": "new without the second-order correction: plain grouped jackknife, t on G − 1 df"}


def _table(rs: list[dict], ref: str, key: str) -> list[str]:
    lines = ["| comparison | metric | size (p < 0.05) | coverage of the 95% interval | mean half-width | "
             "sd of diff | true diff |", "|---|---|---|---|---|---|---|"]
    for comp in COMPARISONS:
        for m in METRICS:
            c = [r[ref][key][comp][m] for r in rs]
            diff = np.array([x["diff"] for x in c])
            if comp.startswith("null"):
                truth = np.zeros(len(rs))
            else:  # E r(natural) − E r(shuffled), from the other draws
                nat = np.array([np.mean([r[ref]["values"][s][m] for s in NATURAL]) for r in rs])
                shu = np.array([np.mean([r[ref]["values"][s][m] for s in SHUFFLED]) for r in rs])
                truth = (nat.sum() - nat) / (len(rs) - 1) - (shu.sum() - shu) / (len(rs) - 1)
            lo, hi = np.array([x["lo"] for x in c]), np.array([x["hi"] for x in c])
            cover = np.mean((lo <= truth) & (truth <= hi))
            size = np.mean(np.array([x["p_value"] for x in c]) < ALPHA)
            size_cell = f"{100 * size:.1f}%" if comp.startswith("null") else "—"
            lines.append(f"| {comp} | {m} | {size_cell} | {100 * cover:.1f}% | {np.mean(hi - lo) / 2:.4f} | "
                         f"{diff.std(ddof=1):.4f} | {truth.mean():+.4f} |")
    return lines


def summary(paths: list[str]) -> None:
    records = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    for procedure in sorted({r["procedure"] for r in records}, reverse=True):
        rs = sorted((r for r in records if r["procedure"] == procedure), key=lambda r: r["draw"])
        cpu = np.mean([r["cpu_s"] for r in rs])
        keys = ["comparisons", "plain"] if procedure == "new" else ["comparisons"]
        for key in keys:
            label = LABELS["plain" if key == "plain" else procedure]
            print(f"\n## {label}\n\n{len(rs)} draws, n = {rs[0]['n']} sequences per set, {cpu:.1f} CPU s per draw")
            for ref in ("fixed", "redrawn"):
                print(f"\n### reference {ref}\n")
                print("\n".join(_table(rs, ref, key)))
        if procedure == "old":
            for ref in ("fixed", "redrawn"):
                for which in ("null", "shift"):
                    c = [r[ref]["comparisons"][comp]["corrected_mi_r"] for r in rs for comp in COMPARISONS
                         if comp.startswith(which)]
                    gap = np.array([x["tabled_diff"] - x["diff"] for x in c])
                    flips = np.mean([np.sign(x["tabled_diff"]) != np.sign(x["diff"]) for x in c])
                    print(f"\nold, reference {ref}, {which} comparisons: corrected-MI r, tabled difference (3 shuffles "
                          f"against 3) minus reported difference (1 against 1): mean |gap| {np.mean(np.abs(gap)):.4f}, "
                          f"max {np.max(np.abs(gap)):.4f}; opposite signs in {100 * flips:.1f}% of {len(c)}")


def check() -> None:
    """The re-implemented old procedure equals the code of commit 8a5d215 (read from git)."""
    import importlib.util
    import subprocess
    import sys
    import tempfile

    src = subprocess.run(["git", "show", "8a5d215:src/mdm_mi/protein/family/covariation.py"], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).parent).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("old_compare", f.name)
    old = importlib.util.module_from_spec(spec)
    sys.modules["old_compare"] = old
    spec.loader.exec_module(old)
    pool, ref_cols = load()
    sets, _ = draw_sets(pool, 60, 3)
    fixed = fam.encode_columns(ref_cols[:200])
    lib_ref = old.Reference.of(ref_cols[:200], seed=3)
    cols = {k: decode(v) for k, v in sets.items()}
    point, reps = old.half_sample_metrics(cols, lib_ref, 10, 3)
    mine = run_old(sets, {"fixed": fixed}, 3, n_halves=10)["fixed"]
    for (name, (a, b)) in COMPARISONS.items():
        lib = old.paired_difference(point, reps, a, b)
        for m in METRICS:
            for key in ("diff", "lo", "hi", "p_value"):
                assert abs(lib[m][key] - mine["comparisons"][name][m][key]) < 1e-12, (name, m, key)
        tabled = [old.run_scores(cols[x], lib_ref, np.zeros(1), 0.0, 3)["corrected_mi_r"] for x in (a, b)]
        assert abs(tabled[0] - tabled[1] - mine["comparisons"][name]["corrected_mi_r"]["tabled_diff"]) < 1e-12
    print("old procedure re-implementation matches 8a5d215")
    lib = set_stats(cols["A"], Reference.of(ref_cols[:200], 3), 3)
    mine = set_stats_for(sets["A"], {"fixed": Reference.of(ref_cols[:200], 3)}, 3)["fixed"]
    assert lib.value == mine.value and all(np.array_equal(lib.loo2[m], mine.loo2[m]) for m in METRICS)
    print("new procedure: the benchmark's set statistics equal compare.set_stats")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--procedure", choices=("old", "new"), required=True)
    r.add_argument("--first", type=int, default=0)
    r.add_argument("--draws", type=int, default=200)
    r.add_argument("--n", type=int, default=300, help="sequences per set")
    r.add_argument("--out", required=True, help="JSON lines, appended (draws already there are skipped)")
    s = sub.add_parser("summary")
    s.add_argument("paths", nargs="+")
    sub.add_parser("check")
    args = ap.parse_args()
    if args.verb == "run":
        run(args)
    elif args.verb == "summary":
        summary(args.paths)
    else:
        check()


if __name__ == "__main__":
    main()
