"""What the SQLite wake-up datagrams cost an enqueue (issue 14, docs/benchmarks.md).

    .venv/bin/python benchmarks/sqlite_wake_cost.py [--jobs 3000] [--rounds 3]

One process enqueues `--jobs` single jobs, one `store.enqueue` call each, into a fresh
SQLite file, and reports the mean time per call. With 0, 1 and 4 other processes
listening (each a `SQLiteStore.listen` watcher, as in a worker), and for each, with the
datagrams sent (as shipped) and not sent (`WakeSender.send` replaced by a no-op, so the
listeners fall back to their 20 ms poll): the difference is the sending's cost. Variants
alternate within each round so the machine's drift falls on all of them. Figures, never
pass/fail.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rota.core.jobs import NewJob
from rota.store import sqlite_wake
from rota.store.sqlite import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LISTENER = """
import sys
from rota.store.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
stop = store.listen(lambda _queue: None)
print("ready", flush=True)
sys.stdin.readline()
stop()
store.close()
"""


def one(db: Path, listeners: int, send: bool, jobs: int) -> float:
    """Mean seconds per single-job enqueue."""
    SQLiteStore(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", LISTENER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(listeners)]
    original = sqlite_wake.WakeSender.send
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        if not send:
            sqlite_wake.WakeSender.send = lambda self: 0  # type: ignore[method-assign]
        store = SQLiteStore(db)
        try:
            batch = [NewJob("n", "q", T0)]
            started = time.perf_counter()
            for _ in range(jobs):
                store.enqueue(batch, T0)
            return (time.perf_counter() - started) / jobs
        finally:
            store.close()
    finally:
        sqlite_wake.WakeSender.send = original  # type: ignore[method-assign]
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
            proc.wait(30)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    variants = [(n, send) for n in (0, 1, 4) for send in (True, False)]
    got: dict[tuple[int, bool], list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="rota-wake-cost-") as scratch:
        for round_index in range(args.rounds):
            order = variants if round_index % 2 == 0 else variants[::-1]
            for index, (listeners, send) in enumerate(order):
                db = Path(scratch) / f"r{round_index}-{index}.db"
                got[(listeners, send)].append(one(db, listeners, send, args.jobs))
    print(f"{args.jobs} single-job enqueues per run, {args.rounds} runs; median us per call")
    for listeners in (0, 1, 4):
        sent = statistics.median(got[(listeners, True)]) * 1e6
        unsent = statistics.median(got[(listeners, False)]) * 1e6
        print(f"  {listeners} listening processes: datagrams sent {sent:7.1f} us, "
              f"not sent {unsent:7.1f} us, difference {sent - unsent:+6.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
