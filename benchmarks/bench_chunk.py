"""Backbone calls on CPU in row chunks against one call over the whole batch, measured in one run:
seconds per forward pass of each chunk size, the speed-up over the single call, and the largest
difference in logits (0 means bitwise equal).

A decode pass over 1,000 Sudoku puzzles is one ``(1000, 81, 128)`` activation per layer; its
attention, GELU and copies stream through memory, and ~100-row chunks keep them in cache.

    python benchmarks/bench_chunk.py --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import torch

from mdm_mi.core.backbone import forward_chunked
from mdm_mi.models.loading import load_model

MODELS = {"sudoku": ("resources/pretrained/sudoku", 81), "protein": ("resources/pretrained/protein-kunitz", 62)}
TOKENS = (1024, 2048, 4096, 8192, 16384, 32768)


def seconds(fn) -> float:
    """Seconds of one ``fn()`` call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@torch.inference_mode()
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=1000, help="sequences in the batch")
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds; each size's median is reported")
    ap.add_argument("--tokens", type=int, nargs="+", default=list(TOKENS), help="chunk sizes to time")
    ap.add_argument("--domains", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    for domain in args.domains:
        path, length = MODELS[domain]
        model, _ = load_model(path, "cpu", domain)
        tokens = torch.randint(0, model.vocab_size, (args.rows, length), generator=gen)
        tokens = model.vocab_token_ids[tokens]
        tokens[torch.rand(tokens.shape, generator=gen) < 0.5] = model.mask_id
        ref = model(tokens).logits  # also the one call's warm-up
        calls = {None: partial(model, tokens)} | {n: partial(forward_chunked, model, tokens, n) for n in args.tokens}
        diffs = {n: (calls[n]().logits - ref).abs().max().item() for n in args.tokens}  # and each size's warm-up
        times = {n: [] for n in calls}
        for _ in range(args.reps):  # alternating rounds: drift in the machine's load hits every size alike
            for n, fn in calls.items():
                times[n].append(seconds(fn))
        whole = statistics.median(times[None])
        print(f"{domain}: batch ({args.rows}, {length}), {args.threads} thread(s); one call {whole:.3f} s "
              f"(median of {args.reps} rounds)")
        for max_tokens in args.tokens:
            t = statistics.median(times[max_tokens])
            print(f"  ≤{max_tokens:6d} tokens ({max(1, max_tokens // length):4d} rows): {t:.3f} s "
                  f"×{whole / t:.2f}, max |Δlogit| {diffs[max_tokens]:.1e}")


if __name__ == "__main__":
    main()
