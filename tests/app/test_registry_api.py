"""The worker registry through the App: workers(), served(), fairness(), on every store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo

FAIR = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


def register(app: rota.App, worker_id: str = "h:1:t") -> None:
    now = app.clock.now()
    app.store.register_worker(WorkerInfo(
        id=worker_id, host="h", pid=1, version=rota.__version__, started_at=now,
        last_seen=now, dead_at=now + timedelta(seconds=30),
        groups=(WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4),),
    ), now)


def test_workers_turn_dead_on_the_app_clock(
    make_app: Callable[[], rota.App], clock: rota.VirtualClock
) -> None:
    app = make_app()
    register(app)
    assert [w.alive for w in app.workers()] == [True]
    clock.advance(timedelta(seconds=30))
    assert [w.alive for w in app.workers()] == [False]


def test_fairness_and_served_outlive_the_worker(
    make_app: Callable[[], rota.App], clock: rota.VirtualClock
) -> None:
    # Given a worker that served 6:3:1 and then stopped gracefully
    app = make_app()
    register(app)
    new = [ServedCount("fair", q, "succeeded", n) for q, n in (("a", 60), ("b", 30), ("c", 10))]
    now = clock.now()
    assert app.store.refresh_worker("h:1:t", now, dead_at=now + timedelta(seconds=30),
                                    in_flight={}, served=new, new=new)
    app.store.unregister_worker("h:1:t")
    clock.advance(timedelta(minutes=5))
    # Then the App still shows the shares against the weights
    [view] = app.fairness(timedelta(minutes=10))
    assert app.workers() == []
    assert [(q.queue, q.target_share, q.served_share) for q in view.queues] == [
        ("a", 0.6, 0.6), ("b", 0.3, 0.3), ("c", 0.1, 0.1)]
    assert sum(c.count for c in app.served()) == 100
    # And a window that ends before that minute shows nothing served
    assert app.fairness(60)[0].served == 0


def test_served_refuses_a_naive_since(make_app: Callable[[], rota.App]) -> None:
    with pytest.raises(TypeError, match="timezone-aware"):
        make_app().served(since=object())  # type: ignore[arg-type]
