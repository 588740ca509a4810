"""The tracking-store verb ``init-tracking`` (run once, before parallel jobs write to MLflow)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import write_json
from mdm_mi.infra.tracking import TrackingUnavailable, init_store


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
