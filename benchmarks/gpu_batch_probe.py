"""Choose the paper-shape Sudoku MDM's training batch for a GPU lease by measuring it (issue 39).

    python benchmarks/gpu_batch_probe.py --solutions train_solutions.npy --out probe.json --device cuda

For each candidate batch size the same step as ``sudoku-pretrain`` (batch drawn and augmented on the
CPU, masked, bf16 autocast on the GPU, AdamW, gradient clipping, ``loss.item()``) runs a few warm-up
steps and then for ``--seconds``; steps/s and grids/s are printed. A 4M-parameter model at batch
256 leaves an H200 mostly idle (the step is bound by launches and the per-step sync), so a larger
batch costs little per step. The chosen batch is the largest one reached by doubling while each
doubling still raises grids/s by at least ``MIN_GAIN``; its peak learning rate is the paper's 1e-3
at 256 scaled by sqrt(batch / 256) and capped at ``LR_CAP`` (square-root scaling for Adam). The
JSON holds every measurement and the choice: ``{"rows": [...], "batch": B, "lr": LR, "steps_per_s": S}``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch

from mdm_mi.sudoku.model import ModelConfig, SudokuMDM
from mdm_mi.sudoku.train import TrainConfig, augment, diffusion_loss

PAPER_SHAPE = ModelConfig(d_model=256, n_layers=5, n_heads=8, ff_mult=4, dropout=0.0, hidden_layer=-1)
BASE_BATCH, BASE_LR = 256, 1e-3  # config/paper.yaml's sudoku.train
LR_CAP = 2e-3
MIN_GAIN = 1.25  # a doubling must raise grids/s by 25% to be taken
WARMUP_STEPS = 5


def measure(pool: torch.Tensor, batch: int, seconds: float, device: str) -> dict:
    """Steps/s and grids/s of ``sudoku-pretrain``'s step at ``batch`` on ``device``."""
    torch.manual_seed(0)
    cfg = TrainConfig(steps=1, batch_size=batch, lr=BASE_LR, warmup=0, weight_decay=0.01, t_min=0.05, t_max=1.0,
                      loss_weight="none", augment=True, grad_clip=1.0, seed=0, log_every=1, compile=False,
                      ema=0.0, save_every=0, snapshot_every=0)
    model = SudokuMDM(PAPER_SHAPE).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=BASE_LR, weight_decay=0.01, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(0)

    def step() -> float:
        grids = augment(pool[torch.randint(len(pool), (batch,), generator=gen)], gen)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
            loss = diffusion_loss(model.forward_all, grids, cfg, gen, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        return loss.item()

    for _ in range(WARMUP_STEPS):
        step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    sps = n / (time.perf_counter() - t0)
    return {"batch": batch, "steps": n, "steps_per_s": sps, "grids_per_s": sps * batch}


def choose(rows: list[dict]) -> dict:
    """The largest batch reached by doublings that each gain ``MIN_GAIN`` in grids/s (rows sorted by batch)."""
    pick = rows[0]
    for row in rows[1:]:
        if row["grids_per_s"] < MIN_GAIN * pick["grids_per_s"]:
            break
        pick = row
    lr = min(LR_CAP, BASE_LR * math.sqrt(pick["batch"] / BASE_BATCH))
    return {"batch": pick["batch"], "lr": lr, "steps_per_s": pick["steps_per_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solutions", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pool = torch.as_tensor(np.load(args.solutions, allow_pickle=False), dtype=torch.long)
    rows = []
    for batch in sorted(args.batches):
        rows.append(measure(pool, batch, args.seconds, args.device))
        print(json.dumps(rows[-1]), flush=True)
    result = {"rows": rows, **choose(rows), "device": args.device,
              "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"chosen: batch {result['batch']}, lr {result['lr']:.2e}, {result['steps_per_s']:.1f} steps/s", flush=True)


if __name__ == "__main__":
    main()
