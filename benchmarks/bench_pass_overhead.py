"""Per-pass cost of decoding with EB and with the paper's Algorithm 1 (MI-guided), split into the
backbone forward, the MI head's Î, the sampler's select and the rest of decode, measured in one run.

Decodes ``--n`` hard Sudoku puzzles (Radcliffe Hard and Expert) with the shipped backbone in batches
of each ``--batch``, once with EB-Sampler and once with Algorithm 1 (``MIGuided``, ``on_reject=skip``,
``charge_first=False``, the workflow's defaults) at the backbone's calibrated settings (its
MANIFEST's ``calibrated`` block: similar passes). The loop is :func:`mdm_mi.core.samplers.decode`'s,
each piece timed (its result is checked equal to ``decode``'s):

    forward   ``forward_chunked`` (the backbone pass)
    head      the MI head's Î: ``pairwise_fn`` and every ``HeadPairs.among`` the walk asks for
    select    ``sampler.select`` less the head's time in it (EB's prefix / Algorithm 1's ``admit``)
    rest      the rest of the pass: ``StepView.from_logits``, token choice, bookkeeping

A pass here is one sequence in one backbone call (what ``decode`` counts), so a sampler's time per
pass is its decode time over the sum of its passes. The two decodes of a batch run in lockstep, one
pass of each in turn, the one going first alternating from pass to pass and from round to round, so
that a change in the machine's load hits both alike. Printed, for wall time and for this thread's
CPU time (robust to being descheduled on a shared machine): each piece as a ratio to the forward,
the forward's share of the pass, and Algorithm 1's time per pass over EB's − 1 (the overhead), split
into the forward's part (the two forwards per pass differ only through the batch's rows: the
passes fall at other moments of the decode) and the overhead at an equal forward (each sampler's
pass as a multiple of its own forward: what the head, the select and the rest add). Each figure
is the median over ``--rounds`` of that round's ratio.

There is no trained head on a fresh checkout: without ``--head`` the head is the Sudoku config's
size (``sudoku.mi.head`` in ``workflow/schemas/config.schema.yaml``), seeded random weights with the
output bias set so that Î starts near ``--init-mi`` nats (as training starts it at the mean label).
Its cost per call does not depend on the weights' values; the walk's length depends on the
entropies (only candidates with ``h_i ≤ γ`` are visited), not on Î.

    python benchmarks/bench_pass_overhead.py --n 1000 --batch 100 1000 --rounds 3 --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import torch

from mdm_mi.core.backbone import forward_chunked
from mdm_mi.core.samplers import DecodeResult, EntropyBounded, StepView, choose_tokens, decode
from mdm_mi.models.loading import load_mi_head, load_model
from mdm_mi.mi.guided import MIGuided, head_pairwise_fn
from mdm_mi.mi.head import HeadConfig, MIHead
from mdm_mi.sudoku.data import HARD_LEVELS, load_puzzle_csv

BACKBONE = "resources/pretrained/sudoku"
PUZZLES = "resources/data/sudoku/radcliffe_curated_5000.csv"
SUDOKU_HEAD = HeadConfig(hidden=32, heads=4, rank=8, unary=True)  # the schema's sudoku.mi.head defaults
INIT_MI = 0.01  # nats: the random head's Î starts near this (a trained Sudoku head's pairs are small)
PIECES = ("forward", "head", "select", "rest")
CLOCKS = ("wall", "cpu")  # time.perf_counter, time.thread_time


def now() -> tuple[float, float]:
    """The two clocks' readings, in :data:`CLOCKS` order."""
    return time.perf_counter(), time.thread_time()


class Clock:
    """Wall and CPU seconds spent in each piece of the pass: ``seconds[clock][piece]``."""

    def __init__(self):
        self.seconds = {c: dict.fromkeys(PIECES, 0.0) for c in CLOCKS}

    def add(self, piece: str, start: tuple[float, float]) -> tuple[float, float]:
        """Charge the time since ``start`` to ``piece``; returns now."""
        stop = now()
        for c, a, b in zip(CLOCKS, stop, start):
            self.seconds[c][piece] += a - b
        return stop

    def head(self) -> tuple[float, ...]:
        """The head's seconds so far, per clock."""
        return tuple(self.seconds[c]["head"] for c in CLOCKS)

    def move_to_head(self, piece: str, since: tuple[float, ...]) -> None:
        """The head's seconds charged since ``since`` (:meth:`head`) were also charged to ``piece``:
        take them back from it."""
        for c, before in zip(CLOCKS, since):
            self.seconds[c][piece] -= self.seconds[c]["head"] - before


class TimedPairs:
    """A :class:`~mdm_mi.mi.guided.HeadPairs` whose ``among(idx (B, k)) → (B, k, k)`` is charged to
    the clock's ``head``."""

    def __init__(self, inner, clock: Clock):
        self.inner, self.clock, self.shape = inner, clock, inner.shape

    def among(self, idx: torch.Tensor) -> torch.Tensor:
        start = now()
        out = self.inner.among(idx)
        self.clock.add("head", start)
        return out


