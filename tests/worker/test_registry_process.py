"""The worker registry with real `rota worker` processes: each registers, refreshes with
its heartbeats, a SIGKILLed one turns dead (its row stays, `alive` False), a SIGTERMed one
removes its row; `rota workers` (read-only) shows both states. Short leases; the tests
wait on store conditions with deadlines, never on sleeps, and assert no duration."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

import rota
from tests.waiting import wait_until
from tests.worker.child_process import ROOT, WorkerProcess

APP = "tests.worker.process_app:app"

pytestmark = pytest.mark.slow


@pytest.fixture
def start_worker() -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []
    lines: queue.Queue[tuple[int, str]] = queue.Queue()

    def start(store_url: str, *extra: str, **env: str) -> WorkerProcess:
        worker = WorkerProcess(APP, {"ROTA_TEST_STORE": store_url, **env},
                               lambda pid, text: lines.put((pid, text)), *extra, timeout_s=30)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


def rota_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota.cli", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=60, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                         "COLUMNS": "200"},
    )


def test_workers_register_and_a_killed_one_turns_dead(
    durable_store_url: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    app = rota.App(durable_store_url)
    app.job("work")(lambda n: None)
    try:
        # Given two workers with 1 s leases (heartbeats every 1/3 s, so dead 5/6 s after
        # their last refresh: two refreshes missed in a row)
        first = start_worker(durable_store_url, ROTA_TEST_LEASE_S="1")
        second = start_worker(durable_store_url, ROTA_TEST_LEASE_S="1")
        first.wait_ready()
        second.wait_ready()
        assert wait_until(lambda: sorted(w.pid for w in app.workers() if w.alive)
                          == sorted([first.pid, second.pid]), 30)
        # When they serve jobs, their refreshes carry the served counters
        app.jobs["work"].enqueue_many([(n,) for n in range(10)])
        assert wait_until(lambda: sum(c.count for w in app.workers() for c in w.served) == 10,
                          30)
        [worker] = [w for w in app.workers() if w.pid == first.pid]
        assert worker.version == rota.__version__
        assert worker.groups[0].name == "main" and worker.groups[0].pool_size == 4
        assert worker.groups[0].policy == rota.Strict("default")
        # And one is SIGKILLed: its row stays and turns dead; the other stays alive
        first.process.kill()
        first.wait()
        assert wait_until(lambda: {w.pid: w.alive for w in app.workers()}
                          == {first.pid: False, second.pid: True}, 30)
        [dead] = [w for w in app.workers() if w.pid == first.pid]
        assert abs(dead.dead_at - dead.last_seen - timedelta(seconds=2.5 / 3)) \
            < timedelta(milliseconds=1)
        listed = rota_cli("workers", "--store", durable_store_url, "--json")
        assert listed.returncode == 0, listed.stderr
        shown = {entry["pid"]: entry["alive"] for entry in json.loads(listed.stdout)}
        assert shown == {first.pid: False, second.pid: True}
        table = rota_cli("workers", "--store", durable_store_url)
        assert table.returncode == 0 and "DEAD" in table.stdout and "alive" in table.stdout
        # And the other, SIGTERMed, removes its own row at its graceful stop
        second.signal(signal.SIGTERM)
        assert second.wait() == 0
        assert [w.pid for w in app.workers()] == [first.pid]
        # And the history holds all ten attempts after both are gone
        assert sum(c.count for c in app.served()) == 10
    finally:
        app.close()


def metrics_url(worker: WorkerProcess) -> str:
    for text in worker.errors:
        if "metrics at " in text:
            return text.split("metrics at ", 1)[1].strip()
    raise AssertionError(f"no metrics line:\n{worker.stderr()}")


def scrape(url: str) -> dict[str, float]:
    """The samples of a Prometheus text page, by `name{labels}`."""
    from urllib.request import urlopen

    with urlopen(url, timeout=10) as page:
        text = page.read().decode()
    samples: dict[str, float] = {}
    for row in text.splitlines():
        if row and not row.startswith("#"):
            name, _, value = row.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_metrics_port_exposes_the_workers_metrics(
    durable_store_url: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    app = rota.App(durable_store_url)
    app.job("work")(lambda n: None)
    try:
        # Given a worker serving its metrics on a free port
        worker = start_worker(durable_store_url, "--metrics-port", "0")
        worker.wait_ready()
        url = metrics_url(worker)
        assert url.startswith("http://127.0.0.1:")
        # When it served 5 jobs
        app.jobs["work"].enqueue_many([(n,) for n in range(5)])
        key = 'rota_jobs_total{group="main",outcome="succeeded",queue="default"}'
        assert wait_until(lambda: scrape(url).get(key) == 5.0, 30)
        # Then the page has the counter, the histograms and the pool gauges
        samples = scrape(url)
        assert samples['rota_job_duration_seconds_count{group="main",queue="default"}'] == 5
        assert samples['rota_claim_round_trip_seconds_count{group="main"}'] >= 1
        assert samples['rota_pool_size{group="main"}'] == 4
        assert 'rota_pool_in_use{group="main"}' in samples
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0
    finally:
        app.close()


def test_metrics_port_that_is_taken_fails_with_one_line(
    durable_store_url: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        worker = start_worker(durable_store_url, "--metrics-port", port)
        assert worker.wait() == 1
    assert f"--metrics-port {port}: cannot listen" in worker.stderr()
