"""``mdm-mi solve``: solve Sudoku puzzles with the trained masked diffusion model.

    mdm-mi solve 53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
    mdm-mi solve --file puzzles.txt --sampler mi --gamma 0.1
    cat puzzles.txt | mdm-mi solve - --sampler eb --gamma 0.2

Prints each solved grid (9 lines), the forward passes it took and whether it is valid. Exit code 0
when every answer is valid, 1 when the model broke a rule or a clue, 2 for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mdm_mi.core.sampler_table import HEAD_SAMPLERS, SamplerFlags, USER_SAMPLERS
from mdm_mi.core.samplers import decode
from mdm_mi.core.streams import RowStreams, row_keys
from mdm_mi.infra.flags import Decoding, h
from mdm_mi.models.run import ModelFlags, calibrated_for, load_backbone_for, note, pairwise_from_args, progress, start
from mdm_mi.sampling.registry import sampler_from_args
from mdm_mi.sudoku.puzzles import MAX_NODES, Puzzle, answer_problem, check_puzzle, grid_lines, read_puzzles

EXAMPLES = """examples:
  mdm-mi solve 53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
  mdm-mi solve --file puzzles.txt --sampler mi              # γ: the model's calibrated value (its MANIFEST.json)
  cat puzzles.txt | mdm-mi solve - --sampler eb --gamma 0.2 --quiet

exit code: 0 every answer valid, 1 an answer breaks a rule or a clue, 2 bad input"""


@dataclass(frozen=True)
class SolveArgs(SamplerFlags, ModelFlags):
    puzzle: str | None = field(default=None, metadata=h(
        "81 characters, 0 or . for blanks; - reads puzzles from stdin (one per line, or a CSV)", positional=True))
    file: Path | None = field(default=None, metadata=h("puzzles, one per line, or a CSV with a 'puzzle' column"))
    sampler: str = field(default="sequential", metadata=h(
        f"{' | '.join(USER_SAMPLERS)} ({', '.join(HEAD_SAMPLERS)} use the MI head); parameters left out take "
        "the model's calibrated values (the calibrated block of its MANIFEST.json: a shipped backbone's)"))
    temperature: float = field(default=0.0, metadata=h("0 = the most likely digit; > 0 samples"))
    seed: int = field(default=0, metadata=h("random seed (used when temperature > 0)"))
    batch_size: int = field(default=256, metadata=h("puzzles decoded together"))


def user_sampler(args):
    """The sampler named by ``--sampler`` with its flags (omitted ones calibrated; each flag's value
    checked by the CLI's validator, infra/validate.py: finite, >= 0, ``--k`` >= 1)."""
    return sampler_from_args(args, allowed=USER_SAMPLERS, calibrated=calibrated_for(args, "sudoku"))


@torch.inference_mode()
def decode_puzzles(backbone, puzzles: list[Puzzle], sampler, pairwise, args, device: str):
    """Decode all puzzles in batches → grids ``(P, 81)`` and passes ``(P,)`` as numpy arrays (puzzle ``p``
    draws from its own keyed stream: :func:`mdm_mi.core.streams.row_keys`)."""
    tokens = torch.as_tensor(np.stack([p.tokens for p in puzzles]), device=device)
    grids, passes = [], []
    with progress(len(puzzles), "solving", args.quiet) as bar:
        for start in range(0, len(tokens), args.batch_size):
            batch = tokens[start : start + args.batch_size]
            gen = RowStreams(row_keys(args.seed, torch.arange(start, start + len(batch)), 0, sampler.stream_tag()))
            out = decode(backbone, batch, sampler, gen, decoding=Decoding(temperature=args.temperature), pairwise_fn=pairwise)
            grids.append(out.tokens.cpu())
            passes.append(out.passes.cpu())
            bar.update(len(batch))
    return torch.cat(grids).numpy(), torch.cat(passes).numpy()


def report(puzzle: Puzzle, grid: np.ndarray, passes: int, n_solutions: int | None, sampler_name: str,
           header: bool) -> bool:
    """Print one answer (grid, passes, validity, notes; ``header``: where the puzzle came from) →
    whether it is valid."""
    problem = answer_problem(grid, puzzle.tokens)
    if header:
        print(f"# {puzzle.source}")
    print("\n".join(grid_lines(grid)))
    print(f"passes: {passes} ({sampler_name})")
    print("valid: yes" if problem is None else f"valid: no ({problem})")
    if n_solutions is not None and n_solutions > 1:
        print("note: the puzzle has more than one solution; any valid grid that keeps the clues counts")
    if n_solutions is None:
        print(f"note: the solver could not decide in {MAX_NODES} steps whether the puzzle has a solution")
    return problem is None


def solve(args: SolveArgs, tracker) -> int:
    """Check every input first (nothing is loaded for bad input), then decode and report."""
    del tracker
    sampler = user_sampler(args)
    puzzles = read_puzzles(args.puzzle, args.file)
    with progress(len(puzzles), "checking", args.quiet or len(puzzles) == 1) as bar:
        counts = []
        for p in puzzles:
            counts.append(check_puzzle(p))
            bar.update()
    device = start(args, args.seed)
    backbone, path, _ = load_backbone_for(args, "sudoku", device)
    note(f"model: {path}", args.quiet)
    with pairwise_from_args(args, backbone, path, "sudoku", device) as pairwise:  # the MI head: the same pass
        grids, passes = decode_puzzles(backbone, puzzles, sampler, pairwise, args, device)
    valid = []
    for i, p in enumerate(puzzles):
        if i:
            print()
        valid.append(report(p, grids[i], int(passes[i]), counts[i], sampler.name, len(puzzles) > 1))
    if len(puzzles) > 1:
        print(f"\nvalid: {sum(valid)}/{len(valid)}, mean passes {float(np.mean(passes)):.1f}")
    return 0 if all(valid) else 1
