"""Progress lines a person can read in a job's log: what, how far, how long so far and how long left.

    line = Progress("context", total=1200)
    print(line(705))   # context 705/1200 (59%), 4m12s elapsed, ~2m57s left
"""

from __future__ import annotations

import time


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """Formats ``what done/total (pct), elapsed, ~left`` from the time since it was made (the time
    left assumes the remaining items cost what the finished ones did on average)."""

    def __init__(self, what: str, total: int, clock=time.monotonic):
        self.what, self.total, self.clock, self.start = what, total, clock, clock()

    def __call__(self, done: int) -> str:
        elapsed = self.clock() - self.start
        line = f"{self.what} {done}/{self.total} ({100 * done / max(self.total, 1):.0f}%), {_clock(elapsed)} elapsed"
        if 0 < done < self.total:
            line += f", ~{_clock(elapsed / done * (self.total - done))} left"
        return line
