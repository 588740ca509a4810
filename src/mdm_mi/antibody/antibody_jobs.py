"""The antibody verbs: ``import-antiberty`` (AntiBERTy's pickled weights → a checked ``hf`` model
folder with safetensors and a MANIFEST) and ``antibody-data`` (the VH TSV split by lineage into label
contexts, calibration and test, encoded for ``label``).

    python -m mdm_mi import-antiberty --source auto --out results/antibody/hf/model --hidden-layer -1
    python -m mdm_mi antibody-data --model results/antibody/hf/model --tsv resources/data/antibody/vh_public.tsv \
        --out-dir results/antibody/data --calibration-fraction 0.1 --test-fraction 0.2 --seed 0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.flags import OutDir, SeedFlag, h
from mdm_mi.infra.io import write_json

CONTEXT_FILES = {"labels": "labels_contexts.npy", "test": "test_contexts.npy"}  # what `label` masks


@dataclass(frozen=True)
class ImportAntibertyArgs:
    source: str = field(metadata=h(
        "auto (the installed antiberty package: pip install -e '.[antibody]'), the antiberty-0.1.3 wheel, "
        "or its package folder"))
    out: Path = field(metadata=h("model folder to write (safetensors, tokenizer, MANIFEST.json, meta.json)"))
    hidden_layer: int = field(metadata=h(
        "hidden_states index the MI head reads (Hugging Face numbering: 0 = embeddings, -1 = last layer)"))


def import_antiberty(args: ImportAntibertyArgs, tracker) -> None:
    """Convert once (pickle read with ``weights_only=True``), mark the folder as an ``hf`` model with
    the 20 amino acids as its alphabet, then load it and check it against the Backbone rules."""
    from mdm_mi.hf.antiberty import convert_antiberty, find_source, mark_and_check

    source = find_source(args.source)  # a missing source fails before anything is written
    manifest = convert_antiberty(source, Path(args.out))
    summary = mark_and_check(Path(args.out), args.hidden_layer)
    print(f"{args.out}: {manifest['name']} from {manifest['converted_from']}, {summary}")
    tracker.log_params({"source": str(args.source), "hidden_layer": args.hidden_layer,
                        **{"sha256." + k: v for k, v in manifest["files"].items()}})


@dataclass(frozen=True)
class AntibodyDataArgs(OutDir, SeedFlag):
    """``antibody-data``: ``--out-dir`` gets {labels,calibration,test}.tsv, labels_contexts.npy,
    test_contexts.npy and summary.json; ``--seed`` orders the lineages."""

    model: Path = field(metadata=h("hf model folder (its tokenizer encodes the sequences)"))
    tsv: Path = field(metadata=h("VH table with IMGT regions and a lineage column (resources/data/antibody/vh_public.tsv)"))
    calibration_fraction: float = field(metadata=h("share of the rows (whole lineages) for calibrating the samplers"))
    test_fraction: float = field(metadata=h(
        "share of the rows (whole lineages) for the head's val/test labels and the comparison's test contexts"))


def antibody_data(args: AntibodyDataArgs, tracker) -> None:
    """Split by lineage (seeded), write each part's rows and the token files of the label contexts."""
    from mdm_mi.antibody.data import LABEL_PART, read_vh, split_by_lineage, write_vh
    from mdm_mi.core.loading import load_model
    from mdm_mi.hf.backbone import DOMAIN

    rows = read_vh(args.tsv)
    parts = split_by_lineage(rows, {"test": args.test_fraction, "calibration": args.calibration_fraction}, args.seed)
    if any(not part for part in parts.values()):
        raise InputError(f"{args.tsv}: {len(rows)} rows are too few for the fractions given")
    backbone, _ = load_model(args.model, "cpu", DOMAIN)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in parts.items():
        write_vh(part, out / f"{name}.tsv")
    for name, file in CONTEXT_FILES.items():
        part = LABEL_PART if name == "labels" else name
        np.save(out / file, backbone.encode([r.sequence for r in parts[part]]).numpy())
    summary = {name: {"rows": len(p), "lineages": len({r.lineage for r in p})} for name, p in parts.items()}
    write_json(out / "summary.json", summary | {"seed": args.seed})
    print(", ".join(f"{n}: {s['rows']} rows in {s['lineages']} lineages" for n, s in summary.items()) + f" -> {out}")
    tracker.log_params({k: str(v) for k, v in dataclasses.asdict(args).items()})
