"""Decode a puzzle set with one sampler and score it: accuracy (valid, clue-consistent grids) and
forward passes, overall and per difficulty level.

    python -m mdm_mi sudoku-evaluate --model results/sudoku/model --puzzles my_puzzles.csv --sampler eb --gamma 0.2 ...
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.samplers import Sampler, decode
from mdm_mi.core.streams import RowStreams, row_keys
from mdm_mi.evaluation.stats import mean_ci, wilson_interval
from mdm_mi.sudoku.data import PuzzleSet
from mdm_mi.sudoku.grid import MASK_ID, consistent_with_clues, format_grid, is_valid_solution


def decode_set(model, ps: PuzzleSet, sampler: Sampler, batch_size: int, seed: int, pairwise_fn=None, progress=None,
               first_item: int = 0, cache: ForwardCache | None = None):
    """Decode all puzzles in batches → (grids ``(P, 81)``, passes ``(P,)``); ``progress(n)`` is called
    after each batch of ``n`` puzzles. Puzzle ``p`` draws (when a temperature asks for draws) from its
    own keyed stream (``seed``, ``first_item + p``, the sampler and its setting), whatever the batch
    holds: ``first_item`` is the index of ``ps``'s first puzzle in the set it was cut from. ``cache``:
    backbone rows kept across decodes (:class:`mdm_mi.core.forward_cache.ForwardCache`)."""
    device = next(model.parameters()).device
    grids, passes = [], []
    for start in range(0, len(ps), batch_size):
        batch = torch.as_tensor(ps.puzzles[start : start + batch_size], device=device)
        first = first_item + start
        streams = RowStreams(row_keys(seed, torch.arange(first, first + len(batch)), 0, sampler.stream_tag()))
        out = decode(model, batch, sampler, streams, pairwise_fn=pairwise_fn, cache=cache)
        grids.append(out.tokens.cpu())
        passes.append(out.passes.cpu())
        if progress is not None:
            progress(len(batch))
    return torch.cat(grids), torch.cat(passes)


def solved_mask(ps: PuzzleSet, grids: torch.Tensor) -> torch.Tensor:
    """``(P,)`` bool: a valid grid that keeps every given."""
    return is_valid_solution(grids) & consistent_with_clues(grids, torch.as_tensor(ps.puzzles))


def score(ps: PuzzleSet, grids: torch.Tensor, passes: torch.Tensor) -> list[dict]:
    """One record per puzzle: level, clues, passes, solved (valid & keeps clues), matches given solution."""
    puzzles = torch.as_tensor(ps.puzzles)
    solved = solved_mask(ps, grids)
    if ps.solutions is not None:
        matches = (grids == torch.as_tensor(ps.solutions)).all(1).tolist()
    else:
        matches = [None] * len(ps)
    clues = (puzzles != MASK_ID).sum(1)
    return [
        {
            "level": ps.levels[i],
            "clues": int(clues[i]),
            "passes": int(passes[i]),
            "solved": bool(solved[i]),
            "matches_solution": matches[i],
            "grid": format_grid(grids[i].numpy()),
        }
        for i in range(len(ps))
    ]


def summarise(records: list[dict]) -> dict:
    """Accuracy with a Wilson 95% interval and mean passes with a 95% CI, per level and ``all``."""
    groups = defaultdict(list)
    for r in records:
        groups[r["level"]].append(r)
        if r["level"] != "all":
            groups["all"].append(r)
    out = {}
    for level, rs in sorted(groups.items()):
        n, k = len(rs), sum(r["solved"] for r in rs)
        lo, hi = wilson_interval(k, n)
        mp, mp_ci = mean_ci([r["passes"] for r in rs])
        out[level] = {"n": n, "accuracy": k / n, "acc_lo": lo, "acc_hi": hi,
                      "mean_passes": mp, "passes_ci": mp_ci, "mean_clues": float(np.mean([r["clues"] for r in rs]))}
    return out
