"""Top-k probing vs the exact probe on the shipped protein model (ESM-C d128 L4, V = 20, Kunitz).

Masks Kunitz sequences at ``t ~ U[0, 1]`` (fixed seed; BOS/EOS never masked), labels every context
with :func:`mdm_mi.mi.probe.exact_mi` and with :func:`mdm_mi.mi.topk_probe.topk_mi` for each k, and prints
one Markdown row per k: passes (sum over contexts, and as a share of exact), the largest and mean
observed ``|top-k label - exact label|`` over masked pairs, the largest and mean proven bound, the
same errors of the interval's lower end (the probed part alone), the mean unprobed mass eps of the masked positions, and whether every error lay within its bound.

    PYTHONPATH=src python benchmarks/bench_topk.py --contexts 8 --max-length 70
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

from mdm_mi.infra.fasta import AMINO_ACIDS, read_fasta
from mdm_mi.models.loading import load_model
from mdm_mi.mi.probe import exact_mi, mask_contexts
from mdm_mi.mi.topk_probe import topk_mi

MODEL = "resources/pretrained/protein-kunitz"
FAMILY = "resources/data/protein/pf00014_kunitz_pfam_full.a2m"
KS = (1, 2, 3, 4, 6, 8, 12, 16, 20)


def kunitz_sequences(path: str, max_length: int) -> list[str]:
    """The family's sequences without alignment gaps, upper case, only the 20 amino acids, ≤ max_length."""
    seqs = ["".join(c for c in s if c.isalpha()).upper() for _, s in read_fasta(path)]
    return [s for s in seqs if 0 < len(s) <= max_length and set(s) <= set(AMINO_ACIDS)]


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (else the platform's processor string)."""
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def pair_stats(top, exact) -> tuple[float, float, float, float, bool, float, float]:
    """Over masked pairs i != j: max / mean |error|, max / mean bound, whether error <= bound, and the
    max / mean |error| of the interval's lower end ``label - bound`` (the probed part alone)."""
    m = exact.masked
    pairs = m[:, None] & m[None, :] & ~torch.eye(len(m), dtype=torch.bool)
    err, bound = (top.label - exact.label).abs()[pairs], top.bound[pairs]
    low = (top.label - top.bound - exact.label).abs()[pairs]
    if err.numel() == 0:
        return 0.0, 0.0, 0.0, 0.0, True, 0.0, 0.0
    return (float(err.max()), float(err.mean()), float(bound.max()), float(bound.mean()), bool((err <= bound).all()),
            float(low.max()), float(low.mean()))


def unprobed_mass(backbone, tokens: torch.Tensor, k: int) -> float:
    """Mean over masked positions of 1 - (top-k mass of p(X_i | C))."""
    with torch.inference_mode():
        p = torch.softmax(backbone(tokens[None]).logits[0].double(), -1)[tokens == backbone.mask_id]
    return float((1 - p.topk(min(k, p.shape[1]), -1).values.sum(-1)).mean()) if len(p) else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contexts", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=70)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    backbone, _ = load_model(MODEL, "cpu")
    seqs = kunitz_sequences(FAMILY, args.max_length)
    pick = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(args.seed))[: args.contexts]
    tokens = backbone.encode([seqs[i] for i in pick.tolist()])
    contexts, _ = mask_contexts(tokens, backbone.mask_id, torch.Generator().manual_seed(args.seed),
                                vocab_ids=backbone.vocab_token_ids)
    start = time.time()
    exact = [exact_mi(backbone, c) for c in contexts]
    exact_s, exact_passes = time.time() - start, sum(r.passes for r in exact)
    print(f"{time.strftime('%Y-%m-%d')}, {cpu_name()}, 1 thread; {len(contexts)} contexts, "
          f"{int((contexts == backbone.mask_id).sum())} masked positions, exact: {exact_passes} passes, {exact_s:.1f} s")
    mean_mi = sum(float(e.label[e.label > 0].mean()) for e in exact if (e.label > 0).any()) / len(exact)
    print(f"mean exact label over masked pairs with MI > 0: {mean_mi:.2e} nats")
    print("| k | passes | share of exact | max err | mean err | max bound | mean bound | max err of lower end "
          "| mean err of lower end | mean unprobed mass | err ≤ bound | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in KS:
        start = time.time()
        tops = [topk_mi(backbone, c, k) for c in contexts]
        secs = time.time() - start
        stats = [pair_stats(t, e) for t, e in zip(tops, exact)]
        passes = sum(t.passes for t in tops)
        eps = sum(unprobed_mass(backbone, c, k) for c in contexts) / len(contexts)
        print(f"| {k} | {passes} | {passes / exact_passes:.2f} | {max(s[0] for s in stats):.2e} | "
              f"{sum(s[1] for s in stats) / len(stats):.2e} | {max(s[2] for s in stats):.2e} | "
              f"{sum(s[3] for s in stats) / len(stats):.2e} | {max(s[5] for s in stats):.2e} | "
              f"{sum(s[6] for s in stats) / len(stats):.2e} | {eps:.3f} | {all(s[4] for s in stats)} | {secs:.1f} |")


if __name__ == "__main__":
    main()
