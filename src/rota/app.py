"""The App: the user's entry object. Registry of jobs + a store + Worker Groups.

`App` wires the layers together: it opens the store, registers job handlers, holds the
Worker Groups, and drives them, either deterministically inline (`run_until_idle`) or in
real time (`run`, `serve`; see `rota.worker.runtime`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, ParamSpec, TypeVar, overload

from rota.core.clock import Clock, SystemClock
from rota.core.dispatch import PassPlan
from rota.core.durations import Duration, to_timedelta
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import DEFAULT_MAX_PAYLOAD_BYTES, MAX_JOB_ID, JobRecord, validate_job_name
from rota.core.queue_controls import QueueInfo, validate_queue_limit
from rota.core.queues import DEFAULT_QUEUE, validate_queue_name
from rota.core.retention import Retention, StateSelection, purgeable_states
from rota.core.retry import RetryPolicy
from rota.core.schedules import Schedule, validate_schedule_name
from rota.core.workers import GroupFairness, ServedCount, WorkerInfo, fairness, minute_of
from rota.definition import NO_PRIORITY, JobDefinition
from rota.schedules import build_rule, build_schedule, check_arguments_fit
from rota.store import Store, mask_url, open_store
from rota.store.base import ScheduleStore
from rota.worker.checkpoint import wal_checkpoint_duty
from rota.worker.events import OutcomeCallback, OutcomeEvent, emit, outcome_event
from rota.worker.execution import execute
from rota.worker.group import (
    GroupRunner,
    Handler,
    record_outcome,
    retry_policy,
    sweep_expired_leases,
)
from rota.worker.registry import RegistryDuty
from rota.worker.retention import RetentionDuty, purge_finished
from rota.worker.runtime import Duty, Runtime, RuntimeObserver
from rota.worker.schedules import ScheduleDuty, fire_due_now
from rota.worker.signals import install_stop_handlers, stop_signals
from rota.worker.tracing import Tracing
from rota.worker.unserved import unserved_queues_duty

logger = logging.getLogger("rota")

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_STORE_URL = "sqlite:///rota.db"
DEFAULT_RETENTION = Retention()
STORE_ENV = "ROTA_STORE"  # the store URL when App() is given none (the CLI reads it too)


class _FromEnvironment(enum.Enum):
    """The type of `App`'s default store argument (None stays a TypeError, as before)."""

    TOKEN = "$ROTA_STORE, else sqlite:///rota.db"

    def __repr__(self) -> str:
        return "<$ROTA_STORE, else sqlite:///rota.db>"


FROM_ENVIRONMENT: Final = _FromEnvironment.TOKEN


def default_store_url() -> str:
    """`$ROTA_STORE` if set (and not blank), else `sqlite:///rota.db`."""
    return os.environ.get(STORE_ENV, "").strip() or DEFAULT_STORE_URL


def store_location(store: Store) -> str:
    """Where `store` keeps its jobs, for a start-up log line: an SQLite store's absolute
    file path (`sqlite:////abs/path.db`), otherwise its URL; passwords masked."""
    path = getattr(store, "path", None)
    if isinstance(path, str) and store.url.lower().startswith("sqlite:"):
        return f"sqlite:///{os.path.abspath(path)}"
    return mask_url(store.url)


def _job_id(job_id: object) -> int | None:
    """`job_id` checked; None for an int that no store can hold as an id (no such job)."""
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise TypeError(f"job ids are ints; got {job_id!r} ({type(job_id).__name__})")
    return job_id if 0 < job_id <= MAX_JOB_ID else None


