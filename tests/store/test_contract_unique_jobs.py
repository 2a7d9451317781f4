"""Unique jobs, run on every store: while a job with the same
job name and key is scheduled or leased, an enqueue stores nothing and answers that job's
id; once it finishes, the key is free. Enforced by the store, so concurrent enqueuers
(threads, processes) create exactly one job."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.store import Store, open_store
from tests.store.test_contract_concurrency import OpenStores, run_together
from tests.store.unique_processes import enqueue_keyed

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = T0 + timedelta(seconds=60)


def new(key: str | None, name: str = "job", queue: str = "q", arg: int = 0) -> NewJob:
    return NewJob(name=name, queue=queue, due_at=T0, args_json=f"[{arg}]", key=key)


def stored(store: Store) -> int:
    return sum(store.count_jobs().values())


def test_a_live_key_answers_the_existing_job(store: Store) -> None:
    # Given a scheduled job with key k
    (first,) = store.enqueue([new("k", arg=1)], T0)
    # When the same name and key are enqueued again
    (again,) = store.enqueue([new("k", arg=2)], T0)
    # Then nothing is stored and the existing job's id is answered
    assert again == first and stored(store) == 1
    job = store.get_job(first)
    assert job is not None and job.args == (1,) and job.key == "k"
    assert [listed.key for listed in store.list_jobs()] == ["k"]
    # And another key, another job name with that key, and no key all make new jobs
    other_key, other_name, keyless_a, keyless_b = (
        store.enqueue([new("k2")], T0)[0], store.enqueue([new("k", name="other")], T0)[0],
        store.enqueue([new(None)], T0)[0], store.enqueue([new(None)], T0)[0])
    assert len({first, other_key, other_name, keyless_a, keyless_b}) == 5
    keyless = store.get_job(keyless_a)
    assert keyless is not None and keyless.key is None


def test_a_leased_job_holds_its_key_and_a_finished_one_frees_it(store: Store) -> None:
    (first,) = store.enqueue([new("k")], T0)
    (leased,) = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=LEASE)
    assert store.enqueue([new("k")], T0) == [first]
    # When it succeeds, the key is free: a new job
    assert store.complete([leased.lease], T0) == 1
    (second,) = store.enqueue([new("k")], T0)
    assert second != first
    # A cancelled job frees it too
    assert store.cancel(second, T0)
    (third,) = store.enqueue([new("k")], T0)
    assert third not in (first, second) and stored(store) == 3


def test_a_batch_with_keys(store: Store) -> None:
    # Given a live job with key "a"
    (live_a,) = store.enqueue([new("a")], T0)
    # When a batch mixes keyless jobs, the live key, a new key twice and another new key
    ids = store.enqueue(
        [new(None, arg=1), new("a"), new("b", arg=2), new(None, arg=3), new("b", arg=4),
         new("c")], T0)
    # Then the live key and the repeated one answer their first job; the rest are new,
    # ids in input order
    assert ids[1] == live_a and ids[4] == ids[2]
    fresh = [ids[0], ids[2], ids[3], ids[5]]
    assert fresh == sorted(fresh) and live_a < fresh[0] and len(set(fresh)) == 4
    b = store.get_job(ids[2])
    assert b is not None and b.args == (2,)  # the first entry's arguments win
    assert stored(store) == 5


def test_requeue_is_refused_while_another_job_holds_the_key(store: Store) -> None:
    # Given a dead-lettered job with key k, and a new live job with that key
    (old,) = store.enqueue([new("k")], T0)
    (leased,) = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=LEASE)
    assert store.dead_letter(leased.lease, T0, "boom")
    (live,) = store.enqueue([new("k")], T0)
    assert live != old
    # When requeueing the old one: refused, in both forms; nothing changes
    assert not store.requeue(old, T0)
    assert store.requeue_many(state=JobState.DEAD_LETTERED, queue=None, now=T0) == 0
    job = store.get_job(old)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    # Once the live one is cancelled, the old one can go back
    assert store.cancel(live, T0)
    assert store.requeue(old, T0)
    job = store.get_job(old)
    assert job is not None and job.state is JobState.SCHEDULED


def test_requeue_many_brings_back_only_the_oldest_of_a_key(store: Store) -> None:
    # Given two cancelled jobs with the same key and one without
    (a,) = store.enqueue([new("k")], T0)
    assert store.cancel(a, T0)
    (b,) = store.enqueue([new("k")], T0)
    assert store.cancel(b, T0)
    (c,) = store.enqueue([new(None)], T0)
    assert store.cancel(c, T0)
    # When requeueing every cancelled job
    assert store.requeue_many(state=JobState.CANCELLED, queue=None, now=T0) == 2
    # Then the oldest keyed one and the keyless one are back; the key is live once
    states = {job_id: store.get_job(job_id).state for job_id in (a, b, c)}  # type: ignore[union-attr]
    assert states == {a: JobState.SCHEDULED, b: JobState.CANCELLED, c: JobState.SCHEDULED}
    assert store.enqueue([new("k")], T0) == [a]


@pytest.mark.parametrize("key", ["", "x" * 201, "a\nb", "nul\x00", 42])
def test_bad_keys_are_refused_before_anything_is_stored(store: Store, key: object) -> None:
    with pytest.raises(ValueError, match="job key"):
        store.enqueue([new(None), new(key)], T0)  # type: ignore[arg-type]
    assert stored(store) == 0


def test_a_key_of_200_printable_characters_with_spaces_is_fine(store: Store) -> None:
    key = "order 42 " + "é" * 191
    assert store.enqueue([new(key)], T0) == store.enqueue([new(key)], T0)


def test_concurrent_enqueuers_create_one_job(open_stores: OpenStores) -> None:
    # Given 8 enqueuers, each with its own store, released at once
    stores = open_stores(8)

    def enqueuer(index: int) -> list[int]:
        return [stores[index].enqueue([new(f"k{n}")], T0)[0] for n in range(10)]

    results = run_together([lambda i=i: enqueuer(i) for i in range(8)])  # type: ignore[misc]
    # Then each key made one job, and every enqueuer got its id
    assert all(result == results[0] for result in results)
    assert len(set(results[0])) == 10
    assert sum(stores[0].count_jobs().values()) == 10


def test_concurrent_processes_create_one_job(durable_store_url: str) -> None:
    # Given a migrated store and 4 processes enqueueing the same keys at once
    open_store(durable_store_url).close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    results = context.Queue()
    processes = [context.Process(target=enqueue_keyed, args=(durable_store_url, start, results))
                 for _ in range(4)]
    for process in processes:
        process.start()
    answers = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    results.close()
    results.join_thread()
    # Then each key made one job, the same id for all
    assert all(answer == answers[0] for answer in answers) and len(set(answers[0])) == 5
    store = open_store(durable_store_url)
    try:
        assert sum(store.count_jobs().values()) == 5
    finally:
        store.close()
