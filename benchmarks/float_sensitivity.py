"""What floating point may change between two machines, measured on one: the same computation with
other torch thread counts and batch sizes (the reduction orders that differ between CPUs, BLAS
builds and batch compositions), at each stage of the pipeline.

    python benchmarks/float_sensitivity.py --model resources/pretrained/sudoku --out docs/data/float-sensitivity/result.json

Stages: the backbone's logits (max |Δ|, argmax flips); exact MI labels (max |Δ| nats); greedy EB
decoding of hard puzzles (puzzles whose outcome changes); MI-head training on the same labels
(certified labels; max |Δ Î| and the change of test Pearson). Each is run as (threads 1, batch A) and (threads 2,
batch B). A change in a greedy decode or a trained head is how a ~1e-6 difference in logits becomes
a different table on another machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

import torch

from mdm_mi.core.samplers import EntropyBounded, decode
from mdm_mi.models.loading import load_model
from mdm_mi.mi.fidelity import fidelity
from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, train_head
from mdm_mi.mi.probe import certified_mi, exact_mi, mask_contexts
from mdm_mi.sudoku.data import load_puzzle_csv

SETTINGS = ((1, 7), (2, 300))  # (torch threads, batch size) of the two runs of each stage
EB_GAMMA = 0.02621  # the shipped backbone's calibrated EB at ÷3 (its MANIFEST)
CONTEXTS, TRAIN_CONTEXTS = 4, 24
SUDOKU_HEAD = HeadConfig(hidden=32, heads=4, rank=8, unary=True)  # the schema's sudoku.mi.head


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _with(threads: int, fn):
    torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        torch.set_num_threads(1)


@torch.inference_mode()
def logits_stage(model, puzzles: torch.Tensor) -> dict:
    outs = [_with(t, lambda b=b: torch.cat([model(x).logits for x in puzzles.split(b)])) for t, b in SETTINGS]
    return {"max_abs_logit_diff": float((outs[0] - outs[1]).abs().max()),
            "argmax_flips": int((outs[0].argmax(-1) != outs[1].argmax(-1)).sum()), "positions": int(puzzles.numel())}


@torch.inference_mode()
def label_stage(model, contexts: torch.Tensor) -> dict:
    runs = [_with(t, lambda b=b: torch.stack([exact_mi(model, c, batch_size=b).label for c in contexts]))
            for t, b in SETTINGS]
    return {"max_abs_label_diff_nats": float((runs[0] - runs[1]).abs().max()), "contexts": len(contexts),
            "mean_label_nats": float(runs[0][runs[0] > 0].mean())}


@torch.inference_mode()
def decode_stage(model, puzzles: torch.Tensor, solutions: torch.Tensor) -> dict:
    def run(b):
        grids = torch.cat([decode(model, x, EntropyBounded(gamma=EB_GAMMA)).tokens for x in puzzles.split(b)])
        return (grids == solutions).all(1)
    a, b = (_with(t, lambda b=b: run(b)) for t, b in SETTINGS)
    return {"puzzles": len(puzzles), "solved": [int(a.sum()), int(b.sum())], "outcomes_changed": int((a != b).sum())}


def head_stage(model, contexts: torch.Tensor, n_test: int) -> dict:
    with torch.inference_mode():
        labels = torch.stack([certified_mi(model, c).label for c in contexts]).float()
        feats = backbone_features(model, contexts, 64)
    labels, feats = labels.clone(), feats.clone()  # out of inference mode, for training
    masked = contexts == model.mask_id
    tr, te = slice(0, len(contexts) - n_test), slice(len(contexts) - n_test, None)

    def fit(threads):
        cfg = HeadTrainConfig(steps=300, batch_size=16, lr=3e-3, weight_decay=0.01, seed=0)
        head, _ = _with(threads, lambda: train_head(feats[tr], labels[tr], masked[tr], cfg, SUDOKU_HEAD, log=lambda s: None))
        with torch.no_grad():
            return head(feats[te], masked[te])
    preds = [fit(t) for t, _ in SETTINGS]
    fid = [fidelity(p, labels[te], masked[te])["pearson"] for p in preds]
    return {"max_abs_pred_diff_nats": float((preds[0] - preds[1]).abs().max()), "test_pearson": fid,
            "pearson_diff": abs(fid[0] - fid[1]), "train_contexts": len(contexts) - n_test, "test_contexts": n_test}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resources/pretrained/sudoku")
    ap.add_argument("--puzzles", default="resources/data/sudoku/radcliffe_curated_5000.csv")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    model, _ = load_model(args.model, "cpu", "sudoku")
    pool = load_puzzle_csv(args.puzzles)
    hard = pool.subset([i for i, lv in enumerate(pool.levels) if lv in ("Hard", "Expert")][: args.n])
    puzzles, solutions = torch.as_tensor(hard.puzzles), torch.as_tensor(hard.solutions)
    contexts, _ = mask_contexts(solutions[: CONTEXTS + TRAIN_CONTEXTS], model.mask_id, torch.Generator().manual_seed(0))
    t0, c0 = time.time(), time.process_time()
    result = {"logits": logits_stage(model, puzzles), "labels": label_stage(model, contexts[:CONTEXTS]),
              "decode": decode_stage(model, puzzles, solutions),
              "head": head_stage(model, contexts[CONTEXTS:], n_test=6)}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result["provenance"] = {"command": "python benchmarks/float_sensitivity.py " + " ".join(f"--{k} {v}" for k, v in vars(args).items()),
                            "settings": SETTINGS, "machine": cpu_name(), "commit": commit,
                            "date": time.strftime("%Y-%m-%d"), "wall_minutes": (time.time() - t0) / 60,
                            "cpu_minutes": (time.process_time() - c0) / 60}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True, default=list) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
