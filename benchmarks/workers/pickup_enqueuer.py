"""Process A of the pickup suite: `python -m benchmarks.workers.pickup_enqueuer URL N
INTERVAL_S WARMUP`. Run with the rota tree under test first on PYTHONPATH.

Creates (migrates) the store if needed with `--prepare` and exits; otherwise enqueues
WARMUP unrecorded probes, waits until the worker (process B) finished them, leaves it idle
for a second, then enqueues N recorded probes one at a time INTERVAL_S apart, each stamped
with time.time() just before its enqueue call, and waits until all are finished. The
worker's probe handler writes start-time minus stamp to its latency file.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from contextlib import closing

import rota
from benchmarks.targets.base import paced
from benchmarks.targets.rota_target import UNFINISHED_SQLITE
from benchmarks.workers.rota_app import make_app


def wait_drained(path: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        while int(conn.execute(UNFINISHED_SQLITE).fetchone()[0]) > 0:
            if time.monotonic() > deadline:
                raise SystemExit("pickup enqueuer: jobs still unfinished after "
                                 f"{timeout_s:.0f} s")
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    url = argv[0]
    app = make_app(url)
    try:
        if argv[1:] == ["--prepare"]:
            app.store.count_jobs()
            print(f"rota from {rota.__file__}", flush=True)
            return 0
        count, interval_s, warmup = int(argv[1]), float(argv[2]), int(argv[3])
        path = url.removeprefix("sqlite:///")
        probe = app.jobs["probe"]
        paced(warmup, 0.01, lambda _i: probe.enqueue(time.time(), False))
        wait_drained(path)
        time.sleep(1.0)
        paced(count, interval_s, lambda _i: probe.enqueue(time.time(), True))
        wait_drained(path)
        return 0
    finally:
        app.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
