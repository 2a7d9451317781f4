"""The registry duty: this worker process's row in the store's worker registry.

Theory of operation: `RegistryDuty` runs beside the groups (a `Duty`, one per runtime).
It registers the process first thing (id `host:pid:token`, host, pid, rota version,
start time, each group's policy in its code, pool size and lease owner: a stored
policy overrides it for every reader, rota.core.serving), refreshes the row as soon as
the groups have jobs in flight and again at their first outcomes written (so a new worker
does not read "0 in flight, served 0" for a whole interval), then every heartbeat
interval (the shortest of its groups'): liveness (`dead_at` = now + 2.5 intervals,
`rota.core.workers.dead_after`), jobs in flight per group, its served counters and its
clock's offset to the store's, measured again before each write (`StoreClock.measure`, on
the store's thread). The counters are
counted by the groups' outcome writers (`GroupLoop.served`, one dict increment per job on
the loop thread); the refresh sends the totals and, for the per-minute history, what was
served since the refresh before. One store call per interval per process, never per job.

Every `PRUNE_EVERY` refreshes (and at registration) it also removes rows of workers dead
for more than `REMOVE_DEAD_AFTER` and history older than `SERVED_HISTORY`: any worker
cleans up after the dead ones. At a graceful stop (`at_stop`, after the groups wrote their
last outcomes) it sends a last refresh, so the history holds every served job, and
removes its row. A killed process leaves its row, which turns dead at `dead_at`.

State lives on the object (the supervisor may restart `__call__`). Imports the core, the
store contract, the duty protocol and `rota.version`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta
from typing import Any

from rota.core.workers import (
    REMOVE_DEAD_AFTER,
    SERVED_HISTORY,
    ServedCount,
    WorkerGroupInfo,
    WorkerInfo,
    dead_after,
)
from rota.store.base import Store, StoreError
from rota.store.clock import StoreClock
from rota.version import __version__
from rota.worker.duty import DutyRuntime
from rota.worker.group import new_worker_id

logger = logging.getLogger("rota")

# Clean up dead rows and old history every this many refreshes (~10 min at 20 s).
PRUNE_EVERY = 30
# How long a failed registry call waits before it tries again, at most.
RETRY_CAP_S = 5.0
# Until it reported outcomes, how often the duty looks (in memory) for new work to report.
FIRST_REPORT_CHECK_S = 0.25


class RegistryDuty:
    """Registers the worker process and refreshes its row (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.worker_id = new_worker_id()
        self._started_at: datetime | None = None
        self._registered = False
        # The call in flight (register or refresh), shielded from the duty's cancellation
        # so that at_stop can wait for it instead of racing it.
        self._pending: asyncio.Future[Any] | None = None
        # The totals a refresh in flight sends: the store has seen them once it succeeded,
        # even when the duty was cancelled before it could note so (`_settle_pending`).
        self._sending: dict[tuple[str, str, str], int] | None = None
        self._sent: dict[tuple[str, str, str], int] = {}  # totals the store has seen
        self._refreshes = 0
        self._reported: tuple[bool, bool] = (False, False)  # (jobs in flight, outcomes)
        self._failing = False
        self._clock_offset = timedelta(0)

    # -- what the row says ------------------------------------------------------------------

    @staticmethod
    def _interval_s(runtime: DutyRuntime) -> float:
        return min(group.options.heartbeat_interval.total_seconds() for group in runtime.groups)

    def _dead_after(self, runtime: DutyRuntime) -> timedelta:
        return dead_after(timedelta(seconds=self._interval_s(runtime)))

    @staticmethod
    def _work(runtime: DutyRuntime) -> tuple[bool, bool]:
        """(any jobs in flight, any outcomes written): what the first reports follow."""
        return (any(group.in_flight for group in runtime.groups),
                any(group.served for group in runtime.groups))

    @staticmethod
    def _totals(runtime: DutyRuntime) -> dict[tuple[str, str, str], int]:
        return {
            (group.name, queue, outcome): count
            for group in runtime.groups
            for (queue, outcome), count in group.served.items()
        }

    def _info(self, runtime: DutyRuntime, now: datetime) -> WorkerInfo:
        if self._started_at is None:
            self._started_at = now
        host, pid, _ = self.worker_id.rsplit(":", 2)
        totals = self._totals(runtime)
        return WorkerInfo(
            id=self.worker_id, host=host, pid=int(pid), version=__version__,
            started_at=self._started_at, last_seen=now, dead_at=now + self._dead_after(runtime),
            groups=tuple(
                WorkerGroupInfo(
                    # The code's: a stored policy overrides it for every reader
                    # (rota.core.serving), also after it is cleared.
                    name=group.name, policy=group.options.policy,
                    pool_size=group.options.pool_size, in_flight=group.in_flight,
                    owner=group.runner.owner,
                )
                for group in runtime.groups
            ),
            served=tuple(ServedCount(g, q, o, n) for (g, q, o), n in totals.items()),
            clock_offset=self._clock_offset,
        )

    # -- store calls ------------------------------------------------------------------------

    async def _call(self, runtime: DutyRuntime, call: Any, *args: Any, **kwargs: Any) -> Any:
        future = asyncio.ensure_future(runtime.store_call(call, *args, **kwargs))
        self._pending = future
        try:
            return await asyncio.shield(future)
        finally:
            if future.done():
                self._pending = None

    async def _measure_clock(self, runtime: DutyRuntime) -> None:
        clock = runtime.clock
        if isinstance(clock, StoreClock):
            await runtime.store_call(clock.measure)
            self._clock_offset = clock.offset

    async def _register(self, runtime: DutyRuntime) -> None:
        await self._measure_clock(runtime)
        now = runtime.clock.now()
        info = self._info(runtime, now)
        await self._call(runtime, self.store.register_worker, info, now)
        self._registered = True  # `_sent` stays: the next refresh adds the rest to history
        logger.debug("registered as worker %s", self.worker_id)
        await self._clean_up(runtime, now)

    async def _refresh(self, runtime: DutyRuntime) -> None:
        await self._measure_clock(runtime)
        now = runtime.clock.now()
        totals = self._totals(runtime)
        new = [
            ServedCount(group, queue, outcome, count - self._sent.get((group, queue, outcome), 0))
            for (group, queue, outcome), count in totals.items()
            if count != self._sent.get((group, queue, outcome), 0)
        ]
        self._sending = totals
        try:
            refreshed = await self._call(
                runtime, self.store.refresh_worker, self.worker_id, now,
                dead_at=now + self._dead_after(runtime),
                in_flight={group.name: group.in_flight for group in runtime.groups},
                served=[ServedCount(g, q, o, n) for (g, q, o), n in totals.items()],
                new=new, clock_offset=self._clock_offset,
            )
        finally:
            if self._pending is None:  # it ended (a cancellation leaves it in flight)
                self._sending = None
        if not refreshed:
            # Removed as dead meanwhile (this process was cut off for long): register
            # again; what was served meanwhile goes into the history now.
            logger.warning("worker %s: its registry row was gone (removed as dead); "
                           "registering again", self.worker_id)
            self._registered = False
            return
        self._sent = totals
        self._refreshes += 1
        if self._refreshes % PRUNE_EVERY == 0:
            await self._clean_up(runtime, now)

    async def _settle_pending(self) -> None:
        """Wait for the call a cancelled run of the duty left in flight, if any; a refresh
        that succeeded counts as sent, so its counts are not added to the history twice.
        Raises what the call raised."""
        pending, sending = self._pending, self._sending
        if pending is None:
            return
        try:
            result = await asyncio.shield(pending)
        finally:
            self._pending = self._sending = None
        if sending is not None and result:
            self._sent = sending

    async def _clean_up(self, runtime: DutyRuntime, now: datetime) -> None:
        await self._call(runtime, self.store.remove_dead_workers, now - REMOVE_DEAD_AFTER)
        await self._call(runtime, self.store.prune_served, now - SERVED_HISTORY)

    # -- the duty ---------------------------------------------------------------------------

    async def _wait(self, runtime: DutyRuntime, delay_s: float) -> None:
        """Sleep `delay_s`; until outcomes were reported, end early once there is news (the
        first jobs in flight, the first outcomes)."""
        if self._reported[1] or not self._registered:
            await asyncio.sleep(delay_s)
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + delay_s
        while loop.time() < until:
            now_in_flight, now_served = self._work(runtime)
            if (now_in_flight and not self._reported[0]) or now_served:
                return
            await asyncio.sleep(min(FIRST_REPORT_CHECK_S, until - loop.time()))

    async def __call__(self, runtime: DutyRuntime) -> None:
        interval_s = self._interval_s(runtime)
        delay_s = 0.0
        while True:
            if delay_s:
                await self._wait(runtime, delay_s)
            try:
                await self._settle_pending()  # restarted while a call was in flight
                work = self._work(runtime)
                if self._registered:
                    await self._refresh(runtime)
                else:
                    await self._register(runtime)
                self._reported = (self._reported[0] or work[0], self._reported[1] or work[1])
            except StoreError as error:
                if not self._failing:
                    logger.warning("worker registry: writing this worker's row failed "
                                   "(retrying): %s", error)
                self._failing = True
                delay_s = min(interval_s, RETRY_CAP_S)
                continue
            if self._failing:
                logger.info("worker registry: writing this worker's row works again")
            self._failing = False
            delay_s = interval_s

    async def at_stop(self, runtime: DutyRuntime) -> None:
        """Graceful stop (after the groups wrote their outcomes): a last refresh so the
        history holds every served job, then the row is removed."""
        with contextlib.suppress(Exception):  # its failure is handled below
            await self._settle_pending()
        try:
            if not self._registered:
                await self._register(runtime)  # a short life still leaves its history
            await self._refresh(runtime)
            await self._call(runtime, self.store.unregister_worker, self.worker_id)
            self._registered = False
        except StoreError as error:
            logger.warning("worker registry: could not remove this worker's row (%s); it "
                           "shows as dead, then goes", error)
