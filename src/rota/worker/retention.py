"""The retention duty: delete finished jobs older than the App's `rota.Retention`.

Theory of operation: every `Retention.interval` the App's elected maintenance worker
(rota.worker.leadership) runs one *sweep*: for
each rule of `Retention.rules(now)` (succeeded/cancelled, then dead_lettered/quarantined)
it calls the store's `purge` again and again, at most `PURGE_BATCH` rows a call, until a
call deletes fewer than that. Between two calls it pauses (`batch_pause_s`): at least
`MIN_PAUSE_S`, and at least `PAUSE_FACTOR` times as long as the call took, so deletion
takes at most a fifth of the store's time from this worker and a backlog of millions of
finished rows is worked off over minutes while claims go on (SQLite's single write lock is
held for one batch at a time; PostgreSQL's batches take their rows with SKIP LOCKED).
Several workers may sweep at once (two Apps' leaders, a hand-over): the store makes that
safe.

A failing sweep never ends the duty: the first failure of a run is logged at ERROR with
its traceback, later ones as one-line warnings, and the next try backs off (doubling from
`FIRST_RETRY_S` up to `max(interval, RETRY_CAP_S)`); a success logs the recovery.

`purge_finished` is the same batching for `App.purge` and `rota purge`, on demand.

Imports the core, the store contract and the duty protocol (rota.worker.duty).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from rota.core.clock import Clock
from rota.core.jobs import JobState
from rota.core.plurals import counted
from rota.core.retention import PurgeRule, Retention
from rota.store.base import Store
from rota.worker.duty import DutyRuntime

logger = logging.getLogger("rota")

T = TypeVar("T")

# Rows deleted by one store call (one statement, or one short transaction on SQLite).
PURGE_BATCH = 1000
# The pause between two batches: at least this long, and PAUSE_FACTOR x the batch's time.
MIN_PAUSE_S = 0.05
PAUSE_FACTOR = 4.0
# Backoff after a failed sweep.
FIRST_RETRY_S = 1.0
RETRY_CAP_S = 300.0

StoreCall = Callable[..., Awaitable[Any]]
Pause = Callable[[float], Awaitable[None]]


def batch_pause_s(batch_s: float) -> float:
    """How long to wait after a purge call that took `batch_s` seconds."""
    return max(MIN_PAUSE_S, PAUSE_FACTOR * batch_s)


class RetentionDuty:
    """Deletes a store's expired finished jobs on the cadence of a `Retention`.

    Args:
        retention: what to keep, and how often to look.
        store: where the jobs live.
        clock: where "now" comes from (the cutoffs are `now` minus the durations).
        batch_size: rows per purge call (default `PURGE_BATCH`).
    """

    def __init__(
        self, retention: Retention, store: Store, clock: Clock, *,
        batch_size: int = PURGE_BATCH,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1; got {batch_size}")
        self.retention = retention
        self.store = store
        self.clock = clock
        self.batch_size = batch_size
        self.failures = 0  # failed sweeps in a row; owned by the task running the duty

    async def __call__(self, runtime: DutyRuntime) -> None:
        """Run as a duty of `runtime` (see `Runtime(duties=...)`) until it stops."""
        await self.run_forever(
            runtime.store_call, runtime.sleep_unless_stopping, lambda: runtime.stopping
        )

    async def run_forever(
        self, call: StoreCall, pause: Pause, stopping: Callable[[], bool]
    ) -> None:
        """Sweep at once, then every `retention.interval`, until `stopping()`.

        Args:
            call: runs a blocking store call off the event loop: `await call(fn, *args)`.
            pause: waits a number of seconds (returning early at shutdown is fine).
            stopping: True once the worker is shutting down.
        """
        interval_s = self.retention.interval.total_seconds()
        while not stopping():
            delay_s = interval_s
            try:
                await self.sweep(call, pause, stopping)
            except Exception:
                self.failures += 1
                delay_s = min(FIRST_RETRY_S * 2 ** (self.failures - 1),
                              max(interval_s, RETRY_CAP_S))
                if self.failures == 1:
                    logger.exception("retention: deleting finished jobs failed; retrying in "
                                     "%.1f s (later failures are logged in one line)",
                                     delay_s)
                else:
                    logger.warning("retention: deleting finished jobs failed again (%d in a "
                                   "row); retrying in %.1f s", self.failures, delay_s,
                                   exc_info=False)
            else:
                if self.failures:
                    logger.warning("retention: deleting finished jobs works again after %s",
                                   counted(self.failures, "failed sweep"))
                self.failures = 0
            await pause(delay_s)

    async def sweep(
        self, call: StoreCall, pause: Pause, stopping: Callable[[], bool] = lambda: False
    ) -> int:
        """Delete every job expired at the clock's `now`, batch after batch, pausing
        between batches. Returns the number deleted. Store errors propagate."""
        total = 0
        for rule in self.retention.rules(self.clock.now()):
            total += await self._apply(rule, call, pause, stopping)
        if total:
            logger.info("retention: deleted %s", counted(total, "finished job"))
        return total

    async def _apply(
        self, rule: PurgeRule, call: StoreCall, pause: Pause, stopping: Callable[[], bool]
    ) -> int:
        total = 0
        while not stopping():
            started = time.monotonic()
            deleted: int = await call(
                self.store.purge, rule.states, rule.finished_before, self.batch_size
            )
            total += deleted
            if deleted < self.batch_size:
                break
            await pause(batch_pause_s(time.monotonic() - started))
        return total


def purge_finished(
    store: Store,
    states: Sequence[JobState],
    finished_before: datetime,
    *,
    batch_size: int = PURGE_BATCH,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Delete every job in `states` (finished states) that finished before
    `finished_before`, in batches of `batch_size` with the duty's pauses between them.
    Blocking; for `App.purge` and `rota purge`. Returns the number deleted."""
    total = 0
    while True:
        started = time.monotonic()
        deleted = store.purge(states, finished_before, batch_size)
        total += deleted
        if deleted < batch_size:
            return total
        sleep(batch_pause_s(time.monotonic() - started))
