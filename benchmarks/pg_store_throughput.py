"""Throughput of the PostgreSQL store: enqueue rows/s, drain jobs/s, and the raw SQL ceiling.

    python benchmarks/pg_store_throughput.py [--url URL] [--jobs N] [--workers W]

Each measurement runs in a fresh PostgreSQL schema of the database URL names (dropped
afterwards). "drain" is claim (batch of 20 or 100) + one batched `complete`, per worker
thread, each worker with its own PostgresStore; handlers are no-ops. The ceiling is plain
SQL on one psycopg connection per worker: `UPDATE ... FOR UPDATE SKIP LOCKED` claim +
`UPDATE ... = ANY` ack, batches of 20 and 100, no rota code. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql
from store_throughput import drain as drain_queue
from store_throughput import run_threads

from rota.core.jobs import NewJob
from rota.store.postgres import PostgresStore

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
QUEUE = "bench"

RAW_CLAIM = """
WITH picked AS (
    SELECT id FROM {schema}.jobs
    WHERE queue = %(queue)s AND state = 'scheduled' AND due_at <= %(now)s
    ORDER BY due_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs AS jobs
SET state = 'leased', attempt = jobs.attempt + 1, lease_owner = %(owner)s,
    lease_expires_at = %(until)s
FROM picked WHERE jobs.id = picked.id
RETURNING jobs.id, jobs.attempt
"""
RAW_ACK = """
UPDATE {schema}.jobs SET state = 'succeeded', finished_at = %(now)s, lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = ANY(%(ids)s) AND state = 'leased' AND lease_owner = %(owner)s
"""


@contextmanager
def fresh_store(url: str, pool_max_size: int = 4) -> Iterator[PostgresStore]:
    schema = f"rota_bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore.from_url(f"{url}{'&' if '?' in url else '?'}schema={schema}"
                                   f"&pool_max_size={pool_max_size}")
    store.migrate()
    try:
        yield store
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def enqueue_all(store: PostgresStore, jobs: int, batch: int) -> float:
    """Enqueue `jobs` no-op jobs in batches of `batch`; return rows/s."""
    now = datetime.now(UTC)
    due = now - timedelta(seconds=1)
    chunk = [NewJob("noop", QUEUE, due, "[1]", "{}") for _ in range(batch)]
    started = time.perf_counter()
    left = jobs
    while left > 0:
        store.enqueue(chunk[: min(batch, left)], now)
        left -= batch
    return jobs / (time.perf_counter() - started)


def drain(url: str, jobs: int, batch: int, workers: int) -> float:
    with fresh_store(url) as seed:
        enqueue_all(seed, jobs, 10_000)
        schema = seed.schema
        stores = [
            PostgresStore.from_url(f"{url}{'&' if '?' in url else '?'}schema={schema}")
            for _ in range(workers)
        ]
        for store in stores:
            store.migrate()
        now = datetime.now(UTC)  # every job is due by now: it was enqueued before
        try:
            done, seconds = run_threads(
                workers, lambda index: drain_queue(stores[index], QUEUE, batch, now,
                                                   f"bench-{index}"),
            )
        finally:
            for store in stores:
                store.close()
        assert done == jobs, f"drained {done} of {jobs}"
        return done / seconds


def raw_ceiling(url: str, jobs: int, batch: int, workers: int) -> float:
    with fresh_store(url) as seed:
        enqueue_all(seed, jobs, 10_000)
        schema = sql.Identifier(seed.schema)
        claim_sql = sql.SQL(RAW_CLAIM).format(schema=schema).as_string(None)
        ack_sql = sql.SQL(RAW_ACK).format(schema=schema).as_string(None)

        def work(index: int) -> int:
            owner = f"raw-{index}"
            total = 0
            with psycopg.connect(url, autocommit=True) as conn:
                while True:
                    now = datetime.now(UTC)
                    rows = conn.execute(claim_sql, {
                        "queue": QUEUE, "now": now, "limit": batch, "owner": owner,
                        "until": now + timedelta(minutes=5)}).fetchall()
                    if not rows:
                        return total
                    conn.execute(ack_sql, {
                        "ids": [row[0] for row in rows], "now": datetime.now(UTC),
                        "owner": owner})
                    total += len(rows)

        done, seconds = run_threads(workers, work)
        assert done == jobs, f"drained {done} of {jobs}"
        return done / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4],
                        help="worker thread counts to drain with (default: 1 4)")
    options = parser.parse_args()
    jobs: int = options.jobs
    print(f"PostgreSQL store throughput, {jobs:,} no-op jobs, one Queue")
    for batch in (1_000, 10_000):
        with fresh_store(options.url) as store:
            rate = enqueue_all(store, jobs, batch)
        print(f"  enqueue, batches of {batch:>6,}:                 {rate:>10,.0f} rows/s")
    for workers in options.workers:
        for batch in (20, 100):
            rate = drain(options.url, jobs, batch, workers)
            print(f"  drain, claim {batch:>3} + complete, {workers} worker(s): "
                  f"{rate:>10,.0f} jobs/s")
        for batch in (20, 100):
            rate = raw_ceiling(options.url, jobs, batch, workers)
            print(f"  raw SQL ceiling, batch {batch:>3}, {workers} worker(s):   "
                  f"{rate:>10,.0f} jobs/s")


if __name__ == "__main__":
    main()
