"""The ``sudoku-oracle-ceiling`` verb: Algorithm 1 fed the certified probing MI (the oracle) in place
of the MI head, at the head's calibrated settings, on a seeded subset of a comparison's test split.

It answers what stands between MI-guided decoding and sequential accuracy at a budget: the gap from
head to oracle is what a perfect head would add; the gap from oracle to sequential is the rule's.

    python -m mdm_mi sudoku-oracle-ceiling --model results/x/sudoku/model \
        --compare-dir results/x/sudoku/budgets/hard --divisors 5 8 --puzzles 100 --tol 1e-3 --batch-size 100 \
        --out-dir ...

Writes ``ceiling.json`` (per-divisor settings, accuracies, passes, paired differences, seconds) and
``ceiling.md``. The oracle's probing passes are not counted (as in :mod:`mdm_mi.mi.guided`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.evaluation.budgets import best_mi_run
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.paired import paired_difference
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import OracleCeilingFlags, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.io import write_json, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.models.loading import load_model, weights_identity
from mdm_mi.mi.guided import oracle_pairwise_fn
from mdm_mi.sampling.registry import build_sampler
from mdm_mi.sudoku.compare import Decoder
from mdm_mi.sudoku.data import load_puzzle_csv
from mdm_mi.sudoku.flags import SudokuDecodeFlags
from mdm_mi.sudoku.report import ceiling_markdown

CEILING_PAIRS = (("oracle", "head"), ("oracle", "sequential"), ("head", "sequential"))


@dataclass(frozen=True)
class CeilingArgs(SudokuDecodeFlags, OracleCeilingFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("sudoku.oracle",)

    compare_dir: Path = field(metadata=_h("a sudoku-compare output folder (runs.json, outcomes.npz, test.csv)"))
    puzzles: int = from_schema("sudoku.oracle.puzzles", "test puzzles decoded with the oracle (a seeded subset)")
    seed: int = field(default=0, metadata=_h("random seed of the subset"))
    chunks: Path | None = field(default=None, metadata=_h(
        "folder keeping every decoded chunk of 100 puzzles: the same command rerun after a stop decodes only "
        "what is missing (delete it after changing decoding code)"))
    divisors: tuple[int, ...] = shared_from_schema(OracleCeilingFlags, "sudoku.oracle.divisors")
    tol: float = shared_from_schema(OracleCeilingFlags, "sudoku.oracle.tol")
    batch_size: int = shared_from_schema(SudokuDecodeFlags, "sudoku.oracle.batch_size")


def _load_compare(folder: Path):
    """``runs.json``'s runs and the per-puzzle outcomes by run id."""
    for name in ("runs.json", "outcomes.npz", "test.csv"):
        if not (folder / name).is_file():
            raise InputError(f"comparison output missing: {folder / name}")
    runs = json.loads((folder / "runs.json").read_text())["runs"]
    with np.load(folder / "outcomes.npz", allow_pickle=False) as z:
        names, solved, passes = z["names"], z["solved"], z["passes"]  # each array read once
    outcomes = {str(n): (solved[i], passes[i]) for i, n in enumerate(names)}
    return runs, outcomes


def sudoku_oracle_ceiling(args: CeilingArgs, tracker) -> None:
    setup(args.threads, args.seed)
    folder = Path(args.compare_dir)
    runs, outcomes = _load_compare(folder)
    test = load_puzzle_csv(folder / "test.csv")
    idx = np.sort(np.random.default_rng([args.seed, 4]).permutation(len(test))[: args.puzzles])
    device = resolve_device(args.device)
    model, _ = load_model(args.model, device, "sudoku")
    store = None if args.chunks is None else ChunkStore(args.chunks, weights_identity(args.model, (), device,
                                                                                      oracle_tol=args.tol))
    oracle = Decoder(model, oracle_pairwise_fn(model, method="certified", tol=args.tol), args.batch_size, args.seed,
                     store=store)
    result = {"n": len(idx), "set": folder.name, "tol": args.tol, "divisors": {}}
    for d in args.divisors:
        head_id = best_mi_run(runs, d)
        params = runs[head_id]["params"]
        t0 = time.time()
        solved, passes = oracle(test.subset(idx), build_sampler("mi-oracle", **params))
        arms = {"oracle": (solved, passes), "head": tuple(a[idx] for a in outcomes[head_id]),
                "sequential": tuple(a[idx] for a in outcomes["sequential"])}
        diffs = {f"{a}-{b}": dataclasses.asdict(paired_difference(arms[a][0], arms[b][0])) for a, b in CEILING_PAIRS}
        result["divisors"][str(d)] = {
            "head_run": head_id, "params": params, "seconds": time.time() - t0, "differences": diffs,
            **{f"{k}_accuracy": float(np.mean(v[0])) for k, v in arms.items()},
            **{f"{k}_passes": float(np.mean(v[1])) for k, v in arms.items()}}
        print(f"1/{d}: oracle {np.mean(solved):.3f} @ {np.mean(passes):.1f}, head {np.mean(arms['head'][0]):.3f}, "
              f"{time.time() - t0:.0f} s", flush=True)
    if store is not None:  # the decodes' cost, summed over every invocation that wrote the chunks
        result["chunks"] = store.record()
    out = Path(args.out_dir)
    write_json(out / "ceiling.json", result)
    write_text(out / "ceiling.md", ceiling_markdown(result, result["set"]))
    tracker.log_metrics({f"1_{d}.{k}": v for d, r in result["divisors"].items() for k, v in r.items()
                         if isinstance(v, float)})
    tracker.log_artifact(out / "ceiling.md")
