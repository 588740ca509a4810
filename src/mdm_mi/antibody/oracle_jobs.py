"""The ``antibody-oracle-ceiling`` verb: Algorithm 1 fed the certified probing MI (the
oracle) in place of the MI head, at one calibrated family's setting (by default the registered λ = 1,
``mi-l1``), on the first test contexts of a finished ``antibody-compare``; paired by context with that
family's head run, EB and sequential on the same contexts.

    python -m mdm_mi antibody-oracle-ceiling --model results/x/hf/model --head results/x/hf/head \
        --data-dir results/x/hf/data --compare-dir results/x/antibody/cdr3 --contexts 40 --divisors 4 \
        --first-pass results/x/oracle/first_pass.safetensors --chunks results/x/oracle.chunks --out-dir ...

As in the Sudoku ceiling, the oracle's probing passes (``≤ 1 + |M|·20`` per step) are not counted: its
passes are decode's, as for the head. Before any oracle decode, the family's head fills of the first
:data:`CHECK_CONTEXTS` contexts are decoded again and must score what ``runs.json`` holds (the same
model, head, test contexts and seed; one-line error otherwise). ``--first-pass`` also writes the
blanked templates' certified MI as a label shard (what ``testbed-place`` reads): the contexts decoding
starts from, probed once and reused by the oracle's first pass of every fill.

Writes ``oracle.json`` (settings, per-context PLL and passes of every arm, paired contrasts, seconds, the
CPU) and ``oracle.md``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mdm_mi.antibody.compare import paired_t, per_context
from mdm_mi.antibody.data import SETS
from mdm_mi.antibody.infill_runs import chunk_store, InfillSet, scored_fills
from mdm_mi.antibody.report import oracle_markdown
from mdm_mi.core.hf_folder import DOMAIN
from mdm_mi.evaluation.infill import Filler
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h, OutDir, SeedFlag, THREADS_HELP
from mdm_mi.infra.io import write_json, write_text
from mdm_mi.infra.validate import OUT_FILE
from mdm_mi.infra.runtime import cpu_model
from mdm_mi.mi.contexts import load_label_shards, save_label_shard, shard_stamp
from mdm_mi.mi.guided import head_pairwise_fn, memo_key, oracle_pairwise_fn, OracleMI
from mdm_mi.mi.labeller import label_contexts
from mdm_mi.mi.probe import DEFAULT_BATCH_SIZE
from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT, read_meta
from mdm_mi.models.loading import load_mi_head, load_model, model_fingerprint
from mdm_mi.sampling.registry import build_sampler

CHECK_CONTEXTS = 2  # the head fills decoded again to prove the comparison's contexts, seed and weights
ARMS = ("head", "eb", "sequential")  # besides the oracle, from runs.json on the same contexts
CONTRASTS = (("oracle", "head"), ("oracle", "eb"), ("oracle", "sequential"), ("head", "eb"))
CHECK_ATOL = 1e-4  # nats/residue: a PLL decoded again on the same CPU agrees far closer


@dataclass(frozen=True)
class AntibodyOracleArgs(OutDir, SeedFlag):
    """``antibody-oracle-ceiling``: ``--out-dir`` gets oracle.json and oracle.md."""

    model: Path = field(metadata=h("hf model folder (AntiBERTy) of the comparison"))
    head: Path = field(metadata=h("the comparison's MI head folder"))
    data_dir: Path = field(metadata=h("antibody-data's folder (test.tsv) of the comparison"))
    compare_dir: Path = field(metadata=h("the antibody-compare output folder (runs.json, summary.json)"))
    contexts: int = field(metadata=h("first test contexts filled by the oracle (>= 2: the contrasts are paired)", low=2))
    divisors: tuple[int, ...] = field(default=(4,), metadata=h("budgets (the comparison's, sequential's passes ÷ d)"))
    family: str = field(default="mi-l1", metadata=h(
        "the calibrated Algorithm 1 family whose setting the oracle takes (mi-l1: the registered λ = 1)"))
    set_name: str = field(default="cdr3", metadata=h("the comparison's set", choices=tuple(SETS)))
    fills: int = field(default=4, metadata=h("fills per context (the comparison's)"))
    tol: float = field(default=0.002, metadata=h("certified probing tolerance (nats)"))
    temperature: float = field(default=1.0, metadata=h("sampling temperature (the comparison's)"))
    batch_size: int = field(default=4, metadata=h("templates per decode call and per kept chunk"))
    threads: int = field(default=2, metadata=h(THREADS_HELP))
    first_pass: Path | None = field(default=None, metadata=h(
        "output label shard of the blanked templates' certified MI (for testbed-place; read back by a rerun); "
        "none: not written", kind=OUT_FILE))
    chunks: Path | None = field(default=None, metadata=h(
        "folder keeping every oracle fill of each --batch-size templates: the same command rerun after a stop "
        "decodes only what is missing"))


def antibody_oracle_ceiling(args: AntibodyOracleArgs, tracker) -> None:
    """The oracle's fills at each budget, paired with the comparison's arms on the same contexts."""
    runs = _read_runs(args)
    torch.set_num_threads(args.threads)
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    test = InfillSet.from_tsv(backbone, Path(args.data_dir) / "test.tsv", SETS[args.set_name], None, args.seed)
    compared = len(runs["sequential"]["pll"])  # the comparison's test contexts: a prefix of test.tsv's draw
    if args.contexts > min(compared, len(test.ids)):
        raise InputError(f"--contexts {args.contexts}: {args.data_dir}/test.tsv gives {len(test.ids)} contexts, "
                         f"runs.json {compared}")
    sub = test.first(args.contexts)
    head = head_pairwise_fn(load_mi_head(args.head, "cpu", backbone, args.model))
    check = _check_head(Filler(backbone, args.seed, args.temperature, args.batch_size), sub, runs, args, head)
    t0 = time.time()
    memo = _first_pass(backbone, sub.tokens, args)
    first_seconds = time.time() - t0
    probe = oracle_pairwise_fn(backbone, method="certified", tol=args.tol, memo=memo)
    filler = Filler(backbone, args.seed, args.temperature, args.batch_size, chunk_store(args.model, (args.head,), args.chunks, args.seed, args.temperature,
                                 args.batch_size), label=f"oracle tol={args.tol}")
    result = {"set": args.set_name, "n": args.contexts, "n_test": compared, "fills": args.fills, "tol": args.tol,
              "family": args.family, "seed": args.seed, "cpu": cpu_model(), "threads": args.threads,
              "first_pass_seconds": first_seconds, "check": check, "divisors": {}}
    for d in args.divisors:
        result["divisors"][str(d)] = _budget(filler, sub, runs, args, d, probe)
    if filler.store is not None:
        result["chunks"] = filler.store.record()
    out = Path(args.out_dir)
    write_json(out / "oracle.json", result)
    write_text(out / "oracle.md", oracle_markdown(result))
    tracker.log_artifact(out / "oracle.md")


def _read_runs(args: AntibodyOracleArgs) -> dict:
    """The comparison's runs.json, with the family's and EB's runs at every ``--divisors`` and sequential;
    one-line errors before any model is loaded."""
    if not args.divisors:
        raise InputError("--divisors needs at least one budget")
    path = Path(args.compare_dir) / "runs.json"
    if not path.is_file():
        raise InputError(f"comparison output missing: {path}")
    runs = json.loads(path.read_text())
    want = ["sequential"] + [f"{name}@{d}" for d in args.divisors for name in (args.family, "eb")]
    missing = [k for k in want if k not in runs]
    if missing:
        raise InputError(f"{path} has no run {', '.join(missing)} (its runs: {', '.join(sorted(runs))})")
    return runs


def _check_head(filler: Filler, sub: InfillSet, runs: dict, args: AntibodyOracleArgs, head) -> dict:
    """The family's head fills of the first :data:`CHECK_CONTEXTS` contexts at the first budget, decoded
    again: their per-context PLL must equal runs.json's within :data:`CHECK_ATOL`."""
    d, few = args.divisors[0], sub.first(min(CHECK_CONTEXTS, len(sub.ids)))
    run = runs[f"{args.family}@{d}"]
    _, scores = scored_fills(filler, few, build_sampler("mi", **run["params"]), args.fills, head)
    again, kept = per_context(scores["pll"], len(few.ids)), np.asarray(run["pll"][: len(few.ids)])
    if not np.allclose(again, kept, atol=CHECK_ATOL):
        raise InputError(f"the head's fills of the first {len(few.ids)} contexts score {again.round(4).tolist()}, "
                         f"runs.json {kept.round(4).tolist()}: not the comparison's model, head, data or --seed")
    return {"contexts": len(few.ids), "pll": again.tolist(), "max_abs_diff": float(np.abs(again - kept).max())}


