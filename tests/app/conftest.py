"""Factories for App-level tests: a recording job, and a Store wrapper that counts claims
(and can make some of them fail) while delegating everything to the real store."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

import rota
from rota.core.jobs import JobRecord
from rota.store import open_store
from rota.store.base import LeaseOutcome, Store, StoreError


class RecordingStore:
    """Delegates to a real store; records every claim as (queues, limit, jobs returned or
    None when it failed). `fail(n)` makes claim number n (0-based) raise StoreError."""

    def __init__(self, inner: Store, fail: Callable[[int], bool] | None = None) -> None:
        self.inner = inner
        self.fail = fail or (lambda _n: False)
        self.claims: list[tuple[tuple[str, ...], int, int | None]] = []

    def claim(
        self, queues: Sequence[str], limit: int, *, now: datetime, owner: str,
        lease_expires_at: datetime, limits: Sequence[int] | None = None,
        probe: Sequence[str] = (), outcomes: Sequence[LeaseOutcome] = (),
    ) -> list[JobRecord]:
        if limit == 0 and not queues:  # a probe only: it claims nothing
            return self.inner.claim(queues, limit, now=now, owner=owner,
                                    lease_expires_at=lease_expires_at, probe=probe,
                                    outcomes=outcomes)
        # A batched claim (per-Queue limits, one round trip) is recorded as the one-Queue
        # claims it stands for; when it fails, as its first claim failing.
        asked = ([((queue,), count) for queue, count in zip(queues, limits, strict=True)]
                 if limits is not None else [(tuple(queues), limit)])
        if self.fail(len(self.claims)):
            self.claims.append((asked[0][0], asked[0][1], None))
            raise StoreError("injected claim failure")
        jobs = self.inner.claim(
            queues, limit, now=now, owner=owner, lease_expires_at=lease_expires_at,
            limits=limits, probe=probe, outcomes=outcomes)
        if limits is None:
            self.claims.append((tuple(queues), limit, len(jobs)))
        else:
            for queue_tuple, count in asked:
                got = sum(1 for job in jobs if job.queue == queue_tuple[0])
                self.claims.append((queue_tuple, count, got))
        return jobs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def make_recording_app(
    store_url: str, clock: rota.VirtualClock
) -> Iterator[Callable[..., tuple[rota.App, RecordingStore]]]:
    """Factory of Apps whose store is a RecordingStore around a fresh store of each kind."""
    apps: list[rota.App] = []

    def factory(fail: Callable[[int], bool] | None = None) -> tuple[rota.App, RecordingStore]:
        recording = RecordingStore(open_store(store_url), fail)
        app = rota.App(recording, clock=clock)  # type: ignore[arg-type]
        apps.append(app)
        return app, recording

    yield factory
    for app in apps:
        app.close()


@dataclass
class Recorder:
    """A registered job that logs its first argument (the Queue name, by convention)."""

    job: rota.JobDefinition[[str], None]
    log: list[str] = field(default_factory=list)

    def enqueue(self, queue: str, count: int = 1) -> list[int]:
        return self.job.configure(queue=queue).enqueue_many([(queue,)] * count)


@pytest.fixture
def make_recorder() -> Callable[[rota.App], Recorder]:
    def factory(app: rota.App) -> Recorder:
        log: list[str] = []

        @app.job("record")
        def record(queue: str) -> None:
            log.append(queue)

        return Recorder(record, log)

    return factory
