"""Retention benchmarks: claim latency while retention deletes a backlog, and drain A/B.

    python benchmarks/retention.py latency [--rows 1000000] [--stores postgres sqlite]
    python benchmarks/retention.py drain-ab --base-src DIR [--runs 3] [--jobs 100000]

`latency`: a fresh store gets `--rows` jobs that finished 30 days ago (bulk SQL) and a
backlog of due jobs. A claimer thread (its own store object, as a worker process would
have) claims 20 jobs every 10 ms and completes them, timing each `claim` call. Phases,
each on a fresh store with the same rows:
- `paced`: the retention duty (`RetentionDuty.sweep`, 1,000 rows a call, paused between
  calls as workers do) deletes every old row on another thread; the claimer runs until it
  is done;
- `none`: the same claimer, the same number of claims, nothing deleted;
- `unpaced` (with `--unpaced`): the same deletion with no pause between batches, to show
  what the pause buys.
Prints claim latency p50/p99/max per phase, and the deletion's duration and rows/s.

`drain-ab`: the noop drain (claim 20 or 100 + one batched complete, one thread, the
clock read for every call as a worker does; the store alone) of `--jobs` jobs,
alternating a subprocess on `--base-src` (e.g. main's `src`, exported with `git
archive`) and one on this tree's `src`, `--runs` times each, on PostgreSQL and SQLite.
Prints every run and the medians.

Figures only, never a test. Run with the project's virtualenv (.venv/bin/python).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rota.core.clock import SystemClock
from rota.core.jobs import NewJob
from rota.core.retention import Retention
from rota.store import open_store
from rota.worker.retention import RetentionDuty

HERE = Path(__file__).resolve().parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
QUEUE = "bench"
LEASE = timedelta(minutes=5)
CLAIM_BATCH = 20
CLAIM_EVERY_S = 0.01


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


# -- stores with a million finished rows ---------------------------------------------------


@contextmanager
def fresh_store(kind: str, pg_url: str, *, migrate: bool = True) -> Iterator[str]:
    """The URL of a fresh store of `kind` (migrated by this tree if `migrate`); dropped
    afterwards."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="rota-retention-") as folder:
            url = f"sqlite:///{folder}/bench.db"
            if migrate:
                open_store(url).close()
            yield url
        return
    import psycopg
    from psycopg import sql

    schema = f"rota_ret_{uuid.uuid4().hex[:8]}"
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}schema={schema}"
    if migrate:
        store = open_store(url)
        store.migrate()  # type: ignore[attr-defined]
        store.close()
    try:
        yield url
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def insert_finished(kind: str, url: str, pg_url: str, rows: int, finished_at: datetime) -> None:
    """Bulk-insert `rows` jobs that succeeded at `finished_at` (not timed)."""
    if kind == "sqlite":
        path = url.removeprefix("sqlite:///")
        us = (finished_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute("BEGIN")
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                "INSERT INTO rota_jobs (name, queue, state, due_at, args, kwargs, created_at, "
                "finished_at) SELECT 'old', 'old', 'succeeded', ?, '[]', '{}', ?, ? FROM n",
                (rows, us, us, us))
            conn.execute("COMMIT")
        return
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".jobs (name, queue, state, due_at, args, kwargs, '
            "created_at, finished_at) SELECT 'old', 'old', 'succeeded', %(t)s, '[]', '{}', "
            "%(t)s, %(t)s FROM generate_series(1, %(n)s)", {"t": finished_at, "n": rows})
        conn.execute(f'VACUUM ANALYZE "{schema}".jobs')


def enqueue_backlog(url: str, jobs: int) -> None:
    store = open_store(url)
    try:
        now = datetime.now(UTC) - timedelta(seconds=1)
        chunk = [NewJob("noop", QUEUE, now, "[1]", "{}")] * 5_000
        for start in range(0, jobs, 5_000):
            store.enqueue(chunk[: min(5_000, jobs - start)], now)
    finally:
        store.close()


# -- the phases ---------------------------------------------------------------------------


@dataclass
class Phase:
    name: str
    latencies_ms: list[float]
    deleted: int = 0
    delete_s: float = 0.0


def claimer(url: str, stop: Callable[[int], bool]) -> list[float]:
    """Claim CLAIM_BATCH due jobs every CLAIM_EVERY_S and complete them, until
    `stop(claims made)`; the latency of each claim call in ms."""
    store = open_store(url)
    latencies: list[float] = []
    try:
        next_at = time.perf_counter()
        while not stop(len(latencies)):
            now = datetime.now(UTC)
            started = time.perf_counter()
            jobs = store.claim([QUEUE], CLAIM_BATCH, now=now, owner="bench",
                               lease_expires_at=now + LEASE)
            latencies.append((time.perf_counter() - started) * 1000)
            if jobs:
                store.complete([job.lease for job in jobs], now)
            next_at += CLAIM_EVERY_S
            time.sleep(max(0.0, next_at - time.perf_counter()))
    finally:
        store.close()
    return latencies


def delete_all(url: str, paced: bool) -> tuple[int, float]:
    """The retention duty's sweep over the old rows; (rows deleted, seconds)."""
    store = open_store(url)
    duty = RetentionDuty(Retention(), store, SystemClock())

    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)  # this thread is the duty's only thread: no loop to keep free

    async def pause(seconds: float) -> None:
        if paced:
            await asyncio.sleep(seconds)

    try:
        started = time.perf_counter()
        deleted = asyncio.run(duty.sweep(call, pause))
        return deleted, time.perf_counter() - started
    finally:
        store.close()


