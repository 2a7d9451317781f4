"""The lease sweeper duty: expired leases back to their Queues, or to the dead letters.

A worker that dies (crash, SIGKILL, a machine lost) leaves its jobs leased until the
leases expire. The App's elected maintenance worker sweeps (rota.worker.leadership; every
worker process when the store has no leader leases): every heartbeat interval (the
shortest of its groups') one store round trip finds expired leases and, for each, charges the lost
attempt (`last_error` = `LeaseExpired: ...`, which makes the job a suspect when it is
next claimed, rota.core.suspects) and returns the job to its Queue after its backoff, or
dead-letters it once `max_attempts` is used up. The store fences each expiry, so
concurrent sweepers apply it exactly once. A sweep that returned jobs wakes this
process's groups at once.

A `StoreError` is retried with backoff (50 ms doubling, at most the interval), logged at
DEBUG: the runtime's store health logs the incident once (rota.worker.store_health); the
runtime bounds each sweep with a deadline (rota.worker.deadlines), and an answer after
failures tells it the store answers again. Anything else goes to the supervisor, which
starts the duty again. Crash
recovery is not optional, so the runtime starts this duty itself, beside the ones the
App gives it (while its election, if it has one, says this worker leads).
`run_until_idle()` sweeps inline instead, before each round.
Imports the core, the store contract and the worker's duty protocol.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rota.core.clock import Clock
from rota.core.jobs import JobRecord
from rota.core.retry import RetryPolicy
from rota.store.base import Store, StoreError
from rota.worker.backoff import Backoff
from rota.worker.duty import DutyRuntime
from rota.worker.group import sweep_expired_leases

logger = logging.getLogger("rota")

StoreCall = Callable[..., Awaitable[Any]]
Sleep = Callable[[float], Awaitable[None]]


class LeaseSweeper:
    """Sweeps a store's expired leases on the cadence of the runtime's heartbeats.

    Args:
        store: where the jobs live.
        clock: where "now" comes from (a lease expired when its expiry is before now).
        retry_for: the RetryPolicy of an expired lease's job.
    """

    def __init__(self, store: Store, clock: Clock,
                 retry_for: Callable[[JobRecord], RetryPolicy]) -> None:
        self.store = store
        self.clock = clock
        self.retry_for = retry_for
        self.swept = 0  # expiries applied by this sweeper; owned by the task running it

    async def __call__(self, runtime: DutyRuntime) -> None:
        """Run as a duty of `runtime` until cancelled."""
        interval_s = min(g.options.heartbeat_interval.total_seconds() for g in runtime.groups)

        def wake_groups() -> None:
            for group in runtime.groups:
                group.wake()

        await self.run_forever(runtime.store_call, interval_s, wake_groups)

    async def run_forever(
        self, call: StoreCall, interval_s: float, on_swept: Callable[[], None],
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """Sweep at once, then every `interval_s`, until cancelled.

        Args:
            call: runs a blocking store call off the event loop: `await call(fn, *args)`.
            interval_s: seconds between two sweeps.
            on_swept: called after a sweep that returned jobs (the runtime wakes its
                groups, so the returned jobs are claimed at once).
            sleep: waits a number of seconds.
        """
        backoff = Backoff()
        while True:
            try:
                swept = await self.sweep(call)
            except StoreError as error:
                delay_s = backoff.next_delay_s()
                logger.debug("lease sweep failed (retrying in %.2f s): %s", delay_s, error)
                await sleep(min(delay_s, interval_s))
                continue
            backoff.reset()
            if swept:
                on_swept()
            await sleep(interval_s)

    async def sweep(self, call: StoreCall) -> int:
        """One sweep at the clock's now; returns the expiries applied. Store errors
        propagate."""
        swept: int = await call(sweep_expired_leases, self.store, self.clock.now(),
                                self.retry_for)
        self.swept += swept
        return swept
