"""Every tool shows the policy in force (rota.core.serving): after `set_group_policy`, the
health check, the fairness view and the worker's unserved-Queue warning follow the stored
policy, not the code's. On every store kind, on the virtual clock.

The story: group "io" runs Strict(sendgrid, reports) in its code; an operator stores
Strict(urgent, sendgrid, reports) while its worker runs, and jobs wait on "urgent".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import pytest

import rota
from rota import Strict, Weighted, WorkerGroupOptions
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
from rota.store import Store
from rota.worker.group import GroupRunner
from rota.worker.unserved import UnservedDuty
from tests.conftest import START

MakeApp = Callable[[], rota.App]
T = TypeVar("T")

CODE = Strict("sendgrid", "reports")
STORED = Strict("urgent", "sendgrid", "reports")


def io_app(make_app: MakeApp) -> rota.App:
    """An App defining "io" with the code's policy, and a job on every Queue."""
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="io", policy=CODE))
    app.job("send", queue="sendgrid")(lambda: None)
    return app


def register(app: rota.App, group: str = "io", policy: rota.DispatchPolicy = CODE, *,
             worker_id: str = "host:1:tok", alive: bool = True) -> None:
    """A worker row running `group` with `policy` in its code, alive at the clock's now."""
    now = app.clock.now()
    app.store.register_worker(WorkerInfo(
        id=worker_id, host="host", pid=1, version=rota.__version__, started_at=now,
        last_seen=now, dead_at=now + (timedelta(minutes=5) if alive else -timedelta(seconds=1)),
        groups=(WorkerGroupInfo(name=group, policy=policy, pool_size=2,
                                owner=f"{group}@{worker_id}"),)), now)


def enqueue(app: rota.App, queue: str, count: int = 1) -> None:
    for _ in range(count):
        app.jobs["send"].configure(queue=queue).enqueue()


def test_health_checks_the_queues_of_the_stored_policy(make_app: MakeApp) -> None:
    # Given "io" run by a live worker under its code's policy: healthy
    app = io_app(make_app)
    register(app)
    assert app.health().ok and app.health().queues == ("sendgrid", "reports")
    # When the stored policy adds "urgent"
    app.set_group_policy("io", STORED)
    # Then the check covers "urgent" too, served by the live worker (it follows the store)
    health = app.health()
    assert health.queues == ("urgent", "sendgrid", "reports")
    assert health.ok and health.unserved == ()
    # And an App's group no live worker runs is unserved, by its stored policy too
    other = make_app()
    other.add_worker_group(WorkerGroupOptions(name="mail", policy=Strict("urgent")))
    other.set_group_policy("mail", Strict("newsletters", "urgent"))
    assert other.health().unserved == ("newsletters",)


