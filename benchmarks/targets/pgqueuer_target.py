"""pgqueuer: schema via Queries.install plus its recommended autovacuum settings
(`pgq autovac`), bulk enqueue with `Queries.enqueue` given lists, one QueueManager process."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import asyncpg
from pgqueuer import AsyncpgDriver
from pgqueuer.queries import Queries

from benchmarks import pg
from benchmarks.processes import python_argv
from benchmarks.targets.base import WorkerSpec
from benchmarks.workers.pgqueuer_worker import BATCH_SIZE

# Finished jobs leave the queue table (pgqueuer moves them to its log).
UNFINISHED = "SELECT count(*) FROM pgqueuer"
DATABASE = "pgqueuer_bench"


class PgqueuerTarget:
    name = "pgqueuer"
    concurrency_note = f"QueueManager.run(batch_size={BATCH_SIZE}), asyncpg connection"

    def __init__(self) -> None:
        self.url = pg.url_for(DATABASE)
        self._counter: pg.Counter | None = None

    def unavailable(self, needs_worker: bool = True) -> str | None:
        return None

    async def _with_queries(self, body: object) -> object:
        connection = await asyncpg.connect(self.url)
        try:
            return await body(Queries(AsyncpgDriver(connection)))  # type: ignore[operator]
        finally:
            await connection.close()

    def prepare(self) -> None:
        self.url = pg.fresh_database(DATABASE)

        async def install(queries: Queries) -> None:
            await queries.install()
            await queries.optimize_autovacuum()

        asyncio.run(self._with_queries(install))

    def discard(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None
        pg.drop_database(DATABASE)

    def enqueue_noops(self, count: int, chunk: int) -> float:
        async def go(queries: Queries) -> float:
            start = time.perf_counter()
            for offset in range(0, count, chunk):
                size = min(chunk, count - offset)
                await queries.enqueue(["noop"] * size, [None] * size, [0] * size)
            return time.perf_counter() - start

        return float(asyncio.run(self._with_queries(go)))  # type: ignore[arg-type]

    def settle(self) -> None:
        pg.analyze(self.url)

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        async def go(queries: Queries) -> None:
            loop_start = time.perf_counter()
            for i in range(count):
                delay = loop_start + i * interval_s - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                payload = json.dumps({"ts": time.time(), "rec": record}).encode()
                await queries.enqueue("probe", payload)

        asyncio.run(self._with_queries(go))

    def worker(self, latency_file: Path | None) -> WorkerSpec:
        env = {"BENCH_LATENCY_FILE": str(latency_file)} if latency_file else {}
        return WorkerSpec(python_argv("-m", "benchmarks.workers.pgqueuer_worker", self.url), env)

    def unfinished(self) -> int:
        if self._counter is None:
            self._counter = pg.Counter(self.url, UNFINISHED)
        return self._counter()
