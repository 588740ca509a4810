"""The ``sudoku-compare`` verb: every parallel sampler calibrated to sequential's passes ÷ 2…10 on
a calibration split, then decoded on a disjoint test split at exactly those test passes (two settings
mixed, :mod:`mdm_mi.evaluation.matched`), with paired differences and verdicts (budgets table); the
``sudoku-budgets`` summary over sets and ``sudoku-verdicts``, two runs' verdicts side by side.

    python -m mdm_mi sudoku-compare --model results/x/sudoku/model --head results/x/sudoku/head \
        --radcliffe radcliffe.csv --easy easy.csv --set hard --out-dir results/x/sudoku/budgets/hard ...

Writes, in ``--out-dir``: ``calib.csv`` and ``test.csv`` (the splits), ``runs.json`` (every run's
sampler settings, calibration and test summary), ``outcomes.npz`` (per-puzzle solved/passes of every
run: the matched mixture, and each setting's under ``setting_*``), ``budgets.csv`` (long format, with
roles, Holm and TOST p and verdicts) and ``budgets.md``, ``curve.png``.

    python -m mdm_mi sudoku-verdicts --runs results/x/sudoku/budgets results/x/sudoku/budgets-calib1 \
        --names "calibration seed 0" "calibration seed 1" --out docs/record/verdicts_two_seeds.md
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.sampler_table import SAMPLERS, TV_HEAD, SudokuSweptFlags, comparison_settings, refuse_quality
from mdm_mi.evaluation.budgets import FIELDS, budget_rows, markdown, read_csv, summary_markdown, write_csv
from mdm_mi.evaluation.calibrate import comparison_families
from mdm_mi.evaluation.chunks import ChunkStore
from mdm_mi.evaluation.matched import OFF_BUDGET_NOTE
from mdm_mi.evaluation.verdicts import VERDICT_FIELDS, classify, side_by_side, verdict_markdown
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import THREADS_HELP, ComparisonFlags, HeadFlag, from_schema, h as _h, shared_from_schema
from mdm_mi.infra.io import atomic_path, write_json, write_text
from mdm_mi.infra.runtime import resolve_device, setup
from mdm_mi.models.loading import compute_fingerprint, load_mi_head, load_model, model_fingerprint, read_meta, weights_identity
from mdm_mi.mi.guided import head_pairwise_fn
from mdm_mi.sampling.registry import SAMPLER_CLASSES
from mdm_mi.sudoku.compare import SEQUENTIAL, Decoder, SplitSpec, compare_runs, compare_splits, mean_blanks
from mdm_mi.evaluation.parts import part_names, write_part
from mdm_mi.sudoku.compare_parts import ARRAYS, ARRAYS_FILE, merged_parts, part_key
from mdm_mi.sudoku.data import load_puzzle_csv, write_puzzle_csv
from mdm_mi.sudoku.flags import SudokuDecodeFlags
from mdm_mi.sudoku.report import curve_figure

SUDOKU_CELLS = 81


@dataclass(frozen=True)
class CompareArgs(SudokuDecodeFlags, ComparisonFlags, SudokuSweptFlags, HeadFlag):
    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("sudoku.compare", "sudoku.samplers")

    radcliffe: Path = field(metadata=_h("Radcliffe curated CSV (levels Beginner..Expert)"))
    easy: Path = field(metadata=_h("HKUNLP easy CSV"))
    set: str = field(metadata=_h("hard | graded | levels | easy"))
    calib_puzzles: int = from_schema("sudoku.compare.calib_puzzles", "calibration puzzles per set (disjoint from the test puzzles)")
    bootstrap: int = from_schema("sudoku.compare.bootstrap", "paired-bootstrap replicates of the curve bands")
    test_puzzles: int | None = field(default=None, metadata=_h(
        "hard, levels, easy: at most this many test puzzles; graded: of the hard test split it is revealed from"))
    graded_givens: tuple[int, ...] = field(default=(), metadata=_h("graded: givens of its levels"))
    graded_per_level: int | None = field(default=None, metadata=_h("graded: test puzzles per level"))
    seed: int = field(default=0, metadata=_h("random seed (test split, test decoding, bootstrap)"))
    calib_seed: int = from_schema("sudoku.compare.calib_seed",
                                  "seed of the calibration puzzles (drawn from the pool the test split leaves) and of their decoding")
    # the rule's threads come from the config: its default is the schema's, over DeviceThreadsFlags' own
    threads: int = from_schema("sudoku.compare.threads", THREADS_HELP, kw_only=True)
    divisors: tuple[int, ...] = shared_from_schema(ComparisonFlags, "sudoku.compare.divisors")
    on_reject: str = shared_from_schema(ComparisonFlags, "sudoku.samplers.mi_on_reject", "on_reject")
    charge_first: bool = shared_from_schema(ComparisonFlags, "sudoku.samplers.mi_charge_first", "charge_first")
    batch_size: int = shared_from_schema(SudokuDecodeFlags, "sudoku.compare.batch_size")
    tv_head: Path | None = field(default=None, metadata=_h(
        "TV head checkpoint folder (train-head --target tv): needed by the families that read it (demask, mi-tv)"))
    chunks: Path | None = field(default=None, metadata=_h(
        "folder keeping every decoded chunk of 100 puzzles: the same command rerun after a stop decodes only "
        "what is missing (delete it after changing decoding code)"))
    parts: tuple[Path, ...] = field(default=(), metadata=_h(
        "sudoku-compare-part folders to merge (sequential and one per family); none: decode every part here"))


@dataclass(frozen=True)
class ComparePartArgs(CompareArgs):
    """``sudoku-compare-part``: ``sudoku-compare``'s arguments, one part, and ``--head`` only for a part
    whose family reads it."""

    part: str = field(kw_only=True, metadata=_h(
        "the part to run: 'sequential', or one calibrated family by its slug (naive, eb, threshold, mi-l1, ...)"))
    head: Path | None = field(default=None, kw_only=True, metadata=_h(
        "MI head checkpoint folder: needed by the parts whose family reads it (mi, mi-indep, mi-2b, ...)"))


def sudoku_compare(args: CompareArgs, tracker) -> None:
    """Every family calibrated and decoded here, or (``--parts``) the runs of the
    ``sudoku-compare-part`` folders read back; then the tables, curves and per-puzzle outcomes."""
    setup(args.threads, args.seed)
    calib, test = _splits(args)
    families = comparison_families(SUDOKU_CELLS, args, SAMPLER_CLASSES)
    out = Path(args.out_dir)
    if args.parts:
        runs, seconds, chunks = merged_parts(args.parts, _key(args, calib, test), part_names(families), _head_identities(args))
    else:
        _check_tv_head(args, families)
        decoder, calib_decoder, store = _decoders(args, families)
        runs, seconds = compare_runs(decoder, test, calib_decoder, calib, families, args.divisors)
        chunks = None if store is None else store.record()
    write_puzzle_csv(out / "calib.csv", calib)
    write_puzzle_csv(out / "test.csv", test)
    rows = classify(budget_rows(runs, args.set))
    _write(out, args, runs, rows, mean_blanks(calib), seconds, chunks)
    write_csv(rows, out / "budgets.csv", FIELDS + VERDICT_FIELDS)
    write_text(out / "budgets.md", markdown(rows, runs, args.set, OFF_BUDGET_NOTE))
    curve_figure(runs, out / "curve.png", args.set, args.bootstrap, args.seed)
    tracker.log_params({"set": args.set, "calib_puzzles": len(calib), "test_puzzles": len(test),
                        "divisors": list(args.divisors), "mi_lambda": list(args.mi_lambda), "calib_seed": args.calib_seed})
    tracker.log_metrics({f"{r['first']}-{r['second']}.1_{r['divisor']}.diff": r["diff"] for r in rows})
    for name in ("budgets.md", "budgets.csv", "runs.json", "curve.png"):
        tracker.log_artifact(out / name)


def sudoku_compare_part(args: ComparePartArgs, tracker) -> None:
    """One part of a comparison for ``sudoku-compare --parts``: sequential, or one family calibrated and
    decoded (``part.json`` and ``part.npz`` in ``--out-dir``). A part reads the MI head only when its
    family does, so a retrained head reruns only those parts."""
    setup(args.threads, args.seed)
    calib, test = _splits(args)
    every = comparison_families(SUDOKU_CELLS, args, SAMPLER_CLASSES)
    names = part_names(every)
    if args.part not in names:
        raise InputError(f"unknown --part {args.part!r}; this comparison's parts: {', '.join(names)}")
    families = [f for f in every if f.slug == args.part]  # none for sequential
    _check_tv_head(args, families)
    decoder, calib_decoder, store = _decoders(args, families)
    runs, seconds = compare_runs(decoder, test, calib_decoder, calib, families, args.divisors,
                                 sequential=args.part == SEQUENTIAL)
    meta = {"part": args.part, "spec": _key(args, calib, test), "heads": _head_identities(args), "seconds": seconds,
            "chunks": None if store is None else store.record()}
    write_part(Path(args.out_dir), runs, meta, ARRAYS, ARRAYS_FILE)
    tracker.log_params({"set": args.set, "part": args.part, "calib_puzzles": len(calib), "test_puzzles": len(test)})


def _splits(args: CompareArgs) -> tuple:
    """The checked arguments' (calibration, test) puzzle sets."""
    _check_sizes(args)
    refuse_quality(comparison_settings(args))  # before the puzzles are read
    spec = SplitSpec(args.calib_puzzles, args.test_puzzles or 0, tuple(args.graded_givens), args.graded_per_level or 0,
                     args.seed, args.calib_seed)
    try:
        return compare_splits(load_puzzle_csv(args.radcliffe), load_puzzle_csv(args.easy), [args.set], spec)[args.set]
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _check_tv_head(args: CompareArgs, families) -> None:
    """One line when a family to decode here reads the TV head and no ``--tv-head`` was given."""
    tv_families = [f.label for f in families if SAMPLERS[f.sampler].pairwise == TV_HEAD]
    if tv_families and args.tv_head is None:
        raise InputError(f"families {', '.join(tv_families)} read the TV head: pass --tv-head (or no values for them)")


