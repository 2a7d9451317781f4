"""A job whose start fails between its claim and its handler (worker/loop.py's dispatch):
the Worker's slot is not lost, the other jobs of the batch still start, and the job itself
is handed back to its Queue (its attempt not counted), to run again on a later pass.

The failure is injected the way a real one would come: an asyncio task factory (an
instrumentation library's, say) that raises for one job's task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import rota
from tests.worker.conftest import Outcomes

MakeApp = Callable[..., rota.App]


def _fail_first_job_task(loop: asyncio.AbstractEventLoop) -> list[str]:
    """Install a task factory that raises for the first job task (the group's `_run_job`)
    and creates every other task as usual. Returns the list it notes each failure in."""
    failures: list[str] = []

    def factory(loop: asyncio.AbstractEventLoop,
                coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Task[Any]:
        name = getattr(coro, "__qualname__", "")
        if "_run_job" in name and not failures:
            failures.append(name)
            coro.close()
            raise RuntimeError("injected: a task factory failed")
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return failures


def test_a_job_that_fails_to_start_loses_no_worker_and_goes_back_to_its_queue(
    make_worker_app: MakeApp,
) -> None:
    # Given a group of one Worker and three jobs, the first of which cannot start
    app = make_worker_app()

    @app.job("note")
    async def note(n: int) -> None:
        pass

    ids = [note.enqueue(n) for n in range(3)]
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=1, poll_interval=0.05))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> list[str]:
        failures = _fail_first_job_task(asyncio.get_running_loop())
        async with app.serve():
            # When the Worker serves the backlog
            await outcomes.count(3)
        return failures

    failures = asyncio.run(scenario())
    # Then the one Worker went on serving (its slot was not lost to the failed start),
    # every job ran once and succeeded, and the one that failed to start was handed back
    # with its attempt not counted: it ran as attempt 1
    assert failures
    assert sorted(e.job_id for e in outcomes.events) == ids
    assert {(e.kind, e.attempt) for e in outcomes.events} == {(rota.OutcomeKind.SUCCEEDED, 1)}


def test_the_other_jobs_of_the_batch_start_from_the_same_pass(
    make_worker_app: MakeApp,
) -> None:
    # Given a group of three Workers claiming three jobs in one pass, the first of which
    # cannot start
    app = make_worker_app()
    started: list[int] = []

    @app.job("note")
    async def note(n: int) -> None:
        started.append(n)

    for n in range(3):
        note.enqueue(n)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=3, poll_interval=0.05))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        _fail_first_job_task(asyncio.get_running_loop())
        async with app.serve():
            await outcomes.count(3)

    asyncio.run(scenario())
    # Then the two others started from that pass, and the first one only later, from the
    # pass that claimed it again after it was handed back
    assert sorted(started[:2]) == [1, 2]
    assert started[2] == 0
