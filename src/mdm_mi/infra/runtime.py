"""Device and thread selection shared by every job.

``resolve_device`` turns the ``--device`` flag into a torch device name. When a job asks for a GPU
(``auto`` with one visible, or ``cuda``) and several are visible, it claims its own device through
:mod:`mdm_mi.infra.slots`, so parallel jobs (``snakemake --resources gpu=2``) spread over the GPUs.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

import torch

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.slots import SlotError, claim_slot, visible_devices

CPUINFO = Path("/proc/cpuinfo")

INDEXED_CUDA = re.compile(r"cuda:(\d+)")


def resolve_device(name: str) -> str:
    """``auto`` → a GPU when one is visible, else ``cpu``; ``cuda`` → a GPU or an error.

    A GPU is ``cuda:<i>`` with ``i`` a free slot when several devices are visible (see
    :mod:`mdm_mi.infra.slots`), else ``cuda:0``. ``cuda:<i>`` names a device directly and takes no slot.
    """
    if name == "cpu":
        return name
    if name == "auto" and not torch.cuda.is_available():
        return "cpu"
    if name in ("auto", "cuda"):
        _require_cuda(name)
        return _claim_gpu()
    match = INDEXED_CUDA.fullmatch(name)
    if match is None:
        raise InputError(f"device must be auto, cpu, cuda or cuda:<index>, got {name!r}")
    _require_cuda(name)
    index, count = int(match.group(1)), torch.cuda.device_count()
    if index >= count:
        raise InputError(f"device {name!r} requested but only {count} CUDA GPU(s) are visible")
    return name


def _require_cuda(name: str) -> None:
    """Raise a one-line :class:`InputError` when no GPU is visible."""
    if not torch.cuda.is_available():
        raise InputError(f"device {name!r} requested but no CUDA GPU is visible; use device: auto or cpu")


def _claim_gpu() -> str:
    """``cuda:<slot>``, also made torch's current device (so code that says just ``cuda`` agrees)."""
    try:
        index = claim_slot(visible_devices())
    except SlotError as exc:
        raise InputError(str(exc)) from None
    torch.cuda.set_device(index)
    return f"cuda:{index}"


def setup(threads: int, seed: int) -> None:
    """Fix torch's CPU thread count and global seed for a job."""
    torch.set_num_threads(max(1, threads))
    torch.manual_seed(seed)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (``platform.processor()`` where there is none): result
    files name the machine their timings were taken on."""
    try:
        for line in CPUINFO.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()
