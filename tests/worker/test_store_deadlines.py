"""The pieces behind the worker's store-call deadlines: the figures per kind of call, the
thread pool that gives up on a stuck call without starving the next ones, and the store
health that logs an incident once. Units, with no store."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

import rota
from rota.worker.deadlines import (
    CALL_DEADLINE_FLOOR_S,
    CallKind,
    GroupDeadlines,
    backstop_s,
)
from rota.worker.store_health import StoreHealth
from rota.worker.threads import Abandoned, DaemonPool
from tests.waiting import wait_until

# -- the figures ---------------------------------------------------------------------------


@pytest.mark.parametrize(("lease_s", "interval_s"), [
    (60, None), (30, 10), (10, 5), (3, 0.05), (1, 0.25), (0.6, 0.15), (300, 100), (2, 1.5),
])
def test_a_renewal_try_gets_half_the_window_and_a_retry_starts_before_the_lease_lapses(
    lease_s: float, interval_s: float | None
) -> None:
    # Given a group's lease and heartbeat interval
    options = rota.WorkerGroupOptions(name="g", policy=rota.Strict("q"),
                                      lease_duration=lease_s, heartbeat_interval=interval_s)
    deadlines = GroupDeadlines.of(options)
    interval = options.heartbeat_interval.total_seconds()
    window_s = lease_s - interval - deadlines.margin_s
    # When a renewal falls due and its first try fails only at its backstop
    retry_starts_s = interval + backstop_s(deadlines.renewal_s) + deadlines.renewal_retry_s
    # Then the retry starts with at least a quarter of the window left before the lease
    # counts as lost, and a try is well inside the lease
    assert retry_starts_s <= lease_s - deadlines.margin_s - window_s / 4 + 1e-9
    assert deadlines.renewal_s <= lease_s / 2
    # and claims and outcome writes wait out SQLite's busy timeout
    assert deadlines.call_s >= CALL_DEADLINE_FLOOR_S


# -- the thread pool -----------------------------------------------------------------------


def test_a_call_given_up_on_frees_its_place_for_the_next_calls() -> None:
    # Given a pool of one thread, stuck in a call that does not answer
    pool = DaemonPool(1, "test")
    stuck = threading.Event()
    release = threading.Event()
    finished: list[str] = []

    def hangs() -> str:
        stuck.set()
        release.wait(10)
        finished.append("stuck call")
        return "late"

    async def scenario() -> list[str]:
        await pool.run_within(lambda: None, 5)  # its thread is up and idle
        with pytest.raises(Abandoned) as abandoned:
            await pool.run_within(hangs, 0.2)
        assert stuck.is_set() and abandoned.value.started
        # When the next calls come while it still hangs
        answers = [await pool.run_within(lambda n=n: f"call {n}", 5) for n in range(3)]
        release.set()
        return answers

    answers = asyncio.run(scenario())
    # Then a replacement thread answered them, and the stuck thread exits after its call
    assert answers == ["call 0", "call 1", "call 2"]
    assert wait_for_threads(pool, 1)
    assert finished == ["stuck call"]
    pool.close()


def wait_for_threads(pool: DaemonPool, count: int) -> bool:
    return wait_until(lambda: len(pool._threads) == count, 5, poll_s=0.01)


def test_a_call_given_up_on_before_it_started_never_runs() -> None:
    # Given a pool of one thread, busy, and a second call queued behind it
    pool = DaemonPool(1, "test")
    busy = threading.Event()
    ran: list[str] = []

    async def scenario() -> None:
        first = pool.run(lambda: busy.wait(10))
        # When the queued call is given up on, then the thread frees
        with pytest.raises(Abandoned) as abandoned:
            await pool.run_within(lambda: ran.append("queued"), 0.05)
        assert not abandoned.value.started
        busy.set()
        await first
        assert await pool.run_within(lambda: "next", 5) == "next"

    asyncio.run(scenario())
    # Then the queued call was dropped, not run late
    assert ran == []
    pool.close()


# -- one log line per incident -------------------------------------------------------------


def test_an_incident_is_logged_once_however_many_calls_fail_and_answer_meanwhile(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given the store health of a runtime, and renewals that fail again and again while
    # other calls (a sweep, on a fresh connection) answer between them
    woken: list[int] = []
    health = StoreHealth(lambda: woken.append(1))
    renewal = CallKind("group g: lease renewal", 1.0, retried=True)
    sweep = CallKind("the lease sweep", 5.0, retried=True)
    with caplog.at_level(logging.DEBUG, logger="rota"):
        for _ in range(5):
            health.failed(renewal, TimeoutError("no answer"))
            assert health.unreachable
            health.answered(sweep, health.failures_seen)
            assert not health.unreachable and health.in_incident
        # When a renewal answers at last
        health.answered(renewal, health.failures_seen)
    # Then one warning began the incident, the repeats were DEBUG, one line ended it,
    # and each answer after a failure woke the groups
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0] == ("store not answering: group g: lease renewal failed: no answer; "
                           "no new claims until it answers")
    assert warnings[1].startswith("store answers again after ")
    assert warnings[1].endswith("(5 failed calls); claiming resumes")
    assert sum(1 for r in caplog.records if r.levelno == logging.DEBUG) == 4
    assert not health.in_incident and len(woken) == 5


def test_a_failure_of_a_call_not_retried_ends_with_the_next_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a release that failed (its caller gives up after a few tries)
    health = StoreHealth(lambda: None)
    with caplog.at_level(logging.DEBUG, logger="rota"):
        health.failed(CallKind("group g: releases", 5.0), ConnectionError("reset"))
        # When any call answers
        health.answered(CallKind("group g: claims", 5.0, retried=True), health.failures_seen)
    # Then the incident is over: one warning, one recovery
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.WARNING, logging.WARNING]
    assert not health.unreachable and not health.in_incident


def test_an_answer_to_a_call_sent_before_a_failure_does_not_end_the_incident() -> None:
    # Given a claim sent, then a sweep that failed while the claim was on its way
    health = StoreHealth(lambda: None)
    claims = CallKind("group g: claims", 5.0, retried=True)
    sent = health.failures_seen
    health.failed(CallKind("the lease sweep", 5.0, retried=True), ConnectionError("reset"))
    # When the claim's answer comes back
    health.answered(claims, sent)
    # Then the store still counts as unreachable, and a later answer ends it
    assert health.unreachable and health.in_incident
    health.answered(CallKind("the lease sweep", 5.0, retried=True), health.failures_seen)
    assert not health.unreachable and not health.in_incident


def test_a_duty_call_answering_does_not_prove_the_store_answers() -> None:
    # Given a failure, then a duty's call that answered (it may swallow its own errors)
    health = StoreHealth(lambda: None)
    health.failed(CallKind("the lease sweep", 5.0, retried=True), ConnectionError("reset"))
    health.answered(CallKind("measure", 60.0, reaches_store=False), health.failures_seen)
    # Then the store still counts as unreachable
    assert health.unreachable
