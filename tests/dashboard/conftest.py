"""Fixtures of the dashboard tests: a store with known contents, and the dashboard served
by a real uvicorn on a free port of 127.0.0.1 (in a thread of the test process).

The known contents (`seeded`), at the virtual clock's START + 90 s:
- Queue a: 5 scheduled due jobs `send-mail` (the oldest due at START, 90 s ago), and one
  succeeded job with result {"sent": 1} (claimed and completed by `run_until_idle`).
- Queue b: 3 scheduled due jobs `build-report`; Queue c: 2 `send-mail` jobs due later.
- Queue emails: one dead-lettered job `always-fails` (last error "RuntimeError: boom").
- Queue paused-q: paused, limit 2, no jobs.
- The registry: one live worker `host:1:tok` running group `fair` (Weighted a=6, b=3, c=1,
  pool 4, 2 in flight), which served a=60, b=30, c=10 in the last minutes (shares 60 %,
  30 %, 10 %, against targets 60 %, 30 %, 10 %), and a dead one, `host:2:old`, which
  stopped refreshing 6.5 minutes before NOW.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import rota
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
from rota.dashboard import create_app
from rota.store.memory import MemoryStore
from tests.conftest import START

NOW = START + timedelta(seconds=90)
FAIR = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


@dataclass
class Seeded:
    app: rota.App          # the App that wrote the contents (its own store connection)
    source: str | rota.Store  # what the dashboard gets: the URL, or the memory store
    clock: rota.VirtualClock
    ids: dict[str, list[int]]

    def job(self, job_id: int) -> rota.JobRecord:
        record = self.app.get_job(job_id)
        assert record is not None
        return record

    def queue(self, name: str) -> rota.QueueInfo | None:
        return next((q for q in self.app.queues() if q.name == name), None)


def seed(app: rota.App, clock: rota.VirtualClock) -> dict[str, list[int]]:
    @app.job("send-mail", queue="a")
    def send_mail(to: str, subject: str = "hi") -> dict[str, int]:
        return {"sent": 1}

    @app.job("build-report", queue="b")
    def build_report(day: str) -> None:
        return None

    @app.job("always-fails", queue="emails", retry=rota.RetryPolicy(max_attempts=1))
    def always_fails() -> None:
        raise RuntimeError("boom")

    app.add_worker_group(rota.WorkerGroupOptions(
        name="seed", policy=rota.Strict("a", "emails"), pool_size=1))
    done = send_mail.enqueue("done@example.com")
    failed = always_fails.enqueue()
    # One pass of one Worker: the first job of a, then the failing one of emails.
    app.run_until_idle()
    clock.advance(0)
    ids = {
        "done": [done], "failed": [failed],
        "a": [send_mail.enqueue(f"user{i}@example.com", subject=f"s{i}") for i in range(5)],
        "b": [build_report.enqueue(f"2026-01-0{i + 1}") for i in range(3)],
        "c": [send_mail.configure(queue="c", delay=3600).enqueue("later@example.com")
              for _ in range(2)],
    }
    app.pause_queue("paused-q")
    app.set_queue_limit("paused-q", 2)
    group = WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4, in_flight=2,
                            owner="fair@host:1:tok")
    worker = WorkerInfo(id="host:1:tok", host="host", pid=1, version=rota.__version__,
                        started_at=START, last_seen=START, dead_at=START + timedelta(hours=1),
                        groups=(group,))
    app.store.register_worker(worker, START)
    # And a worker that stopped refreshing: dead at NOW (shown as dead, not counted)
    gone = WorkerInfo(id="host:2:old", host="host", pid=2, version=rota.__version__,
                      started_at=START - timedelta(minutes=5),
                      last_seen=START - timedelta(minutes=5), dead_at=START,
                      groups=(WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4,
                                              in_flight=1, owner="fair@host:2:old"),))
    app.store.register_worker(gone, START - timedelta(minutes=5))
    served = [ServedCount("fair", q, "succeeded", n) for q, n in (("a", 60), ("b", 30),
                                                                 ("c", 10))]
    app.store.refresh_worker("host:1:tok", START + timedelta(seconds=30),
                             dead_at=START + timedelta(hours=1), in_flight={"fair": 2},
                             served=served, new=served)
    clock.set(NOW)
    return ids


@pytest.fixture
def seeded(store_url: str, clock: rota.VirtualClock) -> Iterator[Seeded]:
    shared = MemoryStore() if store_url == "memory://" else None
    app = rota.App(shared if shared is not None else store_url, clock=clock)
    try:
        ids = seed(app, clock)
        # memory:// is one store object per process: the dashboard gets that object.
        yield Seeded(app, shared if shared is not None else store_url, clock, ids)
    finally:
        app.close()


@pytest.fixture
def sqlite_seeded(tmp_path: Path, clock: rota.VirtualClock) -> Iterator[Seeded]:
    """The same contents in an SQLite file only (browser and read-only tests)."""
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    app = rota.App(url, clock=clock)
    try:
        yield Seeded(app, url, clock, seed(app, clock))
    finally:
        app.close()


@dataclass
class Reply:
    status: int
    body: bytes
    headers: Message  # case-insensitive

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


class ServedDashboard:
    """A dashboard served by uvicorn in a thread, on a free port of 127.0.0.1."""

    def __init__(self, source: str | rota.App | rota.Store, *, token: str | None = None,
                 clock: rota.Clock | None = None, mount: str | None = None) -> None:
        self.asgi = create_app(source, token=token, clock=clock)
        served: Any = self.asgi
        if mount is not None:  # inside a user's own Starlette app, at a prefix
            from starlette.applications import Starlette
            from starlette.routing import Mount
            served = Starlette(routes=[Mount(mount, app=self.asgi)])
        self.server = uvicorn.Server(uvicorn.Config(served, log_level="warning",
                                                    lifespan="on"))
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> ServedDashboard:
        self.thread.start()
        # Wait for the server's own signal that it listens (no sleeps).
        while not self.server.started:
            self.thread.join(0.01)
            if not self.thread.is_alive():
                raise RuntimeError("the dashboard server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()
        self.asgi.state.rota_dashboard.source.close()

    def request(self, method: str, path: str, *, data: dict[str, str] | None = None,
                body: object = None, headers: dict[str, str] | None = None) -> Reply:
        payload: bytes | None = None
        sent = dict(headers or {})
        if data is not None:
            payload = urllib.parse.urlencode(data).encode()
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        elif body is not None:
            payload = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        request = urllib.request.Request(self.url + path, data=payload, method=method,
                                         headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Reply(response.status, response.read(), response.headers)
        except urllib.error.HTTPError as error:
            with error:
                return Reply(error.code, error.read(), error.headers)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Reply:
        return self.request("POST", path, **kwargs)


@pytest.fixture
def serve() -> Iterator[Callable[..., ServedDashboard]]:
    """Factory: `serve(source, token=..., clock=...)` starts a dashboard, stopped at the end."""
    started: list[ServedDashboard] = []

    def factory(source: str | rota.App | rota.Store, **kwargs: Any) -> ServedDashboard:
        served = ServedDashboard(source, **kwargs).__enter__()
        started.append(served)
        return served

    yield factory
    for served in reversed(started):
        served.__exit__(None, None, None)
