"""`app.wait` and `app.wait_async`: the record once the job is finished, woken by the store
(not by a poll), on every store; the errors; one watcher however many wait.

Finishes come from other threads (or a real worker) while the test waits; every wait has
a generous timeout that only a hang reaches, and nothing asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import pytest

import rota
from rota.core.jobs import JobState
from rota.store.memory import MemoryStore

BOUND_S = 60.0  # only a hang reaches it


def enqueued(app: rota.App, count: int = 1) -> tuple[rota.JobDefinition[[int], int], list[int]]:
    @app.job("double")
    def double(n: int) -> int:
        return 2 * n

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), poll_interval=0.05))
    return double, double.enqueue_many([(n,) for n in range(count)])


def complete_from_a_thread(app: rota.App, job_ids: Sequence[int],
                           when: threading.Event | None = None) -> threading.Thread:
    """Claim and complete the jobs in another thread (once `when` is set)."""
    def finish() -> None:
        if when is not None:
            assert when.wait(BOUND_S)
        now = app.clock.now()
        jobs = app.store.claim(["default"], len(job_ids), now=now, owner="t",
                               lease_expires_at=now + timedelta(minutes=1))
        assert sorted(job.id for job in jobs) == sorted(job_ids)
        assert app.store.complete([job.lease for job in jobs], now, ["42"] * len(jobs))

    thread = threading.Thread(target=finish)
    thread.start()
    return thread


def watchers() -> int:
    return sum(thread.name == "rota-wait" for thread in threading.enumerate())


def test_a_finished_job_is_returned_at_once(make_app: Callable[[], rota.App]) -> None:
    app = make_app()
    _, (job_id,) = enqueued(app)
    app.run_until_idle()
    record = app.wait(job_id, timeout=0)
    assert record.state is JobState.SUCCEEDED and record.result == 0


def test_wait_returns_when_another_thread_finishes_the_job(
    make_app: Callable[[], rota.App],
) -> None:
    # Given a scheduled job and a thread that completes it once this one waits
    app = make_app()
    _, (job_id,) = enqueued(app)
    thread = complete_from_a_thread(app, [job_id])
    # When this thread waits
    record = app.wait(job_id, timeout=BOUND_S)
    thread.join()
    # Then it gets the finished record
    assert record.id == job_id and record.state is JobState.SUCCEEDED
    assert record.result == 42


def test_many_waiting_threads_share_one_watcher(make_app: Callable[[], rota.App]) -> None:
    # Given ten jobs, a thread waiting on each (two on the first)
    app = make_app()
    _, ids = enqueued(app, 10)
    results: dict[int, list[JobState]] = {job_id: [] for job_id in ids}
    waiting = threading.Barrier(12)

    def wait(job_id: int) -> None:
        waiting.wait(BOUND_S)
        results[job_id].append(app.wait(job_id, timeout=BOUND_S).state)

    threads = [threading.Thread(target=wait, args=(job_id,)) for job_id in [ids[0], *ids]]
    for thread in threads:
        thread.start()
    waiting.wait(BOUND_S)
    # When another thread completes them all at once
    complete_from_a_thread(app, ids).join()
    for thread in threads:
        thread.join()
    # Then every wait returned the finished job
    assert results == {job_id: [JobState.SUCCEEDED] * (2 if job_id == ids[0] else 1)
                       for job_id in ids}
    # And the App ran one watcher for them all
    assert watchers() == 1


def test_wait_async_returns_when_the_job_finishes(make_app: Callable[[], rota.App]) -> None:
    app = make_app()
    _, (job_id,) = enqueued(app)

    async def scenario() -> rota.JobRecord:
        go = threading.Event()
        thread = complete_from_a_thread(app, [job_id], when=go)
        waits = [asyncio.create_task(app.wait_async(job_id, timeout=BOUND_S))
                 for _ in range(3)]
        await asyncio.sleep(0)  # the waits are registered before the finish
        go.set()
        records = await asyncio.gather(*waits)
        await asyncio.to_thread(thread.join)
        assert len({record.id for record in records}) == 1
        return records[0]

    record = asyncio.run(scenario())
    assert record.state is JobState.SUCCEEDED and record.result == 42


def test_wait_times_out_naming_the_job_its_state_and_the_timeout(
    make_app: Callable[[], rota.App],
) -> None:
    # Given a job nobody runs (no worker; this App's clock is virtual: waits are real time)
    app = make_app()
    _, (job_id,) = enqueued(app)
    with pytest.raises(TimeoutError, match=rf"job {job_id} is still scheduled after the "
                                           r"timeout of 0.05 s"):
        app.wait(job_id, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"timeout of 0 s"):
        app.wait(job_id, timeout=timedelta(0))

    async def scenario() -> None:
        with pytest.raises(TimeoutError, match=rf"job {job_id} is still scheduled"):
            await app.wait_async(job_id, timeout=0.05)

    asyncio.run(scenario())


def test_wait_refuses_unknown_jobs_and_bad_arguments(make_app: Callable[[], rota.App]) -> None:
    app = make_app()
    _, (job_id,) = enqueued(app)
    with pytest.raises(ValueError, match="there is no job 999999 to wait for"):
        app.wait(999_999, timeout=1)
    with pytest.raises(ValueError, match="there is no job 0 to wait for"):
        app.wait(0)
    with pytest.raises(TypeError, match="job ids are ints"):
        app.wait("1", timeout=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be zero or more"):
        app.wait(job_id, timeout=-1)
    with pytest.raises(TypeError, match="timeout must be a timedelta or a number"):
        app.wait(job_id, timeout="5")  # type: ignore[arg-type]

    async def scenario() -> None:
        with pytest.raises(ValueError, match="there is no job 999999"):
            await app.wait_async(999_999, timeout=1)

    asyncio.run(scenario())


class ForgetfulStore(MemoryStore):
    """A memory store whose job `gone` vanishes (as a purge deletes it) once it was read:
    later reads find nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = 0
        self.read = threading.Event()

    def get_job(self, job_id: int) -> rota.JobRecord | None:
        if job_id != self.gone:
            return super().get_job(job_id)
        if self.read.is_set():
            return None
        self.read.set()
        return super().get_job(job_id)

    def job_states(self, job_ids: Sequence[int]) -> dict[int, JobState]:
        states = super().job_states(job_ids)
        if self.read.is_set():
            states.pop(self.gone, None)
        return states


