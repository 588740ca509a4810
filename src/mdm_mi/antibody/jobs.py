"""The antibody verbs: ``import-antiberty`` (AntiBERTy's pickled weights → a checked ``hf`` model
folder with safetensors and a MANIFEST) and ``antibody-data`` (the VH TSV split by lineage into label
contexts, calibration and test, encoded for ``label``).

    python -m mdm_mi import-antiberty --source auto --out results/antibody/hf/model --hidden-layer -1
    python -m mdm_mi antibody-data --model results/antibody/hf/model --tsv resources/data/antibody/vh_public.tsv \
        --out-dir results/antibody/data --calibration-fraction 0.1 --test-fraction 0.2 --seed 0
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from mdm_mi.antibody import pairs as P
from mdm_mi.antibody.model import convert_antiberty, find_source, mark_and_check
from mdm_mi.antibody.compare import contrast_rows, pll_per_residue
from mdm_mi.antibody.data import assign_scopes, read_vh, SCOPES, SETS, split_by_lineage, template, write_vh
from mdm_mi.antibody.infill_runs import (calibrated_runs, antibody_families, chunk_store, InfillSet, one_per_lineage,
                                         oracle_runs, OracleSettings, sequential_run, write_fills, write_results)
from mdm_mi.core.backbone import full_precision, token_fingerprint
from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.hf_folder import DOMAIN
from mdm_mi.core.sampler_table import (HEAD, SAMPLERS, TV_HEAD, AntibodySweptFlags, refuse_quality, swept_entries,
                                      swept_settings)
from mdm_mi.evaluation.infill import Filler, max_masked
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h, OutDir, SeedFlag, THREADS_HELP, from_schema
from mdm_mi.infra.validate import OUT_FOLDER
from mdm_mi.infra.io import write_json, write_npy
from mdm_mi.models.loading import load_mi_head, load_model
from mdm_mi.mi.guided import head_pairwise_fn
from mdm_mi.mi.probe import exact_mi

# what `label` masks (the hf domain's file names, rule label of mi.smk): the label lineages' VH for the
# training labels, the test lineages' for the head's val/test labels (never trained on)
CONTEXT_FILES = {"labels": "train_contexts.npy", "test": "heldout_contexts.npy"}


@dataclass(frozen=True)
class ImportAntibertyArgs:
    source: str = field(metadata=h(
        "auto (the installed antiberty package: pip install -e '.[antibody]'), the antiberty-0.1.3 wheel, "
        "or its package folder"))
    out: Path = field(metadata=h("model folder to write (safetensors, tokenizer, MANIFEST.json, meta.json)", kind=OUT_FOLDER))
    hidden_layer: int = field(metadata=h(
        "hidden_states index the MI head reads (Hugging Face numbering: 0 = embeddings, -1 = last layer)"))


def import_antiberty(args: ImportAntibertyArgs, tracker) -> None:
    """Convert once (pickle read with ``weights_only=True``), mark the folder as an ``hf`` model with
    the 20 amino acids as its alphabet, then load it and check it against the Backbone rules."""
    source = find_source(args.source)  # a missing source fails before anything is written
    manifest = convert_antiberty(source, Path(args.out))
    summary = mark_and_check(Path(args.out), args.hidden_layer)
    print(f"{args.out}: {manifest['name']} from {manifest['converted_from']}, {summary}")
    tracker.log_params({"source": str(args.source), "hidden_layer": args.hidden_layer,
                        **{"sha256." + k: v for k, v in manifest["files"].items()}})


@dataclass(frozen=True)
class AntibodyDataArgs(OutDir, SeedFlag):
    """``antibody-data``: ``--out-dir`` gets {labels,calibration,test}.tsv, train_contexts.npy (label
    lineages), heldout_contexts.npy (test lineages) and summary.json; ``--seed`` orders the lineages."""

    model: Path = field(metadata=h("hf model folder (its tokenizer encodes the sequences)"))
    tsv: Path = field(metadata=h("VH table with IMGT regions and a lineage column (resources/data/antibody/vh_public.tsv)"))
    calibration_fraction: float = field(metadata=h("share of the rows (whole lineages) for calibrating the samplers"))
    test_fraction: float = field(metadata=h(
        "share of the rows (whole lineages) for the head's val/test labels and the comparison's test contexts"))
    label_scopes: tuple[str, ...] = field(metadata=h(
        "what a label context may mask, one drawn per VH: cdr3 (CDR-H3), cdrs (the three CDRs), all (the whole VH)"))
    scope_weights: tuple[float, ...] = field(metadata=h("relative frequency of each --label-scopes entry"))


def antibody_data(args: AntibodyDataArgs, tracker) -> None:
    """Split by lineage (seeded), write each part's rows and the token files of the label contexts with
    their stamps (the model's token fingerprint; the maskable positions of each VH's drawn scope)."""
    rows = read_vh(args.tsv)
    assign_scopes(1, args.label_scopes, args.scope_weights, args.seed)  # bad scopes fail before any write
    parts = split_by_lineage(rows, {"test": args.test_fraction, "calibration": args.calibration_fraction}, args.seed)
    if any(not part for part in parts.values()):
        raise InputError(f"{args.tsv}: {len(rows)} rows are too few for the fractions given")
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in parts.items():
        write_vh(part, out / f"{name}.tsv")
    scopes = {}
    for k, (part, file) in enumerate(CONTEXT_FILES.items()):
        scopes[part] = assign_scopes(len(parts[part]), args.label_scopes, args.scope_weights, args.seed + k)
        write_label_contexts(backbone, parts[part], scopes[part], out / file, token_fingerprint(backbone))
    summary = {name: {"rows": len(p), "lineages": len({r.lineage for r in p})} for name, p in parts.items()}
    counts = {part: {s: sc.count(s) for s in args.label_scopes} for part, sc in scopes.items()}
    write_json(out / "summary.json", summary | {"seed": args.seed, "label_scopes": counts})
    print(", ".join(f"{n}: {s['rows']} rows in {s['lineages']} lineages" for n, s in summary.items()) + f" -> {out}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})


def write_label_contexts(backbone, rows: list, scopes: list[str], path: Path, fingerprint: str) -> None:
    """``path`` (.npy, ``(S, N)`` tokens of the VH), ``<stem>_maskable.npy`` (``(S, N)`` bool: the
    positions of each row's scope, :data:`mdm_mi.antibody.data.SCOPES`) and the ``.json`` stamp that
    names both the model's fingerprint and the maskable file (what ``label`` reads)."""
    tokens = backbone.encode([r.sequence for r in rows])
    maskable = backbone.encode([template(r, SCOPES[s]) for r, s in zip(rows, scopes)]) == backbone.mask_id
    write_npy(path, tokens.numpy())
    write_npy(path.with_name(f"{path.stem}_maskable.npy"), maskable.numpy())
    write_json(path.with_suffix(".json"), {"model_fingerprint": fingerprint, "maskable": f"{path.stem}_maskable.npy",
                                           "scopes": {s: scopes.count(s) for s in dict.fromkeys(scopes)}})


@dataclass(frozen=True)
class AntibodyCompareArgs(OutDir, SeedFlag, AntibodySweptFlags):
    """``antibody-compare``: ``--out-dir`` gets runs.json, budgets.csv, budgets.md and fills.npz (every run's test fills). The swept settings
    beyond Algorithm 1's are inherited (generated, ``AntibodySweptFlags``: defaults ``antibody.compare``'s)."""

    CONFIG_SECTIONS: ClassVar[tuple[str, ...]] = ("antibody.compare",)

    model: Path = field(metadata=h("hf model folder (AntiBERTy)"))
    head: Path | None = field(metadata=h("MI head folder trained on the model (MI-guided); none: no MI-guided family"))
    data_dir: Path = field(metadata=h("antibody-data's folder (calibration.tsv, test.tsv)"))
    set_name: str = field(metadata=h("cdr3 (CDR-H3, IMGT 105-117, masked and filled) or cdrs (all three CDRs)"))
    n_test: int | None = field(default=None, kw_only=True, metadata=h(
        "test contexts (one VH per lineage); none: every lineage of test.tsv", low=2))
    n_calibration: int | None = field(default=None, kw_only=True, metadata=h(
        "calibration contexts (one VH per lineage); none: every lineage of calibration.tsv"))
    fills: int = from_schema("antibody.compare.fills", "fills per context and setting (>= 2)", kw_only=True)
    divisors: tuple[int, ...] = from_schema("antibody.compare.divisors", "budgets: sequential's passes ÷ each", kw_only=True,
                                            min_items=1)
    samplers: tuple[str, ...] = from_schema("antibody.compare.samplers", "calibrated baselines compared (naive, eb, threshold)",
                                            kw_only=True)
    mi_lambda: tuple[float, ...] = from_schema("antibody.compare.mi_lambda",
                                               "MI-guided λ values, each calibrated; mi* picks per budget on calibration",
                                               kw_only=True)
    tv_head: Path | None = field(default=None, kw_only=True, metadata=h(
        "TV head folder (train-head --target tv on the same model): read by demask and mi-tv"))
    mi_on_reject: str = from_schema("antibody.compare.mi_on_reject", "MI-guided: skip | stop", kw_only=True)
    mi_charge_first: bool = from_schema("antibody.compare.mi_charge_first", "MI-guided: charge the first token's entropy to γ",
                                        kw_only=True)
    temperature: float = from_schema("antibody.compare.temperature", "sampling temperature of every fill", kw_only=True)
    threads: int = from_schema("threads", THREADS_HELP, kw_only=True)
    batch_size: int = from_schema("antibody.compare.batch_size", "templates per decode call", kw_only=True)
    margin: bool = from_schema("antibody.compare.margin",
                               "also decode sequentially in margin order (one position per pass; a reference)", kw_only=True)
    oracle_contexts: int = from_schema("antibody.compare.oracle_contexts",
                                       "first test contexts also filled by the exact-MI oracle (0: none)", kw_only=True,
                                       high=lambda a: a.n_test)  # none: at most test.tsv's lineages (checked on reading)
    oracle_divisors: tuple[int, ...] = from_schema("antibody.compare.oracle_divisors",
                                                   "budgets (among --divisors) at which the oracle runs", kw_only=True)
    oracle_tol: float = from_schema("antibody.compare.oracle_tol", "the oracle's certified probing tolerance (nats)",
                                    kw_only=True)
    chunks: Path | None = field(default=None, kw_only=True, metadata=h(
        "folder keeping every fill of each --batch-size templates and its scores: the same command rerun after a "
        "stop fills only what is missing (delete it after changing decoding or scoring code)"))


def antibody_compare(args: AntibodyCompareArgs, tracker) -> None:
    """Calibrate every family on the calibration contexts, fill the test contexts with each at each
    budget (same seed: common random numbers), score PLL and recovery, write the paired verdicts. With
    ``--chunks``, every fill and its scores are kept there (:func:`compare_filler`)."""
    _check_compare(args)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    pairwise = head_pairwise_fn(load_mi_head(args.head, "cpu", backbone, args.model)) if args.head else None
    tv_fn = head_pairwise_fn(load_mi_head(args.tv_head, "cpu", backbone, args.model, target="tv")) if args.tv_head else None
    test, calib = (InfillSet.from_tsv(backbone, Path(args.data_dir) / f"{part}.tsv", SETS[args.set_name], n, args.seed)
                   for part, n in (("test", args.n_test), ("calibration", args.n_calibration)))
    if len(test.ids) < 2 or args.oracle_contexts > len(test.ids):
        raise InputError(f"test.tsv gives {len(test.ids)} test contexts: need >= 2 and >= --oracle-contexts")
    filler = compare_filler(backbone, args)
    settings = {s.key: getattr(args, s.key) for s in swept_settings()}
    settings |= {"mi_on_reject": args.mi_on_reject, "mi_charge_first": args.mi_charge_first}
    most = max(max_masked(backbone, calib.tokens), max_masked(backbone, test.tokens))
    families = antibody_families(args.samplers, settings, pairwise is not None, tv_fn is not None, most)
    kept: dict = {}
    runs = calibrated_runs(filler, test, calib, families, args.divisors, args.fills, pairwise, tv_fn, kept)
    rows = contrast_rows(runs, args.set_name)
    oracle = OracleSettings(args.oracle_contexts, args.oracle_divisors, args.oracle_tol)
    references = {"margin": sequential_run(filler, test, args.fills, order="margin") if args.margin else None,
                  "oracle": oracle_runs(filler, test, runs, oracle, args.fills) if args.oracle_contexts else {}}
    native = float(pll_per_residue(backbone, test.native, test.positions).mean())
    sizes = {"set": args.set_name, "threads": args.threads, "n_test": len(test.ids), "n_calibration": args.n_calibration,
             "fills": args.fills, "divisors": list(args.divisors)}
    write_results(Path(args.out_dir), runs, rows, sizes, native, time.time() - t0, references, filler.store)
    write_fills(Path(args.out_dir) / "fills.npz", test, backbone, kept)
    tracker.log_metrics({"seconds": time.time() - t0})


def _check_compare(args: AntibodyCompareArgs) -> None:
    """``antibody-compare``'s flag checks that need no model (one-line errors)."""
    if args.set_name not in SETS:
        raise InputError(f"--set-name must be one of {', '.join(SETS)}, got {args.set_name!r}")
    refuse_quality({each.key: getattr(args, each.key) for _, each in swept_entries()})
    given = {HEAD: ("--head", args.head, "MI head"), TV_HEAD: ("--tv-head", args.tv_head, "TV head")}
    for name, each in swept_entries():
        pairwise = SAMPLERS[name].pairwise
        if getattr(args, each.key) and pairwise in given and not given[pairwise][1]:
            flag, _, what = given[pairwise]
            raise InputError(f"--{each.key.replace('_', '-')} needs {flag} ({name} reads the {what})")
    if args.oracle_contexts and (not args.head or not set(args.oracle_divisors) <= set(args.divisors)):
        raise InputError("the oracle needs --head and --oracle-divisors among --divisors")


def compare_filler(backbone, args: AntibodyCompareArgs) -> Filler:
    """How the comparison fills templates: its seed, temperature and batch size, and with ``--chunks`` a
    :class:`ChunkStore` there, keyed by the model's and heads' weights, the model's hidden layer, the
    device type, the seed and the temperature, in chunks of ``--batch-size`` templates (so a chunk is
    one decode batch: the fills equal a run's without ``--chunks``). Its decodes share one
    :class:`ForwardCache` (each template's first pass is computed once for every fill and setting)."""
    store = chunk_store(args.model, (args.head, args.tv_head), args.chunks, args.seed, args.temperature,
                        args.batch_size)
    return Filler(backbone, args.seed, args.temperature, args.batch_size, store, cache=ForwardCache())


@dataclass(frozen=True)
class FigureAntibodyMiArgs(SeedFlag):
    """``figure-antibody-mi``: ``--out`` (PNG) and ``--ranks`` (JSON: pair ranks, region shares, cost)."""

    model: Path = field(metadata=h("hf model folder (AntiBERTy)"))
    head: Path = field(metadata=h("MI head folder trained on the model"))
    data_dir: Path = field(metadata=h("antibody-data's folder (test.tsv)"))
    n_contexts: int = field(metadata=h("test VH (one per lineage; CDRs and the Cys pair masked) for the ranks"))
    exact_contexts: int = field(metadata=h("of those, how many are also probed exactly (1 + |M|·20 passes each)",
                                           low=1, high=lambda a: a.n_contexts))
    threads: int = field(metadata=h(THREADS_HELP))
    out: Path = field(metadata=h("output PNG: head MI beside exact MI for the first VH"))
    ranks: Path = field(metadata=h("output JSON: known pairs' ranks (head and exact), region shares, seconds"))


def figure_antibody_mi(args: FigureAntibodyMiArgs, tracker) -> None:
    """Head MI on ``n_contexts`` test VH, exact MI on the first ``exact_contexts``; ranks and the figure."""
    torch.set_num_threads(args.threads)
    rows = one_per_lineage(read_vh(Path(args.data_dir) / "test.tsv"), args.n_contexts, args.seed)
    backbone, meta = load_model(args.model, "cpu", DOMAIN)
    backbone = full_precision(backbone)
    head = load_mi_head(args.head, "cpu", backbone, args.model)
    ctx = P.masked_contexts(backbone, rows)
    t0 = time.time()
    head_mi = P.head_mi(backbone, head, ctx.tokens)
    t_head = time.time() - t0
    exact, passes = [], 0
    for b in range(args.exact_contexts):
        res = exact_mi(backbone, ctx.tokens[b])
        exact.append(res.label.float())
        passes += res.passes
    t_exact = time.time() - t0 - t_head
    exact_mi_ = torch.stack(exact)
    known = P.known_pairs(rows)
    sub = {k: v[: args.exact_contexts] for k, v in known.items()}
    result = {"n_contexts": len(rows), "exact_contexts": args.exact_contexts, "hidden_layer": meta.get("hidden_layer"),
              "head": P.named_pair_ranks(head_mi, ctx.masked, known),
              "head_on_exact_contexts": P.named_pair_ranks(head_mi[: args.exact_contexts], ctx.masked[: args.exact_contexts], sub),
              "exact": P.named_pair_ranks(exact_mi_, ctx.masked[: args.exact_contexts], sub),
              "head_vs_exact": P.agreement(head_mi[: args.exact_contexts], exact_mi_, ctx.masked[: args.exact_contexts]),
              "head_region_shares": P.region_shares(head_mi, ctx.masked, rows),
              "exact_region_shares": P.region_shares(exact_mi_, ctx.masked[: args.exact_contexts], rows[: args.exact_contexts]),
              "seconds_head": t_head, "seconds_exact": t_exact, "exact_passes": passes,
              "first_vh": rows[0].id}
    P.draw(rows[0], head_mi[0], exact_mi_[0], ctx.masked[0], args.out,
           f"{rows[0].id}: CDRs and the Cys pair masked; head vs exact probing MI (AntiBERTy)")
    write_json(args.ranks, result)
    print(json.dumps({k: result[k] for k in ("head", "exact")}, indent=1)[:3000])
    tracker.log_metrics({"seconds_exact": t_exact})
