"""The App: the user's entry object, a facade over the modules that do the work.

`App` holds what one application is made of: its store and clock, its job handlers and
definitions, its Worker Groups (rota.app.groups), its schedules (rota.app.schedules) and
its outcome callbacks. Each public method checks its arguments and hands the work to the
module of its concern: the inline drive `run_until_idle` (rota.app.inline), the real-time
`serve` and `run` (rota.app.realtime, over rota.worker.runtime), the reads of what the
workers did (rota.app.status), the waits for jobs to finish (rota.app.waiting), the store
for everything else. The public methods keep their documentation here: it is the API
reference (docs/reference.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar, overload

from rota.app.definition import JobDefinition
from rota.app.groups import WorkerGroups, policy_in_force, set_group_policy
from rota.app.inline import InlineDrive, check_max_executions
from rota.app.jobs import JobRegistry, checked_job_options
from rota.app.realtime import build_runtime, run_until_signal, worker_duties
from rota.app.schedules import AppSchedules
from rota.app.settings import (
    DEFAULT_RETENTION,
    FROM_ENVIRONMENT,
    _FromEnvironment,
    checked_max_payload_bytes,
    checked_retention,
    checked_store,
    opened,
)
from rota.app.settings import store_location as store_location  # named as rota.app's too
from rota.app.status import Health, check_health, fairness_over, served_since
from rota.app.waiting import JobWaiters, timeout_seconds
from rota.core.clock import Clock
from rota.core.durations import Duration, to_timedelta
from rota.core.families import is_family, validate_entry
from rota.core.groups import WorkerGroupOptions
from rota.core.job_filters import job_filter
from rota.core.jobs import DEFAULT_MAX_PAYLOAD_BYTES, MAX_JOB_ID, JobRecord, JobState
from rota.core.policy import DispatchPolicy, served_queues
from rota.core.queue_controls import QueueInfo, validate_queue_limit
from rota.core.queues import DEFAULT_QUEUE
from rota.core.rates import validate_rate
from rota.core.retention import Retention, StateSelection, purgeable_states
from rota.core.retry import RetryPolicy
from rota.core.schedules import Schedule, ScheduleInfo
from rota.core.workers import GroupFairness, ServedCount, WorkerInfo
from rota.store import Store, bulk, store_clock_for
from rota.store.bulk import refuse_empty
from rota.worker.events import OutcomeCallback, OutcomeEvent
from rota.worker.group import GroupRunner
from rota.worker.hooks import AttemptHook
from rota.worker.policies import follow_stored_policies
from rota.worker.retention import purge_finished
from rota.worker.runtime import Runtime, RuntimeObserver

P = ParamSpec("P")
R = TypeVar("R")


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
        clock: where "now" comes from; `rota.VirtualClock(start)` in tests. Default (and
            for a `rota.SystemClock`): the store's clock, as this machine's clock corrected
            by its measured offset to the store's (on PostgreSQL, the database server's;
            on SQLite and memory stores, this machine's own).
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
        checked = checked_store(store)
        self.max_payload_bytes = checked_max_payload_bytes(max_payload_bytes)
        self.retention = checked_retention(retention)
        self.store: Store = opened(checked)
        self.clock: Clock = store_clock_for(self.store, clock)
        self._jobs = JobRegistry()
        self._handlers = self._jobs.handlers  # the drives read it as jobs run
        self._definitions = self._jobs.definitions
        self._groups = WorkerGroups()
        # Replaced, never mutated, so enqueuing threads may iterate it without a lock.
        self._outcome_callbacks: tuple[OutcomeCallback, ...] = ()
        self._schedules = AppSchedules(self._definitions)
        # Told of every real-time runtime's start, stop and claims (rota.metrics).
        self._runtime_observers: tuple[RuntimeObserver, ...] = ()
        # Internal attempt hooks for both drives (rota.worker.hooks; `_hook_attempts`).
        self._attempt_hooks: tuple[AttemptHook, ...] = ()
        self._waiters = JobWaiters(self.store)  # no thread until the first wait

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
        limit = checked_job_options(queue, retry, timeout, unknown)
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
        return self._jobs.register(func, name, queue, retry, timeout, host=self,
                                   on_enqueued=self._notify_enqueued)

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

    def wait(self, job_id: int, timeout: Duration | None = None) -> JobRecord:
        """Wait until job `job_id` is in a finished state (succeeded, dead_lettered,
        quarantined or cancelled); return its record (`result`, `last_error`, ...).

        Any worker's finish wakes it, in this process or another: the store tells the App
        (PostgreSQL LISTEN/NOTIFY, SQLite's wake-ups, in memory at once); it does not poll.
        However many threads wait, the App reads their jobs in one query per wake-up,
        and every 2 seconds anyway. Nothing here runs the job: with no worker serving its
        Queue (or in a test that drives jobs with `run_until_idle`, which this thread
        cannot call while it waits) it waits until the timeout. The timeout is real time,
        monotonic seconds, also on an App with a `rota.VirtualClock`, which waiting never
        advances. A job that finishes and is requeued before the App reads it is waited
        for again.

        Args:
            job_id: the job's id (what `enqueue` returned).
            timeout: the most to wait (a timedelta or seconds; 0 reads once). None, the
                default: no limit.

        Raises:
            TypeError: if `job_id` is not an int, or `timeout` is not a duration.
            ValueError: if there is no job `job_id`, or `timeout` is negative.
            TimeoutError: if the job has not finished within `timeout`; the message
                names the job, its state and the timeout.
            LookupError: if the job was deleted while waited for (purged by retention).
        """
        checked, timeout_s = self._waited(job_id, timeout)
        return self._waiters.wait(checked, timeout_s)

    async def wait_async(self, job_id: int, timeout: Duration | None = None) -> JobRecord:
        """`wait` for async code: awaits on the event loop without blocking it (no thread
        is parked per wait; the store reads run in the default executor). Same arguments,
        result and errors."""
        checked, timeout_s = self._waited(job_id, timeout)
        return await self._waiters.wait_async(checked, timeout_s)

    @staticmethod
    def _waited(job_id: object, timeout: Duration | None) -> tuple[int, float | None]:
        checked = _job_id(job_id)
        timeout_s = timeout_seconds(timeout)
        if checked is None:
            raise ValueError(f"there is no job {job_id} to wait for")
        return checked, timeout_s

    def cancel(self, job_id: int) -> bool:
        """Cancel a job. A scheduled job is cancelled at once and never runs. A running
        (leased) job gets a cancel request, which its worker receives within about a
        second: an async handler is cancelled; a sync handler sees
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
        its Queue, attempt 0, due now: a fresh run, its `last_error` and `last_traceback`
        cleared with its attempts (read them before requeueing to keep them).

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

    def find_jobs(
        self, *, queue: str | None = None, state: JobState | str | None = None,
        name: str | None = None, meta: Mapping[str, Any] | None = None, limit: int = 100,
        newest: bool = True,
    ) -> list[JobRecord]:
        """The jobs matching every filter given (None: any), newest first by job id
        (`newest=False`: oldest first), at most `limit`.

        Args:
            queue: only jobs of this Queue.
            state: only jobs in this state (a `rota.JobState` or its name).
            name: only jobs of this job name.
            meta: only jobs whose meta (`configure(meta=...)`) holds every key given with
                an equal JSON value: `{"order": 42}` matches 42 (and 42.0), not "42" nor
                true; a list or an object matches only an equal one. Indexed on
                PostgreSQL; a scan of the other filters' jobs on SQLite.
            limit: the most jobs returned (0: none).

        Raises:
            ValueError: a state that is not one (naming the states), a negative limit.
            TypeError: meta that is not a dict of JSON values with str keys; a Queue or
                job name that is not a str.
        """
        selected = job_filter(queue, state, name, meta)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an int >= 0; got {limit!r}")
        return self.store.find_jobs(queue=selected.queue, state=selected.state,
                                    name=selected.name, meta=selected.meta, limit=limit,
                                    newest=bool(newest))

    def cancel_jobs(
        self, *, queue: str | None = None, state: JobState | str | None = None,
        name: str | None = None, meta: Mapping[str, Any] | None = None,
        everything: bool = False,
    ) -> int:
        """Cancel every job the filters select (those of `find_jobs`), as `cancel` does
        each: waiting and scheduled jobs at once (with the children that were to run only
        after them), leased ones on request. Finished jobs are left alone. Works a page
        of 500 jobs at a time, one store call per job, so it never holds the store for
        long; jobs enqueued meanwhile may or may not be reached.

        Args:
            everything: with no filter at all, True cancels every job; without it, no
                filter is a ValueError (a forgotten filter never empties a store).

        Returns:
            How many jobs were cancelled or got a cancel request (a running job whose
            cancel was already requested is not counted again).

        Raises:
            ValueError: no filter without `everything=True`; an unknown state.
            TypeError: as `find_jobs`.
        """
        selected = job_filter(queue, state, name, meta)
        refuse_empty(selected, everything, "cancel_jobs")
        return bulk.cancel_jobs(self.store, selected, self.clock.now()).count

    def requeue_jobs(
        self, *, queue: str | None = None, state: JobState | str | None = None,
        name: str | None = None, meta: Mapping[str, Any] | None = None,
        everything: bool = False,
    ) -> int:
        """Requeue every dead_lettered, quarantined or cancelled job the filters select
        (those of `find_jobs`), as `requeue` does each: scheduled, attempt 0, due now.
        Succeeded and unfinished jobs are left alone; of jobs sharing a unique key, only
        one comes back while the key is free. A page of 500 jobs at a time.

        Args:
            everything: with no filter at all, True requeues every such job; without it,
                no filter is a ValueError.

        Returns:
            How many jobs were requeued.

        Raises:
            ValueError: no filter without `everything=True`; an unknown state.
            TypeError: as `find_jobs`.
        """
        selected = job_filter(queue, state, name, meta)
        refuse_empty(selected, everything, "requeue_jobs")
        result = bulk.requeue_jobs(self.store, selected, self.clock.now())
        if result.queues:
            self._notify_enqueued(result.queues)
        return result.count

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
        Jobs already leased finish normally. The Queue need not have jobs yet. A family
        (`"tenant-*"`) pauses every Queue it holds, whatever their own settings.

        Raises:
            ValueError, TypeError: if `queue` breaks the Queue name rule of enqueue and is
                no family.
        """
        self.store.pause_queue(validate_entry(queue))

    def resume_queue(self, queue: str) -> None:
        """Undo `pause_queue` (of a Queue or a family): workers take the Queue's jobs again
        at their next claim.

        Raises:
            ValueError, TypeError: if `queue` breaks the Queue name rule of enqueue and is
                no family.
        """
        self.store.resume_queue(validate_entry(queue))
        self._notify_enqueued((queue,))  # its jobs may be claimed again: look at once

    def set_queue_limit(self, queue: str, limit: int | None) -> None:
        """At most `limit` jobs of `queue` leased at once, all workers on this store
        together; None removes the limit (the default). The store enforces it inside the
        claim, atomically. A limit below the number leased now takes nothing until
        enough of them finish; 0 takes nothing (like a pause). A limit is a whole number
        from 0 to 2**31 - 1 (2147483647), the range of every numeric Queue and Worker
        Group setting, checked here before any store sees it. A family's limit (`"tenant-*"`)
        bounds each of its Queues on its own, those without a limit of their own.

        Raises:
            TypeError: if `limit` is not an int or None (True/False are refused too).
            ValueError: if `limit` is outside 0 to 2147483647 (the message names the
                range), or `queue` breaks the Queue name rule.
        """
        checked = validate_queue_limit(limit)
        self.store.set_queue_limit(validate_entry(queue), checked)
        self._notify_enqueued((queue,))  # a higher limit may leave room: look at once

    def set_queue_rate(self, queue: str, jobs: int | None, per: Duration | None = None,
                       burst: int | None = None) -> None:
        """At most `burst + jobs * T / per` jobs of `queue` claimed over any interval T, all
        workers on this store together (a token bucket of `burst` tokens, refilled at
        `jobs` per `per`, one taken per job claimed); `set_queue_rate(queue, None)`
        removes the rate (the default). The store enforces it inside the claim,
        atomically, together with the concurrency limit. A new rate starts with a full
        bucket. A Queue out of tokens is found empty for the pass (its slots go to other
        Queues); idle workers wake when its next token is due.

        Args:
            queue: the Queue's name (it need not have jobs yet), or a family
                (`"tenant-*"`): each of its Queues without a rate of its own gets it, each
                with its own bucket.
            jobs: tokens per `per`, a whole number from 1 to 2147483647; None: no rate.
            per: the period, a `timedelta` or a number of seconds (required with `jobs`).
            burst: the bucket's size, from 1 to 2147483647; None: `jobs`.

        Raises:
            TypeError: if `jobs` or `burst` is not an int (or None), or `per` is not a
                duration.
            ValueError: if a number is out of range, `per` is not positive, `per` or
                `burst` is given without `jobs`, or `queue` breaks the Queue name rule.
        """
        if jobs is None:
            if per is not None or burst is not None:
                raise ValueError(
                    "set_queue_rate(queue, None) removes the rate and takes no per or burst; "
                    "give jobs too to set one")
            rate = None
        elif per is None:
            raise ValueError(
                f"a rate of {jobs} jobs needs its period: set_queue_rate({queue!r}, {jobs}, "
                "per=timedelta(minutes=1))")
        else:
            rate = validate_rate(jobs, per, burst)
        self.store.set_queue_rate(validate_entry(queue), rate)
        self._notify_enqueued((queue,))  # a full bucket, or no rate, may leave room

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
        self._groups.add(options)

    @property
    def worker_groups(self) -> list[WorkerGroupOptions]:
        return list(self._groups.options)

    def set_group_policy(self, group: str, policy: DispatchPolicy | None, *,
                         force: bool = False) -> None:
        """Change Worker Group `group`'s Dispatch Policy while it runs, cluster-wide: the
        policy is stored, and every worker running the group switches to it at its next
        pass (a pass already running finishes under the old one), without a restart.
        None goes back to the policy in the code. Any App on the store may set it, also
        one that does not define the group.

        Queues in both policies keep their credits; a Queue new to the policy starts as
        a Queue returning from idle (its catch-up stays bounded); a dropped Queue's
        leased jobs finish. The whole policy is one store write, however many Queues
        (10,000 tenants is an ordinary case). A worker that cannot use a stored policy
        keeps the one it runs and logs why.

        The group must be known: this App defines it, a worker registered it (the
        store's registry), or a policy is stored for it. `force=True` skips that check,
        for a group whose workers have not started yet; a mistyped name would otherwise
        be stored and serve nothing.

        Raises:
            TypeError: if `policy` is not a DispatchPolicy or None, or the store keeps
                no group policies.
            ValueError: the error a group's start raises for that policy (the exact
                message; the group and what is at fault in its cause; a weight outside 1
                to 2147483647), an invalid group name, or a group not known (without
                `force`; the message names the known groups). Nothing is stored then.
        """
        set_group_policy(self.store, self._groups, group, policy, self.clock.now(),
                         force=force)

    def group_policy(self, group: str) -> DispatchPolicy:
        """The Dispatch Policy in force for Worker Group `group`: the one stored with
        `set_group_policy`, else the one in this App's code.

        Raises:
            ValueError: if none is stored and this App does not define the group, or
                the group name is invalid.
            TypeError: if the store keeps no group policies.
        """
        return policy_in_force(self.store, self._groups.code_policy(group), group).policy

    def served_queues(self, group: str) -> list[tuple[str, int | None]]:
        """The Queues Worker Group `group` serves now, with their weights (None under
        Strict), in tie-break order: the explicit Queues of its policy in force
        (`group_policy`) and the members of its families that the store knows (Queues
        with any job or a setting), each member with its family's weight.

        Raises:
            ValueError: as `group_policy`.
            TypeError: if the store keeps no group policies.
        """
        policy = self.group_policy(group)
        known = ([info.name for info in self.store.queue_infos(self.clock.now())]
                 if any(is_family(entry) for entry in policy.queues) else [])
        return served_queues(policy, known)

    def _start_groups(self, names: Iterable[str] | None = None) -> list[GroupRunner]:
        """The runners of the selected groups, started (policy validated) on first use.
        A group's dispatch state lives as long as the App, across calls."""
        return self._groups.start(names)

    def _retry_policy_for(self, job: JobRecord) -> RetryPolicy:
        """The RetryPolicy of an expired lease's job (rota.app.groups)."""
        return self._groups.retry_policy_for(job, self._handlers.get(job.name))

    # -- the deterministic drive ----------------------------------------------------------

    def run_until_idle(self, max_executions: int | None = None) -> int:
        """Run every Worker Group inline until a whole round claims nothing.

        Groups run in registration order, pass after pass, at the clock's current time,
        which is never advanced. Each pass claims into the group's free capacity
        (pool_size, capped by max_claim_batch), runs the claimed jobs one after another in
        dispatch order and records their outcomes. Expired leases are swept first.

        Args:
            max_executions: stop a workload that never goes idle (a job that enqueues a
                follow-up due now, for ever): once this many jobs ran, a job about to run
                next raises RuntimeError instead, and the jobs its pass claimed but did
                not run are handed back (nothing is lost). None: no bound.

        Returns:
            The number of job executions.

        Raises:
            ValueError: if a group's policy is invalid (raised as the group starts), or
                `max_executions` is negative (TypeError if it is not an int).
            RuntimeError: if called from a running event loop (use run_until_idle_async),
                or past `max_executions`.
        """
        if _loop_is_running():
            raise RuntimeError(
                "run_until_idle() was called inside a running event loop; "
                "use `await app.run_until_idle_async()` there"
            )
        return asyncio.run(self.run_until_idle_async(max_executions))

    async def run_until_idle_async(self, max_executions: int | None = None) -> int:
        """`run_until_idle` from async code: async handlers are awaited on this loop, sync
        handlers run inline (blocking it, on purpose: this drive is for tests)."""
        check_max_executions(max_executions)
        runners = self._groups.start()
        with self._groups.running(runners):
            follow_stored_policies(self.store, runners)
            self._notify_enqueued(self._schedules.fire_inline(self.store, self.clock))
            drive = InlineDrive(self.store, self.clock, self._handlers, self._retry_policy_for,
                                lambda: self._outcome_callbacks, self._attempt_hooks,
                                worker_id=self._groups.inline_worker_id)
            return await drive.drain(runners, max_executions)

    # -- the real-time runtime ------------------------------------------------------------

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
        runners = self._groups.start(groups)
        with self._groups.running(runners):
            follow_stored_policies(self.store, runners)  # the first pass runs them
            runtime = build_runtime(
                store=self.store, clock=self.clock, runners=runners, handlers=self._handlers,
                retry_for=self._retry_policy_for, outcome_callbacks=self._outcome_callbacks,
                grace=grace, observers=self._runtime_observers, hooks=self._attempt_hooks,
                duties=worker_duties(self.store, self.clock, self.retention, self._schedules,
                                     runners),
            )
            await runtime.start()
            try:
                with (self._groups.listening(runtime.hint),
                      self._groups.following_policies(runtime.policies_offered)):
                    yield runtime
            finally:
                await runtime.stop()

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
        runners = self._groups.start(groups)  # validate before anything runs
        asyncio.run(run_until_signal(self.serve, runners, grace, store_location(self.store)))

    # -- schedules ------------------------------------------------------------------------

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
        return self._schedules.define(
            name, job, owner=self, store=self.store,
            max_payload_bytes=self.max_payload_bytes, cron=cron, every=every,
            timezone=timezone, args=args, kwargs=kwargs, queue=queue,
        )

    @property
    def schedules(self) -> dict[str, Schedule]:
        """The App's schedules in code, by name (stored ones: `list_schedules`)."""
        return dict(self._schedules.by_name)

    def set_schedule(
        self, name: str, job_name: JobDefinition[Any, Any] | str, *, cron: str | None = None,
        every: Duration | None = None, timezone: str = "UTC", args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None, queue: str | None = None,
    ) -> None:
        """Store a schedule managed at run time, beside those in code, or replace the
        stored one of that name (its last fire and pause are kept).

        It takes effect without a restart: every worker reads the stored schedules at
        its next poll, and any worker whose App defines `job_name` fires it, once per
        fire instant across all of them (a worker whose App does not define the job logs
        it once and leaves it to the others). It first fires for an instant after this
        call. The same checks as `app.schedule`, and the same arguments; nothing is
        stored when one fails. See docs/schedules.md.

        Raises:
            ValueError: a name of a schedule in this App's code (choose another, or
                `pause_schedule` the code's), a job this App does not define, bad cron
                text, an unknown time zone, both or neither of `cron` and `every`, a bad
                name or Queue name, an interval under a second, or `timezone` with `every`.
            TypeError: arguments that are not JSON or do not fit the handler's signature.
        """
        self._schedules.set_stored(
            name, job_name, owner=self, store=self.store, now=self.clock.now(),
            max_payload_bytes=self.max_payload_bytes, cron=cron, every=every,
            timezone=timezone, args=args, kwargs=kwargs, queue=queue,
        )

    def remove_schedule(self, name: str) -> None:
        """Delete the stored schedule `name`: no worker fires it from its next poll on
        (jobs it enqueued stay).

        Raises:
            KeyError: no stored schedule has that name.
            ValueError: `name` is a schedule in this App's code: remove it from the code
                (or `pause_schedule` it).
        """
        self._schedules.remove_stored(name, self.store)

    def pause_schedule(self, name: str) -> None:
        """Pause the schedule `name`, stored or in this App's code: no worker fires it from
        its next poll on, until `resume_schedule`. The pause is kept in the store, across
        restarts and deploys.

        Raises:
            KeyError: no schedule of that name, in this App's code or stored.
        """
        self._schedules.set_paused(name, True, self.store, self.clock.now())

    def resume_schedule(self, name: str) -> None:
        """Resume a paused schedule: it fires at its next instant after now; the instants
        that passed while it was paused are skipped (resuming one not paused does
        nothing).

        Raises:
            KeyError: no schedule of that name, in this App's code or stored.
        """
        self._schedules.set_paused(name, False, self.store, self.clock.now())

    def list_schedules(self) -> list[ScheduleInfo]:
        """Every schedule, by name: this App's schedules in code and every stored one, each
        with its rule, Queue, pause, next fire and last fire."""
        return self._schedules.infos(self.store, self.clock.now())

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

    # -- the worker registry --------------------------------------------------------------

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
        return served_since(self.store, self.clock, since)

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
        return fairness_over(self.store, self.clock, window)

    def health(self, *, served: bool = True) -> Health:
        """Whether this App can work: its store answers, its schema is current and, with
        `served`, a live worker serves every Queue of the App's Worker Groups (what
        `rota health --app` and the dashboard's `/healthz` answer). Never migrates the
        store: a schema behind is an answer, not a migration.

        Args:
            served: also ask for live workers serving the groups' Queues (an App with
                no group has nothing to serve, so only the store is checked).

        Returns:
            a `rota.Health`: `ok`, and the `problems` when not ok.
        """
        return check_health(self.store, self.clock,
                            self.worker_groups if served else ())

    def _observe_runtimes(self, observer: RuntimeObserver) -> None:
        """Tell `observer` about every real-time runtime this App starts from now on
        (`rota.metrics.serve_metrics` uses it; register before starting the worker)."""
        self._runtime_observers = (*self._runtime_observers, observer)

    def _hook_attempts(self, hook: AttemptHook) -> None:
        """Call `hook` around every job attempt of both drives, `run_until_idle` and the
        real-time runtimes started from now on (rota.worker.hooks; internal: register
        before starting the worker)."""
        self._attempt_hooks = (*self._attempt_hooks, hook)

    def _notify_enqueued(self, queues: Iterable[str]) -> None:
        """Jobs were enqueued through this App: wake the running groups serving them, and
        have the groups that hold one of these Queues for empty probe it again."""
        self._groups.enqueued(queues)

    def close(self) -> None:
        """Close the store's connections (and stop the waits: each raises StoreError)."""
        self._waiters.close()
        self.store.close()
