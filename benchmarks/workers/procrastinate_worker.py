"""procrastinate worker: one process, `concurrency=20` async noop tasks.

Configured as procrastinate's docs advise for many short I/O-bound jobs: async tasks,
the async PsycopgConnector, `run_worker(concurrency=...)`, LISTEN/NOTIFY on (default).
The pool is sized to the concurrency so no task waits for a connection.
Usage: python -m benchmarks.workers.procrastinate_worker DATABASE_URL
"""

from __future__ import annotations

import logging
import sys

import procrastinate

from benchmarks.workers.latency_log import record_pickup

QUEUE = "bench"
CONCURRENCY = 20


def make_app(url: str) -> procrastinate.App:
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url, min_size=4,
                                                 max_size=CONCURRENCY + 2))

    @app.task(name="noop", queue=QUEUE)
    async def noop() -> None:
        return None

    @app.task(name="probe", queue=QUEUE)
    async def probe(ts: float, rec: bool) -> None:
        record_pickup(ts, rec)

    return app


def main(url: str) -> None:
    logging.basicConfig(level=logging.WARNING)
    make_app(url).run_worker(queues=[QUEUE], concurrency=CONCURRENCY)


if __name__ == "__main__":
    main(sys.argv[1])
