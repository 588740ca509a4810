"""The Sudoku verbs of the CLI: ``prepare-sudoku``, ``sudoku-pretrain``, ``sudoku-evaluate`` (also a user verb:
with only ``--puzzles`` it finds the model in results/ and prints a table).

Each verb is a frozen dataclass of arguments and one function ``(args, tracker)`` that writes files
first and then mirrors them to the tracker.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mdm_mi.core.sampler_table import SamplerFlags
from mdm_mi.models.domains import set_domain
from mdm_mi.infra.checkpoint import load_checkpoint, save_checkpoint
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import SeedFlag, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.validate import OUT_FOLDER
from mdm_mi.infra.io import atomic_path, write_json, write_npy
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.infra.train_loop import DiffusionTrainFlags, RESUME, SNAPSHOTS
from mdm_mi.sudoku.evaluate import decode_set, score, summarise
from mdm_mi.sudoku.puzzle_maker import random_solutions
from mdm_mi.sudoku.data import HARD_LEVELS, OTHER_LEVELS, graded, load_puzzle_csv, stratified, write_puzzle_csv
from mdm_mi.sudoku.model import DOMAIN, ModelConfig, n_params
from mdm_mi.sudoku.train import TrainConfig, train
from mdm_mi.models.run import (ModelFlags, calibrated_for, check_outputs, load_backbone_for, pairwise_from_args,
                                progress, start)
from mdm_mi.sampling.registry import sampler_from_args


@dataclass(frozen=True)
class PrepareArgs(SeedFlag):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("sudoku.data",)

    radcliffe: Path = field(metadata=_h("Radcliffe curated CSV (levels Beginner..Expert)"))
    easy: Path = field(metadata=_h("HKUNLP easy test CSV"))
    out_dir: Path = field(metadata=_h("output folder of train_solutions.npy and the eval set CSVs"))
    n_train_solutions: int = from_schema("sudoku.data.n_train_solutions", "random complete grids to generate for training")
    hard_max_puzzles: int = from_schema("sudoku.data.hard_max_puzzles", "stratified Hard+Expert subset size")
    easy_max_puzzles: int = from_schema("sudoku.data.easy_max_puzzles", "easy subset size")
    levels_max_puzzles: int = from_schema("sudoku.data.levels_max_puzzles", "puzzles per Beginner/Easy/Medium level")
    graded_givens: tuple[int, ...] = from_schema("sudoku.data.graded_givens", "target givens of the graded set")
    graded_per_level: int = from_schema("sudoku.data.graded_per_level", "puzzles per graded level")
    oracle_max_puzzles: int = from_schema("sudoku.data.oracle_max_puzzles", "hard puzzles in the small exact-MI oracle set")


def prepare_sudoku(args: PrepareArgs, tracker) -> None:
    rng = np.random.default_rng(args.seed)
    radcliffe, easy = load_puzzle_csv(args.radcliffe), load_puzzle_csv(args.easy)
    hard_pool = radcliffe.subset([i for i, lvl in enumerate(radcliffe.levels) if lvl in HARD_LEVELS])
    sets = {
        "hard": stratified(hard_pool, HARD_LEVELS, args.hard_max_puzzles, rng),
        "easy": easy.subset(rng.permutation(len(easy))[: args.easy_max_puzzles]),
        "levels": stratified(radcliffe, OTHER_LEVELS, args.levels_max_puzzles * len(OTHER_LEVELS), rng),
        "graded": graded(hard_pool, args.graded_givens, args.graded_per_level, rng),
    }
    oracle_rng = np.random.default_rng([args.seed, 1])  # own stream: the draws above stay as they were
    sets["oracle"] = sets["hard"].subset(oracle_rng.permutation(len(sets["hard"]))[: args.oracle_max_puzzles])
    out = Path(args.out_dir)
    for name, ps in sets.items():
        write_puzzle_csv(out / f"{name}.csv", ps)
    # own stream, so the training grids do not depend on the evaluation-set sizes drawn above
    solutions = random_solutions(args.n_train_solutions, np.random.default_rng([args.seed, 2]))
    write_npy(out / "train_solutions.npy", solutions)
    write_npy(out / "heldout_solutions.npy", radcliffe.solutions)  # real solutions: held-out MI contexts
    counts = {f"n_{name}": len(ps) for name, ps in sets.items()} | {"n_train": len(solutions)}
    write_json(out / "summary.json", counts)
    tracker.log_params(dataclasses.asdict(args))
    tracker.log_metrics(counts)


@dataclass(frozen=True)
class PretrainArgs(DiffusionTrainFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("sudoku.model", "sudoku.train")

    solutions: Path = field(metadata=_h("train_solutions.npy from prepare-sudoku"))
    out: Path = field(metadata=_h("output checkpoint folder", kind=OUT_FOLDER))
    d_model: int = from_schema("sudoku.model.d_model", "model width")
    n_layers: int = from_schema("sudoku.model.n_layers", "transformer blocks")
    n_heads: int = from_schema("sudoku.model.n_heads", "attention heads")
    ff_mult: int = from_schema("sudoku.model.ff_mult", "MLP width multiple")
    dropout: float = from_schema("sudoku.model.dropout", "dropout")
    hidden_layer: int = from_schema("sudoku.model.hidden_layer", "layer exposed as hidden states")
    augment: bool = from_schema("sudoku.train.augment", "apply random Sudoku symmetries")
    compile: bool = from_schema("sudoku.train.compile", "torch.compile the model")
    # the training flags both domains share, with sudoku's defaults
    steps: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.steps")
    batch_size: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.batch_size")
    lr: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.lr")
    warmup: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.warmup")
    weight_decay: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.weight_decay")
    t_min: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.t_min")
    t_max: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.t_max")
    loss_weight: str = shared_from_schema(DiffusionTrainFlags, "sudoku.train.loss_weight")
    grad_clip: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.grad_clip")
    log_every: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.log_every")
    ema: float = shared_from_schema(DiffusionTrainFlags, "sudoku.train.ema")
    save_every: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.save_every")
    snapshot_every: int = shared_from_schema(DiffusionTrainFlags, "sudoku.train.snapshot_every")
    init_from: Path | None = field(default=None, metadata=_h(
        "start from this checkpoint's weights (same shape; a fresh optimiser and schedule), e.g. to "
        "continue a GPU run in a later lease (default: random weights)"))


def _initial_weights(args: PretrainArgs, model_cfg) -> tuple[dict | None, int]:
    """``--init-from``'s state dict and the optimiser steps its weights have had → (state or None, steps)."""
    if args.init_from is None:
        return None, 0
    state, meta = load_checkpoint(args.init_from, domain=DOMAIN)
    if meta.get("model") != dataclasses.asdict(model_cfg):
        raise InputError(f"--init-from {args.init_from} has another model shape ({meta.get('model')}); "
                         "give the same --d-model/--n-layers/--n-heads/--ff-mult/--dropout/--hidden-layer")
    return state, int(meta.get("total_steps", meta.get("train", {}).get("steps", 0)))


