"""PostgreSQL test support: a fresh, empty database per test, dropped afterwards."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest


def _reachable(url: str) -> str | None:
    try:
        import psycopg
    except ModuleNotFoundError:
        return "psycopg is not installed (pip install 'rota[postgres]')"
    try:
        with psycopg.connect(url, connect_timeout=3, autocommit=True):
            return None
    except psycopg.Error as error:
        return f"PostgreSQL at {url} is unreachable: {str(error).strip().splitlines()[0]}"


def fresh_postgres_url(admin_url: str, test_name: str) -> Iterator[str]:
    """Create a database for one test from `admin_url`'s server; yield its URL; drop it."""
    problem = _reachable(admin_url)
    if problem is not None:
        if os.environ.get("ROTA_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{problem} (ROTA_REQUIRE_POSTGRES=1, so this is a failure)")
        pytest.skip(problem)
    import psycopg

    slug = re.sub(r"[^a-z0-9]+", "_", test_name.lower())[:30]
    name = f"rota_t_{slug}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
