"""Round-trip time of the PostgreSQL store's two hot calls, claim and complete, per tree.

    python3 -m benchmarks.pg_call_times --trees /tmp/base . [--jobs 20000] [--rounds 3]

For each tree in turn (trees alternating, `--rounds` times), a child process with that
tree's `src` on its path opens a PostgresStore on a fresh schema, enqueues `--jobs` noop
jobs on one Queue, then drains them in one thread: claim 20, complete those 20, timing
each call alone (perf_counter around the store call). It prints the median and p90 of
each, in milliseconds. Where the tree's claim takes `outcomes=` (issue 14 on), a second
drain hands each batch's successes to the next claim, as a worker's pass does, and times
that claim too.

No runtime, no handlers, no worker process: the store and the server only, so a change in
a hot statement (its triggers, its CTEs) shows here first. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"

CHILD = r"""
import contextlib, inspect, json, statistics, sys, time, uuid
from datetime import UTC, datetime, timedelta
import psycopg
from psycopg import sql
from rota.core.jobs import NewJob
from rota.store.postgres import PostgresStore

url, jobs = sys.argv[1], int(sys.argv[2])
QUEUE, OWNER, BATCH = "bench", "bench-0", 20


@contextlib.contextmanager
def filled_store():  # a store on a fresh schema holding `jobs` due jobs, dropped after
    schema = f"rota_calls_{uuid.uuid4().hex[:8]}"
    store = PostgresStore.from_url(f"{url}?schema={schema}")
    try:
        store.migrate()
        now = datetime.now(UTC)
        chunk = [NewJob("noop", QUEUE, now - timedelta(seconds=1), "[1]", "{}")
                 for _ in range(10_000)]
        left = jobs
        while left > 0:
            store.enqueue(chunk[:min(10_000, left)], now)
            left -= 10_000
        yield store
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(schema)))


def ms(values):
    values = sorted(values)
    return [statistics.median(values) * 1000, values[int(len(values) * 0.9)] * 1000]


out = {}
with filled_store() as store:
    claims, completes = [], []
    while True:
        now = datetime.now(UTC)
        started = time.perf_counter()
        got = store.claim([QUEUE], BATCH, now=now, owner=OWNER,
                          lease_expires_at=now + timedelta(minutes=5))
        claims.append(time.perf_counter() - started)
        if not got:
            break
        started = time.perf_counter()
        store.complete([job.lease for job in got], now)
        completes.append(time.perf_counter() - started)
    out["claim"], out["complete"] = ms(claims[:-1]), ms(completes)

if "outcomes" in inspect.signature(PostgresStore.claim).parameters:
    from rota.core.outcomes import Succeeded
    with filled_store() as store:
        carrying, waiting = [], []
        while True:
            now = datetime.now(UTC)
            started = time.perf_counter()
            got = store.claim([QUEUE], BATCH, now=now, owner=OWNER,
                              lease_expires_at=now + timedelta(minutes=5),
                              outcomes=waiting)
            if waiting:
                carrying.append(time.perf_counter() - started)
            if not got:
                break
            waiting = [(job.lease, Succeeded()) for job in got]
        out["claim+outcomes"] = ms(carrying[:-1])
print(json.dumps(out))
"""


def measure(tree: Path, url: str, jobs: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run([sys.executable, "-c", CHILD, url, str(jobs)], env=env,
                          check=True, capture_output=True, text=True)
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", type=Path, required=True)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    trees: list[Path] = [tree.resolve() for tree in options.trees]
    print(f"PostgreSQL store calls, {options.jobs:,} jobs, claims of 20, ms (median / p90)")
    runs: dict[Path, list[dict[str, list[float]]]] = {tree: [] for tree in trees}
    for round_ in range(options.rounds):
        for tree in trees:
            result = measure(tree, options.url, options.jobs)
            runs[tree].append(result)
            figures = "  ".join(f"{name} {median:.3f}/{p90:.3f}"
                                for name, (median, p90) in result.items())
            print(f"  round {round_ + 1} {tree}: {figures}", flush=True)
    print("medians over rounds:")
    for tree in trees:
        names = runs[tree][0].keys()
        figures = "  ".join(
            f"{name} {statistics.median(run[name][0] for run in runs[tree]):.3f}"
            for name in names)
        print(f"  {tree}: {figures}")


if __name__ == "__main__":
    main()