def pretrain(args: PretrainArgs, tracker) -> None:
    setup(args.threads, args.seed)
    device = resolve_device(args.device)
    if not Path(args.solutions).is_file():
        raise InputError(f"training solutions not found: {args.solutions}")
    solutions = np.load(args.solutions, allow_pickle=False)
    model_cfg = _pick(ModelConfig, args)
    train_cfg = _pick(TrainConfig, args)
    init_state, steps_before = _initial_weights(args, model_cfg)
    tracker.log_params(dataclasses.asdict(args))
    out = Path(args.out)

    def snapshot(step: int, model) -> None:
        save_checkpoint(model, out / SNAPSHOTS / f"step-{step}", {"domain": DOMAIN, "model": dataclasses.asdict(model_cfg),
                                                                  "train": dataclasses.asdict(train_cfg), "step": step})

    model, history = train(solutions, model_cfg, train_cfg, device, log=lambda m: print(m, flush=True),
                           resume_dir=out / RESUME, snapshot=snapshot, init_state=init_state)
    for rec in history:
        tracker.log_metrics({"loss": rec["loss"]}, step=rec["step"])
    metrics = {"final_loss": history[-1]["loss"], "train_minutes": history[-1]["minutes"],
               "n_params": n_params(model), "device": device}
    meta = {"domain": DOMAIN, "model": dataclasses.asdict(model_cfg), "train": dataclasses.asdict(train_cfg),
            "metrics": metrics, "history": history, "total_steps": steps_before + train_cfg.steps}
    if args.init_from is not None:
        meta["init_from"] = str(args.init_from)
    save_checkpoint(model, args.out, meta)
    tracker.log_metrics(metrics)
    tracker.log_artifact(Path(args.out) / "meta.json")


