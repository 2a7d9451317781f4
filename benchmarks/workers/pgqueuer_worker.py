"""pgqueuer worker: one process, one QueueManager, async noop entrypoints.

Configured as pgqueuer's performance guide advises: the asyncpg driver on a dedicated
connection for the QueueManager; `batch_size=20` (the guide: raise it for jobs shorter than
a second; 20 matches the other workers' 20 slots, so each dequeue claims what a pool of 20
would). `max_concurrent_tasks` is left unset (pgqueuer's default): the guide calls it a
per-process safety ceiling, and setting it adds a count over the worker's picked rows to
every dequeue, which measured ~120 jobs/s on a 100,000-job backlog here.
SIGTERM sets the manager's shutdown event (graceful).
Usage: python -m benchmarks.workers.pgqueuer_worker DATABASE_URL
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

import asyncpg
from pgqueuer import AsyncpgDriver, Job, QueueManager
from pgqueuer.queries import Queries

from benchmarks.workers.latency_log import record_pickup

BATCH_SIZE = 20


async def main(url: str) -> None:
    connection = await asyncpg.connect(url)
    manager = QueueManager(Queries(AsyncpgDriver(connection)))

    @manager.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    @manager.entrypoint("probe")
    async def probe(job: Job) -> None:
        payload = json.loads(job.payload or b"{}")
        record_pickup(payload["ts"], payload["rec"])

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, manager.shutdown.set)
    try:
        await manager.run(batch_size=BATCH_SIZE)
    finally:
        await connection.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(sys.argv[1]))
