"""Store throughput: enqueue rows/s and plain drain jobs/s, for any store URL.

    python benchmarks/store_throughput.py --store sqlite:///bench.db --jobs 100000

Enqueues `--jobs` jobs in batches, then drains them with claim batches of 20 and of 100,
each batch completed with one batched `complete` (no handler runs: this measures the
store alone). With `--claimers K`, K threads drain at once, each with its own store
object opened from the URL (memory:// shares one object: it lives in one process).
Refuses a store that already holds jobs. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from rota.core.jobs import NewJob
from rota.store import Store, open_store

LEASE = timedelta(minutes=5)


def enqueue_all(store: Store, queue: str, jobs: int, batch: int, now: datetime) -> float:
    """Enqueue `jobs` jobs on `queue` in batches of `batch`; return the seconds taken."""
    template = NewJob("bench", queue, now, '["payload", 1]', "{}")
    started = time.perf_counter()
    for start in range(0, jobs, batch):
        store.enqueue([template] * min(batch, jobs - start), now)
    return time.perf_counter() - started


def drain(store: Store, queue: str, claim_batch: int, now: datetime, owner: str) -> int:
    """Claim and complete until `queue` is empty; return how many jobs were drained."""
    drained = 0
    while jobs := store.claim([queue], claim_batch, now=now, owner=owner,
                              lease_expires_at=now + LEASE):
        store.complete([job.lease for job in jobs], now)
        drained += len(jobs)
    return drained


def run_threads(count: int, work: Callable[[int], int]) -> tuple[int, float]:
    """Run `work(index)` on `count` threads released together; return (the sum of what
    they returned, seconds from release until the last one finished)."""
    done = [0] * count
    barrier = threading.Barrier(count + 1)

    def body(index: int) -> None:
        barrier.wait()
        done[index] = work(index)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return sum(done), time.perf_counter() - started


def timed_drain(
    open_one: Callable[[], Store], queue: str, claim_batch: int, claimers: int, now: datetime
) -> tuple[int, float]:
    """Drain `queue` with `claimers` threads; return (jobs drained, seconds)."""
    stores = [open_one() for _ in range(claimers)]
    try:
        return run_threads(
            claimers,
            lambda index: drain(stores[index], queue, claim_batch, now, f"bench-{index}"),
        )
    finally:
        for opened in stores:
            opened.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="store URL, e.g. sqlite:///bench.db")
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs per drain (default 100000)")
    parser.add_argument("--batch", type=int, default=5_000,
                        help="enqueue batch size (default 5000)")
    parser.add_argument("--claimers", type=int, default=1, help="draining threads (default 1)")
    options = parser.parse_args(argv)

    store = open_store(options.store)
    if store.count_jobs():
        store.close()
        print(f"{options.store} already holds jobs; give a fresh store", file=sys.stderr)
        return 1

    def open_one() -> Store:
        return store if options.store.startswith("memory:") else open_store(options.store)

    now = datetime.now(UTC)
    print(f"store {store.url}, {options.jobs} jobs per drain, {options.claimers} claimer(s)")
    for claim_batch in (20, 100):
        queue = f"bench-{claim_batch}"
        seconds = enqueue_all(store, queue, options.jobs, options.batch, now)
        print(f"enqueue (batches of {options.batch}): {options.jobs / seconds:12,.0f} rows/s")
        drained, seconds = timed_drain(open_one, queue, claim_batch, options.claimers, now)
        if drained != options.jobs:
            print(f"drained {drained} jobs, expected {options.jobs}", file=sys.stderr)
            return 1
        print(f"drain (claim {claim_batch:>3} + batched complete): "
              f"{drained / seconds:12,.0f} jobs/s")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
