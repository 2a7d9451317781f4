"""The real-time runtime: every Worker Group of a process on one asyncio event loop.

Theory of operation
-------------------
A `Runtime` runs a set of started groups (`GroupRunner`s). Per group, a `GroupLoop` owns
four tasks:

- the **pass task** waits for a trigger, then runs one pass: free capacity = pool_size -
  jobs held by running handlers - claims in flight, capped by `max_claim_batch`; with none
  free it claims nothing (Backpressure). Otherwise `GroupRunner.claim_pass` (the pure
  core's plan, in a store thread) claims, and the jobs are dispatched in slot order, each
  charged to the plan (`plan.serve()`) as it is handed to a Worker. Triggers: the poll
  interval, a job finishing (refill its slot at once), a wake-up hint (an enqueue through
  the App, or the store's `WakeupSource`), a sweep that returned jobs. They set one
  `asyncio.Event`, so a burst of triggers coalesces into one pass.
- one **job task** per running job: an async handler is awaited in it; a sync handler runs
  on one of the group's `pool_size` Worker threads, so a long handler never blocks the loop.
- the **heartbeat task** renews, every `heartbeat_interval`, the leases of every job the
  group holds (running, or finished with its outcome not yet written). A lease found lost
  is no longer renewed; the outcome is still offered to the store, which fences it.
- the **outcome writer** writes finished jobs' outcomes, all successes of a batch in one
  `complete` call; it lets outcomes gather for up to `OUTCOME_LINGER_S` (10 ms) unless
  `OUTCOME_BATCH` are already waiting, so a busy group writes in large batches. A write
  that fails with `StoreError` is retried with backoff; the lease stays renewed
  meanwhile, so no finished job is dropped. Usually a pass gets there first: when the
  store's `claim` takes `outcomes` (rota's stores do), the pass hands the outcomes
  waiting at that moment to its claim, which applies them in its own transaction (one
  commit for both, issue 14). If that claim fails, they go back to the writer.

Every one of these long-lived tasks runs under `supervise` (rota.worker.supervision): an
exception it does not handle itself is logged once at ERROR with its traceback and the task
starts again after a backoff, so no duty dies silently.

**Suspects** (rota.core.suspects): a claimed job whose previous attempt ended with an
expired lease may be what killed its last worker, so it runs alone. The pass keeps it
waiting (`_Held.waiting`) as the process's one suspect (`Runtime._suspect`; a second one
is handed back unserved); while there is a suspect no group claims (free capacity 0); it
starts once no group runs, claims or has an outcome unwritten, and the isolation ends when
its own outcome is written. If it kills the process, it dies alone.

The runtime also owns one **sweeper** task (expired leases back to their Queues, or dead
letter) and the wake-up listener. Store calls run on a small pool of store threads, never
on the loop. Each of those tasks has at most one store call in flight, and the pool has a
thread for each (3 per group + the sweeper + one spare), so no call waits for a thread and
a slow claim never delays a heartbeat.

Shutdown (`stop`): claiming stops at once (a pass in progress is cut short between claims
and whatever it claimed but had not started is released); running jobs get the grace
period; then every job still running is handed back (`release`, its attempt not counted)
and the outcomes still pending are flushed. `abort` skips all that: leases then expire and
the jobs run again elsewhere (at-least-once).

Every field of concurrent state below names its owner. All asyncio state lives on the
loop's thread; only the `threading.Event` `_stopping` is read by store threads.

Imports the core, the store contract and `rota.worker`; never `rota.app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from rota.core.clock import Clock
from rota.core.dispatch import PassPlan
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome, Succeeded
from rota.core.retry import RetryPolicy
from rota.core.suspects import is_suspect
from rota.store.base import LeaseOutcome, Store, StoreError, WakeupSource
from rota.worker.context import CurrentJob
from rota.worker.events import OutcomeCallback, emit, outcome_event
from rota.worker.execution import execute, execute_async
from rota.worker.group import (
    GroupRunner,
    Handler,
    log_recorded,
    record_outcome,
    record_successes,
    sweep_expired_leases,
    warn_leases_lost,
)
from rota.worker.registry import OUTCOME_NAMES
from rota.worker.supervision import supervise
from rota.worker.threads import DaemonPool
from rota.worker.tracing import Tracing

logger = logging.getLogger("rota")

T = TypeVar("T")

# A periodic housekeeping task run beside the groups (e.g. `rota.worker.retention`):
# started with the runtime, cancelled when it stops. It owns its cadence and must survive
# its own errors; it gets the runtime for `store_call`, `sleep_unless_stopping`, `stopping`.
Duty = Callable[["Runtime"], Coroutine[Any, Any, None]]


class RuntimeObserver(Protocol):
    """Watches a runtime for metrics (`rota.metrics`): told when it starts and stops,
    after every pass's claims how long they took (store round trips included) and how
    many jobs they returned, and after every handler how long it ran (perf_counter
    seconds). Called on the loop thread, per job for `job_ran`: keep them quick. Without
    observers the runtime reads no timer at all."""

    def runtime_started(self, runtime: Runtime, /) -> None: ...

    def runtime_stopped(self, runtime: Runtime, /) -> None: ...

    def claimed(self, group: str, round_trip_s: float, jobs: int, /) -> None: ...

    def job_ran(self, group: str, queue: str, ran_s: float, /) -> None: ...


@runtime_checkable
class StoppingDuty(Protocol):
    """A duty with work to do at a graceful stop, after the groups stopped (the store
    threads still run): `at_stop` is awaited, bounded by FLUSH_TIMEOUT_S. Not at abort."""

    def __call__(self, runtime: Runtime, /) -> Coroutine[Any, Any, None]: ...

    async def at_stop(self, runtime: Runtime, /) -> None: ...

# Store errors are retried after this backoff, doubling up to the cap.
STORE_RETRY_FIRST_S = 0.05
STORE_RETRY_CAP_S = 5.0
# How long shutdown keeps trying to write outcomes still pending after the grace period.
FLUSH_TIMEOUT_S = 5.0
# The outcome writer lets finished jobs gather for up to this long (unless this many are
# already waiting) before one `complete` call writes them all. Fewer, larger writes: on a
# PostgreSQL noop drain, writing every ~20 jobs at once cost +17 % of drain time next to
# batches of ~100 (the writes compete with the next claim for the database and the GIL).
# The jobs' leases are held (and renewed) meanwhile, so nothing else changes.
OUTCOME_LINGER_S = 0.01
OUTCOME_BATCH = 100


class _Backoff:
    """Exponential backoff for store retries: 50 ms doubling to 5 s; reset on success."""

    def __init__(self) -> None:
        self._next_s = STORE_RETRY_FIRST_S

    def next_delay_s(self) -> float:
        delay = self._next_s
        self._next_s = min(self._next_s * 2, STORE_RETRY_CAP_S)
        return delay

    def reset(self) -> None:
        self._next_s = STORE_RETRY_FIRST_S


@dataclass(eq=False, slots=True)
class _Held:
    """A job this group holds a lease on. Loop thread only."""

    job: JobRecord
    started_at: datetime
    task: asyncio.Task[Outcome | None] | None = None
    running: bool = True  # its handler occupies a Worker (set False by its job task)
    waiting: bool = False  # a suspect claimed but not started: it waits to run alone
    lost: bool = False  # a heartbeat found the lease gone (set by the heartbeat task)
    handed_back: bool = False  # released at shutdown; its outcome is never written
    current: CurrentJob | None = None  # rota.current_job() of its handler (its job task)
    overran: bool = False  # a sync handler past its timeout still holds its Worker thread
    # Set by its job task when the handler finished: the outcome to write (no second
    # object per job for the writer's list).
    outcome: Outcome | None = None


def _task_starter(
    loop: asyncio.AbstractEventLoop,
) -> Callable[[Coroutine[Any, Any, Outcome | None]], asyncio.Task[Outcome | None]]:
    """What starts a job's task on `loop`: `loop.create_task`, or for an asyncio loop without
    a task factory, what its `create_task` would call, `asyncio.Task(coro, loop=loop)`,
    without its two Python calls per job (itself and `_check_closed`, which the task's own
    `call_soon` makes again). `asyncio.create_task` would add two more (the running loop's
    lookup, and naming the task even without a name)."""
    if isinstance(loop, asyncio.BaseEventLoop) and loop.get_task_factory() is None and (
        type(loop).create_task is asyncio.BaseEventLoop.create_task
    ):
        return functools.partial(asyncio.Task, loop=loop)
    return loop.create_task


def _lease_outcomes(finished: list[_Held]) -> list[LeaseOutcome]:
    """The (lease, outcome) pairs of held jobs whose outcome is set, for a claim to write."""
    return [(held.job.lease, held.outcome) for held in finished if held.outcome is not None]


class Runtime:
    """Runs Worker Groups in real time on the running event loop.

    Built by `App.run` and `App.serve`; not meant to be constructed directly.

    Args:
        store: the App's store.
        clock: the App's clock: every `now` comes from it.
        runners: the started groups to run.
        handlers: job name -> handler.
        retry_for: the RetryPolicy for a job whose lease expired (the sweeper's retries).
        outcome_callbacks: called with an `OutcomeEvent` after every attempt.
        grace_s: overrides every group's `grace_period` (seconds), or None.
        duties: housekeeping tasks to run while the runtime runs (see `Duty`).
        observers: told of starts, stops and claim round trips (see `RuntimeObserver`).
    """

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        runners: Sequence[GroupRunner],
        handlers: Mapping[str, Handler],
        retry_for: Callable[[JobRecord], RetryPolicy],
        outcome_callbacks: Sequence[OutcomeCallback] = (),
        grace_s: float | None = None,
        duties: Sequence[Duty] = (),
        observers: Sequence[RuntimeObserver] = (),
    ) -> None:
        self.store = store
        self.observers = tuple(observers)
        # OpenTelemetry, when installed and a tracer provider is set (read at start).
        self.tracing: Tracing | None = None
        self.clock = clock
        self.handlers = handlers
        self.retry_for = retry_for
        self.outcome_callbacks = outcome_callbacks
        self.grace_s = grace_s
        # Set once by stop()/abort() on the loop thread; read by store threads mid-pass.
        self._stopping = threading.Event()
        self._stop_requested = asyncio.Event()  # the same, for tasks on the loop
        # Three store threads per group (claims, heartbeats, outcomes) + sweeper + spare.
        # One more per duty: a duty has at most one store call in flight.
        self._duties = tuple(duties)
        self._store_threads = DaemonPool(3 * len(runners) + 2 + len(self._duties), "rota-store")
        self.groups = [GroupLoop(self, runner) for runner in runners]
        self._by_queue: dict[str, list[GroupLoop]] = {}
        for group in self.groups:
            for queue in group.runner.options.policy.queues:
                self._by_queue.setdefault(queue, []).append(group)
        # Whether passes write outcomes with claims: when the store's claim takes
        # `outcomes` (rota's stores do; a Store written to the contract before issue 14
        # may not), unless the store would rather have them written beside its claims
        # (PostgreSQL: rota.store.base, module doc).
        self.claims_take_outcomes = (
            "outcomes" in inspect.signature(store.claim).parameters
            and not getattr(store, "outcomes_beside_claims", False)
        )
        # Owned by start()/stop() on the loop thread.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._duty_tasks: list[asyncio.Task[None]] = []
        self._unlisten: Callable[[], None] | None = None
        self._stopped = asyncio.Event()
        self._state = "new"  # new -> running -> stopping -> stopped
        # Loop thread. The one suspect job of this process (rota.core.suspects), waiting
        # until every group is idle or running alone; None almost always. Set by a pass
        # (adopt_suspect), cleared once its outcome is written or it is handed back.
        self._suspect: tuple[GroupLoop, _Held] | None = None

    # -- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start every group's tasks, the sweeper and the wake-up listener."""
        if self._state != "new":
            raise RuntimeError("a Runtime starts once; build a new one to run again")
        self._state = "running"
        self._loop = asyncio.get_running_loop()
        self.tracing = Tracing.active()
        for group in self.groups:
            group.start()
        self._sweeper = asyncio.create_task(
            supervise("lease sweeper", self._sweep_forever), name="rota-sweeper"
        )
        # Each duty handles its own failures; supervise() is the backstop that keeps even
        # an unexpected exception from ending it silently.
        self._duty_tasks = [
            asyncio.create_task(
                supervise(f"duty {index}", functools.partial(duty, self),
                          sleep=self.sleep_unless_stopping),
                name=f"rota-duty-{index}",
            )
            for index, duty in enumerate(self._duties)
        ]
        if isinstance(self.store, WakeupSource):
            await self._listen(self.store)
        for observer in self.observers:
            observer.runtime_started(self)
        logger.debug(
            "runtime started: groups %s on %s",
            ", ".join(g.runner.name for g in self.groups), self.store.url,
        )

    async def _listen(self, source: WakeupSource) -> None:
        try:
            self._unlisten = await self.store_call(source.listen, self.hint)
        except StoreError as error:
            logger.warning(
                "wake-up hints unavailable (%s); groups will find new work by polling", error
            )
        except Exception:
            logger.exception("starting wake-up hints failed; groups will find new work by "
                             "polling")

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop gracefully: claim nothing more, give running jobs the grace period, hand
        back the rest, flush pending outcomes. Idempotent; returns once stopped.

        Args:
            grace_s: seconds running jobs may take to finish; default: the runtime's
                override, else each group's `grace_period`.
        """
        if self._state == "running":
            self._state = "stopping"
            self._stopping.set()
            self._stop_requested.set()
            override = grace_s if grace_s is not None else self.grace_s
            logger.debug("runtime stopping")
            try:
                await asyncio.gather(*(g.shutdown(override) for g in self.groups))
            finally:
                await self._stop_duties()
                self._finish()
        await self._stopped.wait()

    async def _stop_duties(self) -> None:
        """Cancel the duties, then give those with an `at_stop` (the worker registry's
        last refresh) a bounded time to finish, while the store threads still run."""
        for task in self._duty_tasks:
            task.cancel()
        await asyncio.gather(*self._duty_tasks, return_exceptions=True)
        if self._state == "stopped":
            return  # aborted meanwhile (a second signal): exit at once, no farewells
        for duty in self._duties:
            if isinstance(duty, StoppingDuty):
                try:
                    await asyncio.wait_for(duty.at_stop(self), FLUSH_TIMEOUT_S)
                except Exception:
                    logger.warning("stopping duty %r failed", duty, exc_info=True)

    def abort(self) -> None:
        """Stop at once: cancel every task, hand nothing back (the leases will expire and
        the jobs run again elsewhere). For a second SIGINT/SIGTERM."""
        if self._state in ("running", "stopping"):
            self._stopping.set()
            self._stop_requested.set()
            for group in self.groups:
                group.abort()
            self._finish()

    def _finish(self) -> None:
        if self._state == "stopped":
            return
        self._state = "stopped"
        if self._sweeper is not None:
            self._sweeper.cancel()
        for task in self._duty_tasks:
            task.cancel()
        if self._unlisten is not None:
            unlisten, self._unlisten = self._unlisten, None
            try:
                unlisten()
            except Exception:
                logger.warning("stopping the wake-up listener failed", exc_info=True)
        self._store_threads.close()
        for observer in self.observers:
            observer.runtime_stopped(self)
        self._stopped.set()
        logger.debug("runtime stopped")

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def sleep_unless_stopping(self, delay_s: float) -> None:
        """Wait `delay_s`, or less if shutdown begins meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_requested.wait(), delay_s)

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    # -- wake-up hints --------------------------------------------------------------------

    def hint(self, queue: str) -> None:
        """Jobs were enqueued into `queue`: wake the groups serving it. Any thread."""
        loop = self._loop
        if loop is None or self._state != "running":
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._wake_queue, queue)

    def _wake_queue(self, queue: str) -> None:
        for group in self._by_queue.get(queue, ()):
            group.runner.note_work(queue)
            group.wake()

    # -- store calls ----------------------------------------------------------------------

    async def store_call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run the blocking `call(*args, **kwargs)` on a store thread."""
        return await self._store_threads.run(functools.partial(call, *args, **kwargs))

    async def _sweep_forever(self) -> None:
        interval_s = min(g.options.heartbeat_interval.total_seconds() for g in self.groups)
        backoff = _Backoff()
        while True:
            now = self.clock.now()
            try:
                swept = await self.store_call(
                    sweep_expired_leases, self.store, now, self.retry_for
                )
            except StoreError as error:
                delay_s = backoff.next_delay_s()
                logger.warning("lease sweep failed (retrying in %.2f s): %s", delay_s, error)
                await asyncio.sleep(min(delay_s, interval_s))
                continue
            backoff.reset()
            if swept:
                for group in self.groups:
                    group.wake()
            await asyncio.sleep(interval_s)

    # -- suspects -------------------------------------------------------------------------

    @property
    def isolating(self) -> bool:
        """A suspect job waits to run alone, or runs alone: no group claims meanwhile."""
        return self._suspect is not None

    def adopt_suspect(self, group: GroupLoop, held: _Held) -> None:
        """Make `held` (claimed by `group`, not started) the process's waiting suspect.
        The caller checked `isolating` first: there is one suspect at a time."""
        assert self._suspect is None, "one suspect at a time"
        self._suspect = (group, held)

    def start_suspect_if_idle(self) -> None:
        """Start the waiting suspect once no group runs, claims or writes anything."""
        suspect = self._suspect
        if suspect is None or not suspect[1].waiting or self._stopping.is_set():
            return
        if any(g.busy for g in self.groups):
            return
        group, held = suspect
        job = held.job
        logger.info(
            "group %s: job %s (%s) attempt %s runs alone: its previous attempt ended with an "
            "expired lease (its worker died or lost the store)", group.name, job.id, job.name,
            job.attempt,
        )
        group.start_job(held)

    def after_outcomes_written(self) -> None:
        """Called by an outcome writer while isolating: end the isolation once the
        suspect's outcome is written, else see whether the suspect may start now."""
        suspect = self._suspect
        if suspect is None:
            return
        group, held = suspect
        if not held.waiting and group.holds(held):
            return  # running, or its outcome is not written yet
        if not held.waiting:
            self.end_isolation()
        else:
            self.start_suspect_if_idle()

    def end_isolation(self) -> None:
        self._suspect = None
        for group in self.groups:
            group.wake()

    # -- outcomes -------------------------------------------------------------------------

    def report(self, group: str, held: _Held, outcome: Outcome, finished_at: datetime) -> None:
        if self.outcome_callbacks:
            emit(
                self.outcome_callbacks,
                outcome_event(held.job, group, outcome, held.started_at, finished_at),
            )


