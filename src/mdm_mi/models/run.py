"""What the user verbs (and the workflow verbs that double as user verbs) share: the model-location
flags, loading a backbone and its MI head (through :mod:`mdm_mi.models.loading`), progress bars, notes
on stderr and reading input files.

    backbone, path, _ = load_backbone_for(args, "sudoku", device)   # --model, else found in results/
    head = load_head_for(args, backbone, path, "sudoku", device)  # --head, else the one beside it
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from mdm_mi.core.fallbacks import Calibrated, read_calibrated
from mdm_mi.core.sampler_table import HEAD, ORACLE
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h
from mdm_mi.infra.runtime import resolve_device
from mdm_mi.models.loading import SEQUENCES, load_mi_head, load_model
from mdm_mi.models.locate import DEFAULT_RESULTS, find_head, find_model
from mdm_mi.mi.pairwise import pairwise_source
from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn

MODEL_GROUP = "model (found in the workflow's results/ unless given)"


@dataclass(frozen=True, kw_only=True)
class ModelFlags:
    """Where the trained models are and how to run them; inherited by every user verb."""

    model: Path | None = field(default=None, metadata=h(
        "backbone checkpoint folder; default: the newest results/*/<domain>/model", group=MODEL_GROUP))
    head: Path | None = field(default=None, metadata=h(
        "MI head checkpoint folder; default: the head beside the model", group=MODEL_GROUP))
    run: str | None = field(default=None, metadata=h(
        "use results/RUN/ (a config's name:, e.g. cpu-default); default: $MDM_MI_RUN, else the newest",
        group=MODEL_GROUP))
    results: Path = field(default=DEFAULT_RESULTS, metadata=h("the workflow's results folder", group=MODEL_GROUP))
    device: str = field(default="auto", metadata=h("auto | cpu | cuda", group=MODEL_GROUP))
    threads: int = field(default=0, metadata=h("torch CPU threads; 0 = torch's default", group=MODEL_GROUP))
    quiet: bool = field(default=False, metadata=h("no progress bars or notes on stderr", group=MODEL_GROUP))


def start(args, seed: int = 0) -> str:
    """Apply ``--threads`` (>= 0: the validator's) and the seed → the device to run on."""
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(seed)
    return resolve_device(args.device)


def model_path(args, domain: str) -> Path:
    """``--model``, else the trained ``domain`` model found under ``--results``."""
    return Path(args.model) if args.model is not None else find_model(domain, args.results, args.run)


def calibrated_for(args, domain: str):
    """A function reading the calibrated settings of the model ``args`` names (``--model``, else the
    one found in results/), for :func:`mdm_mi.sampling.registry.sampler_from_args`: called only when
    a sampler parameter is omitted, so bad flags fail before any model is looked for."""
    return lambda: read_calibrated(model_path(args, domain))


def load_backbone_for(args, domain: str, device: str):
    """Load the ``domain`` backbone of ``args`` (``--model``, else found in results/) → ``(backbone, its
    folder, its domain)``, through :func:`mdm_mi.models.loading.load_model`; ``domain`` may be
    :data:`~mdm_mi.models.loading.SEQUENCES` (any sequence model; a protein model when none is given)."""
    path = model_path(args, "protein" if domain == SEQUENCES else domain)
    backbone, meta = load_model(path, device, domain)
    return backbone, path, meta["domain"]


def load_head_for(args, backbone, model: Path, domain: str, device: str):
    """The MI head of ``args`` (``--head``, else the one trained beside ``model``), checked to read
    hidden states of the backbone's width ``D`` (:func:`mdm_mi.models.loading.load_mi_head`)."""
    path = Path(args.head) if args.head is not None else find_head(domain, args.results, args.run, model=model)
    return load_mi_head(path, device, backbone, model)


@contextmanager
def pairwise_from_args(args, backbone, model_dir, domain: str, device):
    """The ``pairwise_fn`` of ``args.sampler`` while this is open, by the one dispatcher
    (:func:`mdm_mi.mi.pairwise.pairwise_source`): a sampler reading the MI head gets the trained head
    (``--head``, else the one beside ``model_dir``; loaded only then, no extra pass), ``mi-oracle`` the
    model probed exactly (``--oracle-tol``), DAPD the attention of each pass; else ``None``.

        with pairwise_from_args(args, backbone, model_dir, "sudoku", device) as pairwise:
            result = decode(backbone, tokens, sampler, pairwise_fn=pairwise)
    """
    loaders = {HEAD: lambda: head_pairwise_fn(load_head_for(args, backbone, model_dir, domain, device)),
               ORACLE: lambda: oracle_pairwise_fn(backbone, method="certified", tol=args.oracle_tol)}
    with pairwise_source(backbone, args.sampler, loaders=loaders) as fn:
        yield fn


def progress(total: int, desc: str, quiet: bool, unit: str = "puzzle"):
    """A tqdm bar on stderr; off with ``--quiet`` or when stderr is not a terminal."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                disable=quiet or not sys.stderr.isatty())


def note(text: str, quiet: bool) -> None:
    """One line for the user on stderr (results go to stdout)."""
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def check_outputs(*paths: Path | str | None) -> None:
    """Refuse output paths that are folders (before any work is done; None = not written)."""
    for path in paths:
        if path is not None and Path(path).is_dir():
            raise InputError(f"output {path} is a folder; give a file name")

