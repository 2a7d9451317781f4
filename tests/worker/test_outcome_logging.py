"""What a worker logs when it writes outcomes: one wording for a recorded job and one for
an outcome whose lease was lost, whichever path wrote it (the outcome writer, a claim
carrying the outcomes, `run_until_idle`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest

import rota
from rota.core.jobs import Lease
from rota.store import open_store
from rota.store.base import Claimed, LeaseOutcome, Store


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if text in record.getMessage()]


def test_run_until_idle_and_a_worker_log_each_recorded_job_in_one_wording(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an App with 30 jobs, 10 run by run_until_idle and 20 by a serving worker
    app = rota.App(store_url)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, poll_interval=0.05))
    done = threading.Event()
    ran: list[int] = []

    @app.job("work")
    async def work(n: int) -> None:
        ran.append(n)
        if len(ran) == 30:
            done.set()

    first = [work.enqueue(n) for n in range(10)]

    async def serve() -> None:
        async with app.serve():
            await asyncio.to_thread(done.wait, 10)

    try:
        with caplog.at_level(logging.DEBUG, logger="rota"):
            # When run_until_idle runs the first 10 and a worker the other 20
            assert app.run_until_idle() == 10
            later = [work.enqueue(n) for n in range(10, 30)]
            asyncio.run(serve())
        # Then every job was logged once as recorded, in the same words
        expected = {f"group g: job {job_id} (work) attempt 1 recorded: succeeded"
                    for job_id in first + later}
        recorded = messages(caplog, "recorded")
        assert sorted(recorded) == sorted(expected)
    finally:
        app.close()


class LosesTheFirstLease:
    """Delegates to a real store, but hands the first finished job back to its Queue just
    before its outcome is written (as a lease sweep would), so that outcome is fenced off,
    whether the outcome writer or a claim carries it."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.lost = False
        self.rerun_written = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _lose_once(self, leases: Sequence[Lease], now: datetime) -> None:
        if leases and not self.lost:
            self.lost = True
            self.inner.release(list(leases), now)

    def complete(self, leases: Sequence[Lease], now: datetime,
                 results: Sequence[str | None] | None = None) -> int:
        self._lose_once(leases, now)
        applied = self.inner.complete(leases, now, results)
        if applied:
            self.rerun_written.set()
        return applied

    def claim(self, queues: Sequence[str], limit: int, *, now: datetime,
              outcomes: Sequence[LeaseOutcome] = (), **kwargs: Any) -> Claimed:
        self._lose_once([lease for lease, _ in outcomes], now)
        jobs = self.inner.claim(queues, limit, now=now, outcomes=outcomes, **kwargs)
        if outcomes and jobs.applied:
            self.rerun_written.set()
        return jobs


def test_an_outcome_whose_lease_was_lost_is_warned_of_in_one_wording(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a worker whose first outcome finds its lease lost when it is written
    store = LosesTheFirstLease(open_store(store_url))
    app = rota.App(store)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=1, poll_interval=0.05))

    @app.job("work")
    async def work() -> None:
        pass

    job_id = work.enqueue()

    async def serve() -> None:
        async with app.serve():
            await asyncio.to_thread(store.rerun_written.wait, 10)

    try:
        with caplog.at_level(logging.WARNING, logger="rota"):
            # When the job runs, its outcome is fenced off, and it runs again
            asyncio.run(serve())
        # Then one warning names the job and says it runs again
        assert store.rerun_written.is_set()
        assert messages(caplog, "lost the lease") == [
            f"group g: job {job_id} (work) attempt 1 lost the lease before the outcome was "
            "recorded (it expired or was taken over); such an outcome is ignored and its "
            "job runs again"]
    finally:
        app.close()
