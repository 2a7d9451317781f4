"""rota's peers: pgqueuer and procrastinate, each as its own documentation recommends for
throughput with short jobs. Per library, the harness side (a Target: schema, bulk enqueue,
the worker's command, the unfinished count) and the worker process it starts:

    python -m benchmarks.targets.peers pgqueuer|procrastinate DATABASE_URL

pgqueuer: schema via `Queries.install` plus its recommended autovacuum settings (`pgq
autovac`), bulk enqueue with `Queries.enqueue` given lists; the worker is one QueueManager
on a dedicated asyncpg connection (its performance guide: asyncpg is its fastest driver),
`batch_size=20` (the guide: raise it for jobs shorter than a second; 20 matches the other
workers' 20 slots, so each dequeue claims what a pool of 20 would). `max_concurrent_tasks`
is left unset (pgqueuer's default): the guide calls it a per-process safety ceiling, and
setting it adds a count over the worker's picked rows to every dequeue, which measured
~120 jobs/s on a 100,000-job backlog here. SIGTERM sets the manager's shutdown event.

procrastinate: schema via `SchemaManager.apply_schema_async`, bulk enqueue with
`Task.batch_defer_async`; the worker is `run_worker(concurrency=20)` over async tasks with
the async PsycopgConnector, LISTEN/NOTIFY on (its default), the pool sized to the
concurrency so that no task waits for a connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import asyncpg
import procrastinate
from pgqueuer import AsyncpgDriver, Job, QueueManager
from pgqueuer.queries import Queries

from benchmarks import pg
from benchmarks.processes import python_argv
from benchmarks.targets import WorkerSpec
from benchmarks.workers import record_pickup, soak_work

T = TypeVar("T")
QUEUE = "bench"
PGQUEUER_BATCH = 20
PROCRASTINATE_CONCURRENCY = 20


class _PostgresPeer:
    """What both peers do alike: one fresh database per run, ANALYZE after the bulk load,
    the unfinished count on a kept-open connection."""

    name = ""
    database = ""
    unfinished_sql = ""

    def __init__(self) -> None:
        self.url = pg.url_for(self.database)
        self._counter: pg.Counter | None = None

    def unavailable(self, needs_worker: bool = True) -> str | None:
        return None

    def discard(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None
        pg.drop_database(self.database)

    def settle(self) -> None:
        pg.analyze(self.url)

    def unfinished(self) -> int:
        if self._counter is None:
            self._counter = pg.Counter(self.url, self.unfinished_sql)
        return self._counter()

    def worker(self, latency_file: Path | None) -> WorkerSpec:
        env = {"BENCH_LATENCY_FILE": str(latency_file)} if latency_file else {}
        return WorkerSpec(python_argv("-m", "benchmarks.targets.peers", self.name, self.url),
                          env)


async def paced_async(count: int, interval_s: float,
                      action: Callable[[], Awaitable[object]]) -> None:
    """Await action() `count` times on a fixed schedule (no drift)."""
    start = time.perf_counter()
    for i in range(count):
        delay = start + i * interval_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await action()


# -- pgqueuer ---------------------------------------------------------------------------


class PgqueuerTarget(_PostgresPeer):
    name = "pgqueuer"
    database = "pgqueuer_bench"
    unfinished_sql = "SELECT count(*) FROM pgqueuer"  # finished jobs move to its log
    concurrency_note = f"QueueManager.run(batch_size={PGQUEUER_BATCH}), asyncpg connection"

    async def _with_queries(self, body: Callable[[Queries], Awaitable[T]]) -> T:
        connection = await asyncpg.connect(self.url)
        try:
            return await body(Queries(AsyncpgDriver(connection)))
        finally:
            await connection.close()

    def prepare(self) -> None:
        self.url = pg.fresh_database(self.database)
        install_pgqueuer(self.url)

    def enqueue_noops(self, count: int, chunk: int) -> float:
        async def go(queries: Queries) -> float:
            start = time.perf_counter()
            for offset in range(0, count, chunk):
                size = min(chunk, count - offset)
                await queries.enqueue(["noop"] * size, [None] * size, [0] * size)
            return time.perf_counter() - start

        return asyncio.run(self._with_queries(go))

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        async def go(queries: Queries) -> None:
            await paced_async(count, interval_s, lambda: queries.enqueue(
                "probe", json.dumps({"ts": time.time(), "rec": record}).encode()))

        asyncio.run(self._with_queries(go))


def install_pgqueuer(url: str) -> None:
    """pgqueuer's schema in the database at `url`, with its recommended autovacuum
    settings (`pgq autovac`)."""

    async def install() -> None:
        connection = await asyncpg.connect(url)
        try:
            queries = Queries(AsyncpgDriver(connection))
            await queries.install()
            await queries.optimize_autovacuum()
        finally:
            await connection.close()

    asyncio.run(install())


async def pgqueuer_worker(url: str) -> None:
    connection = await asyncpg.connect(url)
    manager = QueueManager(Queries(AsyncpgDriver(connection)))

    @manager.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    @manager.entrypoint("probe")
    async def probe(job: Job) -> None:
        payload = json.loads(job.payload or b"{}")
        record_pickup(payload["ts"], payload["rec"])

    @manager.entrypoint("soak")
    async def soak(job: Job) -> None:
        await soak_work(json.loads(job.payload or b"{}")["ts"])

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, manager.shutdown.set)
    try:
        await manager.run(batch_size=PGQUEUER_BATCH)
    finally:
        await connection.close()


# -- procrastinate ----------------------------------------------------------------------


def procrastinate_app(url: str) -> procrastinate.App:
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url, min_size=4,
                                                 max_size=PROCRASTINATE_CONCURRENCY + 2))

    @app.task(name="noop", queue=QUEUE)
    async def noop() -> None:
        return None

    @app.task(name="probe", queue=QUEUE)
    async def probe(ts: float, rec: bool) -> None:
        record_pickup(ts, rec)

    @app.task(name="soak", queue=QUEUE)
    async def soak(ts: float) -> None:
        await soak_work(ts)

    return app


def install_procrastinate(url: str) -> None:
    """procrastinate's schema in the database at `url`."""
    app = procrastinate_app(url)

    async def apply() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    asyncio.run(apply())


class ProcrastinateTarget(_PostgresPeer):
    name = "procrastinate"
    database = "procrastinate_bench"
    unfinished_sql = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
    concurrency_note = f"run_worker(concurrency={PROCRASTINATE_CONCURRENCY}), async tasks"

    def prepare(self) -> None:
        self.url = pg.fresh_database(self.database)
        install_procrastinate(self.url)

    def enqueue_noops(self, count: int, chunk: int) -> float:
        app = procrastinate_app(self.url)

        async def go() -> float:
            async with app.open_async():
                task = app.tasks["noop"]
                start = time.perf_counter()
                for offset in range(0, count, chunk):
                    size = min(chunk, count - offset)
                    await task.batch_defer_async(*({} for _ in range(size)))
                return time.perf_counter() - start

        return asyncio.run(go())

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        app = procrastinate_app(self.url)

        async def go() -> None:
            async with app.open_async():
                task = app.tasks["probe"]
                await paced_async(count, interval_s,
                                  lambda: task.defer_async(ts=time.time(), rec=record))

        asyncio.run(go())


def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.WARNING)
    library, url = argv
    if library == "pgqueuer":
        asyncio.run(pgqueuer_worker(url))
    else:
        procrastinate_app(url).run_worker(queues=[QUEUE], concurrency=PROCRASTINATE_CONCURRENCY)


if __name__ == "__main__":
    main(sys.argv[1:])
