"""`/metrics`: the store's state in the Prometheus text format, computed at each scrape.

Gauges from the store (`queue_infos` at the scrape's `now`):
- `rota_queue_jobs{queue,state}`: jobs per Queue and state (every state, 0 if none).
- `rota_queue_due_jobs{queue}`: scheduled jobs due now.
- `rota_queue_oldest_due_age_seconds{queue}`: how long the longest-waiting due job has
  waited (0 when none is due, so an alert on "> N" stays quiet for an idle Queue).
- `rota_queue_paused{queue}`: 1 if paused, else 0; `rota_queue_limit{queue}`: the limit,
  for Queues that have one.
- `rota_queue_unserved_jobs{queue}`: the due jobs of a Queue that no live worker serves
  (by the groups' policies in force, rota.core.serving), 0 for every other Queue (served,
  or nothing due): present for every Queue, so `> 0` alerts and a missing series means a
  missing scrape.
Every Queue has its own series; a family's entry of `queue_infos` (`"tenant-*"`, its
members' jobs added up) has none, so a sum over `queue` counts each job once.
From the worker registry (`sources.observe`): `rota_group_workers{group}`,
`rota_group_in_flight{group}`, and the counter `rota_jobs_total{group,queue,outcome}`.

`rota_jobs_total` counts attempts served by every worker on the store (all processes
together), from the store's per-minute served history. That history is pruned (24 h), and
worker rows come and go, so neither is a counter by itself; `ServedTotals` makes one: at
every scrape it reads the last minutes of history and adds what each minute bucket grew
by since the previous scrape. It starts at the last hour's total when the dashboard
starts, and, like any process's counter, restarts with the dashboard (Prometheus's
`rate()` and `increase()` handle that).

From the store's report on its own storage (`StorageReporting`, read at each scrape: one
query of PostgreSQL's statistics views, or a `stat` of SQLite's -wal file; the same numbers
as the warnings of `rota health`, rota.core.storage_health):
- `rota_postgres_xmin_horizon_age_seconds`: how long the oldest snapshot, transaction,
  replication slot or prepared transaction that holds back vacuum of rota's tables has
  held it (0 when nothing does, or none of a known age), and
  `rota_postgres_xmin_horizon_age_transactions`: its age in transactions (a replication
  slot has no age in seconds before PostgreSQL 17).
- `rota_postgres_table_dead_rows{table}` and `rota_postgres_table_live_rows{table}`: the
  statistics' row estimates of each of rota's tables.
- `rota_sqlite_wal_bytes`: the size of the -wal file.

Each dashboard has its own `CollectorRegistry` (never prometheus_client's global one), so
mounting two dashboards, or importing rota beside other metrics, never clashes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rota.core.jobs import JobState
from rota.core.queue_controls import QueueInfo
from rota.core.serving import ServingIndex, serving_groups
from rota.core.storage_health import StorageHealth
from rota.core.workers import minute_of
from rota.dashboard.sources import GroupObservation, policies
from rota.store import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Snapshot = tuple[datetime, list[QueueInfo], list[GroupObservation], list[tuple[str, str, str, int]]]


class ServedTotals:
    """A monotonic served counter per (group, Queue, outcome) from the pruned history."""

    def __init__(self, lookback: timedelta = timedelta(minutes=10),
                 first: timedelta = timedelta(hours=1)) -> None:
        self._lookback = lookback
        self._first: timedelta | None = first
        self._seen: dict[tuple[datetime, str, str, str], int] = {}
        self._totals: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def update(self, store: Store, now: datetime) -> list[tuple[str, str, str, int]]:
        """Read the recent history and return the totals (group, Queue, outcome, count)."""
        with self._lock:
            since = minute_of(now - (self._first or self._lookback))
            rows = store.served_counts(since)
            self._first = None
            for row in rows:
                if row.minute is None:
                    continue
                key = (row.minute, row.group, row.queue, row.outcome)
                grown = row.count - self._seen.get(key, 0)
                if grown > 0:
                    total = (row.group, row.queue, row.outcome)
                    self._totals[total] = self._totals.get(total, 0) + grown
                    self._seen[key] = row.count
            self._seen = {key: count for key, count in self._seen.items()
                          if key[0] >= minute_of(now - self._lookback)}
            return [(*key, count) for key, count in sorted(self._totals.items())]


class StoreCollector(Collector):
    """Reads a fresh snapshot from `snapshot()` at every scrape."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        now, infos, groups, served = self._snapshot()
        jobs = GaugeMetricFamily("rota_queue_jobs", "Jobs per Queue and state.",
                                 labels=["queue", "state"])
        due = GaugeMetricFamily("rota_queue_due_jobs", "Scheduled jobs due now, per Queue.",
                                labels=["queue"])
        age = GaugeMetricFamily(
            "rota_queue_oldest_due_age_seconds",
            "How long the longest-waiting due job of the Queue has waited (0: none due).",
            labels=["queue"])
        paused = GaugeMetricFamily("rota_queue_paused", "1 if the Queue is paused.",
                                   labels=["queue"])
        limit = GaugeMetricFamily("rota_queue_limit",
                                  "The Queue's concurrency limit (Queues with one only).",
                                  labels=["queue"])
        unserved = GaugeMetricFamily(
            "rota_queue_unserved_jobs",
            "Due jobs of the Queue when no live worker serves it (by the policies in force), "
            "else 0.", labels=["queue"])
        live = ServingIndex(policies(groups, live=True))
        for info in infos:
            if info.members is not None:
                continue  # a family's entry: its members have their own series
            unserved.add_metric(
                [info.name], 0 if serving_groups(info.name, live) else info.due)
            for state in JobState:
                jobs.add_metric([info.name, state.value], info.counts.get(state, 0))
            due.add_metric([info.name], info.due)
            waited = 0.0 if info.oldest_due_at is None else \
                max(0.0, (now - info.oldest_due_at).total_seconds())
            age.add_metric([info.name], waited)
            paused.add_metric([info.name], 1 if info.paused else 0)
            if info.limit is not None:
                limit.add_metric([info.name], info.limit)
        workers = GaugeMetricFamily("rota_group_workers",
                                    "Live worker processes running the Worker Group.",
                                    labels=["group"])
        in_flight = GaugeMetricFamily("rota_group_in_flight",
                                      "Jobs of the Worker Group running now.", labels=["group"])
        for group in groups:
            workers.add_metric([group.name], group.workers)
            in_flight.add_metric([group.name], group.in_flight)
        total = CounterMetricFamily(
            "rota_jobs_total", "Jobs served, per Worker Group, Queue and outcome (from the "
            "worker registry's served history).", labels=["group", "queue", "outcome"])
        for group_name, queue, outcome, count in served:
            total.add_metric([group_name, queue, outcome], count)
        yield from (jobs, due, age, paused, limit, unserved, workers, in_flight, total)


