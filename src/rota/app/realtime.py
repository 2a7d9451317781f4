"""The real-time drive behind `App.serve` and `App.run`: a `Runtime` and its duties.

`build_runtime` makes the runtime for the started groups with the duties a worker runs
beside them: the leader election (rota.worker.leadership) and, while this worker leads,
the store's maintenance: the lease sweeper (the runtime's own), retention (unless the App
keeps everything), the SQLite WAL checkpoint (for a store that keeps a WAL) and the
schedule duty (when the App has schedules); then, in every worker, the worker registry,
the stored group policies and the warning about Queues with due jobs that no live worker
serves (rota.worker.unserved). `run_until_signal` is `App.run`: serve
until SIGINT/SIGTERM, stop gracefully on the first signal, exit at once on the second.

`run_until_idle()` runs none of these duties: retention deletes by the clock, and that
deterministic drive must not delete the records a test is about to read after advancing
a VirtualClock; `app.purge(...)` deletes on demand.
Imports the core, the store contract, the worker and the App's schedules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping, Sequence

from rota.app.schedules import AppSchedules
from rota.core.clock import Clock
from rota.core.durations import Duration, to_timedelta
from rota.core.jobs import JobRecord
from rota.core.retention import Retention
from rota.core.retry import RetryPolicy
from rota.store.base import Store
from rota.worker.checkpoint import wal_checkpoint_duty
from rota.worker.duty import Duty
from rota.worker.events import OutcomeCallback
from rota.worker.group import GroupRunner, Handler
from rota.worker.hooks import AttemptHook
from rota.worker.leadership import Election, maintenance_lease_name
from rota.worker.policies import PolicyDuty
from rota.worker.registry import RegistryDuty
from rota.worker.retention import RetentionDuty
from rota.worker.runtime import Runtime, RuntimeObserver
from rota.worker.signals import install_stop_handlers, stop_signals
from rota.worker.unserved import UnservedDuty

logger = logging.getLogger("rota")

# `App.serve`: the groups to run (names) and the grace period -> the running runtime.
Serve = Callable[..., contextlib.AbstractAsyncContextManager[Runtime]]


def worker_duties(store: Store, clock: Clock, retention: Retention | None,
                  schedules: AppSchedules, runners: Sequence[GroupRunner]) -> list[Duty]:
    """The housekeeping duties of a real-time worker running `runners`."""
    registry = RegistryDuty(store)
    for runner in runners:  # its jobs record the id `rota workers` lists
        runner.use_worker_id(registry.worker_id)
    lease = maintenance_lease_name(retention, list(schedules.by_name.values()))
    shortest = min((r.options.lease_duration.total_seconds() for r in runners), default=None)
    election = Election(store, clock, lease, registry.worker_id, job_lease_s=shortest)
    duties: list[Duty] = [election]
    if retention is not None and not retention.keeps_everything:
        duties.append(election.while_leading(RetentionDuty(retention, store, clock)))
    if (checkpoints := wal_checkpoint_duty(store)) is not None:
        duties.append(election.while_leading(checkpoints))
    if (firing := schedules.duty(store, clock)) is not None:
        duties.append(election.while_leading(firing))
    duties.append(registry)
    duties.append(PolicyDuty())
    # At start, every survey, and after a hint for a Queue none of its groups serves.
    duties.append(UnservedDuty(clock))
    return duties


def build_runtime(
    *, store: Store, clock: Clock, runners: Sequence[GroupRunner],
    handlers: Mapping[str, Handler], retry_for: Callable[[JobRecord], RetryPolicy],
    outcome_callbacks: Sequence[OutcomeCallback], grace: Duration | None,
    duties: Sequence[Duty], observers: Sequence[RuntimeObserver],
    hooks: Sequence[AttemptHook] = (),
) -> Runtime:
    """The runtime for `runners`; `grace` overrides every group's grace period."""
    grace_s = None if grace is None else to_timedelta(grace, "grace", allow_zero=True)
    return Runtime(
        store=store, clock=clock, runners=runners, handlers=handlers, retry_for=retry_for,
        outcome_callbacks=outcome_callbacks,
        grace_s=None if grace_s is None else grace_s.total_seconds(),
        duties=duties, observers=observers, hooks=hooks,
    )


async def run_until_signal(serve: Serve, runners: Sequence[GroupRunner],
                           grace: Duration | None, location: str) -> None:
    """Serve `runners` until SIGINT/SIGTERM (see `App.run`); `location` names the store
    in the start-up line."""
    loop = asyncio.get_running_loop()
    first = asyncio.Event()
    forced = asyncio.Event()
    received: list[signal.Signals] = []

    def on_signal(signum: signal.Signals) -> None:
        received.append(signum)
        if len(received) == 1:
            logger.warning("%s received: stopping gracefully (send it again to exit at "
                           "once)", signum.name)
            first.set()
        else:
            logger.warning("%s received again: exiting at once; unfinished jobs run "
                           "again when their leases expire", signum.name)
            forced.set()

    # loop.add_signal_handler where the loop has it; signal.signal elsewhere (Windows).
    remove_handlers = install_stop_handlers(loop, stop_signals(), on_signal)
    try:
        async with serve([r.name for r in runners], grace=grace) as runtime:
            logger.info("worker started: groups %s on %s; SIGINT/SIGTERM stops it",
                        ", ".join(r.name for r in runners), location)
            await first.wait()
            stopping = asyncio.create_task(runtime.stop())
            force = asyncio.create_task(forced.wait())
            await asyncio.wait({stopping, force}, return_when=asyncio.FIRST_COMPLETED)
            if forced.is_set():
                runtime.abort()
                stopping.cancel()
                await asyncio.gather(stopping, return_exceptions=True)
                raise SystemExit(128 + received[-1].value)
            force.cancel()
    finally:
        remove_handlers()
