"""The tracking-store verbs: ``init-tracking`` (run once, before parallel jobs track) and ``track``
(mirror the jobs' spooled records into MLflow; the workflow runs it when it ends).

    mdm-mi track --tracking-uri sqlite:///results/mlflow.db --experiment mdm-mi
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import write_json
from mdm_mi.infra.tracking import TrackingUnavailable, init_store, mirror_spool, spool_dir


@dataclass(frozen=True)
class InitTrackingArgs:
    uri: str = field(metadata={"help": "MLflow tracking URI: sqlite:///... (created here), http(s)://host:port "
                                       "(a server, checked here) or none"})
    experiment_name: str = field(metadata={"help": "experiment name"})
    out: Path = field(metadata={"help": "marker JSON written once the store exists"})


def init_tracking(args: InitTrackingArgs, tracker) -> None:
    """Create the store and experiment (sqlite schema migrations run once, here), then the marker;
    an unreachable tracking server is a one-line error, before any GPU job starts."""
    del tracker
    if args.uri not in ("", "none"):
        try:
            init_store(args.uri, args.experiment_name)
        except TrackingUnavailable as exc:
            raise InputError(str(exc)) from None
    write_json(args.out, {"uri": args.uri, "experiment": args.experiment_name})


TRACK_EXAMPLES = """examples:
  mdm-mi track --tracking-uri sqlite:///results/mlflow.db --experiment mdm-mi   # during a long run, too"""


@dataclass(frozen=True)
class TrackArgs:
    tracking_uri: str = field(metadata={"help": "the local MLflow store the jobs spooled for: sqlite:///<folder>/<name>.db "
                                                "(its records are in <folder>/<name>-spool/)"})
    experiment: str = field(metadata={"help": "mirror the records of this experiment (the config's tracking.experiment)"})


def track(args: TrackArgs, tracker) -> None:
    """Make (or bring up to date) one MLflow run per spooled job record; a store that cannot be used
    is one line, the store left as it was and the spool kept for a later try (exit code 0)."""
    del tracker
    if spool_dir(args.tracking_uri) is None:
        raise InputError(f"track mirrors a local store (sqlite:///...); jobs tracking to {args.tracking_uri!r} "
                         "log to it directly or not at all")
    try:
        made, kept = mirror_spool(args.tracking_uri, args.experiment)
    except TrackingUnavailable as exc:
        print(f"tracking skipped: {exc}", file=sys.stderr)
        return
    print(f"MLflow: {made} runs mirrored, {kept} up to date ({args.tracking_uri}, experiment {args.experiment})")