def test_fairness_compares_against_the_stored_policy_since_its_change(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    # Given "io" weighted a=1, b=1 in its code, which served 10 jobs of a in the minute
    # START
    app = make_app()
    register(app, policy=Weighted([("a", 1), ("b", 1)]))
    served = [ServedCount("io", "a", "succeeded", 10)]
    app.store.refresh_worker("host:1:tok", START, dead_at=START + timedelta(minutes=5),
                             in_flight={"io": 0}, served=served, new=served)
    [before] = app.fairness(window=600)
    assert before.policy_changed_at is None and before.served == 10
    assert [q.target_share for q in before.queues] == [0.5, 0.5]
    # When a policy a=3, b=1 is stored two minutes later, and 4 jobs of b are served then
    clock.set(START + timedelta(minutes=2, seconds=5))
    app.set_group_policy("io", Weighted([("a", 3), ("b", 1)]))
    served = [ServedCount("io", "a", "succeeded", 10), ServedCount("io", "b", "succeeded", 4)]
    app.store.refresh_worker("host:1:tok", clock.now(), dead_at=clock.now() + timedelta(
        minutes=5), in_flight={"io": 0}, served=served, new=served[1:])
    # Then the view marks the change, counts from its minute on, against the new weights
    [view] = app.fairness(window=600)
    assert view.policy == Weighted([("a", 3), ("b", 1)])
    assert view.policy_changed_at == START + timedelta(minutes=2, seconds=5)
    assert view.since == START + timedelta(minutes=2)
    assert view.served == 4
    assert [(q.queue, q.target_share, q.served) for q in view.queues] == [
        ("a", 0.75, 0), ("b", 0.25, 4)]
    # And a change before the window leaves the window as it was
    clock.set(START + timedelta(hours=1))
    [later] = app.fairness(window=600)
    assert later.policy_changed_at is None


# -- the worker's warning ------------------------------------------------------------------


class Group:
    def __init__(self, runner: GroupRunner) -> None:
        self.runner = runner
        self.name = runner.name


class StandIn:
    """The runtime as the duty sees it: its store, its groups, store calls inline."""

    def __init__(self, app: rota.App, groups: Sequence[str]) -> None:
        self.store: Store = app.store
        self.clock = app.clock
        self.groups = [Group(GroupRunner(o)) for o in app.worker_groups if o.name in groups]
        self.stopping = False

    async def store_call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return call(*args, **kwargs)

    async def sleep_unless_stopping(self, delay_s: float) -> None:
        await asyncio.sleep(0)


def look(duty: UnservedDuty, runtime: StandIn) -> list[str]:
    return [info.name for info in asyncio.run(duty.look(runtime))]  # type: ignore[arg-type]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "no live worker serves it" in r.getMessage()]


def test_a_worker_warns_once_per_unserved_queue_and_again_after_it_was_served(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker running "io" (code: sendgrid, reports), due jobs on "urgent" and
    # "sendgrid"
    app = io_app(make_app)
    enqueue(app, "urgent", 2)
    enqueue(app, "sendgrid")
    runtime = StandIn(app, ["io"])
    duty = UnservedDuty(app.clock)
    with caplog.at_level(logging.WARNING, logger="rota"):
        # When it looks (at start), then surveys again
        assert look(duty, runtime) == ["urgent"]
        assert look(duty, runtime) == ["urgent"]
        # Then it warned once, about "urgent" alone, naming its groups
        [message] = warnings(caplog)
        assert "Queue 'urgent' has 2 due jobs but no live worker serves it" in message
        assert "this worker runs io" in message
        # When another live worker's group serves it by a stored policy
        register(app, "mail", Strict("reports"), worker_id="host:2:tok")
        app.set_group_policy("mail", Strict("urgent"))
        assert look(duty, runtime) == []
        # And later that policy drops it again
        app.set_group_policy("mail", None)
        assert look(duty, runtime) == ["urgent"]
    # Then it warned a second time: served in between, unserved again
    assert len(warnings(caplog)) == 2


def test_a_worker_follows_its_own_policy_in_force(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker whose group switched to the stored policy naming "urgent"
    app = io_app(make_app)
    enqueue(app, "urgent")
    runtime = StandIn(app, ["io"])
    app.set_group_policy("io", STORED)
    runner = runtime.groups[0].runner
    runner.offer_policy(1, app.store.group_policy("io"))
    runner.claim_pass(app.store, 0, app.clock.now())  # switches at its next pass
    assert runner.policy == STORED
    # Then it does not warn about "urgent": its own group serves it now
    with caplog.at_level(logging.WARNING, logger="rota"):
        assert look(UnservedDuty(app.clock), runtime) == []
    assert warnings(caplog) == []


def test_a_hint_for_a_queue_nobody_serves_is_looked_at_soon(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a running duty that surveyed once (nothing unserved), surveying hourly
    app = io_app(make_app)
    runtime = StandIn(app, ["io"])
    duty = UnservedDuty(app.clock, survey_s=3600, hint_look_s=0)

    async def scenario() -> None:
        task = asyncio.create_task(duty(runtime))  # type: ignore[arg-type]
        for _ in range(100):
            await asyncio.sleep(0)
        assert warnings(caplog) == []
        # When a job lands on "typo" and its wake-up hint arrives
        enqueue(app, "typo", 3)
        duty.queue_hinted("typo")
        for _ in range(100):
            if warnings(caplog):
                break
            await asyncio.sleep(0)
        # And more hints for it arrive
        for _ in range(5):
            duty.queue_hinted("typo")
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then it warned once, without waiting for the next survey
    [message] = warnings(caplog)
    assert "Queue 'typo' has 3 due jobs" in message


def test_a_family_member_is_served_by_the_family_and_warned_about_without_it(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker running "io" and due jobs on "tenant-1" and "tenant-2"
    app = io_app(make_app)
    enqueue(app, "tenant-1")
    enqueue(app, "tenant-2", 2)
    runtime = StandIn(app, ["io"])
    duty = UnservedDuty(app.clock)
    with caplog.at_level(logging.WARNING, logger="rota"):
        # When another live worker's group serves the family "tenant-*" but "tenant-2"
        register(app, "tenants", Weighted([("tenant-2", 1), ("x", 1)]), worker_id="h:2:t")
        app.set_group_policy("tenants", Weighted([("tenant-1", 5), ("tenant-*", 1)]))
        # Then no member is unserved
        assert look(duty, runtime) == []
        # When the stored policy keeps "tenant-1" alone, "tenant-2" is unserved: warned
        app.set_group_policy("tenants", Weighted([("tenant-1", 5)]))
        assert look(duty, runtime) == ["tenant-2"]
    [message] = warnings(caplog)
    assert "Queue 'tenant-2' has 2 due jobs" in message
    # And health checks a family of the App's group: served while a live group's family
    # holds it
    app.set_group_policy("io", Strict("tenant-*"))
    assert app.health().unserved == ("tenant-*",)
    register(app)
    assert app.health().ok and app.health().queues == ("tenant-*",)


def test_a_worker_never_warns_about_a_family_as_a_queue(
    clock: rota.VirtualClock, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a paused family with due jobs on a member nobody serves (the memory store:
    # the one that keeps a family's settings on this branch's contract run)
    app = io_app(lambda: rota.App("memory://", clock=clock))
    try:
        enqueue(app, "tenant-1", 2)
        app.pause_queue("tenant-*")
        duty = UnservedDuty(app.clock)
        with caplog.at_level(logging.WARNING, logger="rota"):
            # When the worker looks
            assert look(duty, StandIn(app, ["io"])) == ["tenant-1"]
        # Then it warns about the member alone, and its gauge has no series for the family
        assert [m.split(" has ")[0] for m in warnings(caplog)] == ["Queue 'tenant-1'"]
        assert "tenant-*" not in duty.unserved_jobs and duty.unserved_jobs["tenant-1"] == 2
    finally:
        app.close()
