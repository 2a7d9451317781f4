"""What each statement that walks an index of jobs costs once many jobs were claimed and
finished while a snapshot is held: the claim (from its floor and from the start), the
claim of a Queue with a concurrency limit (it counts the Queue's leases), the floor check
(from the start and from where a check a minute earlier ended), the lease sweep, the
purge's search and the Queue listing. Store calls, one process, no worker.

Creates the database `held_walks_bench` afresh on `BENCH_PG_URL` (benchmarks.pg): Queue
`plain`, and Queue `limited` with a limit of 1,000 (never reached: what is measured is the
count). A connection opens a transaction with an xid (`BEGIN; SELECT txid_current()`),
then `--jobs` jobs of each Queue are claimed and completed, 100 at a time, by a store
listening for hints (so it keeps claim floors); 1,000 more stay due in each. Each
statement then runs `--runs` times; the median is printed, beside the same once the
transaction has ended and the table was vacuumed. The floor check's "last minute" starts
at the job claimed `--per-minute` jobs before the last (800 jobs/s: 48,000).

Prints figures, asserts nothing. Compare two trees by running it from each
(`PYTHONPATH=TREE/src`; a tree whose floor check had no start position walks from the
start in both of its rows).

    .venv/bin/python -m benchmarks.held_walks --jobs 200000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

import rota
from benchmarks import cleanup, pg
from rota.core.jobs import JobState, Lease, NewJob
from rota.store.postgres import PostgresStore, render_sql
from rota.store.postgres.floors import START

DATABASE = "held_walks_bench"
BATCH = 100
LIVE = 1_000
LEASE = timedelta(seconds=60)


def median_ms(run: Callable[[], object], runs: int) -> float:
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        run()
        took.append((time.perf_counter() - began) * 1e3)
    return statistics.median(took)


def drain(store: PostgresStore, queue: str, jobs: int) -> None:
    """Claim and complete `jobs` due jobs of `queue`, BATCH at a time."""
    done = 0
    while done < jobs:
        now = datetime.now(UTC)
        claimed = store.claim([queue], min(BATCH, jobs - done), now=now, owner="bench",
                              lease_expires_at=now + LEASE)
        if not claimed:
            raise RuntimeError(f"{queue}: nothing to claim after {done:,} jobs")
        store.complete([Lease(job.id, "bench", job.attempt) for job in claimed], now)
        done += len(claimed)


def measure(store: PostgresStore, admin: Any, args: argparse.Namespace,
            minute_ago: tuple[datetime, int]) -> dict[str, float]:
    """Each statement's median time, ms. Claims take one job and hand it back (release),
    so every run finds the same jobs."""

    def claim_one(queue: str, *, from_start: bool = False) -> None:
        if from_start:
            store.claim_floors.hint(queue, None)
        now = datetime.now(UTC)
        claimed = store.claim([queue], 1, now=now, owner="bench",
                              lease_expires_at=now + LEASE)
        store.release([job.lease for job in claimed], now)

    def floor_check(from_: tuple[datetime, int]) -> None:
        dues, ids = store.claim_floors.positions(["plain"])
        admin.execute(render_sql("floor_check", "rota"), {
            "queues": ["plain"], "from_dues": [from_[0]], "from_ids": [from_[1]],
            "floor_dues": dues, "floor_ids": ids, "now": datetime.now(UTC)}).fetchall()

    later = datetime.now(UTC) + 2 * LEASE  # every lease taken so far has expired by then
    claim_one("plain")  # sets the floor the claims and checks below start from
    return {
        "claim, from its floor": median_ms(lambda: claim_one("plain"), args.runs),
        "claim, from the start": median_ms(
            lambda: claim_one("plain", from_start=True), args.runs),
        "claim of a limited Queue": median_ms(lambda: claim_one("limited"), args.runs),
        "floor check, from the start": median_ms(lambda: floor_check((START, 0)), args.runs),
        "floor check, from a minute ago": median_ms(lambda: floor_check(minute_ago),
                                                    args.runs),
        "lease sweep (find_expired_leases)": median_ms(
            lambda: store.find_expired_leases(later, 500), args.runs),
        "purge, nothing old enough": median_ms(
            lambda: store.purge([JobState.SUCCEEDED], later - timedelta(days=1), 1000),
            args.runs),
        "queue_infos": median_ms(lambda: store.queue_infos(datetime.now(UTC)), args.runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200_000,
                        help="jobs of each Queue claimed and finished under the snapshot")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--per-minute", type=int, default=48_000)
    args = parser.parse_args()
    cleanup.install()  # the database is dropped however the run ends
    url = pg.fresh_database(DATABASE)
    app = rota.App(url)
    store = app.store
    assert isinstance(store, PostgresStore)
    stop = store.listen(lambda _queue: None)
    try:
        store.migrate()
        app.set_queue_limit("limited", 1000)
        due = datetime.now(UTC) - timedelta(hours=1)
        for queue in ("plain", "limited"):
            for start in range(0, args.jobs + LIVE, 5_000):
                store.enqueue([NewJob("job", queue, due + timedelta(microseconds=start + n),
                                      "[]") for n in range(min(5_000, args.jobs + LIVE - start))],
                              datetime.now(UTC))
        pg.analyze(url)
        with psycopg.connect(url, autocommit=True) as admin, psycopg.connect(url) as holder:
            holder.execute("SELECT txid_current()")  # the snapshot held from here
            began = time.monotonic()
            for queue in ("plain", "limited"):
                drain(store, queue, args.jobs)
            row = admin.execute(
                "SELECT due_at, id FROM rota.jobs WHERE queue = 'plain' ORDER BY id "
                "OFFSET %s LIMIT 1", (max(0, args.jobs - args.per_minute),)).fetchone()
            assert row is not None
            minute_ago = (row[0], int(row[1]))
            print(f"{2 * args.jobs:,} jobs claimed and finished under a held snapshot in "
                  f"{time.monotonic() - began:.0f} s", flush=True)
            held = measure(store, admin, args, minute_ago)
            holder.rollback()
            admin.execute("VACUUM rota.jobs")
            after = measure(store, admin, args, minute_ago)
        print(f"{'statement (median of ' + str(args.runs) + ')':<38}{'held, ms':>12}"
              f"{'vacuumed, ms':>14}")
        for name, ms in held.items():
            print(f"{name:<38}{ms:>12.2f}{after[name]:>14.2f}")
    finally:
        stop()
        app.close()


if __name__ == "__main__":
    main()