def _first_pass(backbone, tokens: torch.Tensor, args: AntibodyOracleArgs) -> dict[bytes, torch.Tensor]:
    """The blanked templates ``tokens (P, N)`` probed once (certified within ``--tol``, the oracle's batch
    size) → the oracle's memo; with ``--first-pass``, written as a label shard stamped with the model, or
    read back from it when it holds these very templates (a rerun after a stop)."""
    path = None if args.first_pass is None else Path(args.first_pass)
    if path is not None and path.is_file():
        kept = load_label_shards([path], fingerprint=model_fingerprint(args.model, read_meta(args.model)),
                                 model=args.model)
        if torch.equal(kept["contexts"], tokens) and shard_stamp(path).get("tol") == str(args.tol):
            return {memo_key(row): label for row, label in zip(tokens, kept["label"])}
    out = label_contexts(backbone, tokens, "certified", args.tol, DEFAULT_BATCH_SIZE)
    if path is not None:
        stamp = {MODEL_FINGERPRINT: model_fingerprint(args.model, read_meta(args.model)), "model": str(args.model),
                 "tol": str(args.tol)}
        tensors = {k: v.contiguous() for k, v in out.items()} | {"contexts": tokens.contiguous()}
        save_label_shard(Path(args.first_pass), tensors, stamp)
    return {memo_key(row): label for row, label in zip(tokens, out["label"])}


