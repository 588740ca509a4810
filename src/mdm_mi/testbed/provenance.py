"""Where a result came from: the command, the git commit, the machine, the date and the CPU time.

    record = provenance(cpu_seconds=time.process_time() - started)   # a dict for provenance.json
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import torch

from mdm_mi.infra.runtime import cpu_model

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/mdm_mi: git runs from here


def git(*args: str) -> str:
    """The output of ``git args`` run in the package's checkout, or '' when git or the checkout is absent."""
    try:
        done = subprocess.run(["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def command() -> str:
    """This process's command line, ``mdm-mi`` standing for the entry point or ``python -m mdm_mi``."""
    return shlex.join(["mdm-mi", *sys.argv[1:]])


def provenance(cpu_seconds: float) -> dict:
    """The command, commit (and whether src/ had uncommitted changes), machine, UTC date, CPU seconds."""
    return {"command": command(), "git_commit": git("rev-parse", "HEAD"),
            "src_dirty": bool(git("status", "--porcelain", "--", str(PACKAGE_DIR))),
            "machine": {"platform": platform.platform(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                        "python": platform.python_version(), "torch": torch.__version__},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu_seconds": round(cpu_seconds, 1)}
