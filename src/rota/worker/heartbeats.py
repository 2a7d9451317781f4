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
its lease. Two attempts of one job held together (attempt N, whose lease was taken over,
beside attempt N+1): only the newer one can be renewed.

Each renewal try has a deadline (rota.worker.deadlines), and each held attempt knows
when its lease ends as last sent (`Held.lease_end`). A failed renewal is tried again
soon, on a fresh connection, and while it fails (`failing`) the group claims nothing;
the first renewal that answers ends that (with nothing left to renew, a renewal of no
lease). The **lease watch** treats a lease whose end comes, less the lapse margin,
without a renewal as lost (`lapsed`), whatever the heartbeat task is waiting for: the
handler is told (a sync one sees `cancel_requested`, an async one is cancelled) and its
outcome is never written; the job comes back through the lease sweeper, attempt
charged. A finished attempt whose outcome waits to be written keeps it: the store
fences it if the lease was taken. Failures are logged by the runtime's store health,
once per incident. Imports the core, the store contract and the worker's leaf modules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta

from rota.core.groups import WorkerGroupOptions
from rota.core.plurals import counted
from rota.store.base import StoreError
from rota.worker.deadlines import CallKind, GroupDeadlines
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
        held: the group's held attempts by (job id, attempt); a lapsed suspect that was
            waiting is dropped from it, nothing else is.
        writing: keys of the attempts whose outcomes are being written now (the writer's).
        host: the runtime.
        wake: wakes the group (a renewal answered after failing: it may claim again).
        deadlines: the group's store-call deadlines.
    """

    def __init__(self, group: str, options: WorkerGroupOptions,
                 held: dict[tuple[int, int], Held], writing: set[tuple[int, int]],
                 host: GroupHost, wake: Callable[[], None],
                 deadlines: GroupDeadlines) -> None:
        self.group = group
        self.options = options
        self.host = host
        self.deadlines = deadlines
        self._held = held
        self._writing = writing
        self._wake = wake
        self._renewals = CallKind(f"group {group}: lease renewal", deadlines.renewal_s,
                                  retried=True)
        self._no_renewal = CallKind(self._renewals.what, deadlines.renewal_s, retried=True,
                                    reaches_store=False)
        self._cancel_reads = CallKind(f"group {group}: cancel check", deadlines.renewal_s)
        # Loop thread. True from a failed renewal until one answers: the group claims
        # nothing meanwhile.
        self.failing = False

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
                # The next renewal falls due one interval after this one was sent (the
                # deadlines count from there); a failed one is tried again soon.
                began = clock()
                if await self._beat():
                    next_beat = began + interval_s
                else:
                    next_beat = clock() + self.deadlines.renewal_retry_s
            else:
                await self._check_cancels()

    async def _beat(self) -> bool:
        """Renew the held leases; returns whether the store answered (or nothing was to
        be renewed)."""
        mine = [h for h in self._held.values() if not (h.lost or h.handed_back)]
        if not mine and not self.failing:
            return True
        host = self.host
        now = host.clock.now()
        lease_end = now + self.options.lease_duration
        try:
            renewed = await host.call_store(
                self._renewals if mine else self._no_renewal, host.store.heartbeat,
                [h.job.lease for h in mine], now, lease_end,
            )
        except StoreError as error:
            self.failing = True
            logger.debug("group %s: renewing %s failed (retrying in %.2f s): %s",
                         self.group, counted(len(mine), "lease"),
                         self.deadlines.renewal_retry_s, error)
            return False
        if self.failing:
            self.failing = False
            self._wake()
        newest: dict[int, int] = {}
        for held in mine:
            job = held.job
            if newest.get(job.id, 0) < job.attempt:
                newest[job.id] = job.attempt
        for held in mine:
            if held.lost:  # lapsed while the renewal was on its way: it stays lost
                continue
            job = held.job
            if job.id in renewed.cancel_requested:
                self.deliver_cancel(held)
            if job.id in renewed and newest[job.id] == job.attempt:
                held.lease_end = lease_end
            elif not held.handed_back:
                self._lost(held)
        return True

    async def watch_leases(self) -> None:
        """The lease watch: a lease whose end (less the margin) comes without a renewal is
        lost (see the module docstring). Wakes for the earliest end, or every
        `CANCEL_CHECK_S` (a new attempt's lease never ends before those already held)."""
        margin = timedelta(seconds=self.deadlines.margin_s)
        check_s = min(CANCEL_CHECK_S, self.options.heartbeat_interval.total_seconds())
        clock = self.host.clock
        while True:
            now = clock.now()
            earliest = None
            lapsing: list[Held] = []
            for held in self._held.values():
                if held.lost or held.handed_back:
                    continue
                due = held.lease_end - margin
                if due <= now:
                    if held.key not in self._writing:  # a write ends the lease anyway
                        lapsing.append(held)
                elif earliest is None or due < earliest:
                    earliest = due
            if lapsing:
                self._lapse(lapsing)
            wait_s = check_s if earliest is None else min(
                check_s, (earliest - now).total_seconds())
            await asyncio.sleep(max(wait_s, 0.001))

    def _lapse(self, lapsing: list[Held]) -> None:
        """These leases came to their end unrenewed: treat them as lost."""
        for held in lapsing:
            held.lost = True
            if held.waiting:  # a suspect not started: it never will here
                held.handed_back = True
                del self._held[held.key]
                self.host.forget_suspect([held])
                self._wake()
            elif held.running:
                held.lapsed = True
                self._tell_to_stop(held)
        shown = ", ".join(f"job {h.job.id} ({h.job.name}) attempt {h.job.attempt}"
                          for h in lapsing[:5])
        more = f" and {len(lapsing) - 5} more" if len(lapsing) > 5 else ""
        logger.warning(
            "group %s: %s not renewed in time (%s%s): the store did not answer; a handler "
            "still running is told to stop and its outcome is not written; the job runs "
            "again once the lease expires", self.group,
            counted(len(lapsing), "lease was", "leases were"), shown, more)

    async def _check_cancels(self) -> None:
        """Ask the store (a read) whether a running job's cancel was requested, so the
        handler hears of it within about a second, not at the next renewal."""
        running = [h for h in self._held.values() if h.running and not h.lost
                   and h.current is not None and not h.current.cancel_requested]
        if not running:
            return
        try:
            marked = await self.host.call_store(self._cancel_reads,
                                                self.host.store.cancel_requests,
                                                [h.job.id for h in running])
        except StoreError:
            return  # the next renewal reports them, and says what failed
        for held in running:
            if held.job.id in marked:
                self.deliver_cancel(held)

    def _lost(self, held: Held) -> None:
        if self._held.get(held.key) is not held or held.key in self._writing:
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
        logger.warning("group %s: job %s (%s) attempt %s: cancel requested; stopping it",
                       self.group, held.job.id, held.job.name, held.job.attempt)
        self._tell_to_stop(held)

    def _tell_to_stop(self, held: Held) -> None:
        """An async handler is cancelled; a sync one sees `cancel_requested` turn True."""
        if held.current is None or held.current.cancel_requested:
            return
        held.current.request_cancel(lease_lost=held.lapsed)
        handler = self.host.handlers.get(held.job.name)
        if handler is not None and handler.is_async and held.task is not None:
            held.task.cancel()
