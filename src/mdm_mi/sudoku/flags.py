"""The flags both Sudoku decoding jobs (``sudoku-compare``, ``sudoku-oracle-ceiling``) share.

    @dataclass(frozen=True)
    class CeilingArgs(SudokuDecodeFlags, OracleCeilingFlags):
        compare_dir: Path = field(metadata=h("a sudoku-compare output folder"))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mdm_mi.infra.flags import DeviceThreadsFlags, OutDir, h


@dataclass(frozen=True, kw_only=True)
class SudokuDecodeFlags(OutDir, DeviceThreadsFlags):
    """The backbone, how many puzzles decode together (each verb gives ``--batch-size`` its own schema
    default: ``infra.flags.shared_from_schema``), where and on what: the output folder, the device and
    the CPU threads."""

    model: Path = field(metadata=h("Sudoku backbone checkpoint folder"))
    batch_size: int = field(metadata=h("puzzles decoded together"))
