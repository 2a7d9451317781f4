"""The maintenance leader among real-time workers on one store (rota.worker.leadership):
one worker of an App leads and alone sweeps, a stopping leader hands over at once, a dead
or cut-off one at its lease's end, and a lone worker leads as it starts. On every store.

Real time with shortened cadences; tests await conditions under deadlines, never sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime

import pytest

import rota
from rota.store.base import LeaderStore, Store
from rota.worker import leadership
from rota.worker.leadership import Election
from rota.worker.runtime import Runtime
from tests.waiting import until
from tests.worker.conftest import FaultyStore

MakeApp = Callable[..., rota.App]
# Short heartbeats: the leader's sweeper runs every 0.1 s. Job leases longer than any
# leader lease here, so that the election keeps the cadences each test sets.
GROUP = {"poll_interval": 0.05, "lease_duration": 1000, "heartbeat_interval": 0.1}
WAIT_S = 20.0


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


def shorten(monkeypatch: pytest.MonkeyPatch, *, ttl_s: float, renew_s: float,
            follow_s: float) -> None:
    monkeypatch.setattr(leadership, "LEADER_TTL_S", ttl_s)
    monkeypatch.setattr(leadership, "RENEW_S", renew_s)
    monkeypatch.setattr(leadership, "FOLLOW_S", follow_s)


def worker(make_worker_app: MakeApp, *, fail: Callable[[str, int], bool] | None = None
           ) -> tuple[rota.App, FaultyStore]:
    """An App with one group on the test's store, through a store that counts calls."""
    faulty: FaultyStore = make_worker_app.faulty_store(  # type: ignore[attr-defined]
        fail or (lambda _method, _n: False))
    app = make_worker_app(faulty)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="main", policy=rota.Strict("default"), pool_size=1, **GROUP))
    return app, faulty


def election(runtime: Runtime) -> Election:
    assert runtime.election is not None
    return runtime.election


def leader_row(store: Store, name: str) -> str | None:
    assert isinstance(store, LeaderStore)
    return store.leader(name, datetime.now(UTC))


