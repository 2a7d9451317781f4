"""Shared fixtures: the virtual clock and a store of every kind.

Every store-dependent test takes `store_url` (or `make_app`) and so runs unchanged against
`memory://`, a real SQLite file and a real PostgreSQL database.

PostgreSQL: `ROTA_TEST_POSTGRES_URL` (default postgresql://postgres@127.0.0.1:5432/test).
When it is unreachable the PostgreSQL tests skip with the reason, unless
`ROTA_REQUIRE_POSTGRES=1` (set by .ci/run), where they fail instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

import rota
from rota.store.memory import MemoryStore

settings.register_profile("default", deadline=None)
settings.load_profile("default")


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist's worker processes start with COLUMNS=80 and LINES=24; the CLI's
    # output is as wide as its columns need unless COLUMNS is set (rota.cli.display), and
    # the tests expect that, as in a run in one process. A test wanting a width sets it.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


@contextmanager
def short_directory() -> Iterator[Path]:
    """A fresh directory with a short path, removed afterwards. An SQLite store's wake-up
    sockets live beside its file, and a socket's address holds at most ~107 bytes, which
    pytest's tmp_path (one level deeper in each xdist process) may not leave: there the
    store would poll only (tests/store/test_sqlite_wake.py)."""
    with tempfile.TemporaryDirectory(prefix="rota-t-", ignore_cleanup_errors=True) as path:
        yield Path(path)

START = datetime(2026, 1, 1, tzinfo=UTC)
STORE_KINDS = ["memory", "sqlite", "postgres"]
POSTGRES_URL = os.environ.get(
    "ROTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


@pytest.fixture
def clock() -> rota.VirtualClock:
    return rota.VirtualClock(START)


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _fresh_store_url(kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    if kind == "memory":
        yield "memory://"
    elif kind == "sqlite":
        with short_directory() as directory:
            yield f"sqlite:///{directory / 'rota.db'}"
    else:
        from tests.pg import fresh_postgres_url

        yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


@pytest.fixture
def store_url(store_kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL naming a fresh, empty store of `store_kind`."""
    yield from _fresh_store_url(store_kind, request)


@pytest.fixture(params=["sqlite", "postgres"])
def durable_store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL naming a fresh, empty durable store (one several processes can share)."""
    yield from _fresh_store_url(str(request.param), request)


@pytest.fixture
def make_app(store_url: str, clock: rota.VirtualClock) -> Iterator[Callable[[], rota.App]]:
    """Factory of Apps on one fresh store of the parametrised kind, on the virtual clock.

    Each call opens a new App (a new connection) on the same store."""
    apps: list[rota.App] = []
    # memory:// is per store object, so the Apps of one test share one.
    shared = MemoryStore() if store_url == "memory://" else None

    def factory() -> rota.App:
        app = rota.App(shared if shared is not None else store_url, clock=clock)
        apps.append(app)
        return app

    yield factory
    for app in apps:
        app.close()
