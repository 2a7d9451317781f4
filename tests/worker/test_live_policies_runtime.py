"""Policies changed while a real-time worker runs: it switches at its next pass, whether
its own App set the policy or another one on the store did (found by polling the stored
versions every second), with no restart.

Real time with short timeouts; tests wait on outcomes, never sleep.
"""

from __future__ import annotations

import asyncio

import rota
from tests.worker.conftest import Outcomes


def serving_a(store_url: str, **options: object) -> tuple[rota.App, Outcomes]:
    """An App whose group serves Queue a only, with a job recording outcomes."""
    app = rota.App(store_url)

    @app.job("ping")
    async def ping() -> None:
        pass

    app.add_worker_group(rota.WorkerGroupOptions(
        name="tenants", policy=rota.Strict("a"), pool_size=2, poll_interval=0.05,
        **options))  # type: ignore[arg-type]
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    return app, outcomes


def test_a_policy_set_by_another_app_is_followed_without_a_restart(
    durable_store_url: str,
) -> None:
    # Given a worker serving Queue a, with the default heartbeat (20 s), and a job waiting
    # on b
    app, outcomes = serving_a(durable_store_url)
    console = rota.App(durable_store_url)
    app.jobs["ping"].configure(queue="b").enqueue()

    async def scenario() -> None:
        async with app.serve():
            app.jobs["ping"].configure(queue="a").enqueue()
            await outcomes.count(1)
            # When another App (as the CLI would) stores a policy that serves b too
            await asyncio.to_thread(console.set_group_policy, "tenants",
                                    rota.Weighted([("a", 1), ("b", 1)]))
            # Then the running worker takes b's job within about a second (the poll), long
            # before its next heartbeat
            await outcomes.until(lambda events: "b" in [e.queue for e in events],
                                 timeout_s=5)
            assert app.group_policy("tenants") == rota.Weighted([("a", 1), ("b", 1)])

    try:
        asyncio.run(scenario())
    finally:
        console.close()
        app.close()
    assert outcomes.queues() == ["a", "b"]


def test_a_policy_set_by_the_running_app_applies_at_its_next_pass(
    durable_store_url: str,
) -> None:
    # Given a worker whose poll of the stored policies is a second away at most
    app, outcomes = serving_a(durable_store_url)

    async def scenario() -> None:
        async with app.serve():
            app.jobs["ping"].configure(queue="a").enqueue()
            await outcomes.count(1)
            # When its own App switches it to b, and a job waits on b
            app.set_group_policy("tenants", rota.Strict("b"))
            app.jobs["ping"].configure(queue="b").enqueue()
            # Then the job runs long before the poll would have found the change
            await outcomes.count(2, timeout_s=5)
            # And a clear goes back to the code's policy as fast
            app.set_group_policy("tenants", None)
            app.jobs["ping"].configure(queue="a").enqueue()
            await outcomes.count(3, timeout_s=5)

    try:
        asyncio.run(scenario())
    finally:
        app.close()
    assert outcomes.queues() == ["a", "b", "a"]
