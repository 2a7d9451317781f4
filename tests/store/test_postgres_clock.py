"""PostgreSQL: a reading of the server's clock (`store_time`) is one round trip, its
query alone, so the clock reading it (rota.store.clock) times nothing else.

Each test gets a fresh database (tests/pg.py).
"""

from __future__ import annotations

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
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg sends from now on."""
    statements: list[str] = []
    original = psycopg.Cursor.execute

    def spy(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query).strip())
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    return statements


def test_a_reading_of_the_servers_clock_is_its_query_alone(
    store: PostgresStore, sent: list[str],
) -> None:
    # Given a store whose pooled connection has plans older than replan_after_s (every
    # other call would drop them first: one more round trip)
    store.count_jobs()
    store.replan_after_s = 0.0
    sent.clear()
    # When the server's clock is read
    answer = store.store_time()
    # Then one statement went out, the clock's query: nothing before it on the wire
    assert answer is not None
    assert sent == ["SELECT clock_timestamp()"]
    # And the next statement that reads a table drops the stale plans as usual
    store.count_jobs()
    assert sent[1] == "DISCARD PLANS"