def _decoders(args: CompareArgs, families) -> tuple:
    """(test decoder, calibration decoder, chunk store or None): the model, with the MI head when
    ``--head`` is given and the TV head when a family reads it."""
    device = resolve_device(args.device)
    model, _ = load_model(args.model, device, "sudoku")
    head_fn = None if args.head is None else head_pairwise_fn(load_mi_head(args.head, device, model, args.model))
    reads_tv = any(SAMPLERS[f.sampler].pairwise == TV_HEAD for f in families)
    tv_fn = head_pairwise_fn(load_mi_head(args.tv_head, device, model, args.model, target="tv")) if reads_tv else None
    store = None if args.chunks is None else ChunkStore(args.chunks, run_identity(args, device))
    cache = ForwardCache()  # one for both: the calibration and test puzzles differ, the model is the same
    decoder = Decoder(model, head_fn, args.batch_size, args.seed, tv_fn, store, cache)
    return decoder, Decoder(model, head_fn, args.batch_size, args.calib_seed, tv_fn, store, cache), store


def _key(args: CompareArgs, calib, test) -> dict:
    """What the parts and the merge share (:func:`mdm_mi.sudoku.compare_parts.part_key`)."""
    return part_key(args, calib, test, model_fingerprint(args.model))


def _head_identities(args: CompareArgs) -> dict:
    """The fingerprints of the heads given (MI, TV), for the merge to check its parts against."""
    return {name: compute_fingerprint(path, read_meta(path))
            for name, path in (("head", args.head), ("tv_head", args.tv_head)) if path is not None}


