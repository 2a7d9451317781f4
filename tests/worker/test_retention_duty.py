"""The retention duty alone: no runtime, a virtual clock, fake pauses, every store."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

import rota
from rota.core.jobs import JobState, NewJob
from rota.store import Store, open_store
from rota.store.base import StoreError
from rota.worker.retention import MIN_PAUSE_S, RetentionDuty, purge_finished
from tests.conftest import START

DAY = timedelta(days=1)
LEASE = timedelta(minutes=1)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def finish(store: Store, outcome: str, count: int, at: datetime) -> list[int]:
    """Enqueue `count` jobs and take them to `outcome` at `at`; their ids."""
    ids = store.enqueue([NewJob("job", "q", at) for _ in range(count)], at)
    if outcome == "cancelled":
        assert all(store.cancel(job_id, at) for job_id in ids)
        return ids
    jobs = store.claim(["q"], count, now=at, owner="w", lease_expires_at=at + LEASE)
    for job in jobs:
        if outcome == "succeeded":
            assert store.complete([job.lease], at) == 1
        elif outcome == "dead_lettered":
            assert store.dead_letter(job.lease, at, "RuntimeError: no")
        else:
            assert store.quarantine(job.lease, at, "UnknownJob: x")
    return ids


async def direct(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class Pauses:
    """A fake pause that records what it was asked to wait, and waits for nothing."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def remaining(store: Store) -> set[int]:
    return {job.id for job in store.list_jobs(limit=10_000)}


def test_a_sweep_deletes_by_finish_time_and_state_as_the_retention_says(store: Store) -> None:
    # Given jobs created long ago that finished at different times, in every finished state
    clock = rota.VirtualClock(START)
    done_old = finish(store, "succeeded", 2, START)
    cancelled_old = finish(store, "cancelled", 1, START)
    dead_old = finish(store, "dead_lettered", 1, START)
    odd_old = finish(store, "quarantined", 1, START)
    clock.advance(12 * DAY)
    done_recent = finish(store, "succeeded", 1, clock.now())
    dead_recent = finish(store, "dead_lettered", 1, clock.now())
    (waiting,) = store.enqueue([NewJob("job", "q", START + 30 * DAY)], START)
    duty = RetentionDuty(rota.Retention(), store, clock)
    # When the duty sweeps 12 days + 1 hour in: successes older than a day go, failures
    # younger than 14 days stay
    clock.advance(timedelta(hours=1))
    assert asyncio.run(duty.sweep(direct, Pauses())) == 3
    assert remaining(store) == {*dead_old, *odd_old, *done_recent, *dead_recent, waiting}
    # And 3 days later the old failures (now 15 days old) and the recent success go too
    clock.advance(3 * DAY)
    assert asyncio.run(duty.sweep(direct, Pauses())) == 3
    assert remaining(store) == {*dead_recent, waiting}
    assert not set(done_old + cancelled_old) & remaining(store)


def test_a_sweep_works_in_batches_with_a_pause_between_them(store: Store) -> None:
    # Given 7 expired successes and a duty deleting 3 per store call
    clock = rota.VirtualClock(START)
    finish(store, "succeeded", 7, START)
    clock.advance(2 * DAY)
    calls: list[int] = []

    async def counting(fn: Callable[..., Any], *args: Any) -> Any:
        result = fn(*args)
        calls.append(result)
        return result

    pauses = Pauses()
    duty = RetentionDuty(rota.Retention(failed=None), store, clock, batch_size=3)
    # When it sweeps
    deleted = asyncio.run(duty.sweep(counting, pauses))
    # Then it took three calls (3, 3, then 1: fewer than a batch ends the rule), pausing
    # after each full batch
    assert deleted == 7 and calls == [3, 3, 1]
    assert len(pauses.asked) == 2 and min(pauses.asked) >= MIN_PAUSE_S
    assert remaining(store) == set()


def test_none_keeps_those_jobs_forever(store: Store) -> None:
    clock = rota.VirtualClock(START)
    kept = finish(store, "succeeded", 2, START) + finish(store, "cancelled", 1, START)
    dead = finish(store, "dead_lettered", 1, START)
    clock.advance(365 * DAY)
    duty = RetentionDuty(rota.Retention(succeeded=None, failed=DAY), store, clock)
    assert asyncio.run(duty.sweep(direct, Pauses())) == 1
    assert remaining(store) == set(kept)
    assert not set(dead) & remaining(store)


class FlakyPurge:
    """A store whose purge raises `errors` one after another, then works."""

    def __init__(self, inner: Store, errors: list[Exception]) -> None:
        self.inner = inner
        self.errors = errors

    def purge(self, *args: Any) -> int:
        if self.errors:
            raise self.errors.pop(0)
        return self.inner.purge(*args)


def test_the_duty_survives_failures_logging_the_traceback_once_and_backing_off(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a store whose purge fails three times (a bug, then store errors), then works
    clock = rota.VirtualClock(START)
    finish(store, "succeeded", 2, START)
    clock.advance(2 * DAY)
    flaky = FlakyPurge(store, [KeyError("bug"), StoreError("down"), StoreError("down")])
    duty = RetentionDuty(rota.Retention(failed=None, interval=30), flaky, clock)  # type: ignore[arg-type]
    pauses = Pauses()

    def stopping() -> bool:
        return len(pauses.asked) >= 5  # five rounds, then "shutdown"

    # When the duty runs
    with caplog.at_level(logging.INFO, logger="rota"):
        asyncio.run(duty.run_forever(direct, pauses, stopping))
    # Then it kept going: backoff 1 s, 2 s, 4 s, then the interval once it worked
    assert pauses.asked == [1.0, 2.0, 4.0, 30.0, 30.0]
    assert remaining(store) == set()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "KeyError" in caplog.text and "retrying in 1.0 s" in caplog.text
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("failed again (2 in a row)" in m for m in warnings)
    assert any("works again after 3 failed sweeps" in m for m in warnings)
    assert "deleted 2 finished jobs" in caplog.text


def test_backoff_is_capped(store: Store) -> None:
    flaky = FlakyPurge(store, [StoreError("down")] * 12)
    duty = RetentionDuty(rota.Retention(interval=5), flaky, rota.VirtualClock(START))  # type: ignore[arg-type]
    pauses = Pauses()
    asyncio.run(duty.run_forever(direct, pauses, lambda: len(pauses.asked) >= 12))
    assert max(pauses.asked) == 300.0 and pauses.asked[:3] == [1.0, 2.0, 4.0]


def test_a_sweep_stops_between_batches_at_shutdown(store: Store) -> None:
    clock = rota.VirtualClock(START)
    finish(store, "succeeded", 5, START)
    clock.advance(2 * DAY)
    duty = RetentionDuty(rota.Retention(), store, clock, batch_size=2)
    pauses = Pauses()
    deleted = asyncio.run(duty.sweep(direct, pauses, lambda: len(pauses.asked) >= 1))
    assert deleted == 2 and len(remaining(store)) == 3


def test_purge_finished_deletes_everything_in_paced_batches(store: Store) -> None:
    finish(store, "succeeded", 5, START)
    slept: list[float] = []
    deleted = purge_finished(store, [JobState.SUCCEEDED], START + DAY, batch_size=2,
                             sleep=slept.append)
    assert deleted == 5 and len(slept) == 2 and min(slept) >= MIN_PAUSE_S
    assert remaining(store) == set()