class TimedDecode:
    """:func:`~mdm_mi.core.samplers.decode`'s loop at temperature 0 on ``tokens (B, N)``, one pass per
    :meth:`step`, each piece charged to ``clock`` (the head's ``among`` calls inside select go to
    head, not select)."""

    def __init__(self, model, tokens: torch.Tensor, sampler, pairwise_fn, clock: Clock):
        self.model, self.sampler, self.pairwise_fn, self.clock = model, sampler, pairwise_fn, clock
        self.tokens, self.step_index = tokens.clone(), 0
        self.passes = torch.zeros(len(tokens), dtype=torch.long)

    @torch.inference_mode()
    def step(self) -> bool:
        """Run one pass; False (nothing run) once no mask is left."""
        model, clock = self.model, self.clock
        start = now()
        masked_all = self.tokens == model.mask_id
        active = masked_all.any(1).nonzero().squeeze(1)
        if active.numel() == 0:
            return False
        sub, masked = self.tokens[active], masked_all[active]
        start = clock.add("rest", start)
        out = forward_chunked(model, sub)
        start = clock.add("forward", start)
        self.passes[active] += 1
        pairwise = None
        if self.sampler.uses_pairwise:
            pairwise = TimedPairs(self.pairwise_fn(out, masked, sub), clock)
            start = clock.add("head", start)
        view = StepView.from_logits(out.logits, masked, pairwise, self.step_index)
        start, since = clock.add("rest", start), clock.head()
        chosen = self.sampler.select(view) & masked
        start = clock.add("select", start)
        clock.move_to_head("select", since)
        values = model.vocab_token_ids[choose_tokens(out.logits, 0.0, None, self.step_index)]
        self.tokens[active] = torch.where(chosen, values, sub)
        clock.add("rest", start)
        self.step_index += 1
        return True

    def result(self) -> DecodeResult:
        return DecodeResult(tokens=self.tokens, passes=self.passes)


def hard_puzzles(n: int) -> torch.Tensor:
    """The first ``n`` Hard and Expert puzzles of the curated Radcliffe set, ``(n, 81)``."""
    ps = load_puzzle_csv(PUZZLES)
    idx = [i for i, level in enumerate(ps.levels) if level in HARD_LEVELS][:n]
    return torch.as_tensor(ps.subset(idx).puzzles)


