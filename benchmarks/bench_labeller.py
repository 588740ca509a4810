"""Exact vs certified ground-truth MI labelling on held-out Sudoku contexts, measured in one run.

Masks solutions at ``t ~ U[0, 1]`` (fixed seed), labels every context with
:func:`mdm_mi.mi.probe.exact_mi` and :func:`mdm_mi.mi.probe.certified_mi`, and prints passes,
seconds per context, the largest observed ``|certified - exact|`` and the largest certified bound,
and :func:`mdm_mi.mi.bounds.probe_lower_bound`: the fewest passes any labeller certified to ``tol``
could spend on the same contexts (the best possible ratio), checking that the certified labeller ran
every probe that bound calls necessary.

    python benchmarks/bench_labeller.py --checkpoint results/sudoku/model --contexts 50
    python benchmarks/bench_labeller.py --random-model \\
        --solutions resources/data/sudoku/radcliffe_curated_5000.csv --contexts 20
"""

from __future__ import annotations

import argparse
import csv
import math
import time

import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.mi.bounds import probe_lower_bound
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
    from mdm_mi.models.loading import load_model  # written elsewhere; imported only when needed

    model, _meta = load_model(args.checkpoint)
    return model.to(device).eval(), args.checkpoint


def measure(backbone, tokens: torch.Tensor, args, device: torch.device, exact_first: bool) -> dict:
    """Exact and certified labelling of one context ``tokens (81,)``, timed back to back."""

    def run_exact():
        return timed(lambda: exact_mi(backbone, tokens, args.batch_size), device)

    def run_cert():
        return timed(lambda: certified_mi(backbone, tokens, args.tol, args.batch_size), device)

    if exact_first:  # alternate the order between contexts to cancel warm-cache effects
        (exact, s_exact), (cert, s_cert) = run_exact(), run_cert()
    else:
        (cert, s_cert), (exact, s_exact) = run_cert(), run_exact()
    err = (cert.label - exact.label).abs()
    lower = probe_lower_bound(backbone, tokens, args.tol, args.batch_size)
    assert not bool((lower.necessary & ~cert.probed).any()), "certified skipped a necessary probe"
    return {
        "passes_exact": exact.passes, "passes_cert": cert.passes, "s_exact": s_exact, "s_cert": s_cert,
        "passes_lower": lower.passes,
        "err": float(err.max()), "bound": float(cert.bound.max()), "over": int((err > cert.bound).sum()),
        "masked": int(exact.masked.sum()), "gap": exact.gap_max,
    }


def run(args) -> None:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    backbone, name = build_backbone(args, device)
    solutions = read_solutions(args.solutions, args.contexts, args.seed).to(device)
    contexts, t = mask_contexts(solutions, backbone.mask_id, torch.Generator().manual_seed(args.seed))
    exact_mi(backbone, contexts[0], args.batch_size)  # warm-up (kernels, allocator)
    rows = [measure(backbone, tokens, args, device, k % 2 == 0) for k, tokens in enumerate(contexts)]
    print(f"backbone: {name} | device: {device} | contexts: {len(rows)} | tol: {args.tol:g} | "
          f"batch: {args.batch_size}")
    report(rows, t.cpu().tolist())


def report(rows: list[dict], t: list[float]) -> None:
    col = {k: [r[k] for r in rows] for k in rows[0]}
    p_exact, p_cert = sum(col["passes_exact"]), sum(col["passes_cert"])
    s_exact, s_cert, n = sum(col["s_exact"]), sum(col["s_cert"]), len(rows)
    print(f"masked cells per context: mean {sum(col['masked']) / n:.1f} | t mean {sum(t) / n:.2f}")
    p_lower = sum(col["passes_lower"])
    print(f"passes     exact {p_exact} | certified {p_cert} | ratio {p_exact / max(p_cert, 1):.2f}")
    print(f"lower bound for any labeller certified to this tol (mdm_mi.mi.bounds): {p_lower} passes, "
          f"best possible ratio {p_exact / max(p_lower, 1):.2f}; certified spends {p_cert / max(p_lower, 1):.2f}x it")
    print(f"s/context  exact {s_exact / n:.4f} | certified {s_cert / n:.4f} | ratio {s_exact / s_cert:.2f}")
    print(f"max |certified - exact| {max(col['err']):.3e} | max bound {max(col['bound']):.3e} | "
          f"entries over bound {sum(col['over'])}")
    print(f"max self-consistency gap |I_ent - I_joint| of the model: {max(col['gap']):.3e}")
    for lo, hi in zip(T_BINS[:-1], T_BINS[1:]):
        idx = [k for k in range(n) if lo <= t[k] < hi or t[k] == hi == T_BINS[-1]]
        if idx:
            pe, pc = sum(col["passes_exact"][k] for k in idx), sum(col["passes_cert"][k] for k in idx)
            pl = sum(col["passes_lower"][k] for k in idx)
            print(f"  t in [{lo:.2f}, {hi:.2f}): {len(idx):3d} contexts | passes exact {pe}, certified {pc}, "
                  f"lower bound {pl} | ratio {pe / max(pc, 1):.2f}, best possible {pe / max(pl, 1):.2f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="trained Sudoku MDM directory (mdm_mi.sudoku.model.load_sudoku_model)")
    src.add_argument("--random-model", action="store_true", help="random MLP backbone (dry run)")
    ap.add_argument("--solutions", default=DEFAULT_SOLUTIONS, help="CSV with a `solution` column")
    ap.add_argument("--contexts", type=int, default=20)
    ap.add_argument("--tol", type=float, default=DEFAULT_TOL)
    ap.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    ap.add_argument("--sharpness", type=float, default=8.0, help="logit scale of --random-model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if not math.isfinite(args.tol) or args.tol <= 0:
        ap.error("--tol must be a positive number")
    with torch.inference_mode():
        run(args)


if __name__ == "__main__":
    main()
