"""Claims of a Queue with a concurrency limit on a PostgreSQL jobs table never analysed.

Creates the database `limited_claims_bench` afresh on `BENCH_PG_URL` (benchmarks.pg),
stores `--jobs` due jobs in one Queue with a limit of 50, then claims 10 at a time
`--claims` times, completing the oldest 20 leases whenever 40 are held (so the limit
never stops a claim). It prints the claims' p50, p90 and max in ms, then runs ANALYZE and
does the same again: before ANALYZE is a bulk load that autovacuum has not looked at yet
(or a cluster with autovacuum off). Prints figures, asserts nothing; compare two trees
by running it from each (`PYTHONPATH=TREE/src`).

    .venv/bin/python -m benchmarks.limited_claims --jobs 200000
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

import rota
from benchmarks import cleanup, pg
from rota.core.jobs import JobRecord, Lease, NewJob
from rota.store.base import Store

DATABASE = "limited_claims_bench"
CHUNK = 5_000


def timed_claims(store: Store, claims: int) -> str:
    lease = datetime.now(UTC) + timedelta(hours=1)
    held: list[JobRecord] = []
    times: list[float] = []
    for _ in range(claims):
        began = time.perf_counter()
        claimed = store.claim(["limited"], 10, now=datetime.now(UTC), owner="bench",
                              lease_expires_at=lease)
        times.append((time.perf_counter() - began) * 1e3)
        held.extend(claimed)
        if len(held) >= 40:
            done, held = held[:20], held[20:]
            store.complete([Lease(job.id, "bench", job.attempt) for job in done],
                           datetime.now(UTC))
    slowest = max(range(len(times)), key=times.__getitem__)
    times.sort()
    return (f"p50 {times[len(times) // 2]:.2f} ms, p90 {times[len(times) * 9 // 10]:.2f} ms, "
            f"max {times[-1]:.2f} ms (claim {slowest + 1})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--claims", type=int, default=300)
    args = parser.parse_args()
    cleanup.install()  # the database is dropped however the run ends
    url = pg.fresh_database(DATABASE)
    app = rota.App(url)
    try:
        app.set_queue_limit("limited", 50)
        now = datetime.now(UTC)
        for start in range(0, args.jobs, CHUNK):
            app.store.enqueue([NewJob("job", "limited", now, "[]")
                               for _ in range(min(CHUNK, args.jobs - start))], now)
        print(f"{args.jobs:,} jobs, never analysed: claims of 10 "
              f"{timed_claims(app.store, args.claims)}")
        pg.analyze(url)
        print(f"{args.jobs:,} jobs, analysed:       claims of 10 "
              f"{timed_claims(app.store, args.claims)}")
    finally:
        app.close()


if __name__ == "__main__":
    main()
