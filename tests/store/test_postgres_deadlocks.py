"""PostgreSQL: serialisation failures and deadlocks (SQLSTATE 40001, 40P01) never reach a
caller of rota's own statements. Concurrent cancels of crossing workflow cascades lock
their rows in one order, so they do not deadlock; and a statement or transaction that
still fails so is retried inside the store, a bounded number of times, never on a
caller's own connection (`enqueue_on`).

Each test gets a fresh database (tests/pg.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

pytest.importorskip("psycopg")

from rota.core.jobs import JobState, NewJob
from rota.core.outcomes import DeadLettered
from rota.store.base import StoreError
from rota.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
# Every load loop below stops at this bound even if its count is not reached.
LOAD_BOUND_S = 120.0


def job(queue: str, *parents: int) -> NewJob:
    return NewJob("job", queue, T0, parents=parents)


def state(store: PostgresStore, job_id: int) -> JobState:
    record = store.get_job(job_id)
    assert record is not None
    return record.state


def crossing_workflow(store: PostgresStore, b_queue: str = "roots"
                      ) -> tuple[int, int, list[int]]:
    """Two roots whose cancel cascades cross: a -> d1 -> d2, and b -> e -> d1, b -> d2.
    Cancelling a reaches d1 in its first round and d2 in its second; cancelling b reaches
    d2 in its first round and d1 in its second. Returns (a, b, the waiting jobs)."""
    a, b = store.enqueue([job("roots"), job(b_queue)], T0)
    e, = store.enqueue([job("inner", b)], T0)
    d1, = store.enqueue([job("inner", a, e)], T0)
    d2, = store.enqueue([job("inner", d1, b)], T0)
    return a, b, [e, d1, d2]


def wide_crossing_workflow(store: PostgresStore) -> tuple[int, int, list[int]]:
    """Two roots whose cascades cross, each root with 20 more children: x after a; y after
    x and b; z after a and y. Cancelling a reaches x, z and its 20 in its first round and y
    in its second; cancelling b reaches y and its 20, then z."""
    a, b = store.enqueue([job("roots"), job("roots")], T0)
    x, = store.enqueue([job("inner", a)], T0)
    y, = store.enqueue([job("inner", x, b)], T0)
    z, = store.enqueue([job("inner", a, y)], T0)
    fill = store.enqueue([job("inner", a) for _ in range(20)]
                         + [job("inner", b) for _ in range(20)], T0)
    return a, b, [x, y, z, *fill]


def in_pairs(pairs: list[tuple[Callable[[], bool], Callable[[], bool]]]) -> Counter[str]:
    """Run the two calls of each pair at the same moment on two threads, four pairs at a
    time (stopping at LOAD_BOUND_S); what happened, counted: "applied" for a call that
    returned True, the psycopg error's name for a StoreError."""
    deadline = time.monotonic() + LOAD_BOUND_S
    outcomes: Counter[str] = Counter()
    counted = threading.Lock()

    def both(pair: tuple[Callable[[], bool], Callable[[], bool]]) -> None:
        if time.monotonic() > deadline:
            return
        barrier = threading.Barrier(2)

        def call(function: Callable[[], bool]) -> None:
            barrier.wait(timeout=10)
            try:
                outcome = "applied" if function() else "not applied"
            except StoreError as error:
                outcome = type(error.__cause__).__name__
            with counted:
                outcomes[outcome] += 1

        threads = [threading.Thread(target=call, args=(function,)) for function in pair]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(both, pairs))
    return outcomes


def retries_logged(caplog: pytest.LogCaptureFixture) -> int:
    return sum(record.name == "rota.store.postgres.retry" for record in caplog.records)


@pytest.mark.parametrize(("shape", "count"), [(crossing_workflow, 150),
                                              (wide_crossing_workflow, 60)])
def test_concurrent_cancels_of_crossing_cascades_do_not_deadlock(
    make_store: Callable[..., PostgresStore], caplog: pytest.LogCaptureFixture,
    shape: Callable[[PostgresStore], tuple[int, int, list[int]]], count: int,
) -> None:
    # Given many workflows whose two roots' cancel cascades cross
    caplog.set_level(logging.DEBUG, logger="rota.store.postgres.retry")
    store = make_store("?pool_max_size=8")
    workflows = [shape(store) for _ in range(count)]
    # When each workflow's two roots are cancelled at the same moment
    outcomes = in_pairs([(partial(store.cancel, a, T0), partial(store.cancel, b, T0))
                         for a, b, _ in workflows])
    # Then every cancel succeeded at its first try (no deadlock to retry), and every job
    # of every workflow ended cancelled
    assert outcomes == {"applied": 2 * len(workflows)}
    assert retries_logged(caplog) == 0
    for a, b, waiting in workflows:
        for job_id in (a, b, *waiting):
            assert state(store, job_id) is JobState.CANCELLED


def test_a_cancel_and_an_outcome_whose_cascades_cross_do_not_deadlock(
    make_store: Callable[..., PostgresStore], caplog: pytest.LogCaptureFixture,
) -> None:
    # Given many crossing workflows whose root b is leased by a worker
    caplog.set_level(logging.DEBUG, logger="rota.store.postgres.retry")
    store = make_store("?pool_max_size=8")
    workflows = [crossing_workflow(store, "leased") for _ in range(150)]
    leases = {record.id: record.lease for record in store.claim(
        ["leased"], 1000, now=T0, owner="w", lease_expires_at=T0 + LEASE)}
    assert len(leases) == len(workflows)
    # When each workflow's root a is cancelled while its root b is dead-lettered
    outcomes = in_pairs([
        (partial(store.cancel, a, T0), partial(store.dead_letter, leases[b], T0, "Boom"))
        for a, b, _ in workflows])
    # Then every call succeeded at its first try, and every waiting job ended cancelled
    assert outcomes == {"applied": 2 * len(workflows)}
    assert retries_logged(caplog) == 0
    for a, b, waiting in workflows:
        assert state(store, a) is JobState.CANCELLED
        assert state(store, b) is JobState.DEAD_LETTERED
        for job_id in waiting:
            assert state(store, job_id) is JobState.CANCELLED


