"""Dashboard benchmark: what one page view, API call or scrape costs on a big store.

    .venv/bin/python benchmarks/dashboard.py [--jobs 100000] [--stores sqlite postgres]
                                              [--requests 20]

A fresh store gets `--jobs` jobs (three Queues a, b, c; a third succeeded, the rest due),
a registered worker with a Weighted 6:3:1 group and an hour of per-minute served history.
The dashboard is served by a real uvicorn on 127.0.0.1 (a thread of this process), and
each endpoint is fetched `--requests` times in a row; prints p50 and max per endpoint and
store, and the cost of the pure estimate alone at its replay cap.

Figures only, never a test.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import uvicorn  # noqa: E402

import rota  # noqa: E402
from rota.core.estimate import MAX_REPLAYED_JOBS, estimate_start  # noqa: E402
from rota.core.jobs import NewJob  # noqa: E402
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo  # noqa: E402
from rota.dashboard import create_app  # noqa: E402
from rota.store import open_store  # noqa: E402

ENDPOINTS = ("/queues", "/workers", "/jobs", "/jobs?name=send-mail&state=scheduled",
             "/api/queues", "/api/groups", "/api/jobs", "/metrics")
FAIR = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


def fill(url: str, jobs: int, now: datetime) -> None:
    store = open_store(url)
    try:
        batch: list[NewJob] = []
        for i in range(jobs):
            batch.append(NewJob("send-mail", "abc"[i % 3], now - timedelta(seconds=i % 600),
                                f'["user{i}@example.com"]'))
            if len(batch) == 5000:
                store.enqueue(batch, now)
                batch = []
        if batch:
            store.enqueue(batch, now)
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
            at = now - timedelta(minutes=60 - minute)
            served = [ServedCount("fair", q, "succeeded", n) for q, n in
                      (("a", 600), ("b", 300), ("c", 100))]
            store.refresh_worker("bench:1:x", at, dead_at=now + timedelta(hours=1),
                                 in_flight={"fair": 12}, served=served, new=served)
    finally:
        store.close()
    if url.startswith("postgresql"):
        import psycopg
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")  # as autovacuum would soon do on a real table


def serve(url: str) -> tuple[uvicorn.Server, threading.Thread, str]:
    server = uvicorn.Server(uvicorn.Config(create_app(url), log_level="warning"))
    sock = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.01)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def measure(base: str, path: str, requests: int) -> list[float]:
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        with urllib.request.urlopen(base + path, timeout=120) as reply:
            reply.read()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def store_url(kind: str, directory: Path) -> tuple[str, object]:
    if kind == "sqlite":
        return f"sqlite:///{directory / 'bench.db'}", None
    import psycopg
    name = f"rota_bench_dash_{uuid.uuid4().hex[:8]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://postgres@127.0.0.1:5432/{name}", name


def drop(name: object) -> None:
    if name is None:
        return
    import psycopg
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres",
                         autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    now = datetime.now(UTC)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores:
            url, database = store_url(kind, Path(tmp))
            try:
                started = time.perf_counter()
                fill(url, args.jobs, now)
                print(f"{kind}: {args.jobs} jobs + 60 min of history in "
                      f"{time.perf_counter() - started:.1f} s", flush=True)
                server, thread, base = serve(url)
                try:
                    for path in ENDPOINTS:
                        timings = measure(base, path, args.requests)
                        results.setdefault(path, {})[kind] = (
                            statistics.median(timings), max(timings))
                finally:
                    server.should_exit = True
                    thread.join(30)
            finally:
                drop(database)
    print(f"\nms per request, {args.requests} in a row, {args.jobs} jobs "
          "(p50 / max):")
    print(f"{'endpoint':40}" + "".join(f"{kind:>20}" for kind in args.stores))
    for path, by_kind in results.items():
        print(f"{path:40}" + "".join(
            f"{by_kind[k][0]:>11.1f} / {by_kind[k][1]:>6.1f}" for k in args.stores))
    big = {"a": 10**6, "b": 10**6, "c": 10**6}
    started = time.perf_counter()
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=20, backlog=big,
                              queue="c", position=10**6, rate_per_s=1000.0)
    print(f"\nestimate alone, 3 x 1,000,000 due jobs (replay capped at {MAX_REPLAYED_JOBS}): "
          f"{(time.perf_counter() - started) * 1000:.1f} ms -> {estimate.ahead} ahead")
    print(json.dumps({"jobs": args.jobs, "results": {
        p: {k: {"p50_ms": round(v[0], 2), "max_ms": round(v[1], 2)} for k, v in r.items()}
        for p, r in results.items()}}))


if __name__ == "__main__":
    main()
