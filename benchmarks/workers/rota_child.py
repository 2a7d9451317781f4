"""What `python -m benchmarks ab` runs under one rota tree: the tree's `src` first on
PYTHONPATH, this checkout's benchmarks after it, so that every schema, statement and store
call is the tree's own.

    python -m benchmarks.workers.rota_child fill URL JOBS CHUNK QUEUES BACKLOGGED
    python -m benchmarks.workers.rota_child enqueue URL JOBS BATCH [--keyed]
    python -m benchmarks.workers.rota_child drain URL JOBS BATCH THREADS [--limit N] [--carry]
                                                  [--enqueue TOTAL]
    python -m benchmarks.workers.rota_child replay LOG QUEUES 0|1

Each prints one JSON object on its last line, naming the rota it imported (`rota`), so the
caller can check that it measured the tree it meant. `replay` prints nothing: it runs
under callgrind, where only the instruction count matters. rota is imported inside the
commands, never at module level: the queues suite imports `replay_calls` from here.
"""

from __future__ import annotations

import gc
import json
import pickle
import statistics
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

QUEUE = "bench"
LEASE = timedelta(minutes=5)


def _rota() -> str:
    import rota

    return str(Path(rota.__file__).resolve().parent.parent)


def fill(url: str, jobs: int, chunk: int, queues: int, backlogged: int) -> dict[str, object]:
    """Migrate the store and enqueue `jobs` argument-less noop jobs: on the benchmark App's
    Queue with `enqueue_many` (QUEUES 0), or round-robin over BACKLOGGED of QUEUES tenant
    Queues, as tenants' work arrives (QUEUES > 0); the seconds the enqueue calls took."""
    from benchmarks.workers.rota_app import make_app, tenant_queue

    app = make_app(url, f"tenants:{queues}" if queues else "strict")
    try:
        started = time.perf_counter()
        if not queues:
            noop = app.jobs["noop"]
            for start in range(0, jobs, chunk):
                noop.enqueue_many([()] * min(chunk, jobs - start))
        else:
            from rota.core.jobs import NewJob

            names = [tenant_queue(i) for i in range(0, queues, queues // backlogged)]
            names = names[:backlogged]
            now = datetime.now(UTC)
            batch = [NewJob(name="noop", queue=names[i % len(names)], due_at=now)
                     for i in range(jobs)]
            for start in range(0, jobs, chunk):
                app.store.enqueue(batch[start:start + chunk], now)
        return {"rota": _rota(), "seconds": time.perf_counter() - started}
    finally:
        app.close()


def enqueue(url: str, jobs: int, batch: int, keyed: bool) -> dict[str, object]:
    """Enqueue rate through the store, `batch` jobs a call (a distinct key per job with
    `keyed`), after one warm-up call that migrates the schema and opens the connections."""
    from rota.core.jobs import NewJob
    from rota.store import open_store

    store = open_store(url)
    try:
        now = datetime.now(UTC)
        store.enqueue([NewJob("warm", QUEUE, now)], now)
        keys: Callable[[int], dict[str, str]] = (
            (lambda n: {"key": f"k{n}"}) if keyed else (lambda _n: {}))
        started = time.perf_counter()
        for start in range(0, jobs, batch):
            store.enqueue([NewJob("noop", QUEUE, now, "[1]", "{}", **keys(n))
                           for n in range(start, min(start + batch, jobs))], now)
        return {"rota": _rota(), "jobs/s": jobs / (time.perf_counter() - started)}
    finally:
        store.close()


def _median_p90_ms(seconds: list[float]) -> list[float]:
    ordered = sorted(seconds)
    return [statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.9)] * 1000]


