"""PostgreSQL: a call is its own statements' round trips alone. A reading of the server's
clock (`store_time`) is one round trip, its query alone, so the clock reading it
(rota.store.clock) times nothing else, and a renewal over a slow link pays no extra round
trip: stale plans are dropped by the pool's thread as a connection comes back.

Each test gets a fresh database (tests/pg.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("psycopg")

import psycopg

from rota.store.postgres import PostgresStore
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[PostgresStore]:
    for url in fresh_postgres_url(POSTGRES_URL, request.node.name):
        opened = PostgresStore.from_url(url + "?pool_max_size=1")
        try:
            yield opened
        finally:
            opened.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, str]]:
    """Every statement psycopg sends from now on, with whether this thread sent it."""
    statements: list[tuple[bool, str]] = []
    original = psycopg.Cursor.execute
    caller = threading.get_ident()

    def spy(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append((threading.get_ident() == caller, str(query).strip()))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    return statements


def test_a_call_sends_its_own_statements_alone_and_stale_plans_go_on_the_pools_thread(
    store: PostgresStore, sent: list[tuple[bool, str]],
) -> None:
    # Given a store whose one pooled connection has plans older than replan_after_s
    store.count_jobs()
    store.replan_after_s = 0.0
    sent.clear()
    # When the server's clock is read, then the jobs are counted
    answer = store.store_time()
    store.count_jobs()
    # Then the clock's reading sent its query alone, nothing before it on the wire (so the
    # clock times one round trip), and no call of ours sent DISCARD PLANS
    assert answer is not None
    ours = [statement for mine, statement in sent if mine]
    assert ours[0] == "SELECT clock_timestamp()"
    assert "DISCARD PLANS" not in ours
    # And the stale plans were dropped by the pool as the connection came back
    assert (False, "DISCARD PLANS") in sent