class StorageCollector(Collector):
    """The storage gauges from `storage()` at every scrape (None: the store reports none,
    or could not say: the gauges are then left out, not zero)."""

    def __init__(self, storage: Callable[[], StorageHealth | None]) -> None:
        self._storage = storage

    def collect(self) -> Iterator[Metric]:
        health = self._storage()
        if health is None:
            return
        if health.has_horizon:
            yield GaugeMetricFamily(
                "rota_postgres_xmin_horizon_age_seconds",
                "How long the oldest holder of the xmin horizon (a transaction, a "
                "replication slot, a prepared transaction) has held back vacuum of rota's "
                "tables (0: none).", value=health.horizon_age_s)
            yield GaugeMetricFamily(
                "rota_postgres_xmin_horizon_age_transactions",
                "The age in transactions of the oldest holder of the xmin horizon (0: none).",
                value=health.horizon_age_xids)
            dead = GaugeMetricFamily("rota_postgres_table_dead_rows",
                                     "Dead rows of each of rota's tables (statistics).",
                                     labels=["table"])
            live = GaugeMetricFamily("rota_postgres_table_live_rows",
                                     "Live rows of each of rota's tables (statistics).",
                                     labels=["table"])
            for table in health.tables:
                dead.add_metric([table.table], table.dead)
                live.add_metric([table.table], table.live)
            yield from (dead, live)
        if health.wal_bytes is not None:
            yield GaugeMetricFamily("rota_sqlite_wal_bytes",
                                    "Size of the SQLite store's -wal file, bytes.",
                                    value=health.wal_bytes)


def render(snapshot: Callable[[], Snapshot],
           storage: Callable[[], StorageHealth | None] | None = None) -> bytes:
    """The Prometheus text of one scrape (blocking: it reads the store)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(snapshot))
    if storage is not None:
        registry.register(StorageCollector(storage))
    return generate_latest(registry)