def _pick(cls, args):
    """Build dataclass ``cls`` from the same-named fields of ``args``."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class EvaluateArgs(SamplerFlags, ModelFlags):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("sudoku.eval", "sudoku.samplers")

    puzzles: Path = field(metadata=_h("any CSV with 'puzzle' (and optional 'solution', 'level') columns "
                                       "(a protein FASTA reference is scored by generate --reference)"))
    out: Path | None = field(default=None, metadata=_h("summary JSON (default: none; the table is printed)"))
    per_puzzle: Path | None = field(default=None, metadata=_h("per-puzzle CSV (default: none)"))
    batch_size: int = from_schema("sudoku.eval.batch_size", "puzzles decoded together")
    seed: int = field(default=0, metadata=_h("random seed"))


EVAL_EXAMPLES = """examples:
  mdm-mi sudoku-evaluate --puzzles my.csv                          # model found in results/, table printed
  mdm-mi sudoku-evaluate --puzzles my.csv --sampler mi --gamma 0.1 --out my.json --per-puzzle my_per_puzzle.csv"""


def evaluate(args: EvaluateArgs, tracker) -> None:
    """Decode every puzzle of ``args.puzzles`` and write/print accuracy and passes per level."""
    if set_domain(args.puzzles) != "sudoku":
        raise InputError(f"evaluate scores Sudoku puzzle CSVs; {args.puzzles} is a protein FASTA: "
                         f"`mdm-mi generate --reference {args.puzzles}` generates proteins and scores them against it")

    sampler = sampler_from_args(args, calibrated=calibrated_for(args, "sudoku"))
    check_outputs(args.out, args.per_puzzle)
    ps = load_puzzle_csv(args.puzzles)  # bad input fails before the model loads
    device = start(args, args.seed)
    model, model_dir, _ = load_backbone_for(args, "sudoku", device)
    start_time = time.time()
    with (pairwise_from_args(args, model, model_dir, "sudoku", device) as pairwise,
          progress(len(ps), f"evaluate {sampler.name}", args.quiet) as bar):
        grids, passes = decode_set(model, ps, sampler, args.batch_size, args.seed, pairwise, progress=bar.update)
    records = score(ps, grids, passes)
    summary = {"sampler": sampler.name, "params": sampler.params(), "set": Path(args.puzzles).stem,
               "seconds": time.time() - start_time, "levels": summarise(records)}
    _write_outputs(args, records, summary)
    print(summary_table(summary, model_dir))
    tracker.log_params({"sampler": sampler.name, **sampler.params(), "set": summary["set"]})
    tracker.log_metrics({f"{lvl}.{k}": v for lvl, m in summary["levels"].items() for k, v in m.items()})
    if args.out is not None:
        tracker.log_artifact(args.out)


def _write_outputs(args: EvaluateArgs, records: list[dict], summary: dict) -> None:
    """The per-puzzle CSV and the summary JSON, each only when its flag was given."""
    if args.per_puzzle is not None:
        with atomic_path(args.per_puzzle) as tmp, tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(records[0]))
            w.writeheader()
            w.writerows(records)
    if args.out is not None:
        write_json(args.out, summary)


def summary_table(summary: dict, model_dir: Path) -> str:
    """The summary as an aligned text table, one row per level (``all`` last)."""
    params = ", ".join(f"{k}={v}" for k, v in summary["params"].items())
    lines = [f"{summary['set']}: sampler {summary['sampler']} ({params}), model {model_dir}, "
             f"{summary['seconds']:.1f} s",
             f"{'level':<12} {'n':>5}  {'solved % [95% CI]':<22} {'mean passes':>11}"]
    levels = sorted(summary["levels"], key=lambda lvl: (lvl == "all", lvl))
    for lvl in levels:
        m = summary["levels"][lvl]
        acc = f"{100 * m['accuracy']:.1f} [{100 * m['acc_lo']:.1f}, {100 * m['acc_hi']:.1f}]"
        lines.append(f"{lvl:<12} {m['n']:>5}  {acc:<22} {m['mean_passes']:>11.1f}")
    return "\n".join(lines)
