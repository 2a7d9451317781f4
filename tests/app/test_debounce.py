"""Debounce through the App: configure(key=..., debounce=..., max_wait=...), driven by
run_until_idle() on the virtual clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import rota

MakeApp = Callable[[], rota.App]


def test_a_burst_of_enqueues_runs_once_with_the_last_arguments(
        make_app: MakeApp, clock: rota.VirtualClock) -> None:
    app = make_app()
    ran: list[int] = []

    @app.job("reindex", queue="q")
    def reindex(version: int) -> None:
        ran.append(version)

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    debounced = reindex.configure(key="reindex-42", debounce=5, max_wait=12)
    start = clock.now()
    # Given enqueues at 0, 3 and 6 s: one job, due 5 s after the last one
    first = debounced.enqueue(1)
    clock.advance(3)
    assert debounced.enqueue(2) == first
    assert app.run_until_idle() == 0  # due at 8 s, not yet
    clock.advance(3)
    assert debounced.enqueue(3) == first
    job = app.get_job(first)
    assert job is not None and job.due_at == start + timedelta(seconds=11)
    # When enqueues keep coming, the first enqueue + max_wait (12 s) is the latest it runs
    clock.advance(4)
    assert debounced.enqueue(4) == first
    clock.advance(1)
    assert app.run_until_idle() == 0 and ran == []
    clock.advance(1)  # 12 s
    assert app.run_until_idle() == 1
    # Then it ran once, with the last arguments
    assert ran == [4]
    # And the next enqueue makes a new job, due after the debounce
    later = debounced.enqueue(5)
    assert later != first
    clock.advance(5)
    assert app.run_until_idle() == 1 and ran == [4, 5]


def test_enqueue_many_of_one_key_makes_one_job_with_the_last_entry(
        make_app: MakeApp, clock: rota.VirtualClock) -> None:
    app = make_app()
    ran: list[tuple[str, int]] = []

    @app.job("reindex", queue="q")
    def reindex(what: str, version: int) -> None:
        ran.append((what, version))

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    debounced = reindex.configure(key="all", debounce=5)
    ids = debounced.enqueue_many([("a", 1), ("b", 2), {"args": ["c", 3], "key": "other"},
                                  ("d", 4)])
    assert ids[0] == ids[1] == ids[3] and ids[2] != ids[0]
    clock.advance(5)
    assert app.run_until_idle() == 2
    assert sorted(ran) == [("c", 3), ("d", 4)]


@pytest.mark.parametrize(("options", "message"), [
    ({"debounce": 5}, "give key= with it"),
    ({"max_wait": 60}, "give debounce="),
    ({"key": "k", "max_wait": 60}, "give debounce="),
    ({"key": "k", "debounce": 10, "max_wait": 5}, "max_wait 5 s and debounce 10 s"),
    ({"key": "k", "debounce": 0}, "debounce must be positive"),
    ({"key": "k", "debounce": -1}, "debounce must be positive"),
    ({"key": "k", "debounce": 5, "max_wait": float("inf")}, "max_wait must be a finite"),
    ({"key": "k", "debounce": 5, "delay": 3}, "leave out due= and delay="),
    ({"key": "k", "debounce": 5, "due": datetime(2026, 1, 1, tzinfo=UTC)},
     "leave out due= and delay="),
])
def test_bad_debounce_options_fail_at_configure(
        make_app: MakeApp, options: dict[str, object], message: str) -> None:
    app = make_app()
    job = app.job("j")(lambda: None)
    with pytest.raises(ValueError, match=message):
        job.configure(**options)  # type: ignore[arg-type]


def test_a_debounce_that_is_not_a_duration_is_a_type_error(make_app: MakeApp) -> None:
    app = make_app()
    job = app.job("j")(lambda: None)
    with pytest.raises(TypeError, match="debounce must be a timedelta or a number"):
        job.configure(key="k", debounce="5s")  # type: ignore[arg-type]


def test_debounce_takes_a_timedelta(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    app = make_app()
    job = app.job("j")(lambda: None)
    job_id = job.configure(key="k", debounce=timedelta(minutes=1),
                           max_wait=timedelta(minutes=1)).enqueue()
    found = app.get_job(job_id)
    assert found is not None and found.due_at == clock.now() + timedelta(minutes=1)
