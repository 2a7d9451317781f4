"""The store contract for schedules (register_schedules, fire_schedule, list_schedules),
run unchanged against every store. Concurrent firers: threads on every store (each with
its own store object on the durable ones, as separate processes would have), processes on
the durable ones; nothing waits on a timer.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.schedules import ScheduleRegistration
from rota.store import Store, open_store
from rota.store.base import ScheduleStore
from tests.store import sqlite_processes
from tests.store.test_contract_concurrency import run_together

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SPAWN = multiprocessing.get_context("spawn")


def registration(name: str = "nightly", definition: str = "d1", *, rule: str = "0 3 * * *",
                 timezone: str = "UTC", queue: str = "reports") -> ScheduleRegistration:
    return ScheduleRegistration(name, definition, rule, timezone, "build-report", queue)


def fire_job(at: datetime, queue: str = "reports", args_json: str = '["daily"]') -> NewJob:
    return NewJob("build-report", queue, at, args_json, "{}")


def schedules_of(store: Store) -> ScheduleStore:
    assert isinstance(store, ScheduleStore)
    return store


def test_every_store_keeps_schedules(store: Store) -> None:
    assert isinstance(store, ScheduleStore)
    assert schedules_of(store).list_schedules() == []


def test_registration_records_when_and_keeps_it(store: Store) -> None:
    # Given a schedule registered at T0
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    # When it is registered again later with another definition
    later = T0 + timedelta(hours=1)
    schedules.register_schedules([registration(definition="d2", rule="0 4 * * *",
                                               timezone="Europe/Berlin")], later)
    # Then the first registration time stays; the rest is the last registrant's
    (row,) = schedules.list_schedules()
    assert (row.name, row.definition, row.rule, row.timezone, row.job_name, row.queue) == (
        "nightly", "d2", "0 4 * * *", "Europe/Berlin", "build-report", "reports")
    assert (row.registered_at, row.updated_at, row.last_fire_at) == (T0, later, None)
    assert row.lower == T0


def test_list_is_sorted_by_name(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration("b"), registration("a"), registration("c")], T0)
    assert [row.name for row in schedules.list_schedules()] == ["a", "b", "c"]


def test_a_fire_enqueues_one_job_due_at_the_instant(store: Store) -> None:
    # Given a registered schedule
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    instant = T0 + timedelta(hours=15)
    # When it fires late for its instant
    now = instant + timedelta(seconds=42)
    outcome = schedules.fire_schedule("nightly", "d1", fire_job(instant), now)
    # Then one job exists, due at the instant itself, and the row remembers the instant
    assert outcome.fired and outcome.current and outcome.job_id is not None
    job = store.get_job(outcome.job_id)
    assert job is not None
    assert (job.name, job.queue, job.state, job.due_at, job.args, job.created_at) == (
        "build-report", "reports", JobState.SCHEDULED, instant, ("daily",), now)
    (row,) = schedules.list_schedules()
    assert row.last_fire_at == instant and row.lower == instant
    # and claims see it like any job
    claimed = store.claim(["reports"], 10, now=now, owner="w",
                          lease_expires_at=now + timedelta(seconds=60))
    assert [j.id for j in claimed] == [outcome.job_id]


def test_an_instant_fires_once(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    instant = T0 + timedelta(hours=15)
    first = schedules.fire_schedule("nightly", "d1", fire_job(instant), instant)
    again = schedules.fire_schedule("nightly", "d1", fire_job(instant), instant)
    assert first.fired and not again.fired and again.current
    assert sum(store.count_jobs().values()) == 1


def test_an_earlier_instant_never_fires_after_a_later_one(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    late = T0 + timedelta(days=2)
    assert schedules.fire_schedule("nightly", "d1", fire_job(late), late).fired
    earlier = schedules.fire_schedule("nightly", "d1", fire_job(late - timedelta(days=1)), late)
    assert not earlier.fired and earlier.current
    assert schedules.list_schedules()[0].last_fire_at == late


def test_no_fire_at_or_before_the_registration(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    for instant in (T0 - timedelta(hours=1), T0):
        outcome = schedules.fire_schedule("nightly", "d1", fire_job(instant), T0)
        assert not outcome.fired and outcome.current
    assert store.count_jobs() == {}
    assert schedules.list_schedules()[0].last_fire_at is None


def test_an_unregistered_schedule_or_another_definition_does_not_fire(store: Store) -> None:
    schedules = schedules_of(store)
    instant = T0 + timedelta(hours=1)
    unknown = schedules.fire_schedule("nightly", "d1", fire_job(instant), instant)
    assert not unknown.fired and not unknown.current
    schedules.register_schedules([registration(definition="d2")], T0)
    stale = schedules.fire_schedule("nightly", "d1", fire_job(instant), instant)
    assert not stale.fired and not stale.current
    assert store.count_jobs() == {}
    assert schedules.list_schedules()[0].last_fire_at is None


def test_a_fire_with_a_bad_job_stores_nothing(store: Store) -> None:
    # The checks every enqueue path makes (check_new_jobs) hold for fires too.
    schedules = schedules_of(store)
    schedules.register_schedules([registration()], T0)
    instant = T0 + timedelta(hours=1)
    for bad in (NewJob("", "reports", instant), NewJob("build-report", "bad queue", instant),
                NewJob("build-report", "reports", instant, '["a\\u0000b"]')):
        with pytest.raises((ValueError, TypeError)):
            schedules.fire_schedule("nightly", "d1", bad, instant)
    assert store.count_jobs() == {}
    assert schedules.list_schedules()[0].last_fire_at is None


def test_concurrent_firers_fire_each_instant_once(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given six firers (own store objects: own connections) and a registered schedule
    stores = open_stores(6)
    schedules_of(stores[0]).register_schedules([registration()], T0)
    # When all of them fire each of 20 instants at once
    fired: list[int] = []
    for minute in range(1, 21):
        instant = T0 + timedelta(minutes=minute)
        outcomes = run_together([
            (lambda s=s, at=instant: schedules_of(s).fire_schedule(
                "nightly", "d1", fire_job(at), at))
            for s in stores
        ])
        fired.append(sum(outcome.fired for outcome in outcomes))
    # Then each instant was fired exactly once
    assert fired == [1] * 20
    jobs = stores[0].list_jobs(limit=100)
    assert sorted(job.due_at for job in jobs) == [T0 + timedelta(minutes=m) for m in range(1, 21)]


@pytest.mark.slow
def test_concurrent_processes_fire_each_instant_once(durable_store_url: str) -> None:
    # Given a registered schedule and four processes firing the same 25 instants at once
    store = open_store(durable_store_url)
    try:
        schedules_of(store).register_schedules([registration()], T0)
        start = SPAWN.Barrier(4)
        results = SPAWN.Queue()
        children = [
            SPAWN.Process(target=sqlite_processes.fire_instants,
                          args=(durable_store_url, 25, start, results))
            for _ in range(4)
        ]
        for child in children:
            child.start()
        fired = [results.get(timeout=120) for _ in children]
        for child in children:
            child.join(60)
            assert child.exitcode == 0
        # Then 25 jobs exist, one per instant, and the processes' fires add up to 25
        assert sum(fired) == 25
        due = sorted(job.due_at for job in store.list_jobs(limit=100))
        assert due == [T0 + timedelta(minutes=m) for m in range(1, 26)]
    finally:
        store.close()


# -- stored schedules (managed at run time) and pauses ------------------------------------


def stored(name: str = "hourly", definition: str = "s1", *, rule: str = "0 * * * *",
           args_json: str = '["hourly"]', queue: str = "reports") -> ScheduleRegistration:
    return ScheduleRegistration(name, definition, rule, "UTC", "build-report", queue,
                                args_json, '{"fmt": "pdf"}')


def test_a_stored_schedule_keeps_everything_a_worker_needs(store: Store) -> None:
    # Given a stored schedule set at T0
    schedules = schedules_of(store)
    schedules.set_stored_schedule(stored(), T0)
    # Then its row holds its rule, job, Queue and arguments, flagged stored, not paused
    (row,) = schedules.list_schedules()
    assert (row.name, row.definition, row.rule, row.timezone, row.job_name, row.queue,
            row.args_json, row.kwargs_json, row.stored, row.paused) == (
        "hourly", "s1", "0 * * * *", "UTC", "build-report", "reports", '["hourly"]',
        '{"fmt": "pdf"}', True, False)
    assert (row.registered_at, row.updated_at, row.last_fire_at) == (T0, T0, None)
    # and it fires like any schedule
    instant = T0 + timedelta(hours=1)
    outcome = schedules.fire_schedule("hourly", "s1", fire_job(instant, args_json='["hourly"]'),
                                      instant)
    assert outcome.fired


def test_setting_a_stored_schedule_again_replaces_it_and_keeps_its_history(
    store: Store,
) -> None:
    # Given a stored schedule that fired once, then paused
    schedules = schedules_of(store)
    schedules.set_stored_schedule(stored(), T0)
    instant = T0 + timedelta(hours=1)
    assert schedules.fire_schedule("hourly", "s1", fire_job(instant), instant).fired
    assert schedules.set_schedule_paused("hourly", True, instant)
    # When it is set again with another rule, Queue and arguments
    later = T0 + timedelta(hours=2)
    schedules.set_stored_schedule(
        stored(definition="s2", rule="every 60s", args_json='["x"]', queue="other"), later)
    # Then the row is the new one, with the same registration, last fire and pause
    (row,) = schedules.list_schedules()
    assert (row.definition, row.rule, row.queue, row.args_json, row.stored, row.paused) == (
        "s2", "every 60s", "other", '["x"]', True, True)
    assert (row.registered_at, row.updated_at, row.last_fire_at) == (T0, later, instant)
    # and the old definition no longer fires
    after = later + timedelta(hours=1)
    assert not schedules.fire_schedule("hourly", "s1", fire_job(after), after).current


def test_a_stored_schedule_cannot_take_the_name_of_one_in_code(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration("nightly")], T0)
    with pytest.raises(ValueError, match=r"defined in code.*choose another name"):
        schedules.set_stored_schedule(stored("nightly"), T0 + timedelta(hours=1))
    (row,) = schedules.list_schedules()
    assert (row.definition, row.stored, row.updated_at) == ("d1", False, T0)


def test_a_stored_schedule_with_arguments_not_json_stores_nothing(store: Store) -> None:
    schedules = schedules_of(store)
    with pytest.raises(ValueError):
        schedules.set_stored_schedule(stored(args_json="[not json"), T0)
    assert schedules.list_schedules() == []


def test_code_registered_over_a_stored_schedule_takes_the_name(store: Store) -> None:
    # Given a stored schedule, paused
    schedules = schedules_of(store)
    schedules.set_stored_schedule(stored("nightly"), T0)
    schedules.set_schedule_paused("nightly", True, T0)
    # When code registers a schedule of that name
    later = T0 + timedelta(hours=1)
    schedules.register_schedules([registration("nightly")], later)
    # Then the row is the code's (its arguments too), still paused, registered at T0
    (row,) = schedules.list_schedules()
    assert (row.definition, row.rule, row.args_json, row.kwargs_json, row.stored,
            row.paused, row.registered_at) == ("d1", "0 3 * * *", "[]", "{}", False, True, T0)


def test_only_stored_schedules_are_deleted(store: Store) -> None:
    schedules = schedules_of(store)
    schedules.register_schedules([registration("nightly")], T0)
    schedules.set_stored_schedule(stored("hourly"), T0)
    assert not schedules.delete_stored_schedule("nightly")  # in code: kept
    assert not schedules.delete_stored_schedule("missing")
    assert schedules.delete_stored_schedule("hourly")
    assert not schedules.delete_stored_schedule("hourly")
    assert [row.name for row in schedules.list_schedules()] == ["nightly"]


def test_a_paused_schedule_fires_nothing_and_resumes_after_now(store: Store) -> None:
    # Given a code schedule and a stored one, both paused at T0 + 30 min
    schedules = schedules_of(store)
    schedules.register_schedules([registration("nightly", rule="every 3600s")], T0)
    schedules.set_stored_schedule(stored("hourly"), T0)
    paused_at = T0 + timedelta(minutes=30)
    assert schedules.set_schedule_paused("nightly", True, paused_at)
    assert schedules.set_schedule_paused("hourly", True, paused_at)
    assert not schedules.set_schedule_paused("missing", True, paused_at)
    assert [row.paused for row in schedules.list_schedules()] == [True, True]
    # When their instant comes, a fire does nothing (the definition is still current)
    instant = T0 + timedelta(hours=1)
    for name, definition in (("nightly", "d1"), ("hourly", "s1")):
        outcome = schedules.fire_schedule(name, definition, fire_job(instant), instant)
        assert not outcome.fired and outcome.current
    assert store.count_jobs() == {}
    # When they are resumed at T0 + 90 min
    resumed_at = T0 + timedelta(minutes=90)
    assert schedules.set_schedule_paused("nightly", False, resumed_at)
    assert schedules.set_schedule_paused("hourly", False, resumed_at)
    # Then the instant passed while paused never fires: the lower bound is the resume
    rows = schedules.list_schedules()
    assert [(row.paused, row.registered_at, row.lower) for row in rows] == [
        (False, resumed_at, resumed_at)] * 2
    assert not schedules.fire_schedule("hourly", "s1", fire_job(instant), resumed_at).fired
    # and the next one does
    following = T0 + timedelta(hours=2)
    assert schedules.fire_schedule("hourly", "s1", fire_job(following), following).fired
    # Resuming what is not paused changes nothing
    assert schedules.set_schedule_paused("hourly", False, following + timedelta(hours=1))
    assert schedules.list_schedules()[0].registered_at == resumed_at


def test_concurrent_firers_fire_a_stored_schedule_once_per_instant(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given two firers (two drives, own connections) and a stored schedule
    stores = open_stores(2)
    schedules_of(stores[0]).set_stored_schedule(stored(), T0)
    fired: list[int] = []
    for hour in range(1, 11):
        instant = T0 + timedelta(hours=hour)
        outcomes = run_together([
            (lambda s=s, at=instant: schedules_of(s).fire_schedule(
                "hourly", "s1", fire_job(at), at))
            for s in stores
        ])
        fired.append(sum(outcome.fired for outcome in outcomes))
    # Then each instant was fired exactly once
    assert fired == [1] * 10
    assert len(stores[0].list_jobs(limit=100)) == 10
