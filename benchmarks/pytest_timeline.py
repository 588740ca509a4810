"""Where each pytest worker spends the test command's wall time: a pytest plugin that appends one
JSON line per test (start, end, CPU seconds of the worker and its waited-for children) to
``$TIMELINE_DIR/<worker>.jsonl``, and a summary of those files (per worker: its tests, last end,
summed wall and CPU, and each test over four seconds with its start, wall and CPU).

    mkdir -p /tmp/tl && TIMELINE_DIR=/tmp/tl PYTHONPATH=benchmarks pytest -q -n 2 --dist worksteal -p pytest_timeline
    python benchmarks/pytest_timeline.py /tmp/tl

It showed why the suite took 500 s on two workers with 820 s of test time: xdist's default ``load``
scheduling handed each worker a fixed share of the queue up front, so one worker ran the smoke DAG
and then four more slow tests while the other sat idle for its last 166 s; ``--dist worksteal``
(scripts/test.sh) lets the idle worker take queued tests (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

SHOWN_ABOVE_S = 4.0  # tests listed per worker: those over this many seconds


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.time(), _cpu()
    yield
    out = Path(os.environ.get("TIMELINE_DIR", ".")) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"
    with out.open("a") as f:
        f.write(json.dumps({"id": item.nodeid, "start": start, "end": time.time(), "cpu": _cpu() - cpu}) + "\n")


def summary(folder: Path) -> str:
    """Per worker: tests, first start and last end (seconds from the first start), summed wall and CPU,
    and each test over :data:`SHOWN_ABOVE_S` seconds (start, wall, CPU, id)."""
    rows = [dict(json.loads(line), worker=f.stem) for f in sorted(folder.glob("*.jsonl")) for line in f.open()]
    t0 = min(r["start"] for r in rows)
    lines = []
    for worker in sorted({r["worker"] for r in rows}):
        mine = sorted((r for r in rows if r["worker"] == worker), key=lambda r: r["start"])
        lines.append(f"{worker}: {len(mine)} tests, last end {mine[-1]['end'] - t0:.1f} s, summed wall "
                     f"{sum(r['end'] - r['start'] for r in mine):.0f} s, summed CPU {sum(r['cpu'] for r in mine):.0f} s")
        lines += [f"  {r['start'] - t0:7.1f} {r['end'] - r['start']:7.1f} cpu {r['cpu']:6.1f}  {r['id']}"
                  for r in mine if r["end"] - r["start"] > SHOWN_ABOVE_S]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
