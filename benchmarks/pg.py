"""PostgreSQL for the benchmarks: one fresh database per measured run, dropped afterwards.

The server is `BENCH_PG_URL` (default postgresql://postgres@127.0.0.1:5432, trust auth).
Every database this harness creates is named `*_bench` and registered with `cleanup`, so
an interrupted run still drops it.
"""

from __future__ import annotations

import os

import psycopg
from psycopg import sql

from benchmarks import cleanup

SERVER_URL = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432")


def url_for(database: str) -> str:
    return f"{SERVER_URL.rstrip('/')}/{database}"


def _admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url_for("postgres"), autocommit=True)


def drop_database(name: str) -> None:
    with _admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


def fresh_database(name: str) -> str:
    """Drop and recreate database `name`; return its URL. Dropped again at exit."""
    if not name.endswith("_bench"):
        raise ValueError(f"benchmark databases end in _bench; got {name!r}")
    drop_database(name)
    with _admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    cleanup.on_exit(f"drop database {name}", lambda: drop_database(name))
    return url_for(name)


def analyze(url: str) -> None:
    """ANALYZE the whole database: fresh planner statistics after a bulk load."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def server_version() -> str:
    with _admin() as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "unknown"


def server_settings() -> dict[str, str]:
    names = ("shared_buffers", "synchronous_commit", "fsync", "max_connections", "work_mem")
    settings: dict[str, str] = {}
    with _admin() as conn:
        for name in names:
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
            settings[name] = str(row[0]) if row else "unknown"
    return settings


class Counter:
    """Runs one counting query on a connection kept open across polls (a new connection
    per poll would fork a backend each time and load the machine being measured)."""

    def __init__(self, url: str, query: str) -> None:
        self.url = url
        self.query = query
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def __call__(self) -> int:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.url, autocommit=True)
        row = self._conn.execute(self.query).fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0  # type: ignore[call-overload]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
