"""Probing memory and time at large vocabularies (tiny random BERT), streamed probes vs the old path.

Builds a random ``BertForMaskedLM`` (hidden 16, 2 layers) whose vocabulary is 5 special tokens and V
words ``w0 … w{V-1}``, all V allowed, and labels contexts of 12 words with ``label_contexts``. Each
case runs in its own process, so its peak resident memory (``ru_maxrss``) is its own; the baseline is
the same process after the model is built, before labelling. Cases (one Markdown row each):

* ``compare``: one context at V = 8,000 with |M| = 2, labelled by the streamed probe (this code) and by
  the old path (a verbatim copy of the pre-issue-38 ``_Context.measure``, which holds a ``(V, |M|, V)``
  float64 block per masked row), with their labels compared; the only old case small enough to run
  on a shared 24 GB machine;
* ``done``: 2 contexts at V = 8,000 with |M| = 8 (issue 38's case: the old path took 16.8 GB, 1,028 s);
* ``large``: V = 32,000: one context with |M| = 2 (certified) and 2 contexts with |M| = 8 (top-k, k = 512).

    PYTHONPATH=src python benchmarks/bench_large_vocab.py            # every case (~minutes, 2 cores)
    PYTHONPATH=src python benchmarks/bench_large_vocab.py --case compare
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mdm_mi.infra.io import write_json

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = 12  # content tokens per context
SEED = 0
# name -> (V, |M|, contexts, method, k, path)
CASES = {
    "compare-new": (8000, 2, 1, "certified", 0, "new"),
    "compare-old": (8000, 2, 1, "certified", 0, "old"),
    "done": (8000, 8, 2, "certified", 0, "new"),
    "large": (32000, 2, 1, "certified", 0, "new"),
    "large-topk": (32000, 8, 2, "topk", 512, "new"),
}
GROUPS = {"compare": ["compare-new", "compare-old"], "done": ["done"], "large": ["large", "large-topk"]}


def tiny_bert(vocab: int):
    """A random tiny BERT over the specials + ``vocab`` words, as an HFBackbone allowing every word."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    from mdm_mi.hf.model import HFBackbone

    words = [f"w{i}" for i in range(vocab)]
    folder = Path(tempfile.mkdtemp())
    (folder / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n")
    torch.manual_seed(SEED)
    config = BertConfig(vocab_size=len(SPECIALS) + vocab, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    tokenizer = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False)
    return HFBackbone(BertForMaskedLM(config).eval(), tokenizer, words), words


def contexts(backbone, words: list[str], masked: int, n: int) -> torch.Tensor:
    """``n`` seeded contexts of WORDS words with ``masked`` of them masked: ``(n, WORDS + 2)``."""
    rng = np.random.default_rng(SEED)
    rows = []
    for _ in range(n):
        row = [words[i] for i in rng.integers(len(words), size=WORDS)]
        for pos in rng.choice(WORDS, size=masked, replace=False):
            row[pos] = "_"
        rows.append(" ".join(row))
    return backbone.encode(rows)


def old_measure(self, keep: torch.Tensor):
    """The pre-issue-38 ``_Context.measure`` (with its ``_row_groups`` and ``_row_intervals``)."""
    from mdm_mi.mi.probe import LOG_FLOOR, _chain_width, _entropy, _water_fill_width

    def row_groups(counts, limit, max_rows):
        groups, start, total = [], 0, 0
        for a, count in enumerate(counts):
            if a > start and (total + count > limit or a - start == max_rows):
                groups.append(range(start, a))
                start, total = a, 0
            total += count
        return groups + [range(start, len(counts))] if counts else groups

    def row_intervals(p, keep, cond, logp_cols):
        weights = p * keep
        kept = weights.sum(-1)
        probed = keep.any(-1)
        log_w = torch.where(keep, p.log(), -torch.inf)[..., None, None]
        logq0 = torch.logsumexp(log_w + cond, 1) - torch.where(probed, kept, 1).log()[:, None, None]
        logq0 = torch.where(probed[:, None, None], logq0, 0)
        kl = (cond.exp() * (cond - logq0[:, None])).sum(-1)
        lower = (weights[..., None] * kl).sum(1).clamp_min(0)
        q0 = logq0.exp()
        h_q0 = _entropy(q0)
        chain = _chain_width(p, keep)[:, None]
        width = torch.minimum(_water_fill_width(q0, kept[:, None], h_q0), chain)
        unprobed = ~probed[:, None]
        return (lower.masked_fill(unprobed, 0), torch.where(unprobed, chain, width),
                (_entropy(logp_cols.exp()) - h_q0).masked_fill(unprobed, 0))

    p, m, v, out = self.logp.exp(), len(self.cols), keep.shape[1], []
    max_rows = max(1, 4 * self.batch_size // v)
    for group in row_groups(keep.sum(1).tolist(), self.batch_size, max_rows):
        rows = torch.arange(group.start, group.stop, device=keep.device)
        new = keep[rows].nonzero()
        cond = self.logp.new_full((len(rows), v, m, v), LOG_FLOOR)
        if len(new):
            cond[new[:, 0], new[:, 1]] = self._probe(rows[new[:, 0]], new[:, 1])
        out.append(row_intervals(p[rows], keep[rows], cond, self.logp))
    self.probed = keep.clone()
    return tuple(torch.cat(parts) for parts in zip(*out))


def run_case(name: str, label_out: str | None) -> dict:
    """Label one case in this process → its numbers (GB of peak RSS, seconds, passes, bound)."""
    from mdm_mi.mi import probe
    from mdm_mi.mi.topk_probe import topk_mi

    vocab, masked, n, method, k, path = CASES[name]
    torch.set_num_threads(1)
    backbone, words = tiny_bert(vocab)
    batch = contexts(backbone, words, masked, n)
    if path == "old":
        probe._Context.measure = old_measure
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    start = time.time()
    with torch.inference_mode():
        if method == "topk":
            results = [topk_mi(backbone, row, k) for row in batch]
        else:
            results = [probe.certified_mi(backbone, row) for row in batch]
    seconds = time.time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if label_out:
        torch.save(torch.stack([r.label for r in results]), label_out)
    return {"case": name, "V": vocab, "masked": masked, "contexts": n, "method": method if not k else f"topk k={k}",
            "path": path, "peak_gb": peak, "baseline_gb": base, "seconds": seconds,
            "passes": sum(r.passes for r in results), "max_bound": max(float(r.bound.max()) for r in results)}


def as_printed(r: dict) -> dict:
    """One case's row with its numbers rounded as the printed table shows them."""
    return {"V": r["V"], "masked": r["masked"], "contexts": r["contexts"], "method": r["method"], "path": r["path"],
            "peak_gb": round(r["peak_gb"], 2), "baseline_gb": round(r["baseline_gb"], 2), "s": round(r["seconds"], 1),
            "passes": r["passes"], "max_bound": float(f"{r['max_bound']:.2e}")}


def in_child(name: str, label_out: str) -> dict:
    """:func:`run_case` in a fresh Python process (its own peak memory)."""
    done = subprocess.run([sys.executable, __file__, "--child", name, "--label-out", label_out],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(GROUPS), nargs="*", default=sorted(GROUPS))
    parser.add_argument("--child", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--label-out", default="", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the table's rows, as printed, to this JSON file "
                                                   "(docs/benchmarks/large_vocab_cpu.json: what docs/your_model.md binds)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child, args.label_out)))
        return
    print("| case | V | |M| | contexts | method | path | peak GB | baseline GB | s | passes | max bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows, tmp = {}, Path(tempfile.mkdtemp())
    for group in args.case:
        for name in GROUPS[group]:
            r = rows[name] = in_child(name, str(tmp / f"{name}.pt"))
            print(f"| {name} | {r['V']} | {r['masked']} | {r['contexts']} | {r['method']} | {r['path']} | "
                  f"{r['peak_gb']:.2f} | {r['baseline_gb']:.2f} | {r['seconds']:.1f} | {r['passes']} | "
                  f"{r['max_bound']:.2e} |", flush=True)
    if {"compare-new", "compare-old"} <= set(rows):
        new, old = rows["compare-new"], rows["compare-old"]
        diff = (torch.load(tmp / "compare-new.pt") - torch.load(tmp / "compare-old.pt")).abs().max()
        print(f"\nold / new: peak above baseline {(old['peak_gb'] - old['baseline_gb']) / max(1e-9, new['peak_gb'] - new['baseline_gb']):.1f}x, "
              f"time {old['seconds'] / new['seconds']:.2f}x, passes {old['passes']} vs {new['passes']}, "
              f"max |label difference| {float(diff):.2e} nats")
    if args.json:
        write_json(args.json, {"run": " ".join(["python", *sys.argv]), "cases": {n: as_printed(r) for n, r in rows.items()}})
    cond_gb = 8000 * 8 * 8000 * 8 / 1e9
    print(f"old path at the 'done' case (not run): one (V, |M|, V) float64 block = {cond_gb:.1f} GB per masked row")


if __name__ == "__main__":
    main()
