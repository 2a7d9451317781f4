"""Workflows through the App: configure(after=..., after_outcome=...), rota.current_job()
.parents, on every store, driven by run_until_idle() on the virtual clock."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import rota

MakeApp = Callable[[], rota.App]


def test_a_chain_and_a_fan_in_run_in_order(make_app: MakeApp) -> None:
    app = make_app()
    ran: list[tuple[str, object]] = []
    seen_parents: list[tuple[int, ...]] = []

    @app.job("fetch", queue="q")
    def fetch(url: str) -> str:
        ran.append(("fetch", url))
        return f"page of {url}"

    @app.job("parse", queue="q")
    def parse() -> int:
        parents = rota.current_job().parents
        seen_parents.append(parents)
        page = app.get_job(parents[0])
        assert page is not None
        ran.append(("parse", page.result))
        return len(str(page.result))

    @app.job("notify", queue="q")
    def notify(user: str) -> None:
        seen_parents.append(rota.current_job().parents)
        ran.append(("notify", user))

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    # Given a chain fetch -> parse, and a fan-in of both into notify (whatever happened)
    fetch_id = fetch.enqueue("a.example")
    parse_id = parse.configure(after=[fetch_id]).enqueue()
    notify_id = notify.configure(after=[fetch_id, parse_id], after_outcome="finished"
                                 ).enqueue("ann")
    waiting = app.get_job(notify_id)
    assert waiting is not None and waiting.state is rota.JobState.WAITING
    assert waiting.parents == (fetch_id, parse_id)
    # When the workers run until idle
    assert app.run_until_idle() == 3
    # Then each ran after its parents, and saw them
    assert ran == [("fetch", "a.example"), ("parse", "page of a.example"), ("notify", "ann")]
    assert seen_parents == [(fetch_id,), (fetch_id, parse_id)]
    assert app.store.job_children(fetch_id) == [parse_id, notify_id]


def test_a_failed_parent_cancels_its_children_with_the_reason(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("boom", queue="q", retry=rota.RetryPolicy(max_attempts=1))
    def boom() -> None:
        raise RuntimeError("no luck")

    @app.job("after", queue="q")
    def after() -> None:
        raise AssertionError("must not run")

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    parent = boom.enqueue()
    child = after.configure(after=[parent]).enqueue()
    grandchild = after.configure(after=[child]).enqueue()
    app.run_until_idle()
    for job_id in (child, grandchild):
        record = app.get_job(job_id)
        assert record is not None and record.state is rota.JobState.CANCELLED
        assert record.last_error is not None and "parent job" in record.last_error


def test_cancelling_a_waiting_job_through_the_app(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("step", queue="q")
    def step() -> None: ...

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    parent = step.enqueue()
    child = step.configure(after=[parent]).enqueue()
    assert app.cancel(child)
    assert app.run_until_idle() == 1  # the parent only
    record = app.get_job(child)
    assert record is not None and record.state is rota.JobState.CANCELLED


def test_a_child_is_dispatched_by_its_own_queues_policy(make_app: MakeApp) -> None:
    # Given tenant A's workflow (a parent, then a child of it) and tenant B's backlog, in a
    # Weighted group 1:1 with one Worker
    app = make_app()
    order: list[str] = []

    @app.job("work")
    def work(tag: str) -> None:
        order.append(tag)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Weighted([("a", 1), ("b", 1)]), pool_size=1))
    parent = work.configure(queue="a").enqueue("a-parent")
    work.configure(queue="a", after=[parent]).enqueue("a-child")
    work.configure(queue="b").enqueue_many([("b",)] * 4)
    app.run_until_idle()
    # Then A's child took one of A's turns, never one of B's: at no point has A been
    # served more than one job ahead of B
    assert sorted(order) == ["a-child", "a-parent", "b", "b", "b", "b"]
    assert order.index("a-parent") < order.index("a-child")
    for end in range(1, len(order) + 1):
        served_a = sum(tag.startswith("a") for tag in order[:end])
        assert served_a <= order[:end].count("b") + 1, order


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"after": 5}, TypeError, "list of job ids"),
    ({"after": ["5"]}, TypeError, "job ids"),
    ({"after": [True]}, TypeError, "job ids"),
    ({"after": [0]}, ValueError, "no job's id"),
    ({"after": [1], "after_outcome": "done"}, ValueError, "'succeeded'"),
    ({"after_outcome": "finished"}, ValueError, "give after="),
    ({"after": [1], "key": "k"}, ValueError, "cannot have a key"),
])
def test_bad_after_options_are_refused_at_configure(
        make_app: MakeApp, options: dict[str, object], error: type[Exception],
        match: str) -> None:
    app = make_app()

    @app.job("step", queue="q")
    def step() -> None: ...

    with pytest.raises(error, match=match):
        step.configure(**options)  # type: ignore[arg-type]


def test_an_unknown_parent_stores_nothing(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("step", queue="q")
    def step() -> None: ...

    with pytest.raises(ValueError, match="job 424242, which does not exist"):
        step.configure(after=[424242]).enqueue()
    assert app.store.list_jobs() == []


def test_waiting_for_a_child_returns_when_its_parent_fails(make_app: MakeApp) -> None:
    # Given a child whose parent will be dead-lettered, and a waiter on the child
    app = make_app()

    @app.job("boom", queue="q", retry=rota.RetryPolicy(max_attempts=1))
    def boom() -> None:
        raise RuntimeError("no luck")

    @app.job("after", queue="q")
    def after() -> None: ...

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    child = after.configure(after=[boom.enqueue()]).enqueue()
    with pytest.raises(TimeoutError, match="waiting"):
        app.wait(child, timeout=0)
    # When another thread runs the workers
    worker = threading.Thread(target=app.run_until_idle)
    worker.start()
    try:
        record = app.wait(child, timeout=60)
    finally:
        worker.join()
    # Then the waiter gets the child cancelled, with the reason
    assert record.state is rota.JobState.CANCELLED
    assert record.last_error is not None and "parent job" in record.last_error