def _budget(filler: Filler, sub: InfillSet, runs: dict, args: AntibodyOracleArgs, d: int, probe) -> dict:
    """The oracle at the family's setting of budget ``d`` → its record and the paired contrasts."""
    params = runs[f"{args.family}@{d}"]["params"]
    t0 = time.time()
    filled, scores = scored_fills(filler, sub, OracleMI(**params), args.fills, probe)
    n = len(sub.ids)
    arms = {"oracle": {"pll": per_context(scores["pll"], n), "passes": per_context(filled.passes.numpy(), n)}}
    for name, key in zip(ARMS, (f"{args.family}@{d}", f"eb@{d}", "sequential")):
        arms[name] = {m: np.asarray(runs[key][m][:n], dtype=float) for m in ("pll", "passes")}
    record = {"params": params, "seconds": time.time() - t0,
              "arms": {a: {"pll": float(v["pll"].mean()), "passes": float(v["passes"].mean())} for a, v in arms.items()},
              "contrasts": {f"{a}-{b}": paired_t(arms[a]["pll"], arms[b]["pll"]) for a, b in CONTRASTS},
              "oracle_pll": arms["oracle"]["pll"].tolist(), "oracle_passes": arms["oracle"]["passes"].tolist()}
    print(f"oracle ÷{d}: PLL {record['arms']['oracle']['pll']:.3f} @ {record['arms']['oracle']['passes']:.2f} passes, "
          f"head {record['arms']['head']['pll']:.3f} @ {record['arms']['head']['passes']:.2f} on the same {n} contexts "
          f"({record['seconds']:.0f} s)", flush=True)
    return record
