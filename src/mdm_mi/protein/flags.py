"""The flags several protein verbs share (the decoding flags are :mod:`mdm_mi.protein.decode_flags`'s).

    @dataclass(frozen=True)
    class FamilyMiArgs(ProteinMiMapFlags):
        data_dir: Path = field(metadata=h("prepare-family's folder"))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.flags import DeviceFlag, FigureOut, OutDir, SeededRunFlags, h
from mdm_mi.protein.decode_flags import DecodeFlags


@dataclass(frozen=True, kw_only=True)
class ProteinModelFlag:
    """``--model`` of a verb that reads a trained protein model."""

    model: Path = field(metadata=h("protein model folder"))


@dataclass(frozen=True, kw_only=True)
class ProteinMiMapFlags(ProteinModelFlag, FigureOut, DeviceFlag):
    """What both protein MI-map figures (``figure-protein-mi``, ``figure-family-mi``) take: the model,
    its MI head, the device and the output PNG."""

    head: Path = field(metadata=h("MI head folder"))


@dataclass(frozen=True, kw_only=True)
class ProteinDecodeJobFlags(DecodeFlags, OutDir, SeededRunFlags):
    """What both protein decoding jobs (``protein-compare(-part)``, ``protein-oracle-ceiling``) take
    besides their own flags: the backbone, how it decodes, the output folder, seed, device and threads."""

    model: Path = field(metadata=h("sequence model folder: a protein checkpoint, or a folder marked by import-hf"))
