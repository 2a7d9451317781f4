"""Before/after: the noop drain of a real `rota worker` from two rota source trees, alternating.

    python3 benchmarks/ab_drain.py --before /work/wt/base --after . [MORE_TREES...] \
        [--stores sqlite postgres] [--jobs 30000] [--runs 5] [--pg-url URL] [--workers N]

The whole runtime, not the store alone: each run enqueues `--jobs` argument-less async
noop jobs into a fresh store (an SQLite file, or a new PostgreSQL database) with the
tree's own rota (so each tree gets its own schema), starts one `rota worker
benchmarks.workers.rota_app:app` from that tree (one Worker Group, Strict, pool 20), and
times it from the start of the process until the store holds no unfinished job (polled
every 50 ms from this process with plain SQL). Runs alternate before, after, after,
before, ... so that drift on a shared machine falls on both sides (with several `--after`
trees: each run walks the trees in turn, every other run in reverse). Prints every run
(jobs/s from the spawn; the steady rate, between the polls that saw 90 % and 10 % of the
jobs left, which leaves out start-up; the worker's CPU time per job), then the medians and
the ratios after/before.
Figures, never pass/fail: this is how "the noop drain is within 5 % of before" is checked.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
UNFINISHED = "SELECT count(*) FROM {table} WHERE state IN ('scheduled', 'leased')"
ENQUEUE = """
from benchmarks.workers.rota_app import make_app
app = make_app({url!r})
noop = app.jobs["noop"]
for start in range(0, {jobs}, 5000):
    noop.enqueue_many([()] * min(5000, {jobs} - start))
app.close()
"""


def _env(tree: Path, url: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}",
            "ROTA_BENCH_STORE": url, "PYTHONDONTWRITEBYTECODE": "1"}


@contextmanager
def fresh_store(kind: str, pg_url: str) -> Iterator[tuple[str, Callable[[], int]]]:
    """A URL naming a new empty store, and a function counting its unfinished jobs."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "drain.db"
            url = f"sqlite:///{path}"
            conn: sqlite3.Connection | None = None

            def count() -> int:
                nonlocal conn
                if conn is None:
                    conn = sqlite3.connect(path)
                return int(conn.execute(UNFINISHED.format(table="rota_jobs")).fetchone()[0])

            try:
                yield url, count
            finally:
                if conn is not None:
                    conn.close()
        return
    import psycopg

    name = f"rota_ab_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        with psycopg.connect(url, autocommit=True) as reader:
            def count() -> int:
                row = reader.execute(UNFINISHED.format(table="rota.jobs")).fetchone()
                return int(row[0]) if row else 0

            yield url, count
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wait_drained(worker: subprocess.Popen[bytes], unfinished: Callable[[], int],
                 tree: Path) -> list[tuple[float, int]]:
    """Poll every 50 ms until the store holds no unfinished job; return the polls, each
    (monotonic time, unfinished jobs). Raises RuntimeError if the worker exits first."""
    polls: list[tuple[float, int]] = []
    while True:
        left = unfinished()
        polls.append((time.monotonic(), left))
        if left == 0:
            return polls
        if worker.poll() is not None:
            raise RuntimeError(f"the worker of {tree} exited: "
                               f"{worker.stderr.read().decode() if worker.stderr else ''}")
        time.sleep(0.05)


def steady_rate(polls: list[tuple[float, int]], jobs: int) -> float:
    """Jobs per second between the polls that first saw 90 % and 10 % of the jobs left:
    the drain without the worker's start-up and its last pass."""
    first = next(poll for poll in polls if poll[1] <= 0.9 * jobs)
    last = next(poll for poll in polls if poll[1] <= 0.1 * jobs)
    return (first[1] - last[1]) / (last[0] - first[0])


def drain_once(tree: Path, kind: str, jobs: int, pg_url: str,
               workers: int = 1, pin: str | None = None) -> tuple[float, float, float]:
    """Jobs per second from the spawn, jobs per second between 90 % and 10 % left (the
    steady rate), and the workers' CPU microseconds per job (all of them)."""
    with fresh_store(kind, pg_url) as (url, unfinished):
        subprocess.run([sys.executable, "-c", ENQUEUE.format(url=url, jobs=jobs)],
                       cwd=tree, env=_env(tree, url), check=True)
        began = time.monotonic()
        started = [subprocess.Popen(
            [*(["taskset", "-c", pin] if pin else []),
             sys.executable, "-m", "rota.cli", "worker", "benchmarks.workers.rota_app:app"],
            cwd=tree, env=_env(tree, url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        ) for _ in range(workers)]
        cpu_s = 0.0
        try:
            polls = wait_drained(started[0], unfinished, tree)
            took_s = time.monotonic() - began
        finally:
            for worker in started:
                worker.terminate()
            for worker in started:
                _, _, usage = os.wait4(worker.pid, 0)
                cpu_s += usage.ru_utime + usage.ru_stime
        return jobs / took_s, steady_rate(polls, jobs), cpu_s * 1e6 / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a rota source tree")
    parser.add_argument("--after", type=Path, nargs="+", required=True,
                        help="another rota source tree (or several)")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                        choices=["sqlite", "postgres"])
    parser.add_argument("--jobs", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=5, help="runs per tree and store")
    parser.add_argument("--pg-url", default=DEFAULT_PG)
    parser.add_argument("--workers", type=int, default=1,
                        help="`rota worker` processes draining together (default 1)")
    parser.add_argument("--pin", metavar="CPUS",
                        help="run the workers on these CPUs only (taskset -c CPUS); with "
                             "PostgreSQL pinned to the others (taskset -a -p CPUS PID of "
                             "each server process), the worker and the server stop "
                             "trading cores, and runs of one tree agree more closely")
    options = parser.parse_args()
    afters = [tree.resolve() for tree in options.after]
    labels = ["after"] if len(afters) == 1 else [f"after{i + 1}" for i in range(len(afters))]
    trees = {"before": options.before.resolve(), **dict(zip(labels, afters, strict=True))}
    for label in labels if len(labels) > 1 else ():
        print(f"{label} = {trees[label]}", flush=True)
    for kind in options.stores:
        rates: dict[str, list[float]] = {label: [] for label in trees}
        steadies: dict[str, list[float]] = {label: [] for label in trees}
        cpus: dict[str, list[float]] = {label: [] for label in trees}
        for run in range(options.runs):
            order = list(trees) if run % 2 == 0 else list(trees)[::-1]
            for label in order:
                rate, steady, cpu = drain_once(trees[label], kind, options.jobs,
                                               options.pg_url, options.workers,
                                               options.pin)
                rates[label].append(rate)
                steadies[label].append(steady)
                cpus[label].append(cpu)
                print(f"{kind:8} run {run + 1} {label:6} {rate:8,.0f} jobs/s  "
                      f"steady {steady:8,.0f} jobs/s  worker CPU {cpu:6.1f} us/job",
                      flush=True)
        before = statistics.median(rates["before"])
        steady_before = statistics.median(steadies["before"])
        cpu_before = statistics.median(cpus["before"])
        for label in labels:
            after, cpu_after = statistics.median(rates[label]), statistics.median(cpus[label])
            steady_after = statistics.median(steadies[label])
            print(f"{kind:8} MEDIAN before {before:,.0f} jobs/s (steady {steady_before:,.0f}, "
                  f"{cpu_before:.1f} us/job CPU), {label} {after:,.0f} jobs/s (steady "
                  f"{steady_after:,.0f}, {cpu_after:.1f} us/job CPU): {label}/before = "
                  f"{after / before:.3f}, steady {steady_after / steady_before:.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
