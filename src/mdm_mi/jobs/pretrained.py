"""Shipped backbones: a checkpoint made by the ``sudoku-pretrain`` or ``protein-pretrain`` verb, copied to
``resources/pretrained/`` with a ``MANIFEST.json`` (sha256 of every file and of the training data, the
command, config, seed and evaluation), and imported into a run's ``results/<name>/<domain>/model``
after its hashes are checked — and, given the run's own training data, after checking that the
backbone was trained on exactly that data (so no held-out or reference item was trained on).

    mdm-mi export-pretrained --model results/cpu-default/sudoku/model --data .../train_solutions.npy \\
        --out resources/pretrained/sudoku --about about.json
    mdm-mi import-pretrained --source resources/pretrained/sudoku --out results/x/sudoku/model \\
        --data results/x/sudoku/data/train_solutions.npy
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.core.fallbacks import KEY, block_problems
from mdm_mi.core.sampler_table import ALGORITHM_1, SAMPLERS
from mdm_mi.infra.checkpoint import MANIFEST, META, WEIGHTS, load_checkpoint, sha256_file, verify_manifest
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import h
from mdm_mi.infra.validate import FOLDER, OUT_FOLDER
from mdm_mi.infra.io import atomic_path, read_json, write_json

SHIPPED = (WEIGHTS, META)


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy one file so that ``dst`` is either absent or complete."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


@dataclass(frozen=True)
class ExportPretrainedArgs:
    model: Path = field(metadata=h("checkpoint folder written by `sudoku-pretrain` or `protein-pretrain` (model.safetensors + meta.json)"))
    data: Path = field(metadata=h("the training data it was trained on (its sha256 goes in the manifest)"))
    out: Path = field(metadata=h("folder to ship, e.g. resources/pretrained/sudoku", kind=OUT_FOLDER))
    about: Path = field(metadata=h(
        "JSON with how it was made and measured: command, config, evaluation, ..., and 'calibrated' (the "
        "settings its calibration found: at, samplers, source; the user verbs' fallbacks, mdm_mi.core.fallbacks)"))


def export_pretrained(args: ExportPretrainedArgs, tracker) -> None:
    """Copy the checkpoint, then write the manifest last (a folder without one is not shipped)."""
    load_checkpoint(args.model)  # refuse a broken checkpoint before copying anything
    about = read_json(args.about)
    if not isinstance(about, dict):
        raise InputError(f"--about {args.about} must hold a JSON object")
    if KEY in about and (problems := block_problems(about[KEY], SAMPLERS, ALGORITHM_1)):
        raise InputError(f"--about {args.about}: its '{KEY}' block is wrong: {'; '.join(problems)}")
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
    source: Path = field(metadata=h("a shipped backbone folder with its MANIFEST.json", kind=FOLDER))
    out: Path = field(metadata=h("the run's model folder, e.g. results/cpu-default/sudoku/model", kind=OUT_FOLDER))
    data: Path | None = field(default=None, metadata=h(
        "the run's training data; refused unless its sha256 is the manifest's data_sha256"))


def import_pretrained(args: ImportPretrainedArgs, tracker) -> None:
    """Check the shipped files against the manifest, copy them and the manifest (meta.json last) and
    check the copy. The manifest's ``calibrated`` block (:mod:`mdm_mi.core.fallbacks`) gives the user
    verbs their fallbacks for this backbone."""
    if not (args.source / MANIFEST).is_file():
        raise InputError(f"no {MANIFEST} in {args.source}: not a shipped backbone (see resources/pretrained/)")
    manifest = verify_manifest(args.source)
    if args.data is not None:
        check_training_data(manifest, args.data, args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    copy_atomic(args.source / MANIFEST, args.out / MANIFEST)  # its calibrated block: the user verbs' fallbacks
    for name in SHIPPED:  # meta.json last: the rule's output that marks the model as present
        copy_atomic(args.source / name, args.out / name)
    for name in SHIPPED:
        if sha256_file(args.out / name) != manifest["files"][name]:
            raise InputError(f"copy of {name} into {args.out} does not match its manifest hash")
    tracker.log_params({"source": str(args.source), **{"sha256." + k: v for k, v in manifest["files"].items()}})
    print(f"imported {args.source} ({manifest.get('name', 'unnamed')}) into {args.out}")


def check_training_data(manifest: dict, data: Path, source: Path) -> None:
    """Refuse a backbone trained on other data than this run's training split: its held-out and
    reference items might then have been trained on."""
    if not data.is_file():
        raise InputError(f"--data {data} does not exist")
    digest = sha256_file(data)
    if manifest.get("data_sha256") != digest:
        raise InputError(f"{source} was trained on other data than {data} (sha256 {digest[:12]}… vs "
                         f"{str(manifest.get('data_sha256'))[:12]}…): its held-out items may overlap; "
                         "set backbone: trained to train on this run's data")