def _loop_is_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class App:
    """A rota application.

    Args:
        store: a store URL (`sqlite:///rota.db`, `postgresql://...`, `memory://`) or a
            `Store` object. Default: the `ROTA_STORE` environment variable (as the `rota`
            command reads it), else `sqlite:///rota.db`, a file in the working directory
            (`rota worker` logs the absolute path it opened).
        clock: where "now" comes from; `rota.VirtualClock(start)` in tests. Default: the
            system clock.
        max_payload_bytes: the most UTF-8 bytes of JSON a job's arguments (at enqueue) or
            its handler's result may take. Default 1 MiB (1,048,576).
        retention: how long workers keep finished jobs (`rota.Retention`; default: 1 day
            for succeeded and cancelled jobs, 14 days for dead-lettered and quarantined
            ones). None: workers delete nothing (`purge` still works).

    Raises:
        rota.StoreConfigError: if the store URL is malformed or names no known store.
        ValueError: if `max_payload_bytes` is not a whole number >= 1.
    """

    def __init__(
        self, store: str | Store | _FromEnvironment = FROM_ENVIRONMENT, *,
        clock: Clock | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        retention: Retention | None = DEFAULT_RETENTION,
    ) -> None:
        if isinstance(store, _FromEnvironment):
            store = default_store_url()
        if not isinstance(store, str | Store):
            raise TypeError(
                f"App takes a store URL (e.g. 'sqlite:///rota.db') or a Store; got {store!r}"
            )
        if (isinstance(max_payload_bytes, bool) or not isinstance(max_payload_bytes, int)
                or max_payload_bytes < 1):
            raise ValueError(
                f"max_payload_bytes must be a whole number of bytes >= 1; got "
                f"{max_payload_bytes!r}"
            )
        self.max_payload_bytes = max_payload_bytes
        if retention is not None and not isinstance(retention, Retention):
            raise TypeError(
                f"retention must be a rota.Retention (or None to keep every job); got "
                f"{retention!r}"
            )
        self.retention = retention
        self.store: Store = open_store(store) if isinstance(store, str) else store
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._handlers: dict[str, Handler] = {}
        self._definitions: dict[str, JobDefinition[Any, Any]] = {}
        self._group_options: list[WorkerGroupOptions] = []
        self._runners: dict[str, GroupRunner] = {}
        self._running: set[str] = set()  # groups a drive is running now (event loop only)
        # Replaced, never mutated, so enqueuing threads may iterate them without a lock.
        self._outcome_callbacks: tuple[OutcomeCallback, ...] = ()
        self._enqueue_listeners: tuple[Callable[[str], None], ...] = ()
        self._schedules: dict[str, Schedule] = {}  # schedules (branch schedules)
        self._registered_schedules: set[str] = set()  # by run_until_idle (workers: the duty)
        # Told of every real-time runtime's start, stop and claims (rota.metrics).
        self._runtime_observers: tuple[RuntimeObserver, ...] = ()

    def __repr__(self) -> str:
        return f"App({self.store.url!r})"

    # -- jobs -----------------------------------------------------------------------------

    @overload
    def job(self, name: Callable[P, R], /) -> JobDefinition[P, R]: ...

    @overload
    def job(
        self, name: str | None = None, *, queue: str = DEFAULT_QUEUE,
        retry: RetryPolicy | None = None, timeout: Duration | None = None, **unknown: object,
    ) -> Callable[[Callable[P, R]], JobDefinition[P, R]]: ...

    def job(
        self, name: str | Callable[P, R] | None = None, *, queue: str = DEFAULT_QUEUE,
        retry: RetryPolicy | None = None, timeout: Duration | None = None, **unknown: object,
    ) -> JobDefinition[P, R] | Callable[[Callable[P, R]], JobDefinition[P, R]]:
        """Register a job handler (sync or async def).

        Args:
            name: the job's stable wire name; default `module.qualname` of the function.
            queue: the Queue its jobs go to unless `configure(queue=...)` says otherwise.
            retry: a RetryPolicy overriding the Worker Group's for this job.
            timeout: (timedelta or seconds) an attempt running longer fails with
                `TimeoutError`, retried like any failure. A worker cancels an async
                handler; a sync one cannot be stopped, so its attempt fails at once and
                its Worker stays occupied until it returns. `run_until_idle` interrupts
                nothing: it fails an attempt that took longer on the App's clock.
                Default: no timeout.

        Raises:
            ValueError: for a bad Queue name, a bad job name (1-200 printable characters),
                a job name already registered, or a timeout that is not positive.
            TypeError: for an unknown option (rota has no per-job `priority`).
        """
        if "priority" in unknown:
            raise TypeError(NO_PRIORITY)
        if unknown:
            raise TypeError(f"job() got unknown option(s) {sorted(unknown)}; it takes name, "
                            "queue=, retry= and timeout=")
        validate_queue_name(queue)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a rota.RetryPolicy; got {retry!r}")
        limit = None if timeout is None else to_timedelta(timeout, "timeout")
        if callable(name):
            return self._register(name, None, queue, retry, limit)
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a job name must be a non-empty str; got {name!r}")

        def decorate(func: Callable[P, R]) -> JobDefinition[P, R]:
            return self._register(func, name, queue, retry, limit)

        return decorate

    def _register(
        self, func: Callable[P, R], name: str | None, queue: str, retry: RetryPolicy | None,
        timeout: timedelta | None = None,
    ) -> JobDefinition[P, R]:
        if not callable(func):
            raise TypeError(f"@app.job decorates a function; got {func!r}")
        job_name = validate_job_name(name or f"{func.__module__}.{func.__qualname__}")
        if job_name in self._handlers:
            raise ValueError(
                f"job name {job_name!r} is already registered; give each handler its own name"
            )
        definition = JobDefinition(self, job_name, func, queue, retry)
        self._handlers[job_name] = Handler(
            job_name, func, retry, timeout=timeout, max_payload_bytes=self.max_payload_bytes
        )
        self._definitions[job_name] = definition
        return definition

    @property
    def jobs(self) -> dict[str, JobDefinition[Any, Any]]:
        """The registered job definitions by name."""
        return dict(self._definitions)

    def get_job(self, job_id: int) -> JobRecord | None:
        """The stored record of job `job_id`, or None if there is none.

        Raises:
            TypeError: if `job_id` is not an int (ids are ints on every store).
        """
        checked = _job_id(job_id)
        return None if checked is None else self.store.get_job(checked)

    def cancel(self, job_id: int) -> bool:
        """Cancel a job. A scheduled job is cancelled at once and never runs. A running
        (leased) job gets a cancel request, which its worker receives with its next
        heartbeat: an async handler is cancelled; a sync handler sees
        `rota.current_job().cancel_requested` turn True and should return. Either way the
        job ends `cancelled` (never retried), its `last_error` saying it was cancelled on
        request. (`run_until_idle` has no heartbeats: there a request made while the job
        runs takes effect if the attempt fails; a success stands.)

        Returns:
            True if the job was cancelled or a cancel was requested; False if it does not
            exist or has finished.

        Raises:
            TypeError: if `job_id` is not an int.
        """
        checked = _job_id(job_id)
        return checked is not None and self.store.cancel(checked, self.clock.now())

    def requeue(self, job_id: int) -> bool:
        """Bring a `dead_lettered`, `quarantined` or `cancelled` job back: `scheduled` in
        its Queue, attempt 0, due now (its `last_error` is kept for reference).

        Returns:
            True if it was requeued; False if it does not exist, is in another state, or
            (unique jobs) another scheduled or leased job holds its job name and key.

        Raises:
            TypeError: if `job_id` is not an int.
        """
        checked = _job_id(job_id)
        if checked is None or not self.store.requeue(checked, self.clock.now()):
            return False
        job = self.store.get_job(checked)
        if job is not None:
            self._notify_enqueued((job.queue,))
        return True

    def purge(self, older_than: Duration, states: StateSelection = None) -> int:
        """Delete finished jobs that finished more than `older_than` ago, now.

        Works in batches of at most 1,000 rows with short pauses between them (like the
        workers' retention), so claims go on meanwhile. Blocking.

        Args:
            older_than: a timedelta or a number of seconds (0: every finished job).
            states: the finished states to delete (JobState values or their names);
                default all four: succeeded, cancelled, dead_lettered, quarantined.

        Returns:
            How many jobs were deleted.

        Raises:
            ValueError: a negative duration, or a state that is not finished.
            TypeError: a duration or state of the wrong type.
        """
        age = to_timedelta(older_than, "older_than", allow_zero=True)
        chosen = purgeable_states(states)
        return purge_finished(self.store, chosen, self.clock.now() - age)

    # -- Queue controls -------------------------------------------------------------------

    def pause_queue(self, queue: str) -> None:
        """Pause a Queue, cluster-wide: from their next claim on, no worker on this store
        takes its jobs (Strict goes on to the next Queue; Weighted finds it empty).
        Jobs already leased finish normally. The Queue need not have jobs yet.

        Raises:
            ValueError, TypeError: if `queue` breaks the Queue name rule of enqueue.
        """
        self.store.pause_queue(validate_queue_name(queue))

    def resume_queue(self, queue: str) -> None:
        """Undo `pause_queue`: workers take the Queue's jobs again at their next claim.

        Raises:
            ValueError, TypeError: if `queue` breaks the Queue name rule of enqueue.
        """
        self.store.resume_queue(validate_queue_name(queue))
        self._notify_enqueued((queue,))  # its jobs may be claimed again: look at once

    def set_queue_limit(self, queue: str, limit: int | None) -> None:
        """At most `limit` jobs of `queue` leased at once, all workers on this store
        together; None removes the limit (the default). The store enforces it inside the
        claim, atomically. A limit below the number leased now takes nothing until
        enough of them finish; 0 takes nothing (like a pause).

        Raises:
            TypeError: if `limit` is not an int or None (True/False are refused too).
            ValueError: if `limit` < 0, or `queue` breaks the Queue name rule.
        """
        checked = validate_queue_limit(limit)
        self.store.set_queue_limit(validate_queue_name(queue), checked)
        self._notify_enqueued((queue,))  # a higher limit may leave room: look at once

    def queues(self) -> list[QueueInfo]:
        """Every Queue that has jobs or settings, sorted by name, as `rota.QueueInfo`:
        paused, limit, jobs per state (every state present), jobs due now and the due
        time of the longest-waiting one, at the App clock's current time."""
        return self.store.queue_infos(self.clock.now())

    # -- Worker Groups ------------------------------------------------------------------

    def add_worker_group(self, options: WorkerGroupOptions) -> None:
        """Add a Worker Group. Its policy is validated when the group starts.

        Raises:
            ValueError: if a group with that name was already added.
        """
        if not isinstance(options, WorkerGroupOptions):
            raise TypeError(f"add_worker_group takes rota.WorkerGroupOptions; got {options!r}")
        if any(existing.name == options.name for existing in self._group_options):
            raise ValueError(
                f"a Worker Group named {options.name!r} already exists; group names must be "
                "unique within an App"
            )
        self._group_options.append(options)

    @property
    def worker_groups(self) -> list[WorkerGroupOptions]:
        return list(self._group_options)

    def _start_groups(self, names: Iterable[str] | None = None) -> list[GroupRunner]:
        """The runners of the selected groups, started (policy validated) on first use.

        A group's dispatch state lives as long as the App, across calls.
        """
        if not self._group_options:
            raise RuntimeError(
                "this App has no Worker Group; add one with app.add_worker_group("
                "rota.WorkerGroupOptions(name=..., policy=...))"
            )
        if isinstance(names, str):
            raise TypeError(f"groups must be a list of group names, not the str {names!r}")
        names = None if names is None else set(names)
        if names is not None and not names:
            raise ValueError("groups selects no Worker Group; pass None to run them all")
        selected = [o for o in self._group_options if names is None or o.name in names]
        if names is not None:
            missing = names - {o.name for o in self._group_options}
            if missing:
                known = ", ".join(o.name for o in self._group_options)
                raise ValueError(f"no Worker Group named {sorted(missing)}; this App has: {known}")
        runners: list[GroupRunner] = []
        for options in selected:
            runner = self._runners.get(options.name)
            if runner is None:
                runner = GroupRunner(options)
                self._runners[options.name] = runner
            runners.append(runner)
        return runners

    def _retry_policy_for(self, job: JobRecord) -> RetryPolicy:
        """The RetryPolicy of an expired lease's job: its own, else that of the first
        started group serving its Queue, else the default."""
        group_policy = next(
            (runner.options.retry for runner in self._runners.values()
             if job.queue in runner.options.policy.queues),
            RetryPolicy(),
        )
        return retry_policy(self._handlers.get(job.name), group_policy)

    # -- the deterministic drive ----------------------------------------------------------

    def run_until_idle(self) -> int:
        """Run every Worker Group inline until a whole round claims nothing.

        Groups run in registration order, pass after pass, at the clock's current time,
        which is never advanced. Each pass claims into the group's free capacity
        (pool_size, capped by max_claim_batch), runs the claimed jobs one after another in
        dispatch order and records their outcomes. Expired leases are swept first.

        Returns:
            The number of job executions.

        Raises:
            ValueError: if a group's policy is invalid (raised as the group starts).
            RuntimeError: if called from a running event loop; use run_until_idle_async.
        """
        if _loop_is_running():
            raise RuntimeError(
                "run_until_idle() was called inside a running event loop; "
                "use `await app.run_until_idle_async()` there"
            )
        return asyncio.run(self.run_until_idle_async())

    async def run_until_idle_async(self) -> int:
        """`run_until_idle` from async code: async handlers are awaited on this loop, sync
        handlers run inline (blocking it, on purpose: this drive is for tests)."""
        runners = self._start_groups()
        names = {runner.name for runner in runners}
        self._take_groups(names)
        try:
            self._fire_schedules_inline()
            return await self._drain_inline(runners)
        finally:
            self._running -= names

    async def _drain_inline(self, runners: list[GroupRunner]) -> int:
        executions = 0
        while True:
            now = self.clock.now()
            sweep_expired_leases(self.store, now, self._retry_policy_for)
            claimed_any = False
            for runner in runners:
                now = self.clock.now()
                plan, jobs = runner.claim_pass(self.store, runner.options.claim_capacity, now,
                                               raise_errors=True)
                claimed_any = claimed_any or bool(jobs)
                executions += await self._run_inline(runner, plan, jobs)
            # Idle only after a round that claimed nothing and after which no group has
            # to probe the Queues it holds for empty (rota.core.dispatch.memory).
            if not claimed_any and not any(runner.probe_pending for runner in runners):
                return executions

    async def _run_inline(
        self, runner: GroupRunner, plan: PassPlan[JobRecord], jobs: list[JobRecord]
    ) -> int:
        """Run one pass's jobs one after another in dispatch order and record each outcome.
        If anything raises (a store call, KeyboardInterrupt, cancellation), the jobs not
        run yet are handed back (attempt not counted) and the exception propagates."""
        tracing = Tracing.active()
        index = 0
        try:
            for index, job in enumerate(jobs):
                plan.serve()
                started_at = self.clock.now()
                if tracing is None:
                    outcome = await execute(job, self._handlers, runner, self.clock)
                else:
                    with tracing.attempt(job, runner.name) as span:
                        outcome = await execute(job, self._handlers, runner, self.clock)
                        tracing.record(span, outcome)
                finished_at = self.clock.now()
                index += 1  # this one ran: from here on, only the rest goes back
                record_outcome(self.store, job, outcome, finished_at, runner.name)
                if self._outcome_callbacks:
                    emit(self._outcome_callbacks, outcome_event(
                        job, runner.name, outcome, started_at, finished_at))
        except BaseException:
            if jobs[index:]:
                self.store.release([j.lease for j in jobs[index:]], self.clock.now())
            raise
        return len(jobs)

    # -- the real-time runtime ------------------------------------------------------------

    def _runtime(self, runners: list[GroupRunner], grace: Duration | None) -> Runtime:
        grace_s = None if grace is None else to_timedelta(grace, "grace", allow_zero=True)
        return Runtime(
            store=self.store, clock=self.clock, runners=runners, handlers=self._handlers,
            retry_for=self._retry_policy_for, outcome_callbacks=self._outcome_callbacks,
            grace_s=None if grace_s is None else grace_s.total_seconds(),
            duties=[*self._duties(), *self._start_duties(runners)],
            observers=self._runtime_observers,
        )

    def _duties(self) -> list[Duty]:
        """The housekeeping tasks a real-time runtime runs beside the groups.

        `run_until_idle()` runs none of them: retention deletes by the clock, and that
        deterministic drive must not delete the records a test is about to read after
        advancing a VirtualClock; `app.purge(...)` deletes on demand."""
        duties: list[Duty] = []
        if self.retention is not None and not self.retention.keeps_everything:
            duties.append(RetentionDuty(self.retention, self.store, self.clock))
        if (checkpoints := wal_checkpoint_duty(self.store)) is not None:
            duties.append(checkpoints)
        if self._schedules:
            duties.append(ScheduleDuty(list(self._schedules.values()),
                                       self._schedule_store(), self.clock))
        duties.append(RegistryDuty(self.store))
        return duties

    # -- first-day checks (issue 10) -------------------------------------------------------

    def _start_duties(self, runners: list[GroupRunner]) -> list[Duty]:
        """One-shot checks a real-time worker runs as it starts: warn about Queues with
        due jobs that none of its groups serves (rota.worker.unserved)."""
        return [unserved_queues_duty([runner.options for runner in runners], self.clock)]

    @contextlib.asynccontextmanager
    async def serve(
        self, groups: Iterable[str] | None = None, *, grace: Duration | None = None
    ) -> AsyncIterator[Runtime]:
        """Run Worker Groups in the background of the running event loop.

        `async with app.serve(): ...` starts the groups (each validates its policy as it
        starts), runs them while the body runs, and on leaving stops gracefully: no new
        claims, running jobs get the grace period, the rest are handed back.

        Args:
            groups: names of the groups to run; default all.
            grace: overrides every group's `grace_period` (timedelta or seconds).

        Yields:
            The `Runtime` (`await runtime.stop()` stops it early).

        Raises:
            ValueError: if a group's policy is invalid or a group name is unknown.
            RuntimeError: if the App has no Worker Group.
        """
        runners = self._start_groups(groups)
        names = {runner.name for runner in runners}
        self._take_groups(names)
        try:
            runtime = self._runtime(runners, grace)
            await runtime.start()
            self._enqueue_listeners = (*self._enqueue_listeners, runtime.hint)
            try:
                yield runtime
            finally:
                self._enqueue_listeners = tuple(
                    listener for listener in self._enqueue_listeners
                    if listener != runtime.hint
                )
                await runtime.stop()
        finally:
            self._running -= names

    def _take_groups(self, names: set[str]) -> None:
        """Mark groups as running; a group's dispatch state serves one drive at a time."""
        busy = names & self._running
        if busy:
            raise RuntimeError(
                f"Worker Group(s) {', '.join(sorted(busy))} are already running in this App "
                "(serve, run or run_until_idle); a group runs in one place at a time"
            )
        self._running |= names

    def run(self, groups: Iterable[str] | None = None, *, grace: Duration | None = None) -> None:
        """Run Worker Groups until SIGINT or SIGTERM, then stop gracefully. Blocking.

        The first signal stops claiming at once, lets running jobs finish within the grace
        period and hands the rest back to their Queues; `run` then returns. A second signal
        exits at once: `SystemExit(128 + signal number)` is raised, nothing is handed back,
        and the leases expire so the jobs run again elsewhere. Call it from the main thread.

        Args:
            groups: names of the groups to run; default all.
            grace: overrides every group's `grace_period` (timedelta or seconds).

        Raises:
            ValueError: if a group's policy is invalid or a group name is unknown.
            RuntimeError: if the App has no Worker Group, if called from a running event
                loop (use `serve`), or from a thread other than the main thread.
        """
        if _loop_is_running():
            raise RuntimeError(
                "app.run() was called inside a running event loop; use "
                "`async with app.serve(): ...` there"
            )
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "app.run() needs the main thread to receive SIGINT/SIGTERM; from another "
                "thread use `async with app.serve(): ...` in an event loop"
            )
        runners = self._start_groups(groups)  # validate before anything runs
        asyncio.run(self._run_until_signal(runners, grace))

    async def _run_until_signal(self, runners: list[GroupRunner], grace: Duration | None) -> None:
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
            async with self.serve([r.name for r in runners], grace=grace) as runtime:
                logger.info("worker started: groups %s on %s; SIGINT/SIGTERM stops it",
                            ", ".join(r.name for r in runners), store_location(self.store))
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

    # -- Schedules (branch schedules) -------------------------------------------------------

    def schedule(
        self, name: str, job: JobDefinition[Any, Any] | str, *, cron: str | None = None,
        every: Duration | None = None, timezone: str = "UTC", args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None, queue: str | None = None,
    ) -> Schedule:
        """Enqueue `job` periodically: once per fire instant of the rule, however many
        worker processes and machines run this App (the store enforces it).

        The job is due at the instant it fires for, so a late fire still runs as "the
        03:00 report". Workers fire schedules (`rota worker`, `app.run`, `app.serve`), and
        so does `run_until_idle()` at the clock's time. A schedule fires only for instants
        after it was first registered in the store (by the first worker, or
        `run_until_idle()`, that ran with it); after a downtime only the most recent
        missed instant fires. Changes to the rule or the arguments take effect when a
        worker with the new code starts (the last App to register a schedule owns it);
        a schedule removed from the code stops firing (its row stays in the store, inert).
        This call stores nothing; bad input fails here. See docs/schedules.md.

        Args:
            name: the schedule's name, unique in this App (1-200 printable characters).
            job: the job definition (`@app.job`) of this App to enqueue, or its name.
            cron: a 5-field cron expression ("0 3 * * *") or an alias (@yearly,
                @annually, @monthly, @weekly, @daily, @midnight, @hourly), read in
                `timezone`. Daylight-saving time as in Debian's cron: a skipped local time
                fires once at the next valid instant, a repeated one fires once.
            every: an interval (timedelta or seconds, at least 1 s), instead of `cron`:
                the instants are whole multiples of it since 1970-01-01T00:00Z.
            timezone: an IANA time zone name for `cron` (default "UTC").
            args: the job's positional arguments (JSON values), checked now.
            kwargs: the job's keyword arguments (JSON values), checked now.
            queue: the Queue to enqueue into; default the job's own Queue.

        Returns:
            The checked `Schedule` (a value: name, rule, job name, Queue, arguments).

        Raises:
            ValueError: bad cron text, an unknown time zone, both or neither of `cron` and
                `every`, a name already used in this App, a bad name or Queue name, an
                interval under a second, or `timezone` with `every`.
            TypeError: a job that is not one of this App's, arguments that are not JSON or
                do not fit the handler's signature, or a store without schedules.
        """
        validate_schedule_name(name)
        definition = self._scheduled_job(job)
        rule = build_rule(cron, every, timezone)
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        schedule = build_schedule(
            name, definition.name, definition.queue if queue is None else queue, rule,
            args, kwargs, self.max_payload_bytes,
        )
        if schedule.name in self._schedules:
            raise ValueError(
                f"a schedule named {schedule.name!r} already exists in this App; give each "
                "schedule its own name"
            )
        if isinstance(args, Sequence) and isinstance(kwargs, Mapping):
            check_arguments_fit(definition.func, definition.name, args, kwargs)
        self._schedule_store()  # a store without schedules fails here, not in a worker
        self._schedules[schedule.name] = schedule
        return schedule

    def _scheduled_job(self, job: object) -> JobDefinition[Any, Any]:
        if isinstance(job, str):
            found = self._definitions.get(job)
            if found is None:
                raise ValueError(
                    f"no job named {job!r} in this App; register it with @app.job first"
                )
            return found
        if isinstance(job, JobDefinition):
            if job.app is not self or self._definitions.get(job.name) is not job:
                raise ValueError(
                    f"job {job.name!r} belongs to another App; schedule this App's jobs"
                )
            return job
        raise TypeError(
            f"schedule() takes a job defined with @app.job (or its name); got {job!r}"
        )

    def _schedule_store(self) -> ScheduleStore:
        if not isinstance(self.store, ScheduleStore):
            raise TypeError(
                f"the store {self.store.url!r} does not keep schedules (it lacks "
                "register_schedules, fire_schedule and list_schedules); use a memory://, "
                "sqlite:/// or postgresql:// store"
            )
        return self.store

    @property
    def schedules(self) -> dict[str, Schedule]:
        """The App's schedules by name."""
        return dict(self._schedules)

    def _fire_schedules_inline(self) -> None:
        """`run_until_idle`: register (each schedule once per App), then fire what is due
        at the clock's time. Jobs it enqueues are due at their instants, so the passes that
        follow run them."""
        if not self._schedules:
            return
        store = self._schedule_store()
        schedules = list(self._schedules.values())
        new = [s for s in schedules if s.name not in self._registered_schedules]
        if new:
            store.register_schedules([s.registration() for s in new], self.clock.now())
            self._registered_schedules.update(s.name for s in new)
        fired = fire_due_now(store, schedules, self.clock.now())
        self._notify_enqueued(s.queue for s, outcome in fired if outcome.fired)

    # -- observability --------------------------------------------------------------------

    def on_outcome(
        self, callback: Callable[[OutcomeEvent], object]
    ) -> Callable[[OutcomeEvent], object]:
        """Call `callback(event)` after every job attempt, for metrics and monitoring.

        The event (`rota.OutcomeEvent`) carries the job id, name, Queue, group, attempt,
        outcome kind, start and finish times (`duration`) and the error. Callbacks run on
        the worker's event loop (or the caller's thread under `run_until_idle`): keep them
        quick and non-blocking. One that raises is logged and ignored. Usable as a
        decorator; register callbacks before starting the worker.

        Returns:
            `callback`, unchanged.
        """
        if not callable(callback):
            raise TypeError(f"on_outcome takes a callable(event); got {callback!r}")
        self._outcome_callbacks = (*self._outcome_callbacks, callback)
        return callback

    # -- worker registry (branch registry) -----------------------------------------------

    def workers(self) -> list[WorkerInfo]:
        """Every worker process registered in the store, as `rota.WorkerInfo` (host, pid,
        version, groups with policy, pool size and jobs in flight, served counters), by
        start time. A worker not refreshed for a few lease periods is listed with
        `alive` False (killed, or cut off from the store) until it is removed an hour
        later; a worker that stopped gracefully is gone at once."""
        return self.store.list_workers(self.clock.now())

    def served(self, since: datetime | None = None) -> list[ServedCount]:
        """Jobs served per minute, Worker Group, Queue and outcome (`rota.ServedCount`,
        `minute` set), from the store's history: it outlives the workers (kept 24 hours).

        Args:
            since: the first minute wanted (aware datetime); default: the last hour.
        """
        if since is None:
            since = self.clock.now() - timedelta(hours=1)
        elif not isinstance(since, datetime) or since.tzinfo is None:
            raise TypeError(f"since must be a timezone-aware datetime; got {since!r}")
        return self.store.served_counts(since)

    def fairness(self, window: Duration = 600) -> list[GroupFairness]:
        """Per Worker Group, the served share of each Queue against its target share
        (weight / sum of weights) over the last `window` (default 10 minutes), as
        `rota.GroupFairness`. Read from the store's history, so it covers every worker on
        the store, and still answers after they all stopped.

        The window is whole minutes: it starts at the minute boundary at or before
        now - `window`, and includes the minute in progress.

        Raises:
            ValueError, TypeError: for a window that is not a positive duration.
        """
        span = to_timedelta(window, "window")
        now = self.clock.now()
        since = minute_of(now - span)
        return fairness(
            self.store.worker_groups(), self.store.list_workers(now),
            self.store.served_counts(since), since,
        )

    def _observe_runtimes(self, observer: RuntimeObserver) -> None:
        """Tell `observer` about every real-time runtime this App starts from now on
        (`rota.metrics.serve_metrics` uses it; register before starting the worker)."""
        self._runtime_observers = (*self._runtime_observers, observer)

    def _notify_enqueued(self, queues: Iterable[str]) -> None:
        """Jobs were enqueued through this App: wake the running groups serving them, and
        have the groups that hold one of these Queues for empty probe it again."""
        listeners = self._enqueue_listeners
        runners = self._runners.values()
        if listeners or runners:
            for queue in set(queues):
                for runner in runners:
                    runner.note_work(queue)
                for listener in listeners:
                    listener(queue)

    def close(self) -> None:
        """Close the store's connections."""
        self.store.close()
