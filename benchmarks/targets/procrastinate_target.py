"""procrastinate: schema via SchemaManager.apply_schema_async, bulk enqueue with
`Task.batch_defer_async`, one worker process with concurrency 20."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from benchmarks import pg
from benchmarks.processes import python_argv
from benchmarks.targets.base import WorkerSpec
from benchmarks.workers.procrastinate_worker import CONCURRENCY, make_app

UNFINISHED = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
DATABASE = "procrastinate_bench"


class ProcrastinateTarget:
    name = "procrastinate"
    concurrency_note = f"run_worker(concurrency={CONCURRENCY}), async tasks"

    def __init__(self) -> None:
        self.url = pg.url_for(DATABASE)
        self._counter: pg.Counter | None = None

    def unavailable(self, needs_worker: bool = True) -> str | None:
        return None

    def prepare(self) -> None:
        self.url = pg.fresh_database(DATABASE)
        app = make_app(self.url)

        async def apply() -> None:
            async with app.open_async():
                await app.schema_manager.apply_schema_async()

        asyncio.run(apply())

    def discard(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None
        pg.drop_database(DATABASE)

    def enqueue_noops(self, count: int, chunk: int) -> float:
        app = make_app(self.url)

        async def go() -> float:
            async with app.open_async():
                task = app.tasks["noop"]
                start = time.perf_counter()
                for offset in range(0, count, chunk):
                    size = min(chunk, count - offset)
                    await task.batch_defer_async(*({} for _ in range(size)))
                return time.perf_counter() - start

        return asyncio.run(go())

    def settle(self) -> None:
        pg.analyze(self.url)

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        app = make_app(self.url)

        async def go() -> None:
            async with app.open_async():
                task = app.tasks["probe"]
                loop_start = time.perf_counter()
                for i in range(count):
                    delay = loop_start + i * interval_s - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    await task.defer_async(ts=time.time(), rec=record)

        asyncio.run(go())

    def worker(self, latency_file: Path | None) -> WorkerSpec:
        env = {"BENCH_LATENCY_FILE": str(latency_file)} if latency_file else {}
        return WorkerSpec(
            python_argv("-m", "benchmarks.workers.procrastinate_worker", self.url), env)

    def unfinished(self) -> int:
        if self._counter is None:
            self._counter = pg.Counter(self.url, UNFINISHED)
        return self._counter()
