"""Factories for runtime tests: real-time Apps on every store, a store wrapper that counts
and can fail calls, and an outcome recorder that tests await instead of sleeping."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rota
from rota.store import open_store
from rota.store.base import Store, StoreError


class FaultyStore:
    """Delegates to a real store, counting calls per method; `fail(method, n)` decides
    whether call number n (0-based) of `method` raises before reaching the store (so a
    failed write never half-happens): StoreError, or an instance of `raises`.

    Its `claim` takes no `outcomes` (the runtime then writes every outcome with the
    outcome writer), unless `carries_outcomes`: then it shows the real claim's signature,
    and passes write their outcomes with their claims."""

    def __init__(self, inner: Store, fail: Callable[[str, int], bool] | None = None,
                 raises: type[Exception] = StoreError, carries_outcomes: bool = False) -> None:
        self.inner = inner
        self.carries_outcomes = carries_outcomes
        # Whatever the inner store prefers (PostgreSQL writes outcomes beside claims).
        self.outcomes_beside_claims = not carries_outcomes
        self.raises = raises
        self.fail = fail or (lambda _method, _n: False)
        self.calls: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if name not in {"claim", "complete", "retry", "dead_letter", "quarantine", "release",
                        "heartbeat", "find_expired_leases", "expire_lease",
                        "take_leadership"}:
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                number = self.calls[name]
                self.calls[name] += 1
                failing = self.fail(name, number)
                if failing:
                    self.failures[name] += 1
            if failing:
                raise self.raises(f"injected {name} failure")
            return target(*args, **kwargs)

        if self.carries_outcomes:
            functools.update_wrapper(call, target)  # the signature, with `outcomes`
        return call


class Outcomes:
    """Collects `OutcomeEvent`s (register with `app.on_outcome(outcomes)`); tests await
    `until(condition)` rather than sleeping."""

    def __init__(self) -> None:
        self.events: list[rota.OutcomeEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: rota.OutcomeEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def until(self, condition: Callable[[list[rota.OutcomeEvent]], bool],
                    timeout_s: float = 10.0) -> None:
        async def wait() -> None:
            while not condition(self.events):
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), timeout_s)

    async def count(self, n: int, timeout_s: float = 10.0) -> None:
        await self.until(lambda events: len(events) >= n, timeout_s)

    def queues(self) -> list[str]:
        return [event.queue for event in self.events]


@pytest.fixture
def make_worker_app(store_url: str) -> Iterator[Callable[..., rota.App]]:
    """Factory of real-time Apps (system clock) on one fresh store of each kind; all Apps
    of one test share the store. `faulty=` wraps the store in a FaultyStore."""
    apps: list[rota.App] = []
    shared: Store | None = open_store(store_url) if store_url == "memory://" else None

    def factory(faulty: FaultyStore | None = None) -> rota.App:
        store: Any = faulty if faulty is not None else (shared or store_url)
        app = rota.App(store)
        apps.append(app)
        return app

    def faulty_store(fail: Callable[[str, int], bool],
                     raises: type[Exception] = StoreError,
                     carries_outcomes: bool = False) -> FaultyStore:
        return FaultyStore(shared or open_store(store_url), fail, raises, carries_outcomes)

    factory.faulty_store = faulty_store  # type: ignore[attr-defined]
    yield factory
    for app in apps:
        app.close()