class GroupLoop:
    """One Worker Group running in real time (see the module docstring)."""

    def __init__(self, runtime: Runtime, runner: GroupRunner) -> None:
        self.runtime = runtime
        self.runner = runner
        self.options = runner.options
        self._workers = DaemonPool(self.options.pool_size, f"rota-{runner.name}")
        # Loop thread. Entries added by the pass task, marked by job and heartbeat tasks,
        # removed by the outcome writer (after the write) or by shutdown.
        self._held: dict[int, _Held] = {}
        # Loop thread. Held jobs whose outcome is set, waiting to be written: appended by
        # job tasks, drained by the outcome writer or a pass's claim.
        self._finished: list[_Held] = []
        # Set by job tasks (whenever _finished is not empty), cleared by the writer.
        self._finished_ready = asyncio.Event()
        # Set by the writer when it has written everything; cleared by _flush (its reader)
        # or when a write failed, so it may be stale-set while nobody waits on it.
        self._all_written = asyncio.Event()
        self._all_written.set()
        # Loop thread. Jobs whose handlers occupy a Worker (held.running), counted as they
        # change so that a pass need not walk every held job.
        self._running = 0
        # Loop thread. Jobs asked for by the pass in progress (claims in flight).
        self._claiming = 0
        # Loop thread. Ids of the jobs whose outcomes are being written now, by the outcome
        # writer or with a claim (each takes its batch out of `_finished`, and puts back
        # what it could not write).
        self._writing: set[int] = set()
        # Loop thread. Attempts whose outcomes were written since the group started, per
        # Queue and outcome type: counted as they are written, read through `served`.
        self._served: dict[str, dict[type, int]] = {}
        self._wake = asyncio.Event()  # set by any trigger; cleared by the pass task
        # Loop thread. True once a finished job set `_wake` since the pass task last
        # cleared it (so `_wake` is still set): the jobs finishing after it need not call.
        self._refill_asked = False
        # Created by start(), cancelled or awaited by shutdown()/abort().
        self._pass_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._writer_task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.runner.name

    @property
    def running(self) -> int:
        """Jobs whose handlers are running now (Workers busy)."""
        return self._running

    @property
    def served(self) -> dict[tuple[str, str], int]:
        """Attempts whose outcomes were written since the group started, per (Queue,
        outcome name): read by the worker registry's refresh (rota.worker.registry) and by
        metrics, from any thread (each level is copied at once, under the GIL)."""
        return {(queue, OUTCOME_NAMES[kind]): count
                for queue, counts in list(self._served.items())
                for kind, count in list(counts.items())}

    @property
    def in_flight(self) -> int:
        """Jobs the group holds: running, waiting to run alone, or outcome unwritten."""
        return len(self._held)

    def start(self) -> None:
        self._pass_task = self._spawn(self._pass_forever, "passes",
                                      self.runtime.sleep_unless_stopping)
        self._heartbeat_task = self._spawn(self._heartbeat_forever, "heartbeats")
        self._writer_task = self._spawn(self._write_forever, "outcomes")
        self._wake.set()  # first pass at once

    def _spawn(
        self, duty: Callable[[], Coroutine[Any, Any, None]], what: str,
        sleep: Callable[[float], Coroutine[Any, Any, None]] = asyncio.sleep,
    ) -> asyncio.Task[None]:
        """Start a duty of this group under `supervise`: it survives any exception."""
        return asyncio.create_task(
            supervise(f"group {self.name}: {what}", duty, sleep=sleep),
            name=f"rota-{self.name}-{what}",
        )

    def wake(self) -> None:
        self._wake.set()

    @property
    def busy(self) -> bool:
        """Whether a handler runs, a claim is in flight or an outcome is unwritten."""
        return bool(self._running or self._claiming or self._finished or self._writing)

    def holds(self, held: _Held) -> bool:
        return self._held.get(held.job.id) is held

    def free_capacity(self) -> int:
        if self.runtime._suspect is not None:
            return 0  # a suspect waits to run alone, or runs alone: nothing else starts
        free = self.options.pool_size - self._running - self._claiming
        return max(0, min(free, self.options.claim_capacity))

    # -- passes ---------------------------------------------------------------------------

    async def _wait_for_trigger(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout_s)
        self._wake.clear()
        self._refill_asked = False

    async def _pass_forever(self) -> None:
        poll_s = self.options.poll_interval.total_seconds()
        backoff = _Backoff()
        stopping = self.runtime._stopping
        self._wake.set()  # (re)started: pass at once
        while True:
            await self._wait_for_trigger(poll_s)
            if stopping.is_set():
                return
            free = self.free_capacity()
            if free == 0 and self.runtime.isolating:
                self.runtime.start_suspect_if_idle()  # e.g. after a claim that failed
                continue
            if free == 0:
                logger.debug("group %s: pool full (%d running), no claim", self.name,
                             self.running)
                continue
            now = self.runtime.clock.now()
            self._claiming = free
            observers = self.runtime.observers
            began = time.perf_counter() if observers else 0.0
            carried = self._take_finished() if self.runtime.claims_take_outcomes else []
            try:
                # Whatever a claim raises, claim_pass returns (or, for an error outside
                # the claims, hands back) what it had claimed; an exception that gets out
                # is logged by the supervisor, which starts this duty again.
                plan, jobs = await self.runtime.store_call(
                    self.runner.claim_pass, self.runtime.store, free, now,
                    stop=stopping.is_set,
                    outcomes=_lease_outcomes(carried),
                )
            finally:
                self._claiming = 0
                if carried:
                    self._carried_written(carried)
            if observers:
                round_trip_s = time.perf_counter() - began
                for observer in observers:
                    observer.claimed(self.name, round_trip_s, len(jobs))
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("group %s: pass claimed %d of %d free", self.name, len(jobs),
                             free)
            await self._dispatch(plan, jobs, now)
            if self.runner.last_pass_failed:
                delay_s = backoff.next_delay_s()
                logger.warning("group %s: claims failing; next pass in %.2f s", self.name,
                               delay_s)
                await self.runtime.sleep_unless_stopping(delay_s)
                self._wake.set()
            else:
                backoff.reset()
                if jobs and self.free_capacity() > 0:
                    self._wake.set()  # capped by max_claim_batch, or reflow left room
                elif self.runner.probe_pending:
                    self._wake.set()  # found nothing: probe the Queues held for empty

    async def _dispatch(
        self, plan: PassPlan[JobRecord], jobs: list[JobRecord], now: datetime
    ) -> None:
        """Hand the jobs to Workers in slot order, charging the plan for each. Once
        shutdown has begun, the jobs not yet started are released instead.

        `now` is the pass's time, read once for the whole batch: a job's `started_at`
        (the start of its OutcomeEvent's duration) is read per job only when someone
        listens to outcomes. Per-job costs here are paid ~10,000 times a second in a
        busy drain, hence also no task names and no debug formatting unless enabled."""
        clock = self.runtime.clock
        timed = bool(self.runtime.outcome_callbacks)
        debug = logger.isEnabledFor(logging.DEBUG)
        held_jobs = self._held
        create_task = _task_starter(asyncio.get_running_loop())
        held_back: list[JobRecord] = []
        run_job = self._run_job if self.runtime.tracing is None else self._run_job_traced
        # Shutdown is decided on this thread (`_stopping` is set by stop()/abort(), on the
        # loop) and nothing below awaits before the release that ends the loop: asked once,
        # the answer holds for every job of the batch.
        if self.runtime._stopping.is_set():
            await self._release(jobs, "claimed but not started at shutdown")
            return
        index = 0
        try:
            for index, job in enumerate(jobs):  # noqa: B007 (the except clause reads it)
                if job.last_error is not None and is_suspect(job):
                    # Runs alone, later; a second suspect goes back to its Queue unserved.
                    if self.runtime.isolating:
                        plan.skip()
                        held_back.append(job)
                    else:
                        plan.serve()
                        held = _Held(job, now, running=False, waiting=True)
                        held_jobs[job.id] = held
                        self.runtime.adopt_suspect(self, held)
                    continue
                plan.serve()
                held = _Held(job, clock.now() if timed else now)
                held_jobs[job.id] = held
                self._running += 1
                held.task = create_task(run_job(held))
                if debug:
                    logger.debug("group %s: job %s (%s) attempt %s started from %s",
                                 self.name, job.id, job.name, job.attempt, job.queue)
        except Exception:
            # A bug between claim and start: hand back what did not start, then let the
            # supervisor log it.
            await self._release(jobs[index:] + held_back, "not started after an error")
            raise
        if held_back:
            await self._release(held_back, "another suspect runs alone first")
        if self.runtime._suspect is not None:
            self.runtime.start_suspect_if_idle()

    def start_job(self, held: _Held) -> None:
        """Start a waiting suspect's handler (the runtime decided it may run now)."""
        held.waiting = False
        held.running = True
        held.started_at = self.runtime.clock.now()
        self._running += 1
        run_job = self._run_job if self.runtime.tracing is None else self._run_job_traced
        held.task = asyncio.create_task(run_job(held))

    async def _run_job_traced(self, held: _Held) -> Outcome | None:
        """`_run_job` inside the attempt's span (rota.worker.tracing)."""
        tracing = self.runtime.tracing
        assert tracing is not None
        with tracing.attempt(held.job, self.name) as span:
            outcome = None
            try:
                outcome = await self._run_job(held)
            finally:
                tracing.record(span, outcome)
        return outcome

    async def _run_job(self, held: _Held) -> Outcome | None:
        """Run the job's handler and queue its outcome for the writer; returns the
        outcome (None if the job was handed back)."""
        job = held.job
        held.current = current = CurrentJob(job)
        runtime = self.runtime
        observers = runtime.observers
        began = time.perf_counter() if observers else 0.0
        try:
            handler = runtime.handlers.get(job.name)
            if handler is not None and handler.timeout is None and handler.is_async and (
                job.arguments_error is None
            ):  # the common case, without execute's checks and keywords
                outcome = await execute_async(job, handler, self.runner, runtime.clock,
                                               current)
            else:
                outcome = await execute(
                    job, runtime.handlers, self.runner, runtime.clock, self._workers.run,
                    current=current, realtime=True,
                    on_overrun=functools.partial(self._overran, held),
                )
        except asyncio.CancelledError:
            raise  # handed back at shutdown; nothing to record
        except BaseException as error:  # SystemExit & co. from a handler: still a failure
            handler = self.runtime.handlers.get(job.name)
            outcome = self.runner.outcome_of_error(job, handler, error, self.runtime.clock.now())
        held.running = False
        if observers:
            ran_s = time.perf_counter() - began
            for observer in observers:
                observer.job_ran(self.name, job.queue, ran_s)
        if not held.overran:  # _worker_freed, inline (per job)
            self._running -= 1
            if not self._refill_asked:  # refill this Worker's slot at once
                self._refill_asked = True
                self._wake.set()
        if held.handed_back:
            return None
        held.outcome = outcome
        # The writer's event is set whenever `_finished` holds anything (the writer clears
        # it only just before it takes them all), so only the first one in sets it; and
        # `_all_written` is cleared by `_flush`, which alone reads it: per job, no call.
        finished = self._finished
        if not finished:
            self._finished_ready.set()
        finished.append(held)
        if self.runtime.outcome_callbacks:
            self.runtime.report(self.name, held, outcome, self.runtime.clock.now())
        return outcome

    def _overran(self, held: _Held, thread: asyncio.Future[object]) -> None:
        """A sync handler past its timeout: its attempt fails now, but its Worker stays
        occupied (counted in _running) until the thread returns."""
        held.overran = True
        thread.add_done_callback(self._worker_freed)

    def _worker_freed(self, _thread: object = None) -> None:
        self._running -= 1
        self._wake.set()  # refill this Worker's slot at once

    def _deliver_cancel(self, held: _Held) -> None:
        """A heartbeat found the job's cancel requested: tell its handler. An async one is
        cancelled; a sync one sees rota.current_job().cancel_requested turn True."""
        if held.current is None or held.current.cancel_requested or not held.running:
            return
        held.current.request_cancel()
        logger.warning("group %s: job %s (%s) attempt %s: cancel requested; stopping it",
                       self.name, held.job.id, held.job.name, held.job.attempt)
        handler = self.runtime.handlers.get(held.job.name)
        if handler is not None and handler.is_async and held.task is not None:
            held.task.cancel()

    # -- leases ---------------------------------------------------------------------------

    async def _heartbeat_forever(self) -> None:
        interval_s = self.options.heartbeat_interval.total_seconds()
        lease_duration = self.options.lease_duration
        store = self.runtime.store
        delay_s = interval_s
        while True:
            await asyncio.sleep(delay_s)
            delay_s = interval_s
            mine = [h for h in self._held.values() if not (h.lost or h.handed_back)]
            if not mine:
                continue
            leases = [h.job.lease for h in mine]
            now = self.runtime.clock.now()
            try:
                renewed = await self.runtime.store_call(
                    store.heartbeat, leases, now, now + lease_duration
                )
            except StoreError as error:
                delay_s = min(interval_s, 1.0)
                logger.warning("group %s: heartbeat failed (retrying in %.2f s): %s",
                               self.name, delay_s, error)
                continue
            writing = self._writing
            for held in mine:
                if held.job.id in renewed.cancel_requested:
                    self._deliver_cancel(held)
                if held.job.id not in renewed and not held.handed_back:
                    if not self.holds(held) or held.job.id in writing:
                        continue  # its outcome was being written: that ended the lease
                    held.lost = True
                    logger.warning(
                        "group %s: job %s (%s) attempt %s lost its lease (expired or taken "
                        "over); it may run again elsewhere", self.name, held.job.id,
                        held.job.name, held.job.attempt,
                    )

    async def _release(self, jobs: Sequence[JobRecord], why: str) -> None:
        """Hand jobs back to their Queues at once (attempt not counted). A few quick
        retries on StoreError; after that the leases expire and the jobs run again."""
        if not jobs:
            return
        leases = [job.lease for job in jobs]
        store = self.runtime.store
        for attempt in range(3):
            now = self.runtime.clock.now()
            try:
                released = await self.runtime.store_call(store.release, leases, now)
            except StoreError as error:
                logger.warning("group %s: releasing %d jobs failed (try %d of 3): %s",
                               self.name, len(leases), attempt + 1, error)
                await asyncio.sleep(STORE_RETRY_FIRST_S * 2**attempt)
                continue
            logger.debug("group %s: released %d jobs (%s)", self.name, released, why)
            return
        logger.warning("group %s: %d jobs not released; they run again when their leases "
                       "expire", self.name, len(leases))

    # -- outcomes -------------------------------------------------------------------------

    def _write(
        self, batch: list[_Held], now: datetime
    ) -> tuple[list[_Held], Exception | None]:
        """Store thread: write `batch`'s outcomes, successes in one call. Returns the ones
        written (applied or fenced) and the exception that stopped the rest, if any."""
        store = self.runtime.store
        written: list[_Held] = []
        successes = [f for f in batch if isinstance(f.outcome, Succeeded)]
        results = [f.outcome.result_json for f in successes
                   if isinstance(f.outcome, Succeeded)]
        try:
            record_successes(store, [f.job for f in successes], now,
                             None if results.count(None) == len(results) else results,
                             group=self.name)
            written.extend(successes)
            for item in batch:
                outcome = item.outcome
                if not isinstance(outcome, Succeeded):
                    assert outcome is not None  # set before the job joined _finished
                    record_outcome(store, item.job, outcome, now, self.name)
                    written.append(item)
        except Exception as error:  # returned, not raised, so `written` is kept
            return written, error
        return written, None

    def _take_finished(self) -> list[_Held]:
        """Take every outcome waiting to be written, to write it now; `_done_writing`
        must follow, whatever happens."""
        batch, self._finished = self._finished, []
        self._writing.update([held.job.id for held in batch])  # a list: no generator
        return batch

    def _done_writing(self, batch: list[_Held], written: list[_Held]) -> None:
        """After a write of `batch` (taken by `_take_finished`): the jobs of `written`
        (applied or fenced) are no longer held; the rest go back to the writer."""
        self._writing.difference_update([held.job.id for held in batch])
        if len(written) < len(batch):
            done = {id(item) for item in written}
            self._finished[:0] = [item for item in batch if id(item) not in done]
            self._all_written.clear()
            self._finished_ready.set()
        # Per job, so kept lean: one pop, one count keyed by the Queue's name and the
        # outcome's type, no tuple to build and hash (docs/benchmarks.md).
        served = self._served
        held_pop = self._held.pop
        for item in written:
            job = item.job
            held_pop(job.id, None)
            counts = served.get(job.queue)
            if counts is None:
                counts = served[job.queue] = {}
            kind = type(item.outcome)
            counts[kind] = counts.get(kind, 0) + 1
        if written and self.runtime._suspect is not None:
            self.runtime.after_outcomes_written()

    def _carried_written(self, carried: list[_Held]) -> None:
        """After a pass whose claim was given `carried`: done if a claim applied them
        (logged as the writer's path logs them), else back to the writer."""
        applied = self.runner.outcomes_applied
        if applied is None:
            self._done_writing(carried, [])
            return
        log_recorded(self.name, ((held.job, held.outcome) for held in carried
                                 if held.outcome is not None))
        if applied < len(carried):
            warn_leases_lost(self.name, [held.job for held in carried], applied)
        self._done_writing(carried, carried)

    async def _write_forever(self) -> None:
        backoff = _Backoff()
        if self._finished:
            self._finished_ready.set()  # restarted by the supervisor with outcomes pending
        while True:
            await self._finished_ready.wait()
            # No lingering while a suspect waits for the outcomes to be written.
            if (len(self._finished) < OUTCOME_BATCH and not self.runtime.stopping
                    and self.runtime._suspect is None):
                await self.runtime.sleep_unless_stopping(OUTCOME_LINGER_S)
            self._finished_ready.clear()
            while self._finished:
                batch = self._take_finished()
                now = self.runtime.clock.now()
                written: list[_Held] = []
                try:
                    written, error = await self.runtime.store_call(self._write, batch, now)
                finally:
                    self._done_writing(batch, written)
                if error is not None and not isinstance(error, StoreError):
                    raise error  # the supervisor logs it and starts this duty again
                if error is not None:
                    delay_s = backoff.next_delay_s()
                    logger.warning(
                        "group %s: writing %d outcomes failed (retrying in %.2f s; the leases "
                        "are kept): %s", self.name, len(batch) - len(written), delay_s, error,
                    )
                    await asyncio.sleep(delay_s)
                else:
                    backoff.reset()
            self._all_written.set()

    # -- shutdown -------------------------------------------------------------------------

    async def shutdown(self, grace_override_s: float | None) -> None:
        grace_s = (
            self.options.grace_period.total_seconds() if grace_override_s is None
            else grace_override_s
        )
        self._wake.set()
        if self._pass_task is not None:
            # Ends after the pass in progress (cut short; unstarted jobs released).
            await asyncio.gather(self._pass_task, return_exceptions=True)
        waiting = [h for h in self._held.values() if h.waiting]
        if waiting:
            for held in waiting:
                held.handed_back = True
                self._held.pop(held.job.id, None)
            await self._release([h.job for h in waiting], "a suspect not started at shutdown")
            suspect = self.runtime._suspect
            if suspect is not None and suspect[1] in waiting:
                self.runtime._suspect = None
        running = [h.task for h in self._held.values() if h.running and h.task is not None]
        if running:
            logger.debug("group %s: waiting up to %.1f s for %d running jobs", self.name,
                         grace_s, len(running))
            await asyncio.wait(running, timeout=grace_s)
        unfinished = [h for h in self._held.values() if h.running]
        for held in unfinished:
            held.handed_back = True
            if held.task is not None:
                held.task.cancel()
        if unfinished:
            logger.warning("group %s: %d jobs still running after the %.1f s grace period "
                           "are handed back to their Queues", self.name, len(unfinished),
                           grace_s)
            await self._release([h.job for h in unfinished], "unfinished after the grace period")
            for held in unfinished:
                self._held.pop(held.job.id, None)
        await self._flush()
        self._cancel_tasks()
        tasks: list[asyncio.Task[Any]] = [
            t for t in (self._heartbeat_task, self._writer_task) if t is not None]
        tasks += [h.task for h in unfinished if h.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers.close()

    async def _flush(self) -> None:
        """Give the outcome writer a bounded time to write what is pending."""
        if not self._finished and not self._writing:
            return
        self._all_written.clear()  # the writer sets it again once everything is written
        self._finished_ready.set()
        try:
            await asyncio.wait_for(self._all_written.wait(), FLUSH_TIMEOUT_S)
        except TimeoutError:
            logger.warning("group %s: %d outcomes could not be written; those jobs run "
                           "again when their leases expire", self.name, len(self._finished))

    def _cancel_tasks(self) -> None:
        for task in (self._pass_task, self._heartbeat_task, self._writer_task):
            if task is not None:
                task.cancel()

    def abort(self) -> None:
        self._cancel_tasks()
        for held in self._held.values():
            held.handed_back = True
            if held.task is not None:
                held.task.cancel()
        self._workers.close()
