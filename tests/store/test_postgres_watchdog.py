"""PostgreSQL connections that stop answering (rota.store.postgres.watchdog): a call with a
deadline ends at it with StoreTimeout, its connection is replaced, and the LISTEN
connection finds a dead link by itself. The network is a FaultProxy on loopback in front
of the shared server; each test gets a fresh database (tests/pg.py).

Every store call that could hang on the old behaviour runs through `bounded`, so a
regression fails the test instead of hanging it.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import pytest

pytest.importorskip("psycopg")

import psycopg
from psycopg.conninfo import conninfo_to_dict

from rota.core.jobs import JobState, NewJob
from rota.store import StoreError
from rota.store.deadlines import StoreTimeout, call_deadline
from rota.store.postgres import PostgresStore
from rota.store.postgres.watchdog import KEEPALIVES
from tests.chaos.fault_proxy import FaultProxy
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
DEADLINE_S = 1.0  # the deadline of the calls that must time out
BOUND_S = 20.0  # what a call may take at most before the test calls it hung
R = TypeVar("R")


@pytest.fixture
def proxy(pg_url: str) -> Iterator[FaultProxy]:
    parts = urlsplit(pg_url)
    with FaultProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
        yield proxy


@pytest.fixture
def make_store(pg_url: str, proxy: FaultProxy) -> Iterator[Callable[..., PostgresStore]]:
    """Factory of stores on the fresh database; `proxied` ones connect through `proxy`,
    with a password in the URL (to check it is masked). All closed at teardown."""
    opened: list[PostgresStore] = []

    def factory(query: str = "", *, proxied: bool = True) -> PostgresStore:
        parts = urlsplit(pg_url)
        if proxied:
            parts = parts._replace(netloc=f"postgres:s3cret@127.0.0.1:{proxy.port}")
        store = PostgresStore.from_url(urlunsplit(parts) + query)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def bounded(call: Callable[[], R]) -> R:
    """`call()`, on another thread; fails the test if it has not returned within BOUND_S
    (the thread of a call that hung ends when the proxy closes its connections)."""
    outcome: list[tuple[bool, object]] = []
    thread = threading.Thread(target=lambda: outcome.append(_outcome(call)), daemon=True)
    thread.start()
    thread.join(BOUND_S)
    if not outcome:
        pytest.fail(f"the call was still blocked after {BOUND_S} s")
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


def _outcome(call: Callable[[], object]) -> tuple[bool, object]:
    try:
        return True, call()
    except Exception as error:
        return False, error


def within(seconds: float, call: Callable[[], R]) -> Callable[[], R]:
    def run() -> R:
        with call_deadline(seconds):
            return call()
    return run


def new(queue: str = "q") -> NewJob:
    return NewJob(name="job", queue=queue, due_at=T0, args_json="[]")


# -- connection settings -------------------------------------------------------------------


def test_every_connection_carries_keepalives_and_a_users_value_wins(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given a store with default settings and one whose URL sets keepalives_idle
    default, tuned = make_store(), make_store("?keepalives_idle=3")
    default.count_jobs()
    # Then the pooled connections carry rota's keepalives and user timeout
    with default._pool.connection() as conn:
        given = {option.keyword.decode(): (option.val or b"").decode()
                 for option in conn.pgconn.info}
    assert {key: given[key] for key in KEEPALIVES} == dict(KEEPALIVES)
    # And the dedicated connections (migrations, LISTEN) too
    with default._connect() as conn:
        given = {option.keyword.decode(): (option.val or b"").decode()
                 for option in conn.pgconn.info}
    assert {key: given[key] for key in KEEPALIVES} == dict(KEEPALIVES)
    # And a value from the URL wins over rota's
    assert conninfo_to_dict(tuned._conninfo)["keepalives_idle"] == "3"
    assert conninfo_to_dict(tuned._conninfo)["keepalives_interval"] == "5"


# -- calls with a deadline -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["heartbeat", "statement", "transaction"])
def test_a_call_on_a_forgotten_connection_times_out_and_the_next_gets_a_fresh_one(
    kind: str, make_store: Callable[..., PostgresStore], proxy: FaultProxy,
) -> None:
    # Given a store with warm pooled connections
    # and a job leased
    store = make_store("?pool_min_size=2")
    store.enqueue([new(), new("held")], T0)
    (held,) = store.claim(["held"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    # When the network forgets every connection open now (half-open)
    assert proxy.forget_connections() >= 1
    # Then a call with a deadline (a heartbeat, a statement, a unique job's transaction)
    # raises StoreTimeout instead of hanging, URL masked
    calls: dict[str, Callable[[], object]] = {
        "heartbeat": lambda: store.heartbeat([held.lease], T0, T0 + 2 * LEASE),
        "statement": store.count_jobs,
        "transaction": lambda: store.enqueue([NewJob(name="job", queue="u", due_at=T0,
                                                     key="k")], T0),
    }
    with pytest.raises(StoreTimeout) as timed_out:
        bounded(within(DEADLINE_S, calls[kind]))
    message = str(timed_out.value)
    assert "no answer within 1.0 s; the connection was dropped" in message
    assert "postgres:***@127.0.0.1" in message and "s3cret" not in message
    # And the next calls succeed, on fresh connections (every old one is dead)
    assert bounded(within(10, store.count_jobs))[("q", JobState.SCHEDULED)] == 1
    assert bounded(within(10, calls["transaction"])) == bounded(
        within(10, calls["transaction"]))  # the unique job's id, twice
    assert bounded(within(10, calls["heartbeat"])) == {held.id}


def test_a_call_in_a_black_hole_times_out_and_the_store_works_once_it_heals(
    make_store: Callable[..., PostgresStore], proxy: FaultProxy,
) -> None:
    # Given a store that has answered
    store = make_store()
    store.enqueue([new()], T0)
    # When the link goes down
    proxy.black_hole()
    # Then a call with a deadline (a heartbeat-like write) times out
    with pytest.raises(StoreTimeout, match=r"no answer within 1\.0 s"):
        bounded(within(DEADLINE_S, lambda: store.enqueue([new("lost?")], T0)))
    # And once the link is back, the store answers again by itself
    proxy.heal()
    assert bounded(within(10, store.count_jobs))[("q", JobState.SCHEDULED)] == 1


def test_a_call_without_a_deadline_is_never_ended_by_the_watchdog(
    make_store: Callable[..., PostgresStore], proxy: FaultProxy,
) -> None:
    # Given a store behind a slow link (every answer is held 1.5 s)
    store = make_store("?pool_min_size=2")
    store.enqueue([new()], T0)
    proxy.delay(down_s=1.5)
    # When one thread calls with a deadline shorter than that and another without one
    slow = threading.Thread(target=lambda: results.append(store.count_jobs()))
    results: list[object] = []
    slow.start()
    with pytest.raises(StoreTimeout):
        bounded(within(0.5, store.count_jobs))
    slow.join(BOUND_S)
    # Then only the call with a deadline ended; the other got its answer
    assert not slow.is_alive()
    assert len(results) == 1 and sum(results[0].values()) == 1  # type: ignore[attr-defined]
    # And a deadline longer than the delay is met
    proxy.delay()
    assert sum(bounded(within(10, store.count_jobs)).values()) == 1


def test_the_watchdog_never_drops_a_connection_handed_back_and_reused(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given two connections shared by a thread whose calls have deadlines of a few
    # milliseconds (many end while they run, or just after) and threads without deadlines
    store = make_store("?pool_min_size=2&pool_max_size=2", proxied=False)
    store.enqueue([new()], T0)
    rounds, dropped, failures = 300, [0], [0]
    stop = threading.Event()
    rng = random.Random(64)

    def tight() -> None:
        for _ in range(rounds):
            try:
                with call_deadline(rng.uniform(0.0002, 0.003)):
                    store.count_jobs()
            except StoreTimeout as error:
                dropped[0] += "the connection was dropped" in str(error)
        stop.set()

    def calm() -> None:
        calls = 0
        while not stop.is_set() and calls < 10 * rounds:
            calls += 1
            try:
                store.count_jobs()
            except StoreError:
                failures[0] += 1

    threads = [threading.Thread(target=tight)] + [threading.Thread(target=calm)
                                                  for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    # Then the watchdog did drop connections mid-call (not only the waits for a free
    # one timed out), and not one call without a deadline failed
    assert dropped[0] > 0
    assert failures[0] == 0


# -- the LISTEN connection -----------------------------------------------------------------


def test_a_listener_comes_back_after_its_connection_is_forgotten(
    make_store: Callable[..., PostgresStore], proxy: FaultProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a listener behind the proxy that checks its link after 0.2 s of silence
    listening, enqueuing = make_store(), make_store(proxied=False)
    listening.listen_check_after_s = 0.2
    listening.listen_check_timeout_s = DEADLINE_S
    hints: list[str] = []
    arrived = threading.Condition()

    def on_enqueue(queue: str) -> None:
        with arrived:
            hints.append(queue)
            arrived.notify_all()

    stop = listening.listen(on_enqueue)
    try:
        # When the network forgets its connection
        caplog.set_level(logging.INFO, logger="rota.store.postgres.listener")
        assert proxy.forget_connections() >= 1
        # Then it finds out by itself, once, and reconnects
        assert wait_until(lambda: _logged(caplog, "LISTEN connection is back"), BOUND_S)
        # And an enqueue made afterwards is hinted
        enqueuing.enqueue([new("after")], T0)
        with arrived:
            assert arrived.wait_for(lambda: "after" in hints, BOUND_S), hints
    finally:
        stop()
    drops = [r for r in caplog.records if "LISTEN connection dropped" in r.getMessage()]
    assert len(drops) == 1
    assert "no answer to a check within 1 s" in drops[0].getMessage()


def _logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in record.getMessage() for record in caplog.records)


def test_a_call_with_a_deadline_recovers_after_the_backends_are_terminated(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given a store with warm pooled connections
    store = make_store("?pool_min_size=3", proxied=False)
    store.enqueue([new()], T0)
    # When PostgreSQL terminates every backend of the database (as on a restart)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    # Then calls with a deadline fail at most once, with a StoreError that is not a
    # timeout, and the pool's other dead connections are replaced, not met one by one
    failures = []
    for _ in range(3):
        try:
            bounded(within(10, store.count_jobs))
        except StoreError as error:
            failures.append(error)
    assert len(failures) <= 1
    assert not any(isinstance(error, StoreTimeout) for error in failures)
    assert bounded(within(10, store.count_jobs))[("q", JobState.SCHEDULED)] == 1
