"""Where a worker's pass over tenant Queues spends its SQLite time, against one Queue's.

    python3 -m benchmarks.sqlite_tenant_pass [--jobs 20000] [--configs 1/1 1000/1000 10000/100]

For each configuration (`Q/B`: B of Q Queues backlogged, weights 1-5, the jobs enqueued
round-robin over the backlogged ones, as in `benchmarks.suites.queues`), a fresh SQLite
file is drained the way a `rota worker` process drains it, minus the handlers: one Weighted
group (pool 20) plans each pass (`GroupRunner.claim_pass`), and the pass's claim carries
the outcomes of the jobs of the pass before (one transaction per pass: outcomes, claim,
counts, the claim's probe). Printed per configuration:

- the time per job of the passes, and per SQL statement its time per call and per job
  (timed around `execute` on the store's connection);
- WAL frames per commit (the WAL file's growth, with automatic checkpoints off for the
  run: one frame is one 4 KiB page written), and for one commit halfway through, which
  b-tree (table or index) each of its frames belongs to (the `dbstat` virtual table; left
  out where this SQLite lacks it).

The drains run with checkpoints off, so this shows the cost of the statements and of the
pages each commit writes; the checkpoints' own cost (copying the WAL back and its fsyncs,
every 1,000 frames by default) comes on top, in proportion to the frames. Figures, never
pass/fail.
"""

from __future__ import annotations

import argparse
import collections
import sqlite3
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import rota
from benchmarks.suites.queues import T0, backlogged_queues, policy_for
from rota.core.jobs import Lease, NewJob
from rota.core.outcomes import Succeeded
from rota.store import open_store
from rota.worker.group import GroupRunner

FRAME = 4096 + 24  # a WAL frame: its header and one page
WAL_HEADER = 32


class TimedConnection:
    """The store's sqlite3 connection, timing each `execute` by the statement's first
    line that is not blank."""

    def __init__(self, inner: sqlite3.Connection) -> None:
        self.inner = inner
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        start = time.perf_counter()
        try:
            return self.inner.execute(sql, *args)
        finally:
            label = next(line for line in sql.splitlines() if line.strip())[:64]
            self.seconds[label] += time.perf_counter() - start
            self.calls[label] += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def frames_by_tree(path: Path, wal: bytes) -> list[tuple[str, int]]:
    """Which b-tree each frame of `wal` (frames only, no header) writes a page of."""
    pages = [struct.unpack(">I", wal[at:at + 4])[0] for at in range(0, len(wal), FRAME)]
    with sqlite3.connect(path) as reader:
        try:
            names = dict(reader.execute("SELECT pageno, name FROM dbstat").fetchall())
        except sqlite3.OperationalError:
            return [("(this SQLite has no dbstat)", len(pages))]
    return collections.Counter(names.get(page, "?") for page in pages).most_common()


def drain(queues: int, backlogged: int, total: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rota-tenant-pass-") as folder:
        path = Path(folder) / "pass.db"
        store = open_store(f"sqlite:///{path}")
        try:
            names = backlogged_queues(queues, backlogged)
            jobs = [NewJob(name="noop", queue=names[i % len(names)], due_at=T0)
                    for i in range(total)]
            for first in range(0, total, 5_000):
                store.enqueue(jobs[first:first + 5_000], T0)
            inner = store._conn  # type: ignore[attr-defined]
            inner.execute("PRAGMA wal_autocheckpoint = 0")
            inner.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            timed = TimedConnection(inner)
            store._conn = timed  # type: ignore[attr-defined]
            wal = Path(f"{path}-wal")
            runner = GroupRunner(rota.WorkerGroupOptions(
                name="tenants", policy=policy_for(queues), pool_size=20))
            outcomes: list[tuple[Lease, Succeeded]] = []
            done = passes = frames = 0
            mapped: list[tuple[str, int]] = []
            seconds = 0.0
            while done < total:
                before = wal.stat().st_size if wal.exists() else 0
                start = time.perf_counter()
                plan, got = runner.claim_pass(store, 20, T0, outcomes=outcomes)
                for _ in got:
                    plan.serve()
                seconds += time.perf_counter() - start
                after = wal.stat().st_size
                frames += (after - max(before, WAL_HEADER)) // FRAME
                if passes == total // 40:  # a commit halfway through the drain
                    mapped = frames_by_tree(path, wal.read_bytes()[max(before, WAL_HEADER):])
                outcomes = [(Lease(job.id, runner.owner, job.attempt), Succeeded())
                            for job in got]
                done += len(got)
                passes += 1
                if passes % 200 == 0:
                    inner.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                if not got and not runner.probe_pending:
                    raise RuntimeError(f"a pass claimed nothing with {total - done} left")
            print(f"{queues:,} Queues ({backlogged:,} backlogged): {passes} passes, "
                  f"{seconds / done * 1e6:.1f} us a job, {frames / passes:.1f} WAL frames "
                  f"a commit", flush=True)
            for label, spent in timed.seconds.most_common(6):
                calls = timed.calls[label]
                print(f"    {spent / done * 1e6:6.1f} us a job  {spent / calls * 1e6:7.1f} us a "
                      f"call  {calls:6} calls  {label}")
            print("    frames of one commit by b-tree: " + ", ".join(
                f"{name} {count}" for name, count in mapped), flush=True)
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--configs", nargs="+", default=["1/1", "1000/1000", "10000/100"],
                        help="Queues/backlogged")
    options = parser.parse_args()
    for config in options.configs:
        queues, backlogged = (int(part) for part in config.split("/"))
        drain(queues, backlogged, options.jobs)


if __name__ == "__main__":
    main()
