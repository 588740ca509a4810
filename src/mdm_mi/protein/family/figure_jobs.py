"""The protein-family figure verbs: ``figure-family-covariation``, ``figure-family-pass-rate`` and
``figure-family-mi`` (drawing in :mod:`mdm_mi.protein.family.figures`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.core.backbone import ALIGNED, capabilities
from mdm_mi.models.domains import backbone_name
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import FigureOut, h as _h
from mdm_mi.infra.runtime import resolve_device
from mdm_mi.models.loading import load_model_and_head
from mdm_mi.protein.family.figures import (calibrated_points, covariation_figure, fixed_grid_points, head_matrix,
                                           map_agreement, match_positions, mi_map_figure, pass_rate_figure,
                                           read_covariation, read_input_json, square, to_match_columns, write_map_csv)
from mdm_mi.protein.family.scores import REFERENCE_ROWS, hmm_frame, read_splits
from mdm_mi.protein.flags import ProteinMiMapFlags


@dataclass(frozen=True)
class CovariationFigureArgs(FigureOut):
    scores: Path = field(metadata=_h("family-compare's scores.json (point estimates of every calibrated run)"))
    runs: Path = field(metadata=_h("protein-compare's runs.json (mean passes of every calibrated run)"))
    covariation: Path = field(metadata=_h("family-compare's covariation.csv (mi* minus each baseline, with intervals)"))
    references: tuple[Path, ...] = field(metadata=_h("family-score JSONs of the reference rows (ceiling, ardca, floor)"))


def _calibrated(scores_path: Path, runs_path: Path) -> tuple[list[dict], int]:
    """Calibrated points of family-compare's scores and protein-compare's runs → (points, n)."""
    scores = read_input_json(scores_path, "family-compare scores", ("n", "scores"))
    runs = read_input_json(runs_path, "protein-compare runs", ("runs",))["runs"]
    return [p | {"n": scores["n"]} for p in calibrated_points(scores["scores"], runs)], int(scores["n"])


def _reference_rows(scores: list[dict], flag: str) -> dict[str, dict]:
    """The reference rows (``scores.REFERENCE_ROWS``) of family-score JSONs, by row; a one-line error
    naming the flag when one is missing."""
    refs = {s["row"]: s for s in scores if s["row"] in REFERENCE_ROWS}
    if sorted(refs) != sorted(REFERENCE_ROWS):
        raise InputError(f"{flag} need the reference rows {', '.join(REFERENCE_ROWS)}; got {', '.join(sorted(refs)) or 'none'}")
    return refs


def figure_family_covariation(args: CovariationFigureArgs, tracker) -> None:
    keys = ("row", "corrected_mi_r", "c_ij_r", "hmm_pass_rate")
    refs = _reference_rows([read_input_json(p, "family score", keys) for p in args.references], "--references")
    points, n = _calibrated(args.scores, args.runs)
    title = (f"Kunitz family: co-variation with the reference at calibrated budgets ({n} sequences per run, "
             "realigned to the training HMM)")
    covariation_figure(points, read_covariation(args.covariation), refs, args.out, title)
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class PassRateFigureArgs(FigureOut):
    inputs: tuple[Path, ...] = field(metadata=_h("family-score JSONs: fixed-grid sampler rows and the reference rows"))
    scores: Path = field(metadata=_h("family-compare's scores.json (calibrated runs)"))
    runs: Path = field(metadata=_h("protein-compare's runs.json (mean passes of the calibrated runs)"))


def figure_family_pass_rate(args: PassRateFigureArgs, tracker) -> None:
    scores = [read_input_json(p, "family score", ("row", "sampler", "n", "hmm_pass_rate")) for p in args.inputs]
    grid, refs = fixed_grid_points(scores)
    _reference_rows(list(refs.values()), "--inputs")
    calibrated, n = _calibrated(args.scores, args.runs)
    title = f"Kunitz family: HMM pass rate at the 1st-percentile natural threshold ({n} sequences per point)"
    pass_rate_figure(grid, calibrated, refs, args.out, title)
    tracker.log_artifact(args.out)


@dataclass(frozen=True)
class FamilyMiArgs(ProteinMiMapFlags):
    data_dir: Path = field(metadata=_h("prepare-family's folder (the splits' .a2m files, summary.json)"))
    csv: Path = field(metadata=_h("output CSV: both maps over match-column pairs"))
    index: int = field(default=0, metadata=_h("reference-split record whose sequence is the context"))
    mask_fraction: float = field(default=0.9, metadata=_h("fraction of the context masked (labels: t ~ U[0, 1])",
                                                          low=0, above=True, high=1))
    seed: int = field(default=0, metadata=_h("seed of the mask and the MI shuffles"))


def figure_family_mi(args: FamilyMiArgs, tracker) -> None:
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)

    train, val, reference, _ = read_splits(args.data_dir)
    if args.index >= len(reference):  # >= 0: the validator's
        raise InputError(f"--index {args.index} is outside the {len(reference)} reference records")
    device = resolve_device(args.device)
    backbone, head = load_model_and_head(args.model, args.head, device, "protein")
    record = reference[args.index]
    if capabilities(backbone).frame == ALIGNED:  # it reads the Pfam match columns themselves
        ref_cols, frame = [r.columns for r in reference], "the alignment's"
        natural = square(fm.corrected_mi(ref_cols, args.seed, residues_only=True), len(record.columns))
        head_map, hidden = head_matrix(backbone, head, record.columns, args.mask_fraction, args.seed)
    else:
        hmm, _, ref_cols = hmm_frame(train, val, reference)
        frame = "the training HMM's"
        natural = square(fm.corrected_mi(ref_cols, args.seed, residues_only=True), hmm.M)
        pred, hidden = head_matrix(backbone, head, record.sequence, args.mask_fraction, args.seed)
        head_map = to_match_columns(pred, match_positions(fm.align_rows(hmm, [record.sequence])[0]))
    r, pairs = map_agreement(head_map, natural)
    title = (f"Kunitz context {record.name} (reference split, L={len(record.sequence)}, {hidden.mean():.0%} masked) "
             f"over {frame} {len(natural)} match columns\nPearson r of the two maps over the {pairs} pairs "
             f"shown on both: {r:.2f}; backbone: {backbone_name(args.model)}")
    mi_map_figure(head_map, natural, args.out, title, "MI head Î(X_i; X_j | context) (grey: gap or unmasked)",
                  f"reference split ({len(ref_cols)} sequences): bias-corrected column-pair MI, residues only")
    write_map_csv(args.csv, head_map, natural)
    tracker.log_params({"index": args.index, "mask_fraction": args.mask_fraction, "seed": args.seed})
    tracker.log_metrics({"map_pearson": r, "map_pairs": pairs})
    tracker.log_artifact(args.out)
    tracker.log_artifact(args.csv)

