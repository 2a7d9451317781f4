"""raw ceiling: the claim + ack work of a job queue as plain SQL (psycopg 3, no library):
claim 100 with `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 100)
RETURNING`, then ack them by id array; loop until the table is drained -> rows/s.

This is the physical limit of claim+ack on this machine and this PostgreSQL, so a
library's drain rate can be read as a fraction of it. Measured with 1 connection (one
claim/ack loop, like one worker process's claim path) and with more connections in
parallel threads (the machine's limit).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from functools import cache

import psycopg
from psycopg.rows import TupleRow

from benchmarks import pg
from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.venv import BENCH_DIR

DATABASE = "ceiling_bench"


@cache
def load(name: str) -> str:
    """A statement of benchmarks/sql/ceiling/."""
    return (BENCH_DIR / "sql" / "ceiling" / f"{name}.sql").read_text()


def _loop(url: str, batch: int, owner: str, done: list[int], errors: list[BaseException]) -> None:
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            claim, ack = load("claim"), load("ack")
            while True:
                now = datetime.now(UTC)
                rows: list[TupleRow] = conn.execute(claim, {
                    "owner": owner, "lease_expires_at": now + timedelta(minutes=1),
                    "queue": "bench", "now": now, "limit": batch,
                }, prepare=True).fetchall()
                if not rows:
                    return
                conn.execute(ack, {"now": datetime.now(UTC), "owner": owner,
                                   "ids": [row[0] for row in rows]}, prepare=True)
                done.append(len(rows))
    except BaseException as error:  # reported by the caller
        errors.append(error)


def ceiling_once(count: int, batch: int, connections: int) -> float:
    url = pg.fresh_database(DATABASE)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(load("schema"))
            conn.execute(load("fill"), {"count": count, "now": datetime.now(UTC)})
            conn.execute("VACUUM ANALYZE jobs")
        done: list[int] = []
        errors: list[BaseException] = []
        threads = [threading.Thread(target=_loop, args=(url, batch, f"ceiling-{n}", done, errors))
                   for n in range(connections)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        if errors:
            raise errors[0]
        if sum(done) != count:
            print(f"    warning: ceiling acked {sum(done)} of {count}")
        return sum(done) / elapsed
    finally:
        pg.drop_database(DATABASE)


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    for connections in settings.ceiling_connections:
        rates: list[float] = []
        for run_index in range(settings.runs):
            rate = ceiling_once(settings.ceiling_jobs, settings.ceiling_batch, connections)
            rates.append(rate)
            print(f"  ceiling {connections} connection(s) run {run_index + 1}: "
                  f"{rate:,.0f} rows/s", flush=True)
        plural = "s" if connections > 1 else ""
        result.add("ceiling", f"raw SQL, {connections} connection{plural}", "rows/s",
                   Figure.of(rates, "rows/s", f"{settings.ceiling_jobs:,} rows, claim "
                             f"{settings.ceiling_batch} + ack by id array"))
    return result