def drain(url: str, jobs: int, batch: int, threads: int, limit: int | None,
          carry: bool, enqueued: int | None = None) -> dict[str, object]:
    """The store alone, as a worker's passes drive it minus the runtime: `threads`
    threads, each with its own store object (memory:// shares one: it lives in one
    process), claim `batch` and complete them until the Queue is empty; every call reads
    the clock, as a worker's do. `limit`: the Queue has that concurrency limit (every
    claim takes the limited path). `carry`: each claim carries the previous claim's
    successes (`claim(..., outcomes=)`) instead of a separate complete. `enqueued`: enqueue
    that many jobs (at least `jobs`) and drain only `jobs` of them, so that two drains
    of different sizes enqueue alike (`ab --what store --count instructions`). Returns
    jobs/s and each call's median and p90 round trip."""
    from rota.core.jobs import NewJob
    from rota.store import open_store

    if enqueued is not None and threads != 1:
        raise SystemExit("--enqueue drains part of the jobs: give it one thread")
    first = open_store(url)
    stores = [first] + [first if url.startswith("memory:") else open_store(url)
                        for _ in range(threads - 1)]
    try:
        now = datetime.now(UTC) - timedelta(seconds=1)
        total = max(jobs, enqueued or 0)
        for start in range(0, total, 10_000):
            first.enqueue([NewJob("noop", QUEUE, now, "[1]", "{}")] * min(10_000, total - start),
                          now)
        if limit is not None:
            first.set_queue_limit(QUEUE, limit)
        claims: list[float] = []
        completes: list[float] = []
        done = [0] * threads
        barrier = threading.Barrier(threads + 1)

        def work(index: int) -> None:
            store, owner = stores[index], f"ab-{index}"
            carried: list[Any] = []
            barrier.wait()
            while True:
                moment = datetime.now(UTC)
                extra = {"outcomes": carried} if carry else {}
                began = time.perf_counter()
                wanted = min(batch, jobs - sum(done) - len(carried))
                if wanted <= 0 and not carried:
                    return
                got = store.claim([QUEUE], wanted, now=moment, owner=owner,
                                  lease_expires_at=moment + LEASE, **extra)
                claims.append(time.perf_counter() - began)
                done[index] += len(carried)
                if not got:
                    return
                if carry:
                    from rota.core.outcomes import Succeeded

                    carried = [(job.lease, Succeeded()) for job in got]
                    continue
                began = time.perf_counter()
                store.complete([job.lease for job in got], datetime.now(UTC))
                completes.append(time.perf_counter() - began)
                done[index] += len(got)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for thread in workers:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        for thread in workers:
            thread.join()
        seconds = time.perf_counter() - started
        if sum(done) != jobs:
            raise SystemExit(f"drained {sum(done)} of {jobs} jobs")
        result: dict[str, object] = {"rota": _rota(), "jobs/s": jobs / seconds,
                                     "claim ms": _median_p90_ms(claims)}
        if completes:
            result["complete ms"] = _median_p90_ms(completes)
        return result
    finally:
        for store in {id(store): store for store in stores}.values():
            store.close()


def replay_calls(dispatcher: Any, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]
                 ) -> list[int]:
    """Make a drain's logged planner calls (`benchmarks.suites.queues.PlannerLog`) again on
    `dispatcher`; returns each pass's dispatched count, to check against the drain's."""
    plan: Any = None
    orders: list[int] = []
    for name, args, kwargs in calls:
        if name == "begin_pass":
            plan = dispatcher.begin_pass(*args, **kwargs)
        elif name == "dispatch_order":
            orders.append(len(plan.dispatch_order()))
        else:
            getattr(plan, name)(*args, **kwargs)
    return orders


def replay(path: str, queues: int, run: bool) -> None:
    """Load a logged drain and a fresh dispatcher over the queues suite's policy for
    `queues` tenants; with `run`, replay the calls. Under callgrind, the instructions of
    `run` less those without it are the planner's alone."""
    import rota
    from rota.core import dispatch

    with open(path, "rb") as file:
        calls, orders = pickle.load(file)
    # The queues suite's policy (policy_for), spelled out: this imports nothing but rota.
    policy = rota.Weighted([(f"t{i:05d}", 1 + i % 5) for i in range(queues)])
    gc.freeze()
    dispatcher = dispatch.for_policy(policy, remember_empty=True)
    if run and replay_calls(dispatcher, calls) != orders:
        raise SystemExit("the replay did not dispatch what the drain dispatched")


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    result: dict[str, object] | None = None
    if command == "fill":
        url, *numbers = args
        result = fill(url, *map(int, numbers))
    elif command == "enqueue":
        result = enqueue(args[0], int(args[1]), int(args[2]), "--keyed" in args)
    elif command == "drain":
        limit = int(args[args.index("--limit") + 1]) if "--limit" in args else None
        enqueued = int(args[args.index("--enqueue") + 1]) if "--enqueue" in args else None
        result = drain(args[0], int(args[1]), int(args[2]), int(args[3]), limit,
                       "--carry" in args, enqueued)
    elif command == "replay":
        replay(args[0], int(args[1]), args[2] == "1")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if result is not None:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
