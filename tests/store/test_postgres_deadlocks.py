"""PostgreSQL: serialisation failures and deadlocks (SQLSTATE 40001, 40P01) never reach a
caller of rota's own statements. Concurrent cancels of crossing workflow cascades lock
their rows in one order, so they do not deadlock; and a statement or transaction that
still fails so is retried inside the store, a bounded number of times, never on a
caller's own connection (`enqueue_on`).

Each test gets a fresh database (tests/pg.py).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

pytest.importorskip("psycopg")

from rota.core.jobs import JobState, NewJob
from rota.store.base import StoreError
from rota.store.postgres import PostgresStore
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
# Every load loop below stops at this bound even if its count is not reached.
LOAD_BOUND_S = 120.0


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database."""
    yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


@pytest.fixture
def make_store(pg_url: str) -> Iterator[Callable[..., PostgresStore]]:
    """Factory of PostgresStores on the fresh database; all closed at teardown."""
    opened: list[PostgresStore] = []

    def factory(query: str = "") -> PostgresStore:
        store = PostgresStore.from_url(pg_url + query)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def job(queue: str, *parents: int) -> NewJob:
    return NewJob("job", queue, T0, parents=parents)


def crossing_workflow(store: PostgresStore) -> tuple[int, int, list[int]]:
    """Two roots whose cancel cascades cross: a -> d1 -> d2, and b -> e -> d1, b -> d2.
    Cancelling a reaches d1 in its first round and d2 in its second; cancelling b reaches
    d2 in its first round and d1 in its second. Returns (a, b, the waiting jobs)."""
    a, b = store.enqueue([job("roots"), job("roots")], T0)
    e, = store.enqueue([job("inner", b)], T0)
    d1, = store.enqueue([job("inner", a, e)], T0)
    d2, = store.enqueue([job("inner", d1, b)], T0)
    return a, b, [e, d1, d2]


def test_concurrent_cancels_of_crossing_cascades_never_fail(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given many workflows whose two roots' cancel cascades cross
    store = make_store("?pool_max_size=8")
    workflows = [crossing_workflow(store) for _ in range(150)]
    # When each workflow's two roots are cancelled at the same moment by two threads
    # (300 cancels, 4 workflows at a time)
    deadline = time.monotonic() + LOAD_BOUND_S
    failures: Counter[str] = Counter()
    cancelled: list[int] = []
    counted = threading.Lock()

    def cancel_both(workflow: tuple[int, int, list[int]]) -> None:
        if time.monotonic() > deadline:
            return
        a, b, _ = workflow
        barrier = threading.Barrier(2)

        def cancel(root: int) -> None:
            barrier.wait(timeout=10)
            try:
                applied = store.cancel(root, T0)
            except StoreError as error:
                with counted:
                    failures[type(error.__cause__).__name__] += 1
            else:
                with counted:
                    cancelled.extend([root] if applied else [])

        threads = [threading.Thread(target=cancel, args=(root,)) for root in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(cancel_both, workflows))
    # Then every cancel succeeded, and every job of every workflow ended cancelled
    assert not failures, f"{sum(failures.values())} cancels failed: {dict(failures)}"
    assert len(cancelled) == 2 * len(workflows)
    for a, b, waiting in workflows:
        for job_id in (a, b, *waiting):
            record = store.get_job(job_id)
            assert record is not None and record.state is JobState.CANCELLED