def test_a_lone_worker_leads_as_it_starts(make_worker_app: MakeApp,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a worker whose tries are a minute apart, on a store without a leader
    shorten(monkeypatch, ttl_s=120, renew_s=60, follow_s=60)
    app, faulty = worker(make_worker_app)

    async def main() -> None:
        async with app.serve() as runtime:
            # When it starts
            # Then it leads after its first try, not after a lease's length
            await until(lambda: election(runtime).leading, WAIT_S, off_loop=False)
            assert election(runtime).terms == 1
            assert faulty.calls["take_leadership"] == 1
            assert leader_row(app.store, election(runtime).name) == election(runtime).owner
            # And it sweeps
            await until(lambda: faulty.calls["find_expired_leases"] >= 2, WAIT_S)
        # And a graceful stop gives the lease up
        assert leader_row(app.store, election(runtime).name) is None

    run(main())


def test_two_workers_elect_one_leader_and_only_it_sweeps(
        make_worker_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    shorten(monkeypatch, ttl_s=30, renew_s=0.1, follow_s=0.1)
    # Given two workers of one App on one store
    (first, first_calls), (second, second_calls) = (worker(make_worker_app),
                                                    worker(make_worker_app))

    async def main() -> None:
        async with first.serve() as one, second.serve() as two:
            elections = (election(one), election(two))
            assert elections[0].name == elections[1].name
            # When both have tried to lead a few times
            await until(lambda: min(first_calls.calls["take_leadership"],
                                    second_calls.calls["take_leadership"]) >= 5, WAIT_S)
            # Then exactly one leads, the one the store names, and neither changed hands
            leading = [e for e in elections if e.leading]
            assert len(leading) == 1
            assert [e.terms for e in elections] == [int(e.leading) for e in elections]
            assert leader_row(first.store, leading[0].name) == leading[0].owner
            # And only the leader sweeps
            calls, others = ((first_calls.calls, second_calls.calls)
                             if leading[0] is elections[0]
                             else (second_calls.calls, first_calls.calls))
            await until(lambda: calls["find_expired_leases"] >= 5, WAIT_S)
            assert others["find_expired_leases"] == 0

    run(main())


def test_a_stopping_leader_hands_over_at_once(make_worker_app: MakeApp,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two workers and leases far longer than the test may wait
    shorten(monkeypatch, ttl_s=600, renew_s=0.1, follow_s=0.1)
    (first, _), (second, second_calls) = (worker(make_worker_app),
                                      worker(make_worker_app))

    async def main() -> None:
        async with AsyncExitStack() as stack:
            one = await stack.enter_async_context(first.serve())
            await until(lambda: election(one).leading, WAIT_S, off_loop=False)
            two = await stack.enter_async_context(second.serve())
            await until(lambda: second_calls.calls["take_leadership"] >= 2, WAIT_S)
            assert not election(two).leading
            # When the leader stops gracefully
            await one.stop()
            # Then the other worker leads long before the lease would have expired, and
            # sweeps
            await until(lambda: election(two).leading, WAIT_S, off_loop=False)
            assert leader_row(second.store, election(two).name) == election(two).owner
            swept = second_calls.calls["find_expired_leases"]
            await until(lambda: second_calls.calls["find_expired_leases"] > swept, WAIT_S)
            assert not election(one).leading

    run(main())


def test_a_dead_leader_is_replaced_when_its_lease_expires(
        make_worker_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    shorten(monkeypatch, ttl_s=1.0, renew_s=0.2, follow_s=0.1)
    (first, _), (second, second_calls) = worker(make_worker_app), worker(make_worker_app)

    async def main() -> None:
        async with AsyncExitStack() as stack:
            one = await stack.enter_async_context(first.serve())
            await until(lambda: election(one).leading, WAIT_S, off_loop=False)
            two = await stack.enter_async_context(second.serve())
            await until(lambda: second_calls.calls["take_leadership"] >= 2, WAIT_S)
            assert not election(two).leading
            # When the leader dies without giving its lease up (as at a second signal)
            one.abort()
            # Then the other worker leads once the lease expired
            await until(lambda: election(two).leading, WAIT_S, off_loop=False)
            assert leader_row(second.store, election(two).name) == election(two).owner
            # And sweeps
            await until(lambda: second_calls.calls["find_expired_leases"] >= 2, WAIT_S)

    run(main())


def test_a_leader_whose_store_calls_fail_loses_the_lead_at_its_ttl(
        make_worker_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    shorten(monkeypatch, ttl_s=1.0, renew_s=0.1, follow_s=0.1)
    # Given a leader whose tries fail from the third on, until the test lets them through
    failing = asyncio.Event()
    app, faulty = worker(make_worker_app,
                         fail=lambda method, n: method == "take_leadership" and n >= 2
                         and not failing.is_set())

    async def main() -> None:
        async with app.serve() as runtime:
            elected = election(runtime)
            await until(lambda: elected.leading, WAIT_S, off_loop=False)
            # When its renewals fail
            await until(lambda: faulty.failures["take_leadership"] >= 1, WAIT_S)
            # Then it stops leading (and sweeping) once its lease ran out
            await until(lambda: not elected.leading, WAIT_S, off_loop=False)
            swept = faulty.calls["find_expired_leases"]
            # And when the store answers again, it leads again, for a second term
            failing.set()
            await until(lambda: elected.leading, WAIT_S, off_loop=False)
            assert elected.terms >= 2
            await until(lambda: faulty.calls["find_expired_leases"] > swept, WAIT_S)

    run(main())


def test_workers_of_apps_with_different_schedules_elect_separately(
        make_worker_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two Apps on one store that define different schedules (two services)
    shorten(monkeypatch, ttl_s=30, renew_s=0.1, follow_s=0.1)
    (first, _), (second, _) = worker(make_worker_app), worker(make_worker_app)
    for app, rule in ((first, "0 3 * * *"), (second, "0 4 * * *")):
        app.job("report")(lambda: None)
        app.schedule("nightly", "report", cron=rule)

    async def main() -> None:
        async with first.serve() as one, second.serve() as two:
            # Then each leads the maintenance of its own App
            await until(lambda: election(one).leading and election(two).leading, WAIT_S,
                        off_loop=False)
            assert election(one).name != election(two).name

    run(main())