def build_head(path: str | None, model, seed: int, init_mi: float) -> MIHead:
    """The head at ``path`` (checked against ``model``'s width), or a seeded random one of the Sudoku
    size with Î near ``init_mi``."""
    if path:
        return load_mi_head(path, "cpu", backbone=model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = MIHead(model.hidden_dim, SUDOKU_HEAD)
    with torch.no_grad():  # inverse softplus, as mdm_mi.mi.head._init_head sets the output bias
        head.bias.fill_(init_mi + math.log(-math.expm1(-init_mi)))
    return head.eval()


def samplers(folder: str, eb_gamma: float | None, mi_gamma: float | None) -> dict:
    """EB and Algorithm 1 at the given budgets, or at the backbone's calibrated settings
    (MANIFEST.json ``calibrated``)."""
    calibrated = json.loads((Path(folder) / "MANIFEST.json").read_text())["calibrated"]["samplers"]
    mi = calibrated["mi"]
    eb_gamma = calibrated["eb"]["gamma"] if eb_gamma is None else eb_gamma
    mi_gamma = mi["gamma"] if mi_gamma is None else mi_gamma
    return {"eb": EntropyBounded(eb_gamma),
            "mi": MIGuided(mi_gamma, mi["lam"], on_reject="skip", charge_first=False)}


def lockstep(runs: dict, first: int) -> None:
    """Step every run to its end, one pass each in turn; who goes first alternates from pass to pass
    (``first``: which order the first pass takes)."""
    names, turn, done = list(runs), first, set()
    while len(done) < len(names):
        for name in names if turn % 2 == 0 else names[::-1]:
            if name not in done and not runs[name].step():
                done.add(name)
        turn += 1


def one_round(model, puzzles, batch: int, rules: dict, pairwise_fn, first: int) -> dict:
    """Decode ``puzzles`` in batches with every sampler in lockstep → name → (Clock, sum of passes)."""
    clocks, passes = {name: Clock() for name in rules}, dict.fromkeys(rules, 0)
    for chunk in puzzles.split(batch):
        runs = {name: TimedDecode(model, chunk, rules[name], pairwise_fn, clocks[name]) for name in rules}
        lockstep(runs, first)
        for name, run in runs.items():
            passes[name] += int(run.passes.sum())
    return {name: (clocks[name], passes[name]) for name in rules}


def check_same_as_decode(model, puzzles, batch: int, rules: dict, pairwise_fn) -> None:
    """Assert the timed loop decodes the first batch like ``decode``."""
    for name, sampler in rules.items():
        chunk = puzzles[:batch]
        want = decode(model, chunk, sampler, pairwise_fn=pairwise_fn)
        run = TimedDecode(model, chunk, sampler, pairwise_fn, Clock())
        lockstep({name: run}, 0)
        got = run.result()
        assert torch.equal(got.tokens, want.tokens) and torch.equal(got.passes, want.passes), name


def _per_pass(entry: tuple[Clock, int], clock: str, piece: str | None = None) -> float:
    """Seconds per pass of one sampler's round on ``clock`` (all pieces, or one)."""
    sec, passes = entry[0].seconds[clock], entry[1]
    return (sec[piece] if piece else sum(sec.values())) / passes


def _per_forward(entry: tuple[Clock, int], clock: str) -> float:
    """A sampler's whole pass as a multiple of its forward: 1 + (head + select + rest) / forward."""
    sec = entry[0].seconds[clock]
    return sum(sec.values()) / sec["forward"]


def _rounds(values: list[float]) -> str:
    """``median (r1 r2 ...)`` with signs."""
    return f"{statistics.median(values):+.4f} ({' '.join(f'{v:+.4f}' for v in values)})"


def report(batch: int, rounds: list[dict], n: int) -> None:
    """Print the medians over rounds of each ratio, for one batch size of ``n`` puzzles."""
    med = statistics.median
    print(f"batch {batch}: mean passes per puzzle eb {rounds[0]['eb'][1] / n:.2f}, "
          f"mi {rounds[0]['mi'][1] / n:.2f}; medians of {len(rounds)} rounds")
    print(f"  {'sampler':<8}{'clock':<6}{'forward share':>14}{'head/fwd':>10}{'select/fwd':>12}"
          f"{'rest/fwd':>10}{'ms/pass':>9}")
    for name in ("eb", "mi"):
        for c in CLOCKS:
            secs = [r[name][0].seconds[c] for r in rounds]
            share = med(s["forward"] / sum(s.values()) for s in secs)
            ratio = {p: med(s[p] / s["forward"] for s in secs) for p in PIECES[1:]}
            ms = med(1e3 * _per_pass(r[name], c) for r in rounds)
            print(f"  {name:<8}{c:<6}{share:>14.4f}{ratio['head']:>10.4f}{ratio['select']:>12.4f}"
                  f"{ratio['rest']:>10.4f}{ms:>9.4f}")
    for c in CLOCKS:
        total = [_per_pass(r["mi"], c) / _per_pass(r["eb"], c) - 1 for r in rounds]
        fwd = [_per_pass(r["mi"], c, "forward") / _per_pass(r["eb"], c, "forward") - 1 for r in rounds]
        same = [_per_forward(r["mi"], c) / _per_forward(r["eb"], c) - 1 for r in rounds]
        print(f"  Algorithm 1 over EB per pass, {c}: overhead {_rounds(total)}; forward per pass "
              f"{_rounds(fwd)}; at an equal forward {_rounds(same)}")


def preamble() -> None:
    """The run's machine, date, command and code version, as ``#`` lines."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
               platform.processor())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], capture_output=True, text=True).stdout.strip()
    print(f"# {date.today().isoformat()}, {cpu}, torch {torch.__version__}, commit {commit}"
          f"{' + uncommitted src changes' if dirty else ''}")
    print(f"# PYTHONPATH=src python {' '.join(sys.argv)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000, help="hard puzzles decoded per sampler per round")
    ap.add_argument("--batch", type=int, nargs="+", default=[100, 1000], help="puzzles decoded together")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; medians are reported")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--head", default=None, help="a trained MI head folder (default: a seeded random one)")
    ap.add_argument("--init-mi", type=float, default=INIT_MI, help="nats: the random head's starting Î")
    ap.add_argument("--eb-gamma", type=float, default=None, help="EB's γ (default: the calibrated one)")
    ap.add_argument("--mi-gamma", type=float, default=None, help="Algorithm 1's γ (default: the calibrated one)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    preamble()
    model, _ = load_model(BACKBONE, "cpu", "sudoku")
    head = build_head(args.head, model, args.seed, args.init_mi)
    pairwise_fn, rules = head_pairwise_fn(head), samplers(BACKBONE, args.eb_gamma, args.mi_gamma)
    puzzles = hard_puzzles(args.n)
    print(f"{len(puzzles)} hard puzzles, {args.threads} thread(s), head "
          f"{args.head or f'random (seed {args.seed}, Î near {args.init_mi} nats)'}; "
          + ", ".join(f"{k} {s.params()}" for k, s in rules.items()))
    for batch in args.batch:
        check_same_as_decode(model, puzzles, batch, rules, pairwise_fn)  # and the warm-up
        rounds = [one_round(model, puzzles, batch, rules, pairwise_fn, r) for r in range(args.rounds)]
        report(batch, rounds, len(puzzles))


if __name__ == "__main__":
    main()
