"""Fixtures shared by the store contract tests: each runs on every store `store_url`
names (memory, SQLite, PostgreSQL; see tests/conftest.py), or on the stores a module's own
`store_url` override names."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rota.store import Store, open_store


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
