"""Freed memory kept in the process (:mod:`mdm_mi.infra.memory`) against glibc's defaults, on real jobs:
each job's command run with ``MDM_MI_KEEP_FREED_MEMORY=0`` (glibc's defaults) and without it (the
CLI's setting), alternating, ``--rounds`` times each, in the folder that holds its inputs.

    python benchmarks/bench_freed_memory.py --cwd /tmp/mj --jobs family-compare 'label --split val --shard 0' \
        --outputs results/cpu-default/protein/family results/cpu-default/sudoku/labels/val/shard0.safetensors

``--jobs`` picks commands by words from ``snakemake -n -p -F`` of the folder's workflow (the first
command holding every word; the log redirection kept). Prints per run: wall seconds, user and system
CPU seconds of the job and its children, minor page faults, peak RSS (its largest process); then per job the ratio kept /
defaults of wall and CPU time, and whether the job's outputs (``--outputs``: a file or a folder per
job, in order) are the same after every run, as ``scripts/compare_results.py`` compares results
(timing fields aside; safetensors by their tensors; every other file byte for byte).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from compare_results import normalised  # noqa: E402  (the refactor check's "same outputs")

OFF = "MDM_MI_KEEP_FREED_MEMORY"
TIME = "/usr/bin/time"  # GNU time, for each run's peak memory


def planned_commands(cwd: Path) -> list[str]:
    """Every job command of the folder's workflow, as ``snakemake -n -p -F`` prints them."""
    out = subprocess.run(["snakemake", "-n", "-p", "-F", "--cores", "2"], cwd=cwd, capture_output=True, text=True,
                         check=True).stdout
    return [line.split("Shell command: ", 1)[1] for line in out.splitlines() if "Shell command: " in line]


def pick(commands: list[str], words: str) -> str:
    """The first ``python -m mdm_mi`` command holding every word of ``words``."""
    for cmd in commands:
        if "python -m mdm_mi" in cmd and all(w in cmd.split() for w in words.split()):
            return cmd
    raise SystemExit(f"bench_freed_memory: no planned command holds {words!r}")


def snapshot(out: Path) -> dict:
    """A file's or a folder's files' contents, as scripts/compare_results.py compares two results folders
    (timing fields aside, safetensors by their tensors), by path."""
    paths = [out] if out.is_file() else sorted(p for p in out.rglob("*") if p.is_file())
    return {p.relative_to(out.parent): normalised(p) for p in paths}


def run(cmd: str, cwd: Path, keep: bool) -> dict:
    """One run of ``cmd`` → wall, user, sys, faults (its children's, from this process's rusage), peak RSS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != OFF} | ({} if keep else {OFF: "0"})
    with tempfile.NamedTemporaryFile("r") as peak:  # GNU time's %M: the largest process's peak RSS, this run's
        before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([TIME, "-f", "%M", "-o", peak.name, "sh", "-c", cmd], cwd=cwd, env=env, check=True)
        wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        maxrss_kb = int(peak.read().split()[-1])
    return {"wall": wall, "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
            "faults": after.ru_minflt - before.ru_minflt, "maxrss_mb": maxrss_kb / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cwd", type=Path, required=True, help="a folder whose workflow has run (its results/ are the inputs)")
    ap.add_argument("--jobs", nargs="+", required=True, help="words picking each job's planned command")
    ap.add_argument("--outputs", nargs="+", type=Path, required=True, help="each job's output file or folder, under --cwd")
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    if len(a.outputs) != len(a.jobs):
        raise SystemExit("bench_freed_memory: one --outputs folder per --jobs entry")
    commands = planned_commands(a.cwd)
    print(f"# {platform.machine()}, {os.cpu_count()} cores; peak RSS: the run's largest process (GNU time)")
    for words, out in zip(a.jobs, a.outputs):
        cmd = pick(commands, words)
        print(f"\n{words}: {cmd.split(' > ')[0][:160]} ...")
        results, snapshots = {"defaults": [], "kept": []}, []
        for r in range(a.rounds):
            for mode in (("defaults", "kept") if r % 2 == 0 else ("kept", "defaults")):
                m = run(cmd, a.cwd, keep=mode == "kept")
                results[mode].append(m)
                snapshots.append(snapshot(a.cwd / out))
                print(f"  {mode:8s} wall {m['wall']:7.1f} s  user {m['user']:7.1f} s  sys {m['sys']:6.1f} s"
                      f"  faults {m['faults']:>9d}  peak RSS {m['maxrss_mb']:6.0f} MB")
        med = {mode: {k: statistics.median(x[k] for x in rs) for k in ("wall", "user", "sys")} for mode, rs in results.items()}
        cpu = {mode: m["user"] + m["sys"] for mode, m in med.items()}
        print(f"  kept / defaults: wall {med['kept']['wall'] / med['defaults']['wall']:.3f}, CPU {cpu['kept'] / cpu['defaults']:.3f}"
              f" (system {med['kept']['sys']:.1f} s vs {med['defaults']['sys']:.1f} s); outputs identical: {all(x == snapshots[0] for x in snapshots)}")


if __name__ == "__main__":
    main()
