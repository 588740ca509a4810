"""Imports every module that registers CLI verbs, plus the tracking-store verb."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi import figure_jobs, results  # noqa: F401  (register figures, gather)
from mdm_mi.cli import verb
from mdm_mi.io import write_json
from mdm_mi.mi import jobs as mi_jobs  # noqa: F401  (registers the MI verbs)
from mdm_mi.protein import compare_job as protein_compare_job, generate_job, report_jobs, jobs as protein_jobs  # noqa: F401
from mdm_mi.sudoku import compare_job, jobs as sudoku_jobs, oracle_job  # noqa: F401  (registers the Sudoku verbs)


@dataclass(frozen=True)
class InitTrackingArgs:
    uri: str = field(metadata={"help": "MLflow tracking URI: sqlite:///... (created here), http(s)://host:port "
                                       "(a server, checked here) or none"})
    experiment_name: str = field(metadata={"help": "experiment name"})
    out: Path = field(metadata={"help": "marker JSON written once the store exists"})


@verb("init-tracking", InitTrackingArgs, "create the MLflow store before parallel jobs write to it")
def init_tracking(args: InitTrackingArgs, tracker) -> None:
    """Create the store and experiment (sqlite schema migrations run once, here), then the marker;
    an unreachable tracking server is a one-line error, before any GPU job starts."""
    from mdm_mi.errors import InputError
    from mdm_mi.tracking import TrackingUnavailable, init_store

    del tracker
    if args.uri not in ("", "none"):
        try:
            init_store(args.uri, args.experiment_name)
        except TrackingUnavailable as exc:
            raise InputError(str(exc)) from None
    write_json(args.out, {"uri": args.uri, "experiment": args.experiment_name})
