"""schedules: what computing a schedule's next fire costs, and what a fire costs beside one
enqueue. Run only when named (`--suite schedules`); rota alone.

- compute: microseconds per `next_after` call (cron in UTC, cron in Europe/Berlin, an
  `every` interval), and per `due_instant` after a three-day downtime of an every-minute
  cron (the worst common case: the walk gives up and searches back from `now`);
- store: on a fresh store of each kind, side by side in one run, alternating in rounds of
  100: `enqueue` of one job, and `fire_schedule` of one instant that fires (the
  compare-and-set plus the insert) and of one that is refused (the instant was fired
  already, as the second of two workers sees it).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.suites.queues import store_url

SUITE = "schedules"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def per_call_us(calls: int, function: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for index in range(calls):
        function(index)
    return (time.perf_counter() - started) / calls * 1e6


def compute(calls: int) -> dict[str, float]:
    """Microseconds per call of each next-fire computation."""
    from rota.app.schedules import load_timezone
    from rota.core.schedules import CronRule, EveryRule, due_instant

    berlin = load_timezone("Europe/Berlin")
    rules = {
        "next_after, cron '0 3 * * *' UTC": CronRule.parse("0 3 * * *"),
        "next_after, cron '30 2 * * *' Europe/Berlin":
            CronRule.parse("30 2 * * *", "Europe/Berlin", berlin),
        "next_after, cron '*/15 * * * *' Europe/Berlin":
            CronRule.parse("*/15 * * * *", "Europe/Berlin", berlin),
        "next_after, every 300 s": EveryRule.parse(timedelta(minutes=5)),
    }
    costs = {label: per_call_us(calls, lambda i, r=rule: r.next_after(  # type: ignore[misc]
        T0 + timedelta(minutes=7 * i))) for label, rule in rules.items()}
    minutely = CronRule.parse("* * * * *")
    costs["due_instant, every-minute cron, 3 days down"] = per_call_us(
        max(calls // 20, 10), lambda i: due_instant(minutely, T0,
                                                    T0 + timedelta(days=3, seconds=i)))
    return costs


def store_costs(kind: str, calls: int) -> dict[str, float]:
    """Median microseconds per call of an enqueue, a fire and a refused fire."""
    from rota.core.jobs import NewJob
    from rota.core.schedules import ScheduleRegistration
    from rota.store import open_store

    with store_url(kind, "schedules") as url:
        store: object = open_store(url)
        try:
            store.register_schedules([ScheduleRegistration(  # type: ignore[attr-defined]
                "bench", "d", "every 1s", "UTC", "job", "q")], T0)
            spent: dict[str, list[float]] = {"enqueue": [], "fire": [], "refused fire": []}
            instant = T0
            for _ in range(max(calls // 100, 1)):
                started = time.perf_counter()
                for _ in range(100):
                    store.enqueue([NewJob("job", "q", T0)], T0)  # type: ignore[attr-defined]
                spent["enqueue"].append((time.perf_counter() - started) / 100 * 1e6)
                started = time.perf_counter()
                for _ in range(100):
                    instant += timedelta(seconds=1)
                    assert store.fire_schedule(  # type: ignore[attr-defined]
                        "bench", "d", NewJob("job", "q", instant), instant).fired
                spent["fire"].append((time.perf_counter() - started) / 100 * 1e6)
                started = time.perf_counter()
                for _ in range(100):
                    assert not store.fire_schedule(  # type: ignore[attr-defined]
                        "bench", "d", NewJob("job", "q", instant), instant).fired
                spent["refused fire"].append((time.perf_counter() - started) / 100 * 1e6)
        finally:
            store.close()  # type: ignore[attr-defined]
    return {what: statistics.median(values) for what, values in spent.items()}


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    calls = settings.schedule_calls
    computed: dict[str, list[float]] = {}
    stored: dict[tuple[str, str], list[float]] = {}
    for run_index in range(settings.runs):
        for label, cost in compute(calls).items():
            computed.setdefault(label, []).append(cost)
        for kind in ("memory", "sqlite", "postgres"):
            for what, cost in store_costs(kind, calls).items():
                stored.setdefault((kind, what), []).append(cost)
        print(f"  schedules run {run_index + 1}: " + ", ".join(
            f"{kind} fire {values[-1]:.0f} us" for (kind, what), values in stored.items()
            if what == "fire"), flush=True)
    for label, values in computed.items():
        result.add(SUITE, label, "us/call", Figure.of(values, "us", f"{calls:,} calls"))
    for (kind, what), values in stored.items():
        result.add(SUITE, f"rota[{kind}] {what}", "us/call", Figure.of(
            values, "us", f"median of rounds of 100, {calls:,} calls"))
    return result