def prepared(kind: str, pg_url: str, rows: int, backlog: int) -> Callable[[], Any]:
    def make() -> Any:
        context = fresh_store(kind, pg_url)
        url = context.__enter__()
        insert_finished(kind, url, pg_url, rows, datetime.now(UTC) - timedelta(days=30))
        enqueue_backlog(url, backlog)
        return context, url
    return make


def run_with_deletion(name: str, url: str, paced: bool) -> Phase:
    done = threading.Event()
    result: list[tuple[int, float]] = []

    def deleter() -> None:
        try:
            result.append(delete_all(url, paced))
        finally:
            done.set()

    thread = threading.Thread(target=deleter)
    thread.start()
    latencies = claimer(url, lambda _n: done.is_set())
    thread.join()
    deleted, seconds = result[0]
    return Phase(name, latencies, deleted, seconds)


def latency(options: argparse.Namespace) -> None:
    rows: int = options.rows
    # Enough due jobs that the claimer never runs dry while ~1M rows are deleted.
    backlog: int = options.backlog
    for kind in options.stores:
        phases: list[Phase] = []
        names = ["paced", "none"] + (["unpaced"] if options.unpaced else [])
        for name in names:
            context, url = prepared(kind, options.pg_url, rows, backlog)()
            try:
                if name == "none":
                    count = len(phases[0].latencies_ms)
                    phases.append(Phase(name, claimer(url, lambda n, c=count: n >= c)))
                else:
                    phases.append(run_with_deletion(name, url, paced=name == "paced"))
            finally:
                context.__exit__(None, None, None)
            phase = phases[-1]
            print(f"{kind:8} {phase.name:8} claims {len(phase.latencies_ms):6,}  "
                  f"p50 {percentile(phase.latencies_ms, 0.5):7.2f} ms  "
                  f"p99 {percentile(phase.latencies_ms, 0.99):7.2f} ms  "
                  f"max {max(phase.latencies_ms):8.2f} ms"
                  + (f"  deleted {phase.deleted:,} in {phase.delete_s:.1f} s "
                     f"({phase.deleted / phase.delete_s:,.0f} rows/s)" if phase.deleted else ""),
                  flush=True)


# -- drain A/B ----------------------------------------------------------------------------


DRAIN_CHILD = """
import sys, time
from datetime import UTC, datetime
sys.path.insert(0, {bench!r})
import rota
from rota.store import open_store
from datetime import timedelta
from store_throughput import enqueue_all
url, jobs, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
assert rota.__file__.startswith({src!r}), rota.__file__
store = open_store(url)
enqueue_all(store, "bench", jobs, 5000, datetime.now(UTC) - timedelta(seconds=1))
# Like a worker: every claim and every complete reads the clock, so finished_at varies
# (a drain at one fixed `now` would give the finished-rows index one duplicate key).
done, started = 0, time.perf_counter()
while claimed := store.claim(["bench"], batch, now=datetime.now(UTC), owner="ab",
                             lease_expires_at=datetime.now(UTC) + timedelta(minutes=5)):
    store.complete([job.lease for job in claimed], datetime.now(UTC))
    done += len(claimed)
seconds = time.perf_counter() - started
store.close()
assert done == jobs, done
print(done / seconds)
"""


def drain_once(src: str, kind: str, pg_url: str, jobs: int, batch: int) -> float:
    # Not migrated here: the child's own rota creates its own schema on first use.
    with fresh_store(kind, pg_url, migrate=False) as url:
        env = {**os.environ, "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1"}
        code = DRAIN_CHILD.format(bench=str(HERE), src=src)
        out = subprocess.run([sys.executable, "-c", code, url, str(jobs), str(batch)],
                             env=env, check=True, capture_output=True, text=True)
        return float(out.stdout.strip().splitlines()[-1])


def drain_ab(options: argparse.Namespace) -> None:
    sources = {"base": str(Path(options.base_src).resolve()),
               "this": str((HERE.parent / "src").resolve())}
    for kind in options.stores:
        for batch in options.batches:
            rates: dict[str, list[float]] = {"base": [], "this": []}
            for _ in range(options.runs):
                for label, src in sources.items():
                    rates[label].append(drain_once(src, kind, options.pg_url, options.jobs,
                                                   batch))
                    print(f"{kind:8} claim {batch:3} {label}: {rates[label][-1]:9,.0f} jobs/s",
                          flush=True)
            base, this = (statistics.median(rates[k]) for k in ("base", "this"))
            print(f"{kind:8} claim {batch:3} MEDIAN base {base:,.0f}  this {this:,.0f}  "
                  f"({(this / base - 1) * 100:+.1f} %)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--rows", type=int, default=1_000_000)
    lat.add_argument("--backlog", type=int, default=300_000)
    lat.add_argument("--unpaced", action="store_true")
    ab = sub.add_parser("drain-ab")
    ab.add_argument("--base-src", required=True)
    ab.add_argument("--runs", type=int, default=3)
    ab.add_argument("--jobs", type=int, default=100_000)
    ab.add_argument("--batches", type=int, nargs="+", default=[20])
    for each in (lat, ab):
        each.add_argument("--stores", nargs="+", default=["postgres", "sqlite"],
                          choices=["postgres", "sqlite"])
        each.add_argument("--pg-url", default=DEFAULT_PG)
    options = parser.parse_args()
    if options.command == "latency":
        latency(options)
    else:
        drain_ab(options)


if __name__ == "__main__":
    main()
