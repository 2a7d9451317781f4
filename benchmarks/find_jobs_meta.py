"""What `find_jobs(meta=...)` costs over a million jobs, on PostgreSQL and on SQLite.

PostgreSQL: creates the database `find_jobs_meta_bench` afresh on `BENCH_PG_URL`
(benchmarks.pg), lets rota migrate it, loads `--jobs` jobs with COPY (the count triggers
run as for any insert), runs ANALYZE, then times each query `--repeats` times through the
store's `find_jobs` (newest first, a page of 100) and prints its p50 and max, with the plan
PostgreSQL chose. SQLite: the same jobs in a file of its own (executemany inside one
transaction), the same queries. The database and the file are dropped afterwards, however
the run ends (benchmarks.cleanup). Prints figures, asserts nothing.

The jobs: every one has meta {"tenant": "t<i % 1000>", "order": i, "plan": "free" or
"paid"}; a tenth are succeeded, the rest scheduled. The queries: one tenant (1,000 jobs
hold it), one order (one job), a plan half of the jobs hold, a tenant that no job holds
(the worst case for a scan: nothing stops it early), and one tenant's succeeded jobs.

    .venv/bin/python -m benchmarks.find_jobs_meta --jobs 1000000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

import rota
from benchmarks import cleanup, pg
from rota.core.jobs import JobState
from rota.store.base import Store

DATABASE = "find_jobs_meta_bench"
TENANTS = 1000
CHUNK = 50_000
T0 = datetime(2026, 1, 1, tzinfo=UTC)

QUERIES: tuple[tuple[str, dict[str, Any], JobState | None], ...] = (
    ("one tenant (1,000 jobs)", {"tenant": "t17"}, None),
    ("one order (1 job)", {"order": 123_457}, None),
    ("half the jobs (plan=paid)", {"plan": "paid"}, None),
    ("no job (tenant=nobody)", {"tenant": "nobody"}, None),
    ("one tenant, succeeded", {"tenant": "t10"}, JobState.SUCCEEDED),
)


def rows(count: int) -> Iterator[tuple[str, str]]:
    """(state, meta) of each job, in id order."""
    for i in range(count):
        meta = json.dumps({"tenant": f"t{i % TENANTS}", "order": i,
                           "plan": "paid" if i % 2 else "free"}, separators=(",", ":"))
        yield ("succeeded" if i % 10 == 0 else "scheduled", meta)


def load_postgres(url: str, count: int) -> None:
    stamp = T0.isoformat()
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor, \
            cursor.copy("COPY rota.jobs (name, queue, state, due_at, args, kwargs, "
                        "created_at, finished_at, meta) FROM STDIN") as copy:
        for state, meta in rows(count):
            copy.write_row(("job", "q", state, stamp, "[]", "{}", stamp,
                            stamp if state == "succeeded" else None, meta))


def load_sqlite(path: str, count: int) -> None:
    micros = int(T0.timestamp() * 1_000_000)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        batch: list[tuple[object, ...]] = []
        for state, meta in rows(count):
            batch.append(("job", "q", state, micros, "[]", "{}", micros,
                          micros if state == "succeeded" else None, meta))
            if len(batch) >= CHUNK:
                conn.executemany(_SQLITE_INSERT, batch)
                batch.clear()
        conn.executemany(_SQLITE_INSERT, batch)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


_SQLITE_INSERT = ("INSERT INTO rota_jobs (name, queue, state, due_at, args, kwargs, "
                  "created_at, finished_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def timed(store: Store, meta: dict[str, Any], state: JobState | None,
          repeats: int) -> tuple[float, float, int]:
    """(p50 ms, max ms, jobs found) of `repeats` find_jobs calls."""
    times: list[float] = []
    found = 0
    for _ in range(repeats):
        began = time.perf_counter()
        found = len(store.find_jobs(meta=meta, state=state, limit=100))
        times.append((time.perf_counter() - began) * 1e3)
    times.sort()
    return times[len(times) // 2], times[-1], found


def plan(url: str, meta: dict[str, Any], state: JobState | None) -> str:
    """The plan's top nodes, as EXPLAIN gives them for find_jobs_newest.sql's filter."""
    with psycopg.connect(url, autocommit=True) as conn:
        lines = conn.execute(
            "EXPLAIN SELECT id FROM rota.jobs WHERE meta @> %s::jsonb "
            "AND (%s::text IS NULL OR state = %s::text) ORDER BY id DESC LIMIT 101",
            (json.dumps(meta), None if state is None else state.value,
             None if state is None else state.value)).fetchall()
    nodes = [str(line[0]).strip().split("  (")[0].lstrip("-> ") for line in lines]
    return " / ".join(node for node in nodes if node)[:110]


def report(kind: str, store: Store, repeats: int, url: str | None) -> None:
    for label, meta, state in QUERIES:
        p50, worst, found = timed(store, meta, state, repeats)
        shown = f" [{plan(url, meta, state)}]" if url is not None else ""
        print(f"  {kind:10} {label:28} p50 {p50:8.2f} ms  max {worst:8.2f} ms  "
              f"({found} found){shown}", flush=True)


def migrate(url: str) -> None:
    """Create rota's schema (a store migrates on its first use)."""
    app = rota.App(url)
    try:
        app.store.count_jobs()
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    cleanup.install()  # the database is dropped however the run ends
    print(f"find_jobs(meta=...) over {args.jobs:,} jobs, newest first, pages of 100; "
          f"PostgreSQL {pg.server_version()}, SQLite {sqlite3.sqlite_version}", flush=True)

    url = pg.fresh_database(DATABASE)
    migrate(url)
    began = time.perf_counter()
    load_postgres(url, args.jobs)
    pg.analyze(url)
    print(f"  postgres   loaded (COPY, GIN index kept up) and analysed in "
          f"{time.perf_counter() - began:.1f} s", flush=True)
    app = rota.App(url)
    try:
        report("postgres", app.store, args.repeats, url)
    finally:
        app.close()
    pg.drop_database(DATABASE)
    cleanup.done(f"drop database {DATABASE}")

    if args.skip_sqlite:
        return
    with tempfile.TemporaryDirectory(prefix="rota-find-jobs-") as directory:
        path = str(Path(directory) / "rota.db")
        migrate(f"sqlite:///{path}")
        began = time.perf_counter()
        load_sqlite(path, args.jobs)
        print(f"  sqlite     loaded in {time.perf_counter() - began:.1f} s", flush=True)
        app = rota.App(f"sqlite:///{path}")
        try:
            report("sqlite", app.store, max(3, args.repeats // 4), None)
        finally:
            app.close()


if __name__ == "__main__":
    main()