def test_a_job_deleted_while_waited_for_is_a_lookup_error(
    clock: rota.VirtualClock,
) -> None:
    # Given a wait on a job
    store = ForgetfulStore()
    app = rota.App(store, clock=clock)
    try:
        _, (job_id, other) = enqueued(app, 2)
        store.gone = job_id
        failure: list[BaseException] = []

        def wait() -> None:
            try:
                app.wait(job_id, timeout=BOUND_S)
            except LookupError as error:
                failure.append(error)

        waiter = threading.Thread(target=wait)
        waiter.start()
        # When the job is gone once the wait read it, and a finish makes the App read
        # its jobs again
        finisher = complete_from_a_thread(app, [job_id, other], when=store.read)
        finisher.join()
        waiter.join()
        # Then the wait says the job was deleted
        (error,) = failure
        assert f"job {job_id} was deleted while waited for" in str(error)
    finally:
        app.close()


def test_a_real_worker_finishing_the_job_wakes_wait_async(store_url: str) -> None:
    # Given a real-time App (system clock) serving its jobs
    app = rota.App(MemoryStore() if store_url == "memory://" else store_url)
    try:
        double, (job_id,) = enqueued(app)

        async def scenario() -> rota.JobRecord:
            async with app.serve():
                return await app.wait_async(job_id, timeout=BOUND_S)

        # When the job is waited for while the worker runs, it comes back done
        record = asyncio.run(scenario())
        assert record.state is JobState.SUCCEEDED and record.result == 0
        assert double.name == record.name
    finally:
        app.close()


def test_closing_the_app_ends_its_waits(make_app: Callable[[], rota.App]) -> None:
    app = make_app()
    _, (job_id,) = enqueued(app)
    failure: list[BaseException] = []
    registered = threading.Event()

    def wait() -> None:
        registered.set()
        try:
            app.wait(job_id, timeout=BOUND_S)
        except rota.StoreError as error:
            failure.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    registered.wait(BOUND_S)
    app.close()
    waiter.join()
    assert len(failure) == 1
