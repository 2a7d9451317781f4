"""The soak suite's producer, a process of its own so that enqueueing never shares a
core's event loop or GIL with the harness's sampler:

    python -m benchmarks.workers.soak_producer SYSTEM URL RATE DURATION_S OFFERS_FILE

Offers `soak` jobs at RATE jobs/s for DURATION_S seconds (or until SIGTERM) in small
batches, one every TICK_S, paced on the monotonic clock: tick k sends the jobs that fall
between k and k+1 ticks of the rate. A tick that starts late (the enqueue took longer
than a tick) is sent once; the ticks wholly missed meanwhile are dropped, not caught up,
so a slowed store is never hit by a burst beyond one tick. Every job's argument is the
wall-clock time.time() just before its batch's enqueue call. After each batch one line
"time.time() cumulative_jobs_offered" goes to OFFERS_FILE, flushed.

SYSTEM: rota (rota-3p too: the same store), procrastinate, pgqueuer; each enqueues
through its library's batch call (`enqueue_many`, `batch_defer_async`, `enqueue` with
lists).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TextIO

TICK_S = 0.02


def tick_sizes(rate: float, tick_s: float, tick: int) -> int:
    """Jobs of tick `tick`: the rate's jobs between its start and the next tick's."""
    return int(rate * tick_s * (tick + 1)) - int(rate * tick_s * tick)


class Pacer:
    """The tick schedule: which tick to send now (skipping those wholly missed)."""

    def __init__(self, rate: float, duration_s: float, tick_s: float = TICK_S) -> None:
        self.rate = rate
        self.tick_s = tick_s
        self.start = time.monotonic()
        self.end = self.start + duration_s
        self.tick = 0
        self.dropped = 0
        self.stopping = False

    def restart(self) -> None:
        """Start the schedule now: the library's imports and connection are not paced."""
        self.end += time.monotonic() - self.start
        self.start = time.monotonic()

    def wait_s(self) -> float:
        return self.start + self.tick * self.tick_s - time.monotonic()

    def take(self) -> int:
        """The jobs of the current tick; moves to the next tick not yet wholly missed."""
        behind = int((time.monotonic() - self.start) / self.tick_s) - self.tick
        for skipped in range(self.tick + 1, self.tick + max(0, behind)):
            self.dropped += tick_sizes(self.rate, self.tick_s, skipped)
        jobs = tick_sizes(self.rate, self.tick_s, self.tick)
        self.tick += max(1, behind)
        return jobs

    def running(self) -> bool:
        return not self.stopping and time.monotonic() < self.end


def _record(out: TextIO, total: int) -> None:
    out.write(f"{time.time():.6f} {total}\n")
    out.flush()


def run_sync(pacer: Pacer, out: TextIO, send: Callable[[int, float], object]) -> int:
    total = 0
    pacer.restart()
    while pacer.running():
        delay = pacer.wait_s()
        if delay > 0:
            time.sleep(delay)
        jobs = pacer.take()
        if jobs:
            send(jobs, time.time())
            total += jobs
            _record(out, total)
    return total


async def run_async(pacer: Pacer, out: TextIO,
                    send: Callable[[int, float], Awaitable[object]]) -> int:
    total = 0
    pacer.restart()
    while pacer.running():
        delay = pacer.wait_s()
        if delay > 0:
            await asyncio.sleep(delay)
        jobs = pacer.take()
        if jobs:
            await send(jobs, time.time())
            total += jobs
            _record(out, total)
    return total


def produce(system: str, url: str, pacer: Pacer, out: TextIO) -> int:
    if system.startswith("rota"):
        from benchmarks.workers.rota_app import make_app

        job = make_app(url).jobs["soak"]
        return run_sync(pacer, out, lambda n, ts: job.enqueue_many([(ts,)] * n))
    if system == "pgqueuer":
        import asyncpg
        from pgqueuer import AsyncpgDriver
        from pgqueuer.queries import Queries

        async def pgqueuer() -> int:
            connection = await asyncpg.connect(url)
            queries = Queries(AsyncpgDriver(connection))
            try:
                return await run_async(pacer, out, lambda n, ts: queries.enqueue(
                    ["soak"] * n, [json.dumps({"ts": ts}).encode()] * n, [0] * n))
            finally:
                await connection.close()

        return asyncio.run(pgqueuer())
    if system == "procrastinate":
        from benchmarks.targets.peers import procrastinate_app

        app = procrastinate_app(url)

        async def procrastinate() -> int:
            async with app.open_async():
                task = app.tasks["soak"]
                return await run_async(pacer, out, lambda n, ts: task.batch_defer_async(
                    *({"ts": ts} for _ in range(n))))

        return asyncio.run(procrastinate())
    raise SystemExit(f"unknown system {system!r}")


def main(argv: list[str]) -> int:
    system, url, rate, duration_s, offers_path = argv
    pacer = Pacer(float(rate), float(duration_s))

    def stop(_signum: int, _frame: object) -> None:
        pacer.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(offers_path, "w") as out:
        total = produce(system, url, pacer, out)
    print(f"offered {total} jobs, dropped {pacer.dropped} of late ticks", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