def _check_sizes(args: CompareArgs) -> None:
    """The size flags the chosen set needs (graded: --graded-givens and --graded-per-level; the others:
    --test-puzzles); each is >= 1 when given (the validator's)."""
    if args.set == "graded":
        if not args.graded_givens or args.graded_per_level is None:
            raise InputError("--set graded needs --graded-givens and --graded-per-level >= 1")
    elif args.test_puzzles is None:
        raise InputError(f"--set {args.set} needs --test-puzzles >= 1")


def run_identity(args: CompareArgs, device) -> str:
    """What fixes a decoded chunk besides its puzzles and sampler: the model's and the heads' weights
    and the device type (the seeds are the decoders': :class:`ChunkStore` keys each decoder apart)."""
    return weights_identity(args.model, (args.head, args.tv_head), torch.device(device))


def _plain(value):
    """An argument as JSON holds it (paths as strings, in tuples too)."""
    if isinstance(value, Path):
        return str(value)
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _write(out: Path, args: CompareArgs, runs: dict, rows: list, seq_passes: float, seconds: dict,
           chunks: dict | None = None) -> None:
    """``runs.json`` (settings and summaries; with ``chunks``, how many chunks were read back and decoded
    and the commits that decoded them) and ``outcomes.npz`` (per-puzzle arrays)."""
    arrays = ("solved", "passes", "setting_solved", "setting_passes")
    summary = {name: {k: v for k, v in r.items() if k not in arrays}
               | {"accuracy": float(np.mean(r["solved"])), "mean_passes": float(np.mean(r["passes"]))}
               for name, r in runs.items()}
    write_json(out / "runs.json", {"set": args.set, "args": {k: _plain(v) for k, v in dataclasses.asdict(args).items()},
                                   "sequential_passes_calib": seq_passes, "seconds": seconds, "runs": summary}
               | ({} if chunks is None else {"chunks": chunks}))
    with atomic_path(out / "outcomes.npz") as tmp, tmp.open("wb") as fh:  # a file object: no suffix added
        np.savez(fh, names=np.array(list(runs)), solved=np.stack([r["solved"] for r in runs.values()]).astype(float),
                 passes=np.stack([r["passes"] for r in runs.values()]).astype(float),
                 setting_solved=np.stack([r.get("setting_solved", np.stack([r["solved"]] * 2)) for r in runs.values()]),
                 setting_passes=np.stack([r.get("setting_passes", np.stack([r["passes"]] * 2)) for r in runs.values()]))


