"""mdm_mi.infra.memory: freed memory kept in the process, its workers told the same, the user's own
setting left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from mdm_mi.infra.memory import SETTINGS, _mallopt, keep_freed_memory

glibc = pytest.mark.skipif(_mallopt() is None, reason="mallopt is glibc's")

# a block far above glibc's largest mmap threshold (32 MB), allocated and freed 8 times: page faults
FAULTS = textwrap.dedent("""
    import resource, sys
    from mdm_mi.infra.memory import keep_freed_memory
    applied = keep_freed_memory() if sys.argv[1] == "keep" else {}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(8):
        block = b"x" * 2**26  # 64 MB, every page written (numpy would ask for huge pages)
        del block
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, len(applied))
""")


def _faults(mode: str) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], env=env, capture_output=True, text=True, check=True)
    faults, applied = out.stdout.split()
    return int(faults), int(applied)


@glibc
def test_a_freed_large_block_is_reused_without_page_faults():
    plain, _ = _faults("plain")
    kept, applied = _faults("keep")
    pages = 64 * 2**20 // 4096
    assert applied == len(SETTINGS)
    assert plain >= 8 * pages * 0.9  # each allocation maps (and faults in) its pages anew
    assert kept <= 2 * pages, (kept, plain)  # the first allocation's pages serve the other seven


@glibc
def test_children_inherit_the_settings_and_the_users_own_wins():
    environ = {"MALLOC_TRIM_THRESHOLD_": "12345"}
    applied = keep_freed_memory(environ)
    assert applied == {"MALLOC_MMAP_MAX_": 0}
    assert environ == {"MALLOC_TRIM_THRESHOLD_": "12345", "MALLOC_MMAP_MAX_": "0"}
    assert keep_freed_memory(environ) == {}  # set once: a second call changes nothing


def test_turned_off_nothing_is_applied():
    environ = {"MDM_MI_KEEP_FREED_MEMORY": "0"}
    assert keep_freed_memory(environ) == {} and environ == {"MDM_MI_KEEP_FREED_MEMORY": "0"}


def test_without_glibc_nothing_is_applied(monkeypatch):
    import mdm_mi.infra.memory as memory

    monkeypatch.setattr(memory, "_mallopt", lambda: None)
    environ: dict[str, str] = {}
    assert memory.keep_freed_memory(environ) == {} and environ == {}
