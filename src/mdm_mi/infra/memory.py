"""Keep freed memory in the process instead of handing it back to the kernel at every free.

glibc's malloc serves a large block (above a threshold that grows to at most 32 MB) with its own
``mmap`` and unmaps it when freed, so a loop that allocates and frees the same large arrays every
iteration (a decode pass's activations, the jackknife's count tables) page-faults every page of them
back in each time: the kernel zeroes each page, which shows up as system time. Measured on the
main job's jobs (docs/benchmarks.md, "Memory the jobs keep"): ``family-compare`` spent 94 of its
296 CPU-seconds in the kernel, 5 with the settings below, its outputs byte for byte the same.

:func:`keep_freed_memory` (called once by the CLI) tells glibc never to ``mmap`` a block and to keep
up to :data:`TRIM_THRESHOLD` bytes of freed heap, in this process through ``mallopt`` and in the
processes it starts (spawned workers) through the environment variables glibc reads at start-up. A
variable the user already set wins, for both; ``MDM_MI_KEEP_FREED_MEMORY=0`` turns it all off
(``benchmarks/bench_freed_memory.py`` compares the two). No effect (and no error) where the C library
is not glibc. The cost: freed memory stays with the process for reuse instead of going back to the
system (the measured peaks did not grow; a job's transient peak is held until it exits).
"""

from __future__ import annotations

import ctypes
import os

# mallopt parameters (glibc's malloc.h) and the environment variable each one reads at start-up
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
MMAP_MAX = 0  # no block gets its own mmap: every block comes from the heap and goes back to it
TRIM_THRESHOLD = 2**31 - 1  # bytes of free heap top kept before trimming (mallopt takes an int)
OFF = "MDM_MI_KEEP_FREED_MEMORY"  # "0": leave glibc's defaults
SETTINGS = {"MALLOC_MMAP_MAX_": (M_MMAP_MAX, MMAP_MAX), "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, TRIM_THRESHOLD)}


def keep_freed_memory(environ=os.environ) -> dict[str, int]:
    """Apply :data:`SETTINGS` to this process (``mallopt``) and to its future children (``environ``),
    except those the user set already → the settings applied, by variable name (empty where
    ``mallopt`` is missing: not glibc, or with ``environ[OFF] == "0"``)."""
    mallopt = _mallopt()
    if mallopt is None or environ.get(OFF) == "0":
        return {}
    applied = {}
    for name, (param, value) in SETTINGS.items():
        if name in environ:
            continue  # the user's own choice, which glibc read at this process's start
        if mallopt(param, value) == 1:  # mallopt returns 1 on success
            environ[name] = str(value)
            applied[name] = value
    return applied


def _mallopt():
    """glibc's ``mallopt(int, int) -> int``, or None."""
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn
