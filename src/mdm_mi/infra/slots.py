"""GPU slots: give each concurrent job on one machine its own CUDA device.

``snakemake --cores 8 --resources gpu=2`` lets two GPU jobs run at once, but Snakemake does not say
which GPU each should use, so without help both would run on ``cuda:0``. When a job resolves its
device and more than one CUDA device is visible, it claims slot ``i`` (device ``cuda:i``) by taking
an exclusive, non-blocking ``fcntl.flock`` on ``<slot dir>/slot-<i>.lock``, trying ``i = 0, 1, ...``
in turn. The lock file stays open for the rest of the process, and the kernel drops the lock when
the process ends, however it ends (exit, exception, SIGKILL), so a crashed job never keeps its GPU.
When every slot is taken the job polls until one frees or a timeout passes, then fails with a one-line
error. With one visible device (a laptop, or a Slurm job that sees only the GPU it was given) the job
uses ``cuda:0`` and takes no lock.

Settings, from the environment:

- ``MDM_MI_SLOT_DIR``: the lock folder; default ``<tmp>/mdm-mi-gpu-slots-<uid>`` (one per user and
  machine, so runs from different working directories share it).
- ``MDM_MI_SIMULATED_GPUS``: pretend this many devices are visible (tests of the allocation on CPU).
- ``MDM_MI_SLOT_TIMEOUT``: seconds to wait for a free slot (default 3600).

    index = claim_slot()  # 0 .. n_devices-1; the same index on every later call in this process

Lock descriptors are not inherited by programs the job starts (Python opens them close-on-exec);
a child made by a bare ``fork`` shares the lock until it exits. This module imports torch only to
count devices; :func:`mdm_mi.infra.runtime.resolve_device` calls it.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TIMEOUT = 3600.0
POLL_SECONDS = 2.0


class SlotError(ValueError):
    """No slot could be had (timeout) or a slot setting is malformed; one line, for the user."""


_held: dict[str, int] = {}  # the claimed slot and its open lock file; kept open for the process lifetime


def slot_dir() -> Path:
    """The lock folder: ``$MDM_MI_SLOT_DIR``, else ``<tmp>/mdm-mi-gpu-slots-<uid>``."""
    configured = os.environ.get("MDM_MI_SLOT_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"mdm-mi-gpu-slots-{os.getuid()}"


def visible_devices() -> int:
    """How many CUDA devices this process sees: ``$MDM_MI_SIMULATED_GPUS`` when set, else torch's
    count (torch is imported only then)."""
    simulated = os.environ.get("MDM_MI_SIMULATED_GPUS")
    if simulated:
        if not simulated.isdigit():
            raise SlotError(f"MDM_MI_SIMULATED_GPUS must be a whole number, got {simulated!r}")
        return int(simulated)
    import torch  # lazy: a slot claim (and the tests' slot holders) runs before any model, torch-free

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _timeout_from_env() -> float:
    """``$MDM_MI_SLOT_TIMEOUT`` in seconds, else :data:`DEFAULT_TIMEOUT`."""
    text = os.environ.get("MDM_MI_SLOT_TIMEOUT", "")
    try:
        return float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise SlotError(f"MDM_MI_SLOT_TIMEOUT must be a number of seconds, got {text!r}") from None


def try_lock(path: Path) -> int | None:
    """Open ``path`` and take an exclusive lock without blocking; return the open descriptor, or
    None when another process holds it. The holder's pid is written into the file (for people
    looking at the folder; the lock, not the text, is what counts)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _try_all(folder: Path, n_devices: int) -> tuple[int, int] | None:
    """Lock the first free slot of ``0 .. n_devices-1``: ``(index, descriptor)``, or None if all
    are taken."""
    for index in range(n_devices):
        fd = try_lock(folder / f"slot-{index}.lock")
        if fd is not None:
            return index, fd
    return None


def claim_slot(
    n_devices: int | None = None,
    folder: str | Path | None = None,
    timeout: float | None = None,
    poll: float = POLL_SECONDS,
) -> int:
    """Claim a free device slot for this process and return its index (use ``cuda:<index>``).

    ``n_devices``, ``folder`` and ``timeout`` default to :func:`visible_devices`, :func:`slot_dir`
    and ``$MDM_MI_SLOT_TIMEOUT``. One device (or none) → 0 without locking. A process keeps the slot
    it claimed: later calls return it again. Raises :class:`SlotError` after ``timeout`` seconds
    without a free slot.
    """
    if "index" in _held:
        return _held["index"]
    n_devices = visible_devices() if n_devices is None else n_devices
    if n_devices <= 1:
        return 0
    folder = Path(folder) if folder is not None else slot_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    timeout = _timeout_from_env() if timeout is None else timeout
    claimed = _wait_for_slot(folder, n_devices, timeout, poll)
    _held["index"], _held["fd"] = claimed
    return claimed[0]


def _wait_for_slot(folder: Path, n_devices: int, timeout: float, poll: float) -> tuple[int, int]:
    """Poll :func:`_try_all` every ``poll`` seconds until a slot frees or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    claimed = _try_all(folder, n_devices)
    if claimed is None:
        print(f"all {n_devices} GPU slots in {folder} are taken; waiting up to {timeout:.0f} s for one "
              "to free", file=sys.stderr, flush=True)
    while claimed is None:
        if time.monotonic() >= deadline:
            raise SlotError(
                f"no free GPU slot after {timeout:.0f} s: all {n_devices} slots in {folder} are held "
                f"by other jobs; run with --resources gpu={n_devices} or fewer, or raise MDM_MI_SLOT_TIMEOUT"
            )
        time.sleep(poll)
        claimed = _try_all(folder, n_devices)
    return claimed


def release_slot() -> None:
    """Give back this process's slot now (it is given back at exit anyway); for tests and for
    long-lived processes that are done with the GPU."""
    fd = _held.pop("fd", None)
    _held.pop("index", None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor drops the flock
