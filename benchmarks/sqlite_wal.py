"""SQLite WAL size under a drain: how big `rota.db-wal` grows, and what is left at the end.

    python benchmarks/sqlite_wal.py --jobs 20000 --producers 1

Enqueues `--jobs` jobs into a fresh SQLite file, then runs real Worker Groups (the
runtime, as `rota worker` does) until every job succeeded, while `--producers` threads keep
enqueueing more jobs (a constant reader/writer mix, as in production) and a sampler reads
the size of the -wal file every 50 ms. Prints the peak and final WAL sizes and the
database size. Not part of the test suite: a figure, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path

import rota
from rota.core.jobs import JobState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--producers", type=int, default=1,
                        help="threads enqueueing 10-job batches during the drain")
    parser.add_argument("--pool", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wal.db"
        wal = Path(f"{path}-wal")
        app = rota.App(f"sqlite:///{path}")

        @app.job("noop")
        def noop(payload: str) -> None:
            pass

        noop.enqueue_many([("x" * 200,)] * args.jobs)
        app.add_worker_group(rota.WorkerGroupOptions(
            name="drain", policy=rota.Strict("default"), pool_size=args.pool,
            poll_interval=0.05))
        peak = 0
        done = threading.Event()
        produced = 0

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.05):
                peak = max(peak, wal.stat().st_size if wal.exists() else 0)

        def produce() -> None:
            nonlocal produced
            producer_app = rota.App(f"sqlite:///{path}")
            producer = producer_app.job("noop")(lambda payload: None)
            try:
                while not done.is_set():
                    producer.enqueue_many([("y" * 200,)] * 10)
                    produced += 10
                    time.sleep(0.01)  # a steady trickle, not a benchmark of enqueue
            finally:
                producer_app.close()

        threads = [threading.Thread(target=sample)]
        threads += [threading.Thread(target=produce) for _ in range(args.producers)]

        cpu: list[float] = []

        async def drain() -> float:
            started = time.perf_counter()
            cpu_started = time.process_time()
            async with app.serve(grace=5):
                for thread in threads:
                    thread.start()
                while True:
                    counts = await asyncio.to_thread(app.store.count_jobs)
                    succeeded = sum(n for (_, s), n in counts.items()
                                    if s is JobState.SUCCEEDED)
                    if succeeded >= args.jobs:
                        break
                    await asyncio.sleep(0.2)
                cpu.append(time.process_time() - cpu_started)
                done.set()
                for thread in threads:
                    await asyncio.to_thread(thread.join)
                # Stay idle a little: a periodic checkpoint has its chance to run.
                await asyncio.sleep(12)
            return time.perf_counter() - started

        elapsed = asyncio.run(drain())
        final_open = wal.stat().st_size if wal.exists() else 0
        app.close()
        final_closed = wal.stat().st_size if wal.exists() else 0
        print(f"jobs {args.jobs} + {produced} enqueued meanwhile, drained in "
              f"{elapsed - 12:.1f} s ({cpu[0]:.1f} s CPU); WAL peak {peak / 2**20:.2f} MiB, "
              f"WAL after 12 s idle {final_open / 2**20:.2f} MiB, after close "
              f"{final_closed / 2**20:.2f} MiB; database {os.path.getsize(path) / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