# -- retries inside the store ----------------------------------------------------------
#
# The failures are the server's own: a statement trigger the test adds raises SQLSTATE
# 40P01 (or 40001) for the first `times` statements of a kind, counting them on a
# sequence (nextval is not rolled back with the failed transaction).

def fail_first(pg_url: str, times: int, *, on: str = "UPDATE",
               sqlstate: str = "40P01") -> Callable[[], int]:
    """Make the first `times` statements `on` rota.jobs fail with `sqlstate`; returns a
    function counting the statements tried so far."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE public.tries")
        conn.execute(f"""
            CREATE FUNCTION public.fail_first() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF nextval('public.tries') <= {times} THEN
                    RAISE EXCEPTION 'injected by the test' USING ERRCODE = '{sqlstate}';
                END IF;
                RETURN NULL;
            END $$""")
        conn.execute(f"CREATE TRIGGER fail_first BEFORE {on} ON rota.jobs "
                     "FOR EACH STATEMENT EXECUTE FUNCTION public.fail_first()")

    def tries() -> int:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            row = conn.execute("SELECT last_value, is_called FROM public.tries").fetchone()
        assert row is not None
        return int(row[0]) if row[1] else 0

    return tries


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])
def test_a_statement_that_deadlocks_once_is_retried(
    make_store: Callable[..., PostgresStore], pg_url: str, sqlstate: str,
) -> None:
    # Given a scheduled job, and a server whose next UPDATE of a job fails with a
    # deadlock (or a serialisation failure)
    store = make_store()
    job_id, = store.enqueue([job("q")], T0)
    tries = fail_first(pg_url, 1, sqlstate=sqlstate)
    # When the job is cancelled
    applied = store.cancel(job_id, T0)
    # Then the store tried again and the cancel succeeded: two tries, one cancel
    assert applied
    assert tries() == 2
    assert state(store, job_id) is JobState.CANCELLED


def test_retries_are_bounded_and_the_error_names_the_deadlock_and_the_tries(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given a scheduled job, and a server where every UPDATE of a job deadlocks
    store = make_store()
    job_id, = store.enqueue([job("q")], T0)
    tries = fail_first(pg_url, 1000)
    # When the job is cancelled
    with pytest.raises(StoreError) as raised:
        store.cancel(job_id, T0)
    # Then it failed after five tries, saying so, and nothing was written
    message = str(raised.value)
    assert "DeadlockDetected" in message and "a deadlock" in message
    assert "in each of 5 tries" in message and "call again" in message
    assert tries() == 5
    assert state(store, job_id) is JobState.SCHEDULED


def test_a_transaction_that_deadlocks_is_retried_whole(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given a parent, and a server whose next INSERT of jobs deadlocks: an enqueue of a
    # child is a transaction (lock the parent, then insert), whose insert fails first
    store = make_store()
    parent, = store.enqueue([job("p")], T0)
    tries = fail_first(pg_url, 1, on="INSERT")
    # When a child of it is enqueued
    child, = store.enqueue([job("c", parent)], T0)
    # Then the transaction ran twice and wrote its child once, waiting for the parent
    assert tries() == 2
    assert store.job_children(parent) == [child]
    assert [record.id for record in store.list_jobs(queue="c")] == [child]
    assert state(store, child) is JobState.WAITING
    # And the parent's end releases it, as for any child
    lease = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)[0].lease
    assert store.complete([lease], T0) == 1
    assert state(store, child) is JobState.SCHEDULED


def test_outcomes_written_with_a_claim_are_retried_with_it(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given a leased job and another due, and a server whose next UPDATE of jobs (the
    # outcome, first statement of the claim's transaction) deadlocks
    store = make_store()
    first, second = store.enqueue([job("q"), job("q")], T0)
    lease = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)[0].lease
    tries = fail_first(pg_url, 1)
    # When the worker's next claim carries the first job's failure
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                          outcomes=[(lease, DeadLettered("Boom: failed"))])
    # Then the whole transaction ran again (three UPDATEs: the outcome that failed, then
    # the outcome and the claim): the outcome written once, the other job claimed once
    assert tries() == 3
    assert claimed.applied == 1
    assert [record.id for record in claimed] == [second]
    assert state(store, first) is JobState.DEAD_LETTERED
    assert state(store, second) is JobState.LEASED


def test_an_enqueue_on_the_callers_connection_is_never_retried(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    import psycopg

    # Given a store, and a server whose next INSERT of jobs deadlocks
    store = make_store()
    store.migrate()
    tries = fail_first(pg_url, 1, on="INSERT")
    with psycopg.connect(pg_url) as conn:
        # When jobs are enqueued inside the caller's own transaction
        with pytest.raises(psycopg.errors.DeadlockDetected):
            store.enqueue_on(conn, [job("q")], T0)
        # Then the error reaches the caller unchanged after one try: its transaction
        # is aborted, and only it can run it again
        assert tries() == 1
        conn.rollback()
        ids = store.enqueue_on(conn, [job("q")], T0)
        conn.commit()
    assert tries() == 2
    assert [record.id for record in store.list_jobs(queue="q")] == ids
