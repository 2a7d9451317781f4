"""The spans side record (chaos_app.py `hold`) as the network scenarios read it: runs
paired from their start and end lines, and overlapping runs of one job found."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.conftest import Run, hold_runs, overlapping_runs


def test_runs_pair_their_start_and_end_lines_whatever_lines_come_between(
        tmp_path: Path) -> None:
    spans = tmp_path / "spans.log"
    spans.write_text(
        "start aaa 7 1 100 10.0 0\n"
        "start bbb 8 1 200 10.5 1\n"
        "end aaa 12.0 done\n"
        "start ccc 7 2 200 13.0 0\n"
        "end ccc 13.5 stopped\n"
    )
    assert hold_runs(spans) == [
        Run(7, 1, 100, 0, 10.0, 12.0, "done"),
        Run(8, 1, 200, 1, 10.5),  # no end yet: still running
        Run(7, 2, 200, 0, 13.0, 13.5, "stopped"),
    ]
    assert hold_runs(tmp_path / "missing.log") == []


def test_only_runs_of_one_job_running_at_the_same_moment_overlap() -> None:
    first = Run(1, 1, 100, 0, 10.0, 12.0, "done")
    beside = Run(1, 2, 200, 0, 11.0, 13.0, "done")  # starts before `first` ends
    after = Run(1, 3, 200, 0, 12.0, 14.0, "done")  # starts as `first` ends: no overlap
    other_job = Run(2, 1, 200, 1, 10.0, 12.0, "done")
    assert overlapping_runs([first, after, other_job]) == []
    assert overlapping_runs([first, beside, other_job]) == [(first, beside)]


def test_a_run_that_never_ended_overlaps_every_later_run_of_its_job() -> None:
    unended = Run(1, 1, 100, 0, 10.0)
    later = Run(1, 2, 200, 0, 50.0, 51.0, "done")
    earlier = Run(1, 0, 300, 0, 1.0, 2.0, "done")
    assert overlapping_runs([earlier, unended, later]) == [(unended, later)]
