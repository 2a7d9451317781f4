"""Claims on SQLite while a reader holds a transaction open: claim time and WAL size.

A reader that keeps a read transaction open pins the WAL: no checkpoint (SQLite's
automatic one at each commit past `wal_autocheckpoint`, or the worker's PASSIVE one every
10 s, rota.worker.checkpoint) may fold back frames the reader's snapshot might need, so the
-wal file only grows while it stays open. This measures what that does to claims.

One process, a fresh SQLite file: a steady load of `--rate` jobs/s enqueued, claimed (10 at
a time) and completed through the store, the maintenance worker's PASSIVE checkpoint every
10 s, and on its own connection a reader that opens `BEGIN; SELECT ...` after `--warmup`
seconds and keeps it open for `--minutes`. After the reader ends the load goes on for
`--after` seconds, then one `PRAGMA wal_checkpoint(TRUNCATE)` shows whether the file can be
given back. Every `--every` seconds it prints: the phase, jobs completed, claim p50/p99
(ms), the -wal file's size and the frames a checkpoint could not fold back. Prints
figures, asserts nothing.

    .venv/bin/python benchmarks/sqlite_held_reader.py --minutes 30
    .venv/bin/python benchmarks/sqlite_held_reader.py --minutes 3 --rate 300
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rota.core.jobs import Lease, NewJob
from rota.store.sqlite import SQLiteStore

CHECKPOINT_S = 10.0  # rota.worker.checkpoint.CHECKPOINT_INTERVAL_S
BATCH = 10


def _wal_mib(path: Path) -> float:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size / 2**20 if wal.exists() else 0.0


def _ms(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run(minutes: float, rate: float, warmup_s: float, after_s: float, every_s: float) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "held.db"
        store = SQLiteStore(path)
        # Some rows for the reader to read, so its snapshot is a real one.
        now = datetime.now(UTC)
        store.enqueue([NewJob("seed", "other", now + timedelta(days=1))], now)
        reader: sqlite3.Connection | None = None
        start = time.monotonic()
        held_from, held_to = warmup_s, warmup_s + minutes * 60
        end = held_to + after_s
        claims: list[float] = []
        done = window_done = 0
        next_report = start + every_s
        next_checkpoint = start + CHECKPOINT_S
        left = 0
        print(f"SQLite {sqlite3.sqlite_version}; {rate:g} jobs/s, reader held "
              f"{held_from:g}-{held_to:g} s, load until {end:g} s")
        print(f"{'t_s':>6} {'phase':<7} {'done/s':>7} {'claim_p50':>9} {'claim_p99':>9} "
              f"{'claim_max':>9} {'wal_MiB':>8} {'frames_left':>11}")
        while True:
            elapsed = time.monotonic() - start
            if elapsed >= end:
                break
            if reader is None and held_from <= elapsed < held_to:
                reader = sqlite3.connect(path, isolation_level=None)
                reader.execute("BEGIN")
                reader.execute("SELECT count(*) FROM rota_jobs").fetchone()
            elif reader is not None and elapsed >= held_to:
                reader.execute("COMMIT")
                reader.close()
                reader = None
            tick = time.monotonic()
            now = datetime.now(UTC)
            store.enqueue([NewJob("work", "q", now) for _ in range(BATCH)], now)
            began = time.perf_counter()
            got = store.claim(["q"], BATCH, now=now, owner="bench",
                              lease_expires_at=now + timedelta(minutes=5))
            claims.append(time.perf_counter() - began)
            store.complete([Lease(job.id, "bench", job.attempt) for job in got], now)
            done += len(got)
            window_done += len(got)
            if time.monotonic() >= next_checkpoint:
                left = store.checkpoint_wal()
                next_checkpoint += CHECKPOINT_S
            if time.monotonic() >= next_report:
                phase = "held" if reader is not None else (
                    "before" if elapsed < held_from else "after")
                print(f"{elapsed:6.0f} {phase:<7} {window_done / every_s:7.0f} "
                      f"{_ms(claims, 0.5):9.3f} {_ms(claims, 0.99):9.3f} "
                      f"{max(claims) * 1000:9.3f} {_wal_mib(path):8.1f} {left:11d}",
                      flush=True)
                claims, window_done = [], 0
                next_report += every_s
            pause = BATCH / rate - (time.monotonic() - tick)
            if pause > 0:
                time.sleep(pause)
        before = _wal_mib(path)
        left = store.checkpoint_wal()
        passive = _wal_mib(path)
        now = datetime.now(UTC)
        store.enqueue([NewJob("work", "q", now)], now)  # the next write restarts the WAL
        restarted = _wal_mib(path)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        conn.close()
        print(f"end: {done} jobs; WAL {before:.1f} MiB; after a PASSIVE checkpoint "
              f"{passive:.1f} MiB ({left} frames left); after the next write {restarted:.1f} "
              f"MiB; after wal_checkpoint(TRUNCATE) {_wal_mib(path):.1f} MiB; database "
              f"{os.path.getsize(path) / 2**20:.1f} MiB")
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="how long the reader holds its transaction (default 30)")
    parser.add_argument("--rate", type=float, default=500.0, help="jobs per second offered")
    parser.add_argument("--warmup", type=float, default=30.0,
                        help="seconds of load before the reader starts")
    parser.add_argument("--after", type=float, default=60.0,
                        help="seconds of load after the reader ends")
    parser.add_argument("--every", type=float, default=15.0, help="seconds per printed row")
    args = parser.parse_args()
    run(args.minutes, args.rate, args.warmup, args.after, args.every)


if __name__ == "__main__":
    main()
