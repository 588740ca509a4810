"""Progress lines in long jobs' logs (issue 52): what, how far, elapsed and time left."""

from mdm_mi.infra.progress import Progress


def test_a_progress_line_says_what_how_far_and_how_long_left():
    now = [100.0]
    line = Progress("context", 1200, clock=lambda: now[0])
    now[0] += 252.0  # 705 contexts in 4m12s → 495 more at the same rate: 2m57s
    assert line(705) == "context 705/1200 (59%), 4m12s elapsed, ~2m57s left"
    assert line(1200) == "context 1200/1200 (100%), 4m12s elapsed"
    now[0] += 7200
    assert line(1).startswith("context 1/1200 (0%), 2h04m elapsed, ~")
