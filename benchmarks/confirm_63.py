"""Issue 63's confirmatory contrast, as docs/preregistration.md's amendment 5 registers it: the rule the
development screen chose (``docs/data/confirm-63/registration.json``, committed with the amendment) − EB
at sequential's passes ÷ 8, on the pre-registered run's 1,900 hard test puzzles of the paper-shape backbone.

Both rules go through the one comparison runner exactly as the registered run's families did
(:class:`mdm_mi.sudoku.compare.SudokuTask`: calibrated on its 100 calibration puzzles, matched on the test
puzzles to ÷ 8 by two settings, greedy). EB is decoded again here and must reproduce the registered run's
``eb@1/8`` test outcomes (``docs/data/decisive-sudoku/.../outcomes.npz``; checked and recorded), whose
``sequential`` outcomes give the descriptive distance to sequential. The decision rule is the registration's:
better / worse when the paired two-sided p < 0.05 (exact McNemar, or the sign-flip test for a mixture),
equivalent when the TOST p at ±2 pp < 0.05, else not resolved. Chunks of 100 puzzles are kept under
``--chunks``: a stopped run resumes.

    python benchmarks/confirm_63.py --chunks resources/resume/confirm-63 --out docs/data/confirm-63
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dev_screen import quality_sources, timing  # noqa: E402

from mdm_mi.core.forward_cache import ForwardCache  # noqa: E402
from mdm_mi.evaluation.calibrate import calibrated_families  # noqa: E402
from mdm_mi.evaluation.chunks import ChunkStore  # noqa: E402
from mdm_mi.evaluation.paired import paired_cells, paired_difference, tost_p  # noqa: E402
from mdm_mi.evaluation.prereg import SUDOKU_MARGIN  # noqa: E402
from mdm_mi.evaluation.runner import run_comparison  # noqa: E402
from mdm_mi.infra.io import write_json  # noqa: E402
from mdm_mi.infra.runtime import cpu_model  # noqa: E402
from mdm_mi.models.loading import load_model, weights_identity  # noqa: E402
from mdm_mi.sampling.registry import SAMPLER_CLASSES  # noqa: E402
from mdm_mi.sudoku.compare import Decoder, SplitSpec, SudokuTask, compare_splits  # noqa: E402
from mdm_mi.sudoku.data import load_puzzle_csv  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REGISTERED = REPO / "docs/data/decisive-sudoku/sudoku/budgets/hard"  # the registered run: its args and outcomes
ALPHA = 0.05


def verdict(p: float, tost: float, diff: float) -> str:
    """The registration's decision rule."""
    if p < ALPHA:
        return "better" if diff > 0 else "worse"
    return "equivalent" if tost < ALPHA else "not resolved"


def contrast(first: np.ndarray, second: np.ndarray) -> dict:
    """first − second on the same puzzles: the paired difference, its interval and p, and the TOST p."""
    pd = paired_difference(first, second)
    return {"diff": pd.diff, "lo": pd.lo, "hi": pd.hi, "p": pd.p_value,
            "tost_p": tost_p(*paired_cells(np.asarray(first, float), np.asarray(second, float)), SUDOKU_MARGIN)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--chunks", type=Path)
    ap.add_argument("--registration", type=Path, default=REPO / "docs/data/confirm-63/registration.json")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    reg = json.loads(args.registration.read_text())
    run_args = json.loads((REGISTERED / "runs.json").read_text())["args"]
    model_dir = REPO / reg["model"]
    model, _ = load_model(model_dir, "cpu", "sudoku")
    spec = SplitSpec(run_args["calib_puzzles"], run_args["test_puzzles"], (), 0, run_args["seed"], run_args["calib_seed"])
    calib, test = compare_splits(load_puzzle_csv(REPO / "resources/data/sudoku/radcliffe_curated_5000.csv"),
                                 load_puzzle_csv(REPO / "resources/data/sudoku/hkunlp_easy_1k.csv"), ["hard"], spec)["hard"]
    sources = {}
    if reg.get("quality_head"):
        sources = quality_sources(REPO / reg["quality_head"], model_dir, model)
    store = None if args.chunks is None else ChunkStore(args.chunks, weights_identity(model_dir, (), torch.device("cpu")))
    cache = ForwardCache()
    decoder = Decoder(model, None, run_args["batch_size"], run_args["seed"], None, store, cache, sources)
    calib_decoder = Decoder(model, None, run_args["batch_size"], run_args["seed"] + 1, None, store, cache, sources)
    families = calibrated_families(81, reg["settings"], SAMPLER_CLASSES)
    families = [f for f in families if f.label in (reg["rule"], "eb")]
    t0 = time.time()
    runs, seconds = run_comparison(SudokuTask(decoder, test, calib_decoder, calib), families, [reg["divisor"]],
                                   references=False)
    rule, eb = runs[f"{reg['rule']}@1/{reg['divisor']}"], runs[f"eb@1/{reg['divisor']}"]
    with np.load(REGISTERED / "outcomes.npz") as saved:
        registered = dict(zip(saved["names"].tolist(), saved["solved"]))
    sequential = registered["sequential"]
    result = {"registration": reg, "n_test": len(test), "n_calib": len(calib),
              "rule": {"accuracy": float(np.mean(rule["solved"])), "passes": float(np.mean(rule["passes"])),
                       "settings": rule.get("settings", [])},
              "eb": {"accuracy": float(np.mean(eb["solved"])), "passes": float(np.mean(eb["passes"])),
                     "settings": eb.get("settings", []),
                     "reproduces_registered": bool(np.array_equal(np.asarray(eb["solved"], float),
                                                                  np.asarray(registered[f"eb@1/{reg['divisor']}"], float)))},
              "sequential": {"accuracy": float(np.mean(sequential))},
              "primary": contrast(rule["solved"], eb["solved"]), "vs_sequential": contrast(rule["solved"], sequential),
              "eb_vs_sequential": contrast(eb["solved"], sequential)}
    result["verdict"] = verdict(result["primary"]["p"], result["primary"]["tost_p"], result["primary"]["diff"])
    one, many = test.subset(np.arange(5)), test.subset(np.arange(100))
    by_label = {f.label: f for f in families}
    result["seconds_per_puzzle"] = {
        name: {"batch1": timing(model, one, by_label[fam].cls(**r["settings"][0]["params"]), 1, sources),
               "batched": timing(model, many, by_label[fam].cls(**r["settings"][0]["params"]), 100, sources)}
        for name, fam, r in (("rule", reg["rule"], rule), ("eb", "eb", eb))}
    result |= {"seconds": seconds, "wall_seconds": time.time() - t0, "cpu": cpu_model(), "threads": args.threads,
               "chunks": None if store is None else store.record()}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "result.json", result)
    np.savez(args.out / "outcomes.npz", names=np.array(["rule", "eb"]),
             solved=np.stack([np.asarray(r["solved"], dtype=float) for r in (rule, eb)]),
             passes=np.stack([np.asarray(r["passes"], dtype=float) for r in (rule, eb)]))
    print(json.dumps({k: result[k] for k in ("rule", "eb", "primary", "verdict")}, indent=1))


if __name__ == "__main__":
    main()
