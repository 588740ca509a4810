"""Shipped backbones: a checkpoint made by the ``sudoku-pretrain`` verb, copied to ``resources/pretrained/``
with a ``MANIFEST.json`` (sha256 of every file, the command, config, seed, data hash and evaluation),
and imported into a run's ``results/<name>/sudoku/model`` after its hashes are checked.

    mdm-mi export-pretrained --model results/cpu-default/sudoku/model --data .../train_solutions.npy \\
        --out resources/pretrained/sudoku --about about.json
    mdm-mi import-pretrained --source resources/pretrained/sudoku --out results/x/sudoku/model
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.checkpoint import MANIFEST, META, WEIGHTS, load_checkpoint, sha256_file, verify_manifest
from mdm_mi.errors import InputError
from mdm_mi.flags import h
from mdm_mi.io import atomic_path, read_json, write_json

SHIPPED = (WEIGHTS, META)


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy one file so that ``dst`` is either absent or complete."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


@dataclass(frozen=True)
class ExportPretrainedArgs:
    model: Path = field(metadata=h("checkpoint folder written by `sudoku-pretrain` (model.safetensors + meta.json)"))
    data: Path = field(metadata=h("the training data it was trained on (its sha256 goes in the manifest)"))
    out: Path = field(metadata=h("folder to ship, e.g. resources/pretrained/sudoku"))
    about: Path = field(metadata=h("JSON with how it was made and measured: command, config, evaluation, ..."))


def export_pretrained(args: ExportPretrainedArgs, tracker) -> None:
    """Copy the checkpoint, then write the manifest last (a folder without one is not shipped)."""
    load_checkpoint(args.model)  # refuse a broken checkpoint before copying anything
    about = read_json(args.about)
    if not isinstance(about, dict):
        raise InputError(f"--about {args.about} must hold a JSON object")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        copy_atomic(args.model / name, args.out / name)
    manifest = about | {"files": {name: sha256_file(args.out / name) for name in SHIPPED},
                        "data_sha256": sha256_file(args.data)}
    write_json(args.out / MANIFEST, manifest)
    verify_manifest(args.out)
    tracker.log_params({"files." + k: v for k, v in manifest["files"].items()})
    print(f"shipped {args.model} to {args.out}")


@dataclass(frozen=True)
class ImportPretrainedArgs:
    source: Path = field(metadata=h("a shipped backbone folder with its MANIFEST.json"))
    out: Path = field(metadata=h("the run's model folder, e.g. results/cpu-default/sudoku/model"))


def import_pretrained(args: ImportPretrainedArgs, tracker) -> None:
    """Check the shipped files against the manifest, copy them (meta.json last) and check the copy."""
    if not (args.source / MANIFEST).is_file():
        raise InputError(f"no {MANIFEST} in {args.source}: not a shipped backbone (see resources/pretrained/)")
    manifest = verify_manifest(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:  # meta.json last: the rule's output that marks the model as present
        copy_atomic(args.source / name, args.out / name)
    for name in SHIPPED:
        if sha256_file(args.out / name) != manifest["files"][name]:
            raise InputError(f"copy of {name} into {args.out} does not match its manifest hash")
    tracker.log_params({"source": str(args.source), **{"sha256." + k: v for k, v in manifest["files"].items()}})
    print(f"imported {args.source} ({manifest.get('name', 'unnamed')}) into {args.out}")
