"""Per-process Prometheus metrics of a worker: `rota worker APP --metrics-port N`, or
`rota.metrics.serve_metrics(app, port)` before `app.run()`.

Needs the `metrics` extra (`pip install 'rota[metrics]'`, which brings `prometheus_client`).

Metrics (this process only; the dashboard's `/metrics` shows the store-wide view):

- `rota_jobs_total{group,queue,outcome}` (counter): attempts whose outcome was written,
  read at scrape time from the groups' served counters (the ones the worker registry
  refreshes), so counting costs the drain nothing beyond the registry's own increment.
- `rota_job_duration_seconds{group,queue}` (histogram): handler run time of each
  attempt (two `perf_counter` reads and a bisect per job: the one per-job cost metrics add;
  without metrics the runtime reads no timer).
- `rota_claim_round_trip_seconds{group}` (histogram): a pass's claims, store round trips
  included, for passes that claimed.
- `rota_pool_in_use{group}` and `rota_pool_size{group}` (gauges): Workers busy / pool size.
- `rota_queue_unserved_jobs{queue}` (gauge): as this worker's last look for Queues nobody
  serves found them (rota.worker.unserved: at start, every minute, and soon after a hint
  for a Queue none of its groups serves), the due jobs of each Queue no live worker
  serves, 0 for every other Queue of that look; no store read at scrape time. The
  dashboard's `/metrics` has the same gauge, read at its scrape.

An outer room: imports rota's App and runtime; nothing in core, store or worker imports it.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rota.app import App
from rota.worker.runtime import Runtime
from rota.worker.unserved import UnservedDuty

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["MISSING_EXTRA", "WorkerMetrics", "serve_metrics"]

MISSING_EXTRA = (
    "worker metrics need prometheus_client: pip install 'rota[metrics]'"
)
# Claims and short jobs are quick: buckets from 0.5 ms up.
CLAIM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 5.0, 10.0)
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                    30.0, 60.0, 300.0)


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise RuntimeError(MISSING_EXTRA) from None
    return prometheus_client


class _Histogram:
    """A histogram kept as plain lists per label set: `observe` is a bisect and two
    additions on the loop thread (prometheus_client's Histogram takes a lock and walks
    every bucket: measured at several microseconds per job in a drain). Exposed at scrape
    time as a HistogramMetricFamily."""

    def __init__(self, name: str, documentation: str, labels: list[str],
                 buckets: tuple[float, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.buckets = buckets
        # label values -> [count per bucket (last: above every bound)..., sum]
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = ([0] * (len(self.buckets) + 1), [0.0])
        series[0][bisect_left(self.buckets, value)] += 1
        series[1][0] += value

    def family(self) -> Any:
        from prometheus_client.core import HistogramMetricFamily

        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, (counts, total) in sorted(dict(self._series).items()):
            counts = list(counts)  # a copy: the loop thread goes on counting
            cumulative, running = [], 0
            for bound, count in zip((*self.buckets, float("inf")), counts, strict=True):
                running += count
                cumulative.append(("+Inf" if bound == float("inf") else repr(bound),
                                   running))
            family.add_metric(list(labels), cumulative, sum_value=total[0])
        return family


class WorkerMetrics:
    """The metrics of one worker process, in their own `CollectorRegistry` (`registry`).

    Args:
        app: the App whose runtimes to watch; create it before the worker starts.

    Raises:
        RuntimeError: if prometheus_client is not installed (the message says how).
    """

    def __init__(self, app: App) -> None:
        client = _prometheus()
        self.registry: CollectorRegistry = client.CollectorRegistry()
        self.server: Any = None  # the HTTP server, once serve_metrics started it
        self._runtimes: list[Runtime] = []
        self._lock = threading.Lock()
        self.durations = _Histogram(
            "rota_job_duration_seconds", "Handler run time of each job attempt, seconds.",
            ["group", "queue"], DURATION_BUCKETS)
        self.claims = _Histogram(
            "rota_claim_round_trip_seconds",
            "Time of a pass's claims, store round trips included, seconds.",
            ["group"], CLAIM_BUCKETS)
        self.registry.register(_RuntimeCollector(self))
        app._observe_runtimes(self)

    # -- what the runtime tells (loop thread) ---------------------------------------------

    def runtime_started(self, runtime: Runtime) -> None:
        with self._lock:
            self._runtimes.append(runtime)

    def runtime_stopped(self, runtime: Runtime) -> None:
        pass  # its counters stay on the page until the process exits

    def claimed(self, group: str, round_trip_s: float, jobs: int) -> None:
        if jobs:  # idle polls would drown the claims that matter
            self.claims.observe((group,), round_trip_s)

    def job_ran(self, group: str, queue: str, ran_s: float) -> None:
        self.durations.observe((group, queue), ran_s)

    def runtimes(self) -> list[Runtime]:
        with self._lock:
            return list(self._runtimes)

    @property
    def port(self) -> int | None:
        """The port the HTTP server listens on (useful after asking for port 0)."""
        return None if self.server is None else int(self.server.server_port)

    def close(self) -> None:
        """Stop the HTTP server, if one was started."""
        if self.server is not None:
            server, self.server = self.server, None
            server.shutdown()
            server.server_close()


class _RuntimeCollector:
    """Reads the served counters, pool use and histograms at scrape time."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        jobs = CounterMetricFamily(
            "rota_jobs", "Job attempts whose outcome was written, by group, Queue and outcome.",
            labels=["group", "queue", "outcome"],
        )
        in_use = GaugeMetricFamily(
            "rota_pool_in_use", "Workers of the group's pool running a handler now.",
            labels=["group"],
        )
        size = GaugeMetricFamily(
            "rota_pool_size", "Workers in the group's pool.", labels=["group"],
        )
        totals: dict[tuple[str, str, str], int] = {}
        pools: dict[str, tuple[int, int]] = {}
        for runtime in self._metrics.runtimes():
            for group in runtime.groups:
                for (queue, outcome), count in dict(group.served).items():
                    key = (group.name, queue, outcome)
                    totals[key] = totals.get(key, 0) + count
                running, pool = pools.get(group.name, (0, 0))
                pools[group.name] = (running + group.running,
                                     pool + group.options.pool_size)
        for (group_name, queue, outcome), count in sorted(totals.items()):
            jobs.add_metric([group_name, queue, outcome], count)
        for group_name, (running, pool) in sorted(pools.items()):
            in_use.add_metric([group_name], running)
            size.add_metric([group_name], pool)
        yield jobs
        yield self._metrics.durations.family()
        yield self._metrics.claims.family()
        unserved = GaugeMetricFamily(
            "rota_queue_unserved_jobs",
            "Due jobs of the Queue when no live worker serves it (by the policies in force), "
            "else 0, as this worker last looked.", labels=["queue"])
        found: dict[str, int] = {}
        for runtime in self._metrics.runtimes():
            duty = runtime.duty(UnservedDuty)
            if duty is not None:
                found.update(duty.unserved_jobs)
        for queue, due in sorted(found.items()):
            unserved.add_metric([queue], due)
        yield in_use
        yield size
        yield unserved


def serve_metrics(app: App, port: int, host: str = "127.0.0.1") -> WorkerMetrics:
    """Expose this process's worker metrics over HTTP at `http://host:port/metrics`, from
    a daemon thread. Call before `app.run()`.

    Args:
        app: the App the worker runs.
        port: the TCP port (0: any free one; `.port` of the result tells which).
        host: the address to bind; default 127.0.0.1 (this machine only).

    Raises:
        RuntimeError: if prometheus_client is not installed.
        OSError: if the port cannot be bound.
    """
    metrics = WorkerMetrics(app)
    started = _prometheus().start_http_server(port, addr=host, registry=metrics.registry)
    metrics.server = started[0]  # (server, thread) since prometheus_client 0.20
    return metrics
