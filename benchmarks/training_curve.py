"""Sequential hard-set accuracy against training steps and minutes, from one Sudoku run's weight
snapshots (``sudoku-pretrain --snapshot-every N`` writes OUT/snapshots/step-N): the figure that
says how far steps carry the backbone (issue 26).

Each snapshot decodes the comparison's hard *calibration* puzzles (the split ``sudoku-compare``
draws with the config's seed, so no test puzzle is looked at while choosing); ``--test`` also
decodes the final weights on the hard *test* split (1,000) and on every easy puzzle outside
the calibration split (900; the comparison itself tests 200). Greedy, entropy order, one puzzle
batch; accuracy with its 95% Wilson interval. Minutes come from the run's loss history (meta.json).

    python benchmarks/training_curve.py --model results/long/sudoku/model \
        --out docs/benchmarks/sudoku_training_curve --test
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import torch

from mdm_mi.evaluation.paired import paired_difference
from mdm_mi.evaluation.plotting import plt
from mdm_mi.evaluation.stats import wilson_interval
from mdm_mi.infra.config import load_config
from mdm_mi.infra.train_loop import SNAPSHOTS
from mdm_mi.models.loading import load_model
from mdm_mi.sudoku.compare import SplitSpec, compare_splits, sequential_solved
from mdm_mi.sudoku.data import load_puzzle_csv

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "resources" / "data" / "sudoku"
RADCLIFFE, EASY = DATA / "radcliffe_curated_5000.csv", DATA / "hkunlp_easy_1k.csv"
BATCH = 500
EASY_TEST_ALL = 10**6  # every easy puzzle outside the calibration split (900), to resolve ≥ 99.5%


def splits(config: Path) -> dict:
    """set → (calibration, test) exactly as the config's ``sudoku-compare`` draws them."""
    cfg = load_config(config)
    cmp, data = cfg["sudoku"]["compare"], cfg["sudoku"]["data"]
    spec = SplitSpec(cmp["calib_puzzles"], cmp["test_puzzles"]["hard"], tuple(data["graded_givens"]),
                     cmp["graded_per_level"], cfg["seed"], cmp["calib_seed"])
    out = compare_splits(load_puzzle_csv(RADCLIFFE), load_puzzle_csv(EASY), ["hard"], spec)
    easy_spec = SplitSpec(cmp["calib_puzzles"], EASY_TEST_ALL, spec.graded_givens, spec.graded_per_level, cfg["seed"],
                          cmp["calib_seed"])
    out["easy"] = compare_splits(load_puzzle_csv(RADCLIFFE), load_puzzle_csv(EASY), ["easy"], easy_spec)["easy"]
    return out


def decode(model_dir: Path, puzzles, device: str = "cpu") -> tuple[np.ndarray, float]:
    """Sequential greedy decoding of ``puzzles`` with the checkpoint in ``model_dir`` on ``device``
    → (solved (P,) bool, seconds)."""
    return sequential_solved(load_model(model_dir, device, "sudoku")[0], puzzles, BATCH)


def summary(solved: np.ndarray, seconds: float) -> dict:
    """Solved count, accuracy and its 95% Wilson interval."""
    k, n = int(np.sum(solved)), len(solved)
    lo, hi = wilson_interval(k, n)
    return {"solved": k, "n": n, "accuracy": k / n, "lo": lo, "hi": hi, "decode_s": round(seconds, 1)}


def accuracy(model_dir: Path, puzzles, device: str = "cpu") -> dict:
    """:func:`summary` of :func:`decode`."""
    return summary(*decode(model_dir, puzzles, device))


def decode_test_splits(model: Path, baseline: Path | None, sets: dict, device: str = "cpu") -> dict:
    """The final weights (and ``baseline``'s) on the hard and easy test splits; with a baseline, the
    paired difference on each (Newcombe 95% interval, exact McNemar p)."""
    out: dict = {"final_test": {}, "baseline": str(baseline) if baseline else None, "baseline_test": {}, "paired": {}}
    for name in ("hard", "easy"):
        solved, secs = decode(model, sets[name][1], device)
        out["final_test"][name] = summary(solved, secs)
        if baseline:
            base, base_secs = decode(baseline, sets[name][1], device)
            out["baseline_test"][name] = summary(base, base_secs)
            pd = paired_difference(solved, base)
            out["paired"][name] = {"diff": pd.diff, "lo": pd.lo, "hi": pd.hi, "new_only": pd.b, "baseline_only": pd.c,
                                   "p_value": pd.p_value}
    return out


def minutes_at(history: list[dict], step: int) -> float:
    """Training minutes at ``step`` from the run's loss history (logged every few steps; interpolated)."""
    steps = [h["step"] for h in history]
    return float(np.interp(step, steps, [h["minutes"] for h in history]))


def figure(rows: list[dict], path: Path) -> None:
    """Accuracy (with 95% intervals) against steps, minutes on the top axis."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    steps = np.array([r["step"] for r in rows])
    acc = np.array([r["accuracy"] for r in rows]) * 100
    err = np.array([[r["accuracy"] - r["lo"], r["hi"] - r["accuracy"]] for r in rows]).T * 100
    ax.errorbar(steps, acc, yerr=err, marker="o", capsize=3, color="C0")
    ax.set_xlabel("training step (batch 128)")
    ax.set_ylabel(f"sequential accuracy, hard calibration (n={rows[0]['n']}) %")
    ax.grid(alpha=0.3)
    top = ax.twiny()
    top.set_xlim(ax.get_xlim())
    ticks = steps[:: max(1, len(steps) // 5)]
    top.set_xticks(ticks, [f"{r['minutes']:.0f}" for r in rows][:: max(1, len(steps) // 5)])
    top.set_xlabel("minutes on 2 CPU cores")
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="the run's OUT folder (final weights + snapshots/)")
    ap.add_argument("--out", type=Path, required=True, help="prefix: writes PREFIX.csv, PREFIX.png, PREFIX.json")
    ap.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    ap.add_argument("--test", action="store_true", help="also decode the final weights on the hard and easy test splits")
    ap.add_argument("--baseline", type=Path, help="another model folder decoded on the same test splits (e.g. the shipped weights)")
    ap.add_argument("--no-snapshots", action="store_true", help="skip the curve (with --test: the test splits only)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu | cuda: where the checkpoints decode")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sets = splits(args.config)
    history = json.loads((args.model / "meta.json").read_text())["history"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    snaps = sorted((args.model / SNAPSHOTS).glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    if not args.no_snapshots and snaps:
        rows = []
        for snap in snaps:
            step = int(snap.name.split("-")[1])
            rows.append({"step": step, "minutes": round(minutes_at(history, step), 1), **accuracy(snap, sets["hard"][0], args.device)})
            print(json.dumps(rows[-1]), flush=True)
        with open(args.out.with_suffix(".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        figure(rows, args.out.with_suffix(".png"))
    if args.test:
        out = decode_test_splits(args.model, args.baseline, sets, args.device)
        print(json.dumps(out), flush=True)
        args.out.with_suffix(".json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
