"""The caller's own database connection for a store URL: what transactional enqueue
writes on (`sqlite3.Connection` to the file, `psycopg.Connection` to the database)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def sqlite_path(url: str) -> str:
    return url[len("sqlite:///"):].partition("?")[0]


@contextmanager
def callers_connection(url: str, **options: Any) -> Iterator[Any]:
    """A new connection of the caller's own (not the store's) to the store `url` names,
    closed afterwards. SQLite: Python's default transaction handling unless `options`
    say otherwise; PostgreSQL: psycopg 3, not autocommit."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(sqlite_path(url), **options)
        try:
            yield conn
        finally:
            conn.close()
    else:
        import psycopg

        from rota.store.postgres import parse_url as _parse_url  # psycopg is an optional extra

        with psycopg.connect(_parse_url(url)[0], **options) as pg:
            yield pg


CallersConnection = Callable[..., Any]
