"""Cost of the MI head per decoding step against one backbone forward pass, measured in one run.

Times a Sudoku MDM forward on ``--batch`` × 81 tokens (random weights, or ``--checkpoint``) and each
recommended :class:`~mdm_mi.mi.head.HeadConfig` on the hidden states of that same pass, at several
fractions of masked cells (the head's MLP runs on masked cells only), three ways: ``matrix``, the
whole Î ``(B, N, N)``; ``step lazy``, one MI-guided selection as the sampler runs it (Î formed only
among the positions Algorithm 1's walk visits, those with ``h_i ≤ γ``,
:class:`~mdm_mi.mi.guided.HeadPairs`, at ``--gamma``/``--lam`` on the pass's own entropies);
``step matrix``, the same selection from the whole matrix. All jobs run interleaved; reported are
medians of wall and CPU time, each as a fraction of the backbone pass (the MI-guided sampler's
overhead per step is ``step lazy``; target ≤ 2 %), and the analytic FLOP ratio of the whole matrix.

    python benchmarks/bench_head.py --d-model 128 --n-layers 4 --batch 1000 --reps 5 --threads 1
    python benchmarks/bench_head.py --d-model 256 --n-layers 4 --batch 1000 --mask-rates 0.5 1.0
    python benchmarks/bench_head.py --checkpoint results/cpu-default/sudoku/model --batch 1000

On a CPU shared with other jobs use ``--threads 1``: with more threads than free cores, every
parallel region waits for a descheduled thread and short kernels (the head's) are timed as whole
scheduler slices.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from mdm_mi.core.samplers import StepView
from mdm_mi.mi.guided import HeadPairs, admit
from mdm_mi.mi.head import HeadConfig, MIHead, count_params, head_flops
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS
from mdm_mi.sudoku.model import ModelConfig, SudokuMDM, n_params

RECOMMENDED = {  # name → head size, each built on the backbone's D (the config schema has the defaults)
    "D128": HeadConfig(hidden=32, heads=4, rank=8, unary=True),  # 5,222 params at D = 128
    "D128-wide": HeadConfig(hidden=64, heads=4, rank=8, unary=True),  # 10,406 params at D = 128
    "D256": HeadConfig(hidden=256, heads=8, rank=16, unary=True),  # 98,954 params at D = 256 (paper: 99,969)
}
WARMUP = 2


def timed(fn, device: torch.device) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of ``fn()`` (cpu: this thread's CPU time, robust to other jobs on a
    shared machine), synchronising an accelerator around it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - wall, time.thread_time() - cpu


def backbone_flops(d: int, n_layers: int, ff_mult: int, n: int = N_CELLS) -> int:
    """Approximate FLOPs of one sequence: 2 × (4d² + 2 ff d²) per token per layer + attention 4 n² d."""
    per_layer = 2 * n * (4 + 2 * ff_mult) * d * d + 4 * n * n * d
    return n_layers * per_layer + 2 * n * d * N_DIGITS


def build(args, device: torch.device) -> SudokuMDM:
    """The checkpoint's model or a random-weight one of the requested shape, in eval mode."""
    if args.checkpoint:
        from mdm_mi.models.loading import load_model

        return load_model(args.checkpoint, device=str(device))[0]
    torch.manual_seed(args.seed)
    cfg = ModelConfig(args.d_model, args.n_layers, args.n_heads, ff_mult=4, dropout=0.0, hidden_layer=-1)
    return SudokuMDM(cfg).to(device).eval()


def medians(jobs: dict, reps: int, device: torch.device) -> dict:
    """Run the jobs interleaved (so load changes hit all alike) → name → (median wall, median cpu)."""
    times = {name: [] for name in jobs}
    for rep in range(WARMUP + reps):
        for name, fn in jobs.items():
            t = timed(fn, device)
            if rep >= WARMUP:
                times[name].append(t)
    return {k: tuple(statistics.median(x) for x in zip(*v)) for k, v in times.items()}


@torch.inference_mode()
def run(args) -> None:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model = build(args, device)
    g = torch.Generator().manual_seed(args.seed)
    digits = torch.randint(0, N_DIGITS, (args.batch, N_CELLS), generator=g)
    draw = torch.rand(args.batch, N_CELLS, generator=g)
    torch.manual_seed(args.seed)
    heads = {name: MIHead(model.hidden_dim, cfg).to(device).eval() for name, cfg in RECOMMENDED.items()}
    header(model, heads, args, device)
    for rate in args.mask_rates:
        tokens = digits.masked_fill(draw < rate, MASK_ID).to(device)
        masked = tokens == MASK_ID
        out = model(tokens)
        entropy = StepView.from_logits(out.logits, masked).entropy

        def step(h, source) -> torch.Tensor:  # Algorithm 1's walk on this pass
            return admit(entropy, masked, source(h), args.gamma, args.lam, stop_on_reject=False,
                         charge_first=False)

        jobs = {"backbone": lambda: model(tokens)}
        for name, h in heads.items():
            jobs[f"{name} matrix"] = lambda h=h: h(out.hidden, masked)
            jobs[f"{name} step lazy"] = lambda h=h: step(h, lambda h: HeadPairs(h, out.hidden, masked))
            jobs[f"{name} step matrix"] = lambda h=h: step(h, lambda h: h(out.hidden, masked))
        med = medians(jobs, args.reps, device)
        wall, cpu = med.pop("backbone")
        print(f"mask rate {rate:.2f}: backbone {wall * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms cpu")
        for name, (h_wall, h_cpu) in med.items():
            print(f"  {name:22s} {h_wall * 1e3:7.2f} ms wall ({100 * h_wall / wall:5.2f}%), "
                  f"{h_cpu * 1e3:7.2f} ms cpu ({100 * h_cpu / cpu:5.2f}%)")


def header(model: SudokuMDM, heads: dict, args, device) -> None:
    cfg = model.cfg
    bb_flops = backbone_flops(cfg.d_model, cfg.n_layers, cfg.ff_mult)
    print(f"device {device} | threads {torch.get_num_threads()} | batch {args.batch} x {N_CELLS} | "
          f"reps {args.reps} (median, interleaved)")
    print(f"backbone D={cfg.d_model} layers={cfg.n_layers}: {n_params(model):,} params, "
          f"{bb_flops / 1e6:.1f} MFLOP/seq")
    for name, head in heads.items():
        f = head_flops(head.in_dim, head.cfg, N_CELLS)
        print(f"head {name:10s} {head.cfg}: {count_params(head):,} params, {f / 1e6:.2f} MFLOP/seq "
              f"all masked ({100 * f / bb_flops:.2f}% of the backbone's)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=None, help="Sudoku MDM directory (else random weights)")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--n-heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--mask-rates", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--gamma", type=float, default=0.3, help="budget γ of the timed MI-guided step")
    ap.add_argument("--lam", type=float, default=1.0, help="weight λ of the timed MI-guided step")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    run(args)


if __name__ == "__main__":
    main()
