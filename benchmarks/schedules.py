"""Schedule benchmarks: next-fire computation, and the cost of one fire next to one enqueue.

    .venv/bin/python benchmarks/schedules.py [--calls 2000] [--stores memory sqlite postgres]

`compute`: microseconds per `next_after` call (cron in UTC, cron in Europe/Berlin, an
`every` interval) and per `due_instant` after a three-day downtime of an every-minute
cron (the worst common case: the walk gives up and searches back from `now`).

`store`: on a fresh store of each kind, side by side in one run, alternating in rounds of
100: `enqueue` of one job, and `fire_schedule` of one instant (the compare-and-set plus
the insert) that fires, and one that is refused (the instant was fired already, as the
second of two workers sees it). Prints the median microseconds per call of each.

Figures only, never a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rota.core.jobs import NewJob
from rota.core.schedules import CronRule, EveryRule, ScheduleRegistration, due_instant
from rota.schedules import load_timezone
from rota.store import open_store
from rota.store.base import ScheduleStore

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def per_call_us(calls: int, function: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for index in range(calls):
        function(index)
    return (time.perf_counter() - started) / calls * 1e6


def compute(calls: int) -> None:
    berlin = load_timezone("Europe/Berlin")
    rules = {
        "cron '0 3 * * *' UTC": CronRule.parse("0 3 * * *"),
        "cron '30 2 * * *' Europe/Berlin": CronRule.parse("30 2 * * *", "Europe/Berlin", berlin),
        "cron '*/15 * * * *' Europe/Berlin":
            CronRule.parse("*/15 * * * *", "Europe/Berlin", berlin),
        "every 300s": EveryRule.parse(timedelta(minutes=5)),
    }
    print("next_after, microseconds per call:")
    for label, rule in rules.items():
        cost = per_call_us(calls, lambda i, r=rule: r.next_after(T0 + timedelta(minutes=7 * i)))
        print(f"  {label:40s} {cost:8.1f}")
    minutely = CronRule.parse("* * * * *")
    cost = per_call_us(max(calls // 20, 10), lambda i: due_instant(
        minutely, T0, T0 + timedelta(days=3, seconds=i)))
    print(f"due_instant, every-minute cron, 3 days down: {cost:8.1f} us per call")


@contextmanager
def fresh_store(kind: str, pg_url: str) -> Iterator[ScheduleStore]:
    if kind == "memory":
        store = open_store("memory://")
        assert isinstance(store, ScheduleStore)
        yield store
        return
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(f"sqlite:///{Path(folder) / 'bench.db'}")
            assert isinstance(store, ScheduleStore)
            try:
                yield store
            finally:
                store.close()
        return
    import psycopg

    name = f"rota_bench_sched_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        store = open_store(pg_url.rsplit("/", 1)[0] + f"/{name}")
        assert isinstance(store, ScheduleStore)
        try:
            yield store
        finally:
            store.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def store_costs(kind: str, calls: int, pg_url: str) -> None:
    with fresh_store(kind, pg_url) as store:
        store.register_schedules([ScheduleRegistration(
            "bench", "d", "every 1s", "UTC", "job", "q")], T0)
        enqueue_us: list[float] = []
        fire_us: list[float] = []
        refused_us: list[float] = []
        instant = T0
        for _ in range(max(calls // 100, 1)):
            started = time.perf_counter()
            for _ in range(100):
                store.enqueue([NewJob("job", "q", T0)], T0)  # type: ignore[attr-defined]
            enqueue_us.append((time.perf_counter() - started) / 100 * 1e6)
            started = time.perf_counter()
            for _ in range(100):
                instant += timedelta(seconds=1)
                assert store.fire_schedule("bench", "d", NewJob("job", "q", instant),
                                           instant).fired
            fire_us.append((time.perf_counter() - started) / 100 * 1e6)
            started = time.perf_counter()
            for _ in range(100):
                assert not store.fire_schedule("bench", "d", NewJob("job", "q", instant),
                                               instant).fired
            refused_us.append((time.perf_counter() - started) / 100 * 1e6)
        print(f"  {kind:9s} enqueue {statistics.median(enqueue_us):8.1f}   fire "
              f"{statistics.median(fire_us):8.1f}   refused fire "
              f"{statistics.median(refused_us):8.1f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--stores", nargs="*", default=["memory", "sqlite", "postgres"])
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    compute(args.calls)
    print("store calls, median microseconds per call (rounds of 100, alternating):")
    for kind in args.stores:
        store_costs(kind, args.calls, args.pg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
