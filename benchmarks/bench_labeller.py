"""Exact vs certified ground-truth MI labelling on held-out Sudoku contexts, measured in one run.

Masks solutions at ``t ~ U[0, 1]`` (fixed seed), labels every context with
:func:`mdm_mi.mi.probe.exact_mi` and :func:`mdm_mi.mi.probe.certified_mi`, and prints passes,
seconds per context, the largest observed ``|certified - exact|`` and the largest certified bound.

    python benchmarks/bench_labeller.py --checkpoint results/sudoku/model --contexts 50
    python benchmarks/bench_labeller.py --random-model \\
        --solutions /work/shared/data/sudoku/radcliffe_curated_5000.csv --contexts 20
"""

from __future__ import annotations

import argparse
import csv
import math
import time

import torch

from mdm_mi.backbone import BackboneOutput
from mdm_mi.mi.probe import DEFAULT_BATCH_SIZE, DEFAULT_TOL, certified_mi, exact_mi, mask_contexts
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS

DEFAULT_SOLUTIONS = "resources/data/sudoku/radcliffe_curated_5000.csv"
T_BINS = (0.0, 1 / 3, 2 / 3, 1.0)  # report passes by masking-rate tercile


class RandomSudokuBackbone(torch.nn.Module):
    """A random MLP over the 81 cells implementing the Backbone protocol, for dry runs.

    ``sharpness`` scales the logits: large values give peaked, Sudoku-model-like marginals.
    """

    def __init__(self, seed: int = 0, dim: int = 16, width: int = 256, sharpness: float = 8.0):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.mask_id, self.hidden_dim = N_DIGITS, MASK_ID, dim
        self.register_buffer("vocab_token_ids", torch.arange(N_DIGITS))
        self.embed = torch.nn.Embedding(N_DIGITS + 1, dim)
        self.pos = torch.nn.Parameter(torch.randn(N_CELLS, dim))
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(N_CELLS * dim, width), torch.nn.Tanh(), torch.nn.Linear(width, N_CELLS * N_DIGITS)
        )
        self.sharpness = sharpness

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        hidden = self.embed(tokens) + self.pos
        logits = self.mlp(hidden.flatten(1)).view(len(tokens), N_CELLS, N_DIGITS) * self.sharpness
        return BackboneOutput(logits, hidden)


def read_solutions(path: str, count: int, seed: int) -> torch.Tensor:
    """``count`` rows (seeded sample) of the CSV's ``solution`` column → ``(count, 81)`` tokens 0..8."""
    with open(path, newline="") as f:
        rows = [r["solution"].strip() for r in csv.DictReader(f)]
    pick = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed))[:count]
    return torch.tensor([[int(c) - 1 for c in rows[k]] for k in pick.tolist()], dtype=torch.long)


def timed(fn, device: torch.device):
    """``(result, seconds)`` of ``fn()``, synchronising an accelerator around it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, time.perf_counter() - start


def build_backbone(args, device: torch.device):
    """The checkpoint's model, or a random MLP backbone for a dry run."""
    if args.random_model:
        return RandomSudokuBackbone(seed=args.seed, sharpness=args.sharpness).to(device).eval(), "random MLP"
    from mdm_mi.sudoku.model import load_model  # written elsewhere; imported only when needed

    model, _meta = load_model(args.checkpoint)
    return model.to(device).eval(), args.checkpoint


def run(args) -> None:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    backbone, name = build_backbone(args, device)
    solutions = read_solutions(args.solutions, args.contexts, args.seed).to(device)
    contexts, t = mask_contexts(solutions, backbone.mask_id, torch.Generator().manual_seed(args.seed))
    exact_mi(backbone, contexts[0], args.batch_size)  # warm-up (kernels, allocator)
    rows = []
    for tokens in contexts:
        exact, s_exact = timed(lambda: exact_mi(backbone, tokens, args.batch_size), device)
        cert, s_cert = timed(lambda: certified_mi(backbone, tokens, args.tol, args.batch_size), device)
        err = (cert.label - exact.label).abs()
        excess = float((err - cert.bound).max())
        rows.append((exact.passes, cert.passes, s_exact, s_cert, float(err.max()), float(cert.bound.max()),
                     int((err > cert.bound).sum()), int(exact.masked.sum()), exact.gap_max, excess))
    report(name, device, args, t.cpu(), rows)


def report(name, device, args, t, rows) -> None:
    cols = list(zip(*rows))
    p_exact, p_cert, s_exact, s_cert = (sum(c) for c in cols[:4])
    n = len(rows)
    print(f"backbone: {name} | device: {device} | contexts: {n} | tol: {args.tol:g} | batch: {args.batch_size}")
    print(f"masked cells per context: mean {sum(cols[7]) / n:.1f}, t mean {float(t.mean()):.2f}")
    print(f"passes   exact {p_exact} | certified {p_cert} | ratio exact/certified {p_exact / max(p_cert, 1):.2f}")
    print(f"s/context exact {s_exact / n:.4f} | certified {s_cert / n:.4f} | ratio {s_exact / s_cert:.2f}")
    print(f"max |certified - exact| {max(cols[4]):.3e} | max bound {max(cols[5]):.3e} | "
          f"entries over bound {sum(cols[6])} (max excess {max(cols[9]):.1e})")
    print(f"max self-consistency gap |I_ent - I_joint| of the model: {max(cols[8]):.3e}")
    for lo, hi in zip(T_BINS[:-1], T_BINS[1:]):
        idx = [k for k in range(n) if lo <= float(t[k]) < hi or (hi == 1.0 and float(t[k]) == 1.0)]
        if idx:
            pe, pc = sum(rows[k][0] for k in idx), sum(rows[k][1] for k in idx)
            print(f"  t in [{lo:.2f}, {hi:.2f}): {len(idx):3d} contexts, passes exact {pe}, certified {pc}, "
                  f"ratio {pe / max(pc, 1):.2f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="trained Sudoku MDM directory (mdm_mi.sudoku.model.load_model)")
    src.add_argument("--random-model", action="store_true", help="random MLP backbone (dry run)")
    ap.add_argument("--solutions", default=DEFAULT_SOLUTIONS, help="CSV with a `solution` column")
    ap.add_argument("--contexts", type=int, default=20)
    ap.add_argument("--tol", type=float, default=DEFAULT_TOL)
    ap.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    ap.add_argument("--sharpness", type=float, default=8.0, help="logit scale of --random-model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)
    if not math.isfinite(args.tol) or args.tol <= 0:
        ap.error("--tol must be a positive number")
    with torch.inference_mode():
        run(args)


if __name__ == "__main__":
    main()
