"""Queue families under a real-time worker: a job enqueued by another App into a Queue no
one listed, but that a family of the policy holds, runs at once (the wake-up hint names
its Queue: it joins the group's Queues), and one that becomes due by the clock is found by
the group's survey of the store within a poll interval.

Real time with short timeouts; tests wait on outcomes, never sleep.
"""

from __future__ import annotations

import asyncio

import rota
from tests.worker.conftest import Outcomes


def serving_tenants(store_url: str, poll_interval: float) -> tuple[rota.App, Outcomes]:
    app = rota.App(store_url)

    @app.job("ping")
    async def ping() -> None:
        pass

    app.add_worker_group(rota.WorkerGroupOptions(
        name="tenants", policy=rota.Weighted([("tenant-vip", 3), ("tenant-*", 1)]),
        pool_size=2, poll_interval=poll_interval))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    return app, outcomes


def test_a_new_member_enqueued_by_another_app_runs_without_waiting_for_a_poll(
    durable_store_url: str,
) -> None:
    # Given a worker whose survey of the store runs once a minute
    app, outcomes = serving_tenants(durable_store_url, poll_interval=60)
    console = rota.App(durable_store_url)
    ping = console.job("ping")(lambda: None)

    async def scenario() -> None:
        async with app.serve():
            ping.configure(queue="tenant-vip").enqueue()
            await outcomes.count(1)
            # When another App enqueues into a tenant Queue no one named
            await asyncio.to_thread(ping.configure(queue="tenant-new").enqueue)
            # Then the worker runs it long before its next survey
            await outcomes.count(2, timeout_s=10)

    try:
        asyncio.run(scenario())
    finally:
        console.close()
        app.close()
    assert outcomes.queues() == ["tenant-vip", "tenant-new"]


def test_a_member_due_later_is_found_by_the_survey(durable_store_url: str) -> None:
    app, outcomes = serving_tenants(durable_store_url, poll_interval=0.05)
    console = rota.App(durable_store_url)
    ping = console.job("ping")(lambda: None)
    ping.configure(queue="tenant-later", delay=0.3).enqueue()  # no hint when it is due

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(1, timeout_s=10)

    try:
        asyncio.run(scenario())
    finally:
        console.close()
        app.close()
    assert outcomes.queues() == ["tenant-later"]
