"""The App: the user's entry object. Registry of jobs + a store + Worker Groups.

`App` wires the layers together: it opens the store, registers job handlers, holds the
Worker Groups, and drives them, either deterministically inline (`run_until_idle`) or in
real time (`run`, `serve`; see `rota.worker.runtime`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

from rota.core.clock import Clock, SystemClock
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome, Succeeded, unknown_job
from rota.core.queues import DEFAULT_QUEUE, validate_queue_name
from rota.core.retry import RetryPolicy
from rota.definition import NO_PRIORITY, JobDefinition
from rota.store import Store, open_store
from rota.worker.group import GroupRunner, Handler, record_outcome, sweep_expired_leases

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_STORE_URL = "sqlite:///rota.db"


class App:
    """A rota application.

    Args:
        store: a store URL (`sqlite:///rota.db`, `postgresql://...`, `memory://`) or a
            `Store` object. Default: `sqlite:///rota.db`, a file in the working directory.
        clock: where "now" comes from; `rota.VirtualClock(start)` in tests. Default: the
            system clock.

    Raises:
        rota.StoreConfigError: if the store URL is malformed or names no known store.
    """

    def __init__(
        self, store: str | Store = DEFAULT_STORE_URL, *, clock: Clock | None = None
    ) -> None:
        self.store: Store = open_store(store) if isinstance(store, str) else store
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._handlers: dict[str, Handler] = {}
        self._definitions: dict[str, JobDefinition[Any, Any]] = {}
        self._group_options: list[WorkerGroupOptions] = []
        self._runners: dict[str, GroupRunner] = {}

    def __repr__(self) -> str:
        return f"App({self.store.url!r})"

    # -- jobs -----------------------------------------------------------------------------

    @overload
    def job(self, name: Callable[P, R], /) -> JobDefinition[P, R]: ...

    @overload
    def job(
        self, name: str | None = None, *, queue: str = DEFAULT_QUEUE,
        retry: RetryPolicy | None = None, **unknown: object,
    ) -> Callable[[Callable[P, R]], JobDefinition[P, R]]: ...

    def job(
        self, name: str | Callable[P, R] | None = None, *, queue: str = DEFAULT_QUEUE,
        retry: RetryPolicy | None = None, **unknown: object,
    ) -> JobDefinition[P, R] | Callable[[Callable[P, R]], JobDefinition[P, R]]:
        """Register a job handler (sync or async def).

        Args:
            name: the job's stable wire name; default `module.qualname` of the function.
            queue: the Queue its jobs go to unless `configure(queue=...)` says otherwise.
            retry: a RetryPolicy overriding the Worker Group's for this job.

        Raises:
            ValueError: for a bad Queue name or a job name already registered.
            TypeError: for an unknown option (rota has no per-job `priority`).
        """
        if "priority" in unknown:
            raise TypeError(NO_PRIORITY)
        if unknown:
            raise TypeError(f"job() got unknown option(s) {sorted(unknown)}; it takes name, "
                            "queue= and retry=")
        validate_queue_name(queue)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a rota.RetryPolicy; got {retry!r}")
        if callable(name):
            return self._register(name, None, queue, retry)
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a job name must be a non-empty str; got {name!r}")

        def decorate(func: Callable[P, R]) -> JobDefinition[P, R]:
            return self._register(func, name, queue, retry)

        return decorate

    def _register(
        self, func: Callable[P, R], name: str | None, queue: str, retry: RetryPolicy | None
    ) -> JobDefinition[P, R]:
        if not callable(func):
            raise TypeError(f"@app.job decorates a function; got {func!r}")
        job_name = name or f"{func.__module__}.{func.__qualname__}"
        if job_name in self._handlers:
            raise ValueError(
                f"job name {job_name!r} is already registered; give each handler its own name"
            )
        definition = JobDefinition(self, job_name, func, queue, retry)
        self._handlers[job_name] = Handler(job_name, func, retry)
        self._definitions[job_name] = definition
        return definition

    @property
    def jobs(self) -> dict[str, JobDefinition[Any, Any]]:
        """The registered job definitions by name."""
        return dict(self._definitions)

    def get_job(self, job_id: int) -> JobRecord | None:
        """The stored record of job `job_id`, or None if there is none."""
        return self.store.get_job(job_id)

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

    def _start_groups(self, names: set[str] | None = None) -> list[GroupRunner]:
        """The runners of the selected groups, started (policy validated) on first use.

        A group's dispatch state lives as long as the App, across calls.
        """
        if not self._group_options:
            raise RuntimeError(
                "this App has no Worker Group; add one with app.add_worker_group("
                "rota.WorkerGroupOptions(name=..., policy=...))"
            )
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

    def _retry_policy_for(self, job: JobRecord, runner: GroupRunner | None = None) -> RetryPolicy:
        handler = self._handlers.get(job.name)
        if handler is not None and handler.retry is not None:
            return handler.retry
        if runner is not None:
            return runner.options.retry
        for candidate in self._runners.values():
            if job.queue in candidate.options.policy.queues:
                return candidate.options.retry
        return RetryPolicy()

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
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run_until_idle_async())
        raise RuntimeError(
            "run_until_idle() was called inside a running event loop; "
            "use `await app.run_until_idle_async()` there"
        )

    async def run_until_idle_async(self) -> int:
        """`run_until_idle` from async code: async handlers are awaited on this loop, sync
        handlers run inline (blocking it, on purpose: this drive is for tests)."""
        runners = self._start_groups()
        executions = 0
        while True:
            now = self.clock.now()
            sweep_expired_leases(self.store, now, self._retry_policy_for)
            claimed_any = False
            for runner in runners:
                now = self.clock.now()
                plan, jobs = runner.claim_pass(self.store, runner.options.claim_capacity, now)
                claimed_any = claimed_any or bool(jobs)
                for job in jobs:
                    plan.serve()
                    outcome = await self._execute_inline(runner, job)
                    record_outcome(self.store, job, outcome, self.clock.now())
                    executions += 1
            if not claimed_any:
                return executions

    async def _execute_inline(self, runner: GroupRunner, job: JobRecord) -> Outcome:
        handler = self._handlers.get(job.name)
        if handler is None:
            return unknown_job(job.name)
        try:
            result = handler.func(*job.args, **job.kwargs)
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            return runner.outcome_of_error(job, handler, error, self.clock.now())
        return Succeeded()

    def close(self) -> None:
        """Close the store's connections."""
        self.store.close()
