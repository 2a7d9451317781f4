"""dashboard: what one page view, API call or scrape of `rota dashboard` costs on a big
store. Run only when named (`--suite dashboard`); rota alone.

A fresh store of each durable kind gets `dashboard_jobs` jobs (three Queues a, b, c; a
third succeeded, the rest due), a registered worker with a Weighted 6:3:1 group and an
hour of per-minute served history. The dashboard is served by a real uvicorn on 127.0.0.1
(a thread of this process), and each endpoint is fetched `dashboard_requests` times in a
row -> p50 and max ms per endpoint and store. Then the estimate alone (what `/queues`
spends most of its time on) over 3 x 1,000,000 due jobs, at its replay cap.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import rota
from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.suites.queues import store_url

SUITE = "dashboard"
ENDPOINTS = ("/queues", "/workers", "/jobs", "/jobs?name=send-mail&state=scheduled",
             "/api/queues", "/api/groups", "/api/jobs", "/metrics")
FAIR = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


def fill(url: str, jobs: int, now: datetime) -> None:
    from rota.core.jobs import NewJob
    from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
    from rota.store import open_store

    store = open_store(url)
    try:
        batch = [NewJob("send-mail", "abc"[i % 3], now - timedelta(seconds=i % 600),
                        f'["user{i}@example.com"]') for i in range(jobs)]
        for start in range(0, jobs, 5000):
            store.enqueue(batch[start:start + 5000], now)
        finished = 0
        while finished < jobs // 3:
            claimed = store.claim(["a", "b", "c"], 1000, now=now, owner="bench",
                                  lease_expires_at=now + timedelta(minutes=5))
            store.complete([job.lease for job in claimed], now)
            finished += len(claimed)
        group = WorkerGroupInfo("fair", FAIR, 20, in_flight=12, owner="fair@bench:1:x")
        worker = WorkerInfo("bench:1:x", "bench", 1, "0", now, now, now + timedelta(hours=1),
                            (group,))
        store.register_worker(worker, now - timedelta(hours=1))
        for minute in range(60):
            served = [ServedCount("fair", q, "succeeded", n) for q, n in
                      (("a", 600), ("b", 300), ("c", 100))]
            store.refresh_worker("bench:1:x", now - timedelta(minutes=60 - minute),
                                 dead_at=now + timedelta(hours=1), in_flight={"fair": 12},
                                 served=served, new=served)
    finally:
        store.close()
    if url.startswith("postgresql"):
        from benchmarks import pg

        pg.analyze(url)  # as autovacuum would soon do on a real table


def serve(url: str) -> tuple[Any, threading.Thread, str]:
    """The dashboard on a free port of 127.0.0.1: (server, its thread, base URL)."""
    import uvicorn

    from rota.dashboard import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(url), log_level="warning"))
    sock = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.01)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def fetch_ms(base: str, path: str, requests: int) -> list[float]:
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        with urllib.request.urlopen(base + path, timeout=120) as reply:
            reply.read()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def run(settings: Settings) -> SuiteResult:
    from rota.core.estimate import MAX_REPLAYED_JOBS, estimate_start

    result = SuiteResult()
    now = datetime.now(UTC)
    note = f"{settings.dashboard_jobs:,} jobs, {settings.dashboard_requests} requests in a row"
    for kind in ("sqlite", "postgres"):
        with store_url(kind, "dashboard") as url:
            started = time.perf_counter()
            fill(url, settings.dashboard_jobs, now)
            print(f"  dashboard rota[{kind}]: {settings.dashboard_jobs:,} jobs and an hour of "
                  f"history in {time.perf_counter() - started:.1f} s", flush=True)
            server, thread, base = serve(url)
            try:
                for path in ENDPOINTS:
                    timings = fetch_ms(base, path, settings.dashboard_requests)
                    figure = Figure.of(timings, "ms", note)
                    result.add(SUITE, f"rota[{kind}] {path}", "ms", figure)
                    print(f"  dashboard rota[{kind}] {path}: p50 {figure.median:.1f} ms, "
                          f"max {figure.max:.1f} ms", flush=True)
            finally:
                server.should_exit = True
                thread.join(30)
    spent: list[float] = []
    for _ in range(settings.runs):
        started = time.perf_counter()
        estimate_start(group="fair", policy=FAIR, pool_size=20,
                       backlog={"a": 10**6, "b": 10**6, "c": 10**6}, queue="c",
                       position=10**6, rate_per_s=1000.0)
        spent.append((time.perf_counter() - started) * 1000)
    result.add(SUITE, "estimate alone", "ms", Figure.of(
        spent, "ms", f"3 x 1,000,000 due jobs, replay capped at {MAX_REPLAYED_JOBS:,}"))
    return result