@dataclass(frozen=True)
class SummaryArgs:
    inputs: tuple[Path, ...] = field(metadata=_h("budgets.csv of each set (sudoku-compare)"))
    out: Path = field(metadata=_h("output markdown: who wins at each budget"))


def budgets_summary(args: SummaryArgs, tracker) -> None:
    rows = _read_budgets(args.inputs)
    write_text(args.out, summary_markdown(rows) + "\n" + verdict_markdown(rows))
    tracker.log_artifact(args.out)


def _read_budgets(paths) -> list[dict]:
    """Every row of the budgets tables ``paths``, by set (in order of appearance) and budget (tables of
    one set at other budgets interleave), classified again from their numbers (roles, Holm over all of
    a set's rows, TOST, verdict words); one-line errors for a missing table or no rows."""
    for path in paths:
        if not Path(path).is_file():
            raise InputError(f"budgets table not found: {path}")
    rows = [r for path in paths for r in read_csv(path)]
    if not rows:
        raise InputError("the budgets tables hold no rows")
    sets = list(dict.fromkeys(r["set"] for r in rows))
    return classify(sorted(rows, key=lambda r: (sets.index(r["set"]), int(r["divisor"]))))


@dataclass(frozen=True)
class VerdictsArgs:
    runs: tuple[Path, ...] = field(metadata=_h("two or more sudoku-compare roots, each with <set>/budgets.csv "
                                                "(e.g. results/x/sudoku/budgets and results/x/sudoku/budgets-calib1)",
                                                min_items=2))
    out: Path = field(metadata=_h("output markdown: the runs' verdicts side by side"))
    names: tuple[str, ...] = field(default=(), metadata=_h("a column name per run (default: the folder names)"))
    exploratory: bool = field(default=False, metadata=_h("list the exploratory contrasts too"))


def sudoku_verdicts(args: VerdictsArgs, tracker) -> None:
    if args.names and len(args.names) != len(args.runs):
        raise InputError(f"--names needs one name per --runs folder: {len(args.runs)} folders, {len(args.names)} names")
    names = list(args.names) or [str(r) for r in args.runs]
    tables = {name: _read_budgets(sorted(Path(root).glob("*/budgets.csv"))) for name, root in zip(names, args.runs)}
    roles = ("primary", "secondary", "exploratory") if args.exploratory else ("primary", "secondary")
    write_text(args.out, side_by_side(tables, roles))
    tracker.log_artifact(args.out)
