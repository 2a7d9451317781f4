"""Fixtures shared by the store contract tests: each runs on every store `store_url`
names (memory, SQLite, PostgreSQL; see tests/conftest.py), or on the stores a module's own
`store_url` override names."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from rota.store import Store, open_store
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url

if TYPE_CHECKING:
    from rota.store.postgres import PostgresStore


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def open_stores(store_url: str) -> Iterator[Callable[[int], list[Store]]]:
    """Factory: `n` stores on the one store `store_url` names (memory:// is shared),
    closed after the test."""
    opened: list[Store] = []

    def factory(n: int) -> list[Store]:
        if store_url.startswith("memory:"):
            shared = open_store(store_url)
            opened.append(shared)
            return [shared] * n
        stores = [open_store(store_url) for _ in range(n)]
        opened.extend(stores)
        return stores

    yield factory
    for one in opened:
        one.close()


# -- PostgreSQL-only modules ----------------------------------------------------------------


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database."""
    yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


@pytest.fixture
def make_store(pg_url: str) -> Iterator[Callable[..., PostgresStore]]:
    """Factory of PostgresStores on the fresh database; all closed at teardown."""
    from rota.store.postgres import PostgresStore  # psycopg: the PostgreSQL modules only

    opened: list[PostgresStore] = []

    def factory(query: str = "") -> PostgresStore:
        store = PostgresStore.from_url(pg_url + query)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()
