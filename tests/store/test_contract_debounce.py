"""Debounce, run on every store: while a debounced job of a name and key is scheduled and
has never been claimed, an enqueue of that name and key gives it the new arguments and
moves its due time (capped at its first enqueue + max_wait) instead of making a job; once
it is claimed, an enqueue makes a new job. Concurrent enqueuers (threads, processes) end
in one scheduled job."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobRecord, JobState, NewJob
from rota.store import Store, open_store
from tests.store.test_contract_concurrency import OpenStores, run_together
from tests.store.unique_processes import enqueue_debounced

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DEBOUNCE = timedelta(seconds=5)
MAX_WAIT = timedelta(seconds=12)


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def debounced(now: datetime, arg: int, key: str = "k", name: str = "job",
              max_wait: timedelta | None = MAX_WAIT) -> NewJob:
    """A debounced enqueue at `now`, as configure(key, debounce=5, max_wait) makes it."""
    return NewJob(name=name, queue="q", due_at=now + DEBOUNCE, args_json=f"[{arg}]", key=key,
                  debounced=True, max_wait=max_wait)


def job(store: Store, job_id: int) -> JobRecord:
    found = store.get_job(job_id)
    assert found is not None
    return found


def scheduled(store: Store) -> list[JobRecord]:
    return [found for found in store.list_jobs() if found.state is JobState.SCHEDULED]


def claim(store: Store, now: datetime) -> list[JobRecord]:
    return store.claim(["q"], 10, now=now, owner="w", lease_expires_at=now + timedelta(seconds=60))


def test_the_first_enqueue_is_due_after_the_debounce(store: Store) -> None:
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    found = job(store, first)
    assert found.due_at == s(5) and found.args == (1,) and found.created_at == T0
    assert found.key is None  # not a unique key (docs: Debounce)
    assert claim(store, s(4)) == []


def test_an_enqueue_in_the_window_replaces_the_arguments_and_moves_the_due_time(
        store: Store) -> None:
    # Given a debounced job enqueued at T0 (due T0+5)
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    # When the key is enqueued again at T0+3, then at T0+6 (still scheduled: not claimed)
    assert store.enqueue([debounced(s(3), 2)], s(3)) == [first]
    assert job(store, first).due_at == s(8)
    assert store.enqueue([debounced(s(6), 3)], s(6)) == [first]
    # Then one job, with the last arguments, due 5 s after the last enqueue
    found = job(store, first)
    assert (found.args, found.due_at, found.created_at) == ((3,), s(11), T0)
    assert len(scheduled(store)) == 1
    # And another key, or another job name, makes its own job
    other_key = store.enqueue([debounced(s(6), 4, key="other")], s(6))[0]
    other_name = store.enqueue([debounced(s(6), 5, name="other")], s(6))[0]
    assert len({first, other_key, other_name}) == 3


def test_the_due_time_never_moves_past_the_first_enqueue_plus_max_wait(store: Store) -> None:
    # Given a debounced job first enqueued at T0, max_wait 12 s
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    # When enqueues keep coming every 4 s
    for at in (4, 8, 11):
        assert store.enqueue([debounced(s(at), at)], s(at)) == [first]
    # Then it is due at T0+12 (not T0+16), with the last arguments
    found = job(store, first)
    assert (found.due_at, found.args) == (s(12), (11,))
    (leased,) = claim(store, s(12))
    assert leased.id == first and leased.args == (11,)


def test_without_max_wait_the_due_time_keeps_moving(store: Store) -> None:
    (first,) = store.enqueue([debounced(T0, 1, max_wait=None)], T0)
    for at in (4, 8, 100):
        assert store.enqueue([debounced(s(at), at, max_wait=None)], s(at)) == [first]
    assert job(store, first).due_at == s(105)


def test_once_claimed_a_new_enqueue_makes_a_new_job(store: Store) -> None:
    # Given a debounced job that a worker has claimed
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    (leased,) = claim(store, s(5))
    # When the key is enqueued again
    (second,) = store.enqueue([debounced(s(6), 2)], s(6))
    # Then a new job, due after the debounce, and the claimed one keeps its arguments
    assert second != first
    assert (job(store, second).due_at, job(store, second).args) == (s(11), (2,))
    assert job(store, first).args == (1,)
    # And further enqueues go to the new job, capped by its own first enqueue
    assert store.enqueue([debounced(s(16), 3)], s(16)) == [second]
    assert job(store, second).due_at == s(18)
    # And the first one going back to scheduled (a retry) does not meet the new one
    assert store.retry(leased.lease, s(7), s(9), "boom")
    assert job(store, first).state is JobState.SCHEDULED
    assert store.enqueue([debounced(s(17), 4)], s(17)) == [second]
    assert job(store, first).args == (1,)


def test_a_handed_back_job_does_not_collect_again(store: Store) -> None:
    # Given a debounced job claimed and handed back unrun (a worker shutting down)
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    (leased,) = claim(store, s(5))
    assert store.release([leased.lease], s(5)) == 1
    # When the key is enqueued again: a new job (the first was claimed once)
    (second,) = store.enqueue([debounced(s(6), 2)], s(6))
    assert second != first and len(scheduled(store)) == 2


def test_a_finished_job_does_not_block(store: Store) -> None:
    # Given a debounced job that ran and succeeded, and one cancelled before it ran
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    (leased,) = claim(store, s(5))
    assert store.complete([leased.lease], s(6)) == 1
    (second,) = store.enqueue([debounced(s(7), 2)], s(7))
    assert second != first
    assert store.cancel(second, s(8))
    # When the key is enqueued again: a new job
    (third,) = store.enqueue([debounced(s(9), 3)], s(9))
    assert third not in (first, second)
    assert [found.id for found in scheduled(store)] == [third]


def test_a_requeued_debounced_job_runs_as_a_plain_job(store: Store) -> None:
    # Given a debounced job cancelled before it ran, and a new one collecting the key
    (first,) = store.enqueue([debounced(T0, 1)], T0)
    assert store.cancel(first, s(1))
    (second,) = store.enqueue([debounced(s(2), 2)], s(2))
    # When the cancelled one is requeued (alone, then with every cancelled job)
    assert store.requeue(first, s(3))
    assert store.cancel(first, s(3))
    assert store.requeue_many(state=JobState.CANCELLED, queue=None, now=s(3)) == 1
    # Then both are scheduled, and the key's enqueues still go to the second one
    assert {found.id for found in scheduled(store)} == {first, second}
    assert store.enqueue([debounced(s(4), 3)], s(4)) == [second]
    assert job(store, first).args == (1,)


def test_a_batch_with_one_key_twice_makes_one_job_with_the_last_arguments(
        store: Store) -> None:
    # Given a debounced job of key "a"
    (a,) = store.enqueue([debounced(T0, 1, key="a")], T0)
    # When a batch holds "a", a new key "b" twice, and a plain job
    ids = store.enqueue([debounced(s(1), 2, key="b"), debounced(s(1), 3, key="a"),
                         NewJob(name="job", queue="q", due_at=s(1), args_json="[9]"),
                         debounced(s(1), 4, key="b")], s(1))
    # Then "a" is updated, "b" is one job with the last entry's arguments
    assert ids[1] == a and ids[0] == ids[3] and len(set(ids)) == 3
    assert job(store, a).args == (3,) and job(store, a).due_at == s(6)
    assert job(store, ids[0]).args == (4,) and job(store, ids[2]).args == (9,)
    assert len(scheduled(store)) == 3


def test_a_debounced_key_and_a_unique_key_do_not_see_each_other(store: Store) -> None:
    (debounced_id,) = store.enqueue([debounced(T0, 1)], T0)
    unique = NewJob(name="job", queue="q", due_at=T0, key="k")
    (unique_id,) = store.enqueue([unique], T0)
    assert unique_id != debounced_id
    assert store.enqueue([unique], T0) == [unique_id]
    assert store.enqueue([debounced(s(1), 2)], s(1)) == [debounced_id]


@pytest.mark.parametrize("bad", [
    NewJob(name="job", queue="q", due_at=T0, debounced=True),
    NewJob(name="job", queue="q", due_at=T0, key="k", max_wait=MAX_WAIT),
])
def test_inconsistent_debounce_fields_are_refused(store: Store, bad: NewJob) -> None:
    with pytest.raises(ValueError, match="debounce"):
        store.enqueue([debounced(T0, 1), bad], T0)
    assert store.list_jobs() == []


def test_concurrent_enqueuers_make_one_scheduled_job(open_stores: OpenStores) -> None:
    # Given 8 enqueuers, each with its own store, released at once, on 5 keys
    stores = open_stores(8)

    def enqueuer(index: int) -> list[int]:
        return [stores[index].enqueue([debounced(T0, index, key=f"k{n}")], T0)[0]
                for n in range(5)]

    results = run_together([lambda i=i: enqueuer(i) for i in range(8)])  # type: ignore[misc]
    # Then each key made one scheduled job, and every enqueuer got its id
    assert all(result == results[0] for result in results)
    assert len(set(results[0])) == 5
    assert len(scheduled(stores[0])) == 5


def test_concurrent_processes_make_one_scheduled_job(durable_store_url: str) -> None:
    # Given a migrated store and 4 processes enqueueing the same debounced keys at once
    open_store(durable_store_url).close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    results = context.Queue()
    processes = [context.Process(target=enqueue_debounced,
                                 args=(durable_store_url, start, results, index))
                 for index in range(4)]
    for process in processes:
        process.start()
    answers = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    results.close()
    results.join_thread()
    # Then each key made one job, the same id for all, holding one process's arguments
    assert all(answer == answers[0] for answer in answers) and len(set(answers[0])) == 5
    store = open_store(durable_store_url)
    try:
        jobs = scheduled(store)
        assert len(jobs) == 5
        assert {found.args[0] for found in jobs} <= {0, 1, 2, 3}
    finally:
        store.close()
