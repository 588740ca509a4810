"""Train the PRISM-style quality head (issue 63, :mod:`mdm_mi.quality`) on a frozen Sudoku backbone, from
puzzles of the project's own maker (seeded apart from the development screen's and from every data file;
never a calibration or test puzzle), and write it with its held-out scores.

The training states are those greedy naive top-k decoding reaches (:func:`mdm_mi.quality.states.decode_states`),
``k`` drawn per puzzle from ``--k-min``..``--k-max`` (2..16: sequential's passes ÷ 2 to ÷ 16 on 55-blank
puzzles); the last ``--val`` puzzles' states are held out (whole puzzles, so no state of a held-out puzzle
is trained on) and scored: BCE, and per masked / written position the AUC of the head against the
backbone's own signal (top-1 probability, and the held token's log-probability).

    python benchmarks/quality_head.py --model resources/pretrained/sudoku-paper \
        --out resources/pretrained/sudoku-paper-quality --puzzles 1800 --val 200
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dev_screen import dev_puzzles  # noqa: E402  (the screen's maker, seeded apart)

from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT  # noqa: E402
from mdm_mi.infra.runtime import cpu_model  # noqa: E402
from mdm_mi.models.loading import load_model, model_fingerprint  # noqa: E402
from mdm_mi.quality.head import N_TOKEN_FEATURES, QualityConfig, save_quality_head  # noqa: E402
from mdm_mi.quality.states import QualityStates, decode_states  # noqa: E402
from mdm_mi.quality.train import QualityTrainConfig, auc, scores, train_quality_head  # noqa: E402

TRAIN_SEED = 1000  # the maker's seed of the training puzzles: the screen uses 0 (dev_screen.py --seed)
TOP1, OWN = -N_TOKEN_FEATURES + 1, -1  # feature columns: log top-1 probability, log p of the held token


def baseline_auc(states: QualityStates) -> dict:
    """The backbone's own signals' AUC on the held-out states: top-1 probability at masked positions, the
    held token's log-probability at written ones (what the head must beat to add anything)."""
    masked = states.features[..., -N_TOKEN_FEATURES] > 0.5
    out = {}
    for name, where, column in (("masked", masked, TOP1), ("written", ~masked, OWN)):
        keep = states.judged & where
        out[f"auc_{name}"] = auc(states.features[..., column].float()[keep], states.right[keep])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--puzzles", type=int, default=1800)
    ap.add_argument("--val", type=int, default=200)
    ap.add_argument("--k-min", type=int, default=2)
    ap.add_argument("--k-max", type=int, default=16)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    model, _ = load_model(args.model, "cpu", "sudoku")
    ps = dev_puzzles(args.puzzles, TRAIN_SEED)
    k = torch.as_tensor(np.random.default_rng([args.seed, 63]).integers(args.k_min, args.k_max + 1, len(ps.puzzles)))
    starts, targets = torch.as_tensor(ps.puzzles), torch.as_tensor(ps.solutions)
    cut = args.puzzles - args.val
    train = decode_states(model, starts[:cut], targets[:cut], k[:cut], batch_size=250)
    val = decode_states(model, starts[cut:], targets[cut:], k[cut:], batch_size=250)
    states_seconds = time.time() - t0
    head_cfg = QualityConfig(args.width, args.heads, args.layers)
    cfg = QualityTrainConfig(args.steps, args.batch_size, args.lr, args.weight_decay, args.seed)
    head, history = train_quality_head(train, cfg, head_cfg, val)
    held_out = scores(head, val)
    meta = {MODEL_FINGERPRINT: model_fingerprint(args.model), "backbone": str(args.model),
            "made_by": "benchmarks/quality_head.py " + " ".join(sys.argv[1:]),
            "data": {"maker_seed": TRAIN_SEED, "puzzles": args.puzzles, "val_puzzles": args.val,
                     "k": [args.k_min, args.k_max], "train_states": len(train), "val_states": len(val)},
            "train": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "history": history,
            "held_out": held_out, "backbone_signal": baseline_auc(val),
            "params": sum(p.numel() for p in head.parameters()), "cpu": cpu_model(), "threads": args.threads,
            "seconds": {"states": states_seconds, "all": time.time() - t0}}
    save_quality_head(head, args.out, meta)
    print({"held_out": held_out, "backbone_signal": meta["backbone_signal"], "params": meta["params"]})


if __name__ == "__main__":
    main()
