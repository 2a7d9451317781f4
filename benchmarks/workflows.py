"""Workflows against the same jobs without dependencies, side by side, with a real
`rota worker` process on SQLite and PostgreSQL.

Each case stores its jobs first (through the store API, so that every job can have its own
parents), then starts one worker (`rota worker benchmarks.workers.rota_app:app`, noop jobs,
pool 20) and times it from its start until the store holds no unfinished job:

- plain:   N noop jobs, no parents (the baseline);
- fan-in:  N noop parents and one child after all of them;
- chains:  N / L chains of L links each (a link waits for the one before);
- fan-in beside waiting jobs: the fan-in again while W other jobs wait in the store for a
  parent that never runs; finishing a parent reads only its own children, so the drain
  should not slow with W.

Prints jobs/s for each case and its ratio to plain; asserts nothing.

    python3 -m benchmarks.venv_run benchmarks/workflows.py   # or, in the dev venv:
    .venv/bin/python -m benchmarks.workflows --stores sqlite postgres --jobs 10000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.processes import WorkerProcess
from rota.core.jobs import JobState, NewJob
from rota.store import Store, open_store

QUEUE = "bench"  # the Queue the benchmark App's group serves
HELD = "held"  # a Queue no worker serves: its jobs never run
BATCH = 5_000
UNFINISHED = (JobState.WAITING, JobState.SCHEDULED, JobState.LEASED)


def _now() -> datetime:
    return datetime.now(UTC)


def _enqueue(store: Store, jobs: list[NewJob]) -> list[int]:
    ids: list[int] = []
    for start in range(0, len(jobs), BATCH):
        ids += store.enqueue(jobs[start:start + BATCH], _now())
    return ids


def plain(store: Store, jobs: int) -> int:
    _enqueue(store, [NewJob("noop", QUEUE, _now()) for _ in range(jobs)])
    return jobs


def fan_in(store: Store, jobs: int) -> int:
    parents = _enqueue(store, [NewJob("noop", QUEUE, _now()) for _ in range(jobs - 1)])
    store.enqueue([NewJob("noop", QUEUE, _now(), parents=tuple(parents))], _now())
    return jobs


def chains(length: int) -> Callable[[Store, int], int]:
    def build(store: Store, jobs: int) -> int:
        links = _enqueue(store, [NewJob("noop", QUEUE, _now()) for _ in range(jobs // length)])
        for _ in range(length - 1):
            links = _enqueue(store, [NewJob("noop", QUEUE, _now(), parents=(link,))
                                     for link in links])
        return (jobs // length) * length
    return build


def beside_waiting(waiting: int) -> Callable[[Store, int], int]:
    def build(store: Store, jobs: int) -> int:
        never, = store.enqueue([NewJob("noop", HELD, _now())], _now())
        _enqueue(store, [NewJob("noop", HELD, _now(), parents=(never,))
                         for _ in range(waiting)])
        return fan_in(store, jobs)
    return build


def unfinished(store: Store) -> int:
    return sum(count for (queue, state), count in store.count_jobs().items()
               if queue == QUEUE and state in UNFINISHED)


def run_case(url: str, build: Callable[[Store, int], int], jobs: int, label: str) -> float:
    """Jobs/s of one worker draining what `build` stored."""
    store = open_store(url)
    try:
        count = build(store, jobs)
        worker = WorkerProcess(label, [sys.executable, "-m", "rota", "worker",
                                       "benchmarks.workers.rota_app:app"],
                               {"ROTA_BENCH_STORE": url, "ROTA_BENCH_POOL": "20"})
        start = time.perf_counter()
        try:
            while unfinished(store):
                if not worker.alive():
                    raise RuntimeError(f"the worker died: see {worker.log_path}")
                time.sleep(0.05)
        finally:
            elapsed = time.perf_counter() - start
            worker.stop()
        return count / elapsed
    finally:
        store.close()


def fresh_url(kind: str, scratch: Path, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{scratch / f'{name}.db'}"
    from benchmarks import pg  # psycopg only when PostgreSQL is measured
    return pg.fresh_database(f"wf_{name}_bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                        choices=["sqlite", "postgres"])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--chain", type=int, default=10, help="links per chain")
    parser.add_argument("--waiting", type=int, default=50_000,
                        help="jobs waiting beside the last case")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case, alternating")
    parser.add_argument("--cases", nargs="+", default=["fan-in", "chains", "beside"],
                        choices=["fan-in", "chains", "beside"],
                        help="what to measure beside plain (default: all)")
    args = parser.parse_args()
    every: dict[str, tuple[str, Callable[[Store, int], int]]] = {
        "fan-in": ("fan-in", fan_in),
        "chains": (f"chains of {args.chain}", chains(args.chain)),
        "beside": (f"fan-in, {args.waiting:,} waiting beside", beside_waiting(args.waiting)),
    }
    cases = [("plain", plain), *(every[name] for name in args.cases)]
    for kind in args.stores:
        figures: dict[str, list[float]] = {name: [] for name, _ in cases}
        with tempfile.TemporaryDirectory() as scratch:
            for run in range(args.runs):
                for index, (name, build) in enumerate(cases):
                    url = fresh_url(kind, Path(scratch), f"r{run}c{index}")
                    rate = run_case(url, build, args.jobs, f"workflows-{kind}-{run}-{index}")
                    figures[name].append(rate)
                    print(f"  {kind} run {run + 1} {name}: {rate:,.0f} jobs/s", flush=True)
        base = sorted(figures["plain"])[len(figures["plain"]) // 2]
        print(f"{kind}: {args.jobs:,} jobs, one worker, pool 20, median of {args.runs}")
        for name, rates in figures.items():
            median = sorted(rates)[len(rates) // 2]
            print(f"  {name:<34} {median:>9,.0f} jobs/s  {median / base:5.2f}x plain")


if __name__ == "__main__":
    main()
