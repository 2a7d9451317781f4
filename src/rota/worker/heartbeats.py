"""A group's heartbeats: renew the leases of every job the group holds.

Every `heartbeat_interval` one store call renews the leases of the group's held jobs
(running, or finished with the outcome not yet written), so a handler may run far longer
than its lease. The same call tells which of them had a cancel requested: the handler is
told (an async one cancelled, a sync one sees `rota.current_job().cancel_requested`).
Between renewals, every `CANCEL_CHECK_S` while jobs run, a read (`cancel_requests`) asks
the same of the running ones, so a cancel reaches its handler within about a second
whatever the interval, without a write.

A lease the store did not renew is lost (it expired, or another worker took the job):
it is no longer renewed, and its outcome is still offered to the store, which fences
it. A job whose outcome is being written at that moment is not lost: the write ended
its lease. A failed heartbeat is retried within a second, or the interval if shorter.
Imports the core, the store contract and the worker's leaf modules.
"""

from __future__ import annotations

import asyncio
import logging

from rota.core.groups import WorkerGroupOptions
from rota.store.base import StoreError
from rota.worker.held import Held
from rota.worker.host import GroupHost

logger = logging.getLogger("rota")

# Between renewals, how often a group with running jobs asks for their cancel requests.
CANCEL_CHECK_S = 1.0


class Heartbeats:
    """Renews one group's leases (see the module docstring).

    Args:
        group: the group's name, for the log.
        options: the group's options (heartbeat interval, lease duration).
        held: the group's held jobs by id (read, never changed here).
        writing: ids of the jobs whose outcomes are being written now (the writer's).
        host: the runtime.
    """

    def __init__(self, group: str, options: WorkerGroupOptions, held: dict[int, Held],
                 writing: set[int], host: GroupHost) -> None:
        self.group = group
        self.options = options
        self.host = host
        self._held = held
        self._writing = writing

    async def run_forever(self) -> None:
        """The heartbeat task: renew every interval and, between renewals, look for cancel
        requests every `CANCEL_CHECK_S`, until cancelled."""
        interval_s = self.options.heartbeat_interval.total_seconds()
        check_s = min(CANCEL_CHECK_S, interval_s)
        clock = asyncio.get_running_loop().time
        next_beat = clock() + interval_s
        while True:
            await asyncio.sleep(max(0.0, min(check_s, next_beat - clock())))
            if clock() >= next_beat:
                next_beat = clock() + await self._beat(interval_s)
            else:
                await self._check_cancels()

    async def _beat(self, interval_s: float) -> float:
        """Renew the held leases; returns the delay until the next renewal."""
        mine = [h for h in self._held.values() if not (h.lost or h.handed_back)]
        if not mine:
            return interval_s
        host = self.host
        now = host.clock.now()
        try:
            renewed = await host.store_call(
                host.store.heartbeat, [h.job.lease for h in mine], now,
                now + self.options.lease_duration,
            )
        except StoreError as error:
            delay_s = min(interval_s, 1.0)
            logger.warning("group %s: heartbeat failed (retrying in %.2f s): %s",
                           self.group, delay_s, error)
            return delay_s
        for held in mine:
            if held.job.id in renewed.cancel_requested:
                self.deliver_cancel(held)
            if held.job.id not in renewed and not held.handed_back:
                self._lost(held)
        return interval_s

    async def _check_cancels(self) -> None:
        """Ask the store (a read) whether a running job's cancel was requested, so the
        handler hears of it within about a second, not at the next renewal."""
        running = [h for h in self._held.values() if h.running and not h.lost
                   and h.current is not None and not h.current.cancel_requested]
        if not running:
            return
        try:
            marked = await self.host.store_call(self.host.store.cancel_requests,
                                                [h.job.id for h in running])
        except StoreError:
            return  # the next renewal reports them, and says what failed
        for held in running:
            if held.job.id in marked:
                self.deliver_cancel(held)

    def _lost(self, held: Held) -> None:
        if self._held.get(held.job.id) is not held or held.job.id in self._writing:
            return  # its outcome was being written: that ended the lease
        held.lost = True
        logger.warning(
            "group %s: job %s (%s) attempt %s lost its lease (expired or taken over); it "
            "may run again elsewhere", self.group, held.job.id, held.job.name,
            held.job.attempt,
        )

    def deliver_cancel(self, held: Held) -> None:
        """The job's cancel was requested: tell its handler. An async one is cancelled;
        a sync one sees rota.current_job().cancel_requested turn True."""
        if held.current is None or held.current.cancel_requested or not held.running:
            return
        held.current.request_cancel()
        logger.warning("group %s: job %s (%s) attempt %s: cancel requested; stopping it",
                       self.group, held.job.id, held.job.name, held.job.attempt)
        handler = self.host.handlers.get(held.job.name)
        if handler is not None and handler.is_async and held.task is not None:
            held.task.cancel()
