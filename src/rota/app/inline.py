"""The inline drive behind `App.run_until_idle`: every group, deterministically, in turn.

Rounds until idle: each round first sweeps expired leases, then gives every group, in
registration order, one pass at the clock's current time (never advanced): a claim into
the group's free capacity, then the claimed jobs run one after another in dispatch order,
each outcome recorded as it is known. Idle means a round that claimed nothing and after
which no group has to probe the Queues it holds for empty (`GroupRunner.probe_pending`,
rota.core.dispatch.memory): a Queue found empty stays held until a probe finds it so.

It is the test drive, so an exception that is not a job's own failure propagates: a
claim's (`raise_errors=True`: the pass hands back what it had claimed first), and
anything raised while a pass's jobs run (a store call, KeyboardInterrupt, a cancellation),
after the jobs not run yet are handed back (attempt not counted). A test must see a broken
store, where a real worker logs, backs off and goes on. No duty runs here and no heartbeat
is sent (docs/decisions/0009). With `max_executions`, a job about to run once that many
ran raises `RuntimeError` instead (the same hand-back first), so a workload that never
goes idle cannot hang a test suite.
Imports the core, the store contract and the worker's shared pieces; no real time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from rota.core.clock import Clock
from rota.core.dispatch import PassPlan
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome
from rota.core.retry import RetryPolicy
from rota.store import Store
from rota.worker.context import CurrentJob, flush_progress
from rota.worker.events import OutcomeCallback
from rota.worker.execution import execute
from rota.worker.group import (
    GroupRunner,
    Handler,
    new_worker_id,
    record_outcome,
    report_expired,
    sweep_expired_leases,
)
from rota.worker.hooks import (
    AttemptHook,
    attempt_hooks,
    call_after,
    call_before,
    call_on_outcome,
)
from rota.worker.progress import InlineProgress
from rota.worker.tracing import Tracing


def check_max_executions(max_executions: object) -> None:
    """`run_until_idle`'s bound: None, or an int of 0 or more."""
    if max_executions is None:
        return
    if not isinstance(max_executions, int) or isinstance(max_executions, bool):
        raise TypeError("max_executions must be a whole number of job executions or None; "
                        f"got {max_executions!r}")
    if max_executions < 0:
        raise ValueError(f"max_executions must be 0 or more; got {max_executions}")


class InlineDrive:
    """Runs started groups inline until idle (see the module docstring).

    Args:
        store: the App's store.
        clock: the App's clock.
        handlers: job name -> handler (the App's, read as jobs run).
        retry_for: the RetryPolicy of an expired lease's job (the sweep's retries).
        outcome_callbacks: the App's current outcome callbacks, read per outcome.
        extra_hooks: attempt hooks besides tracing and the callbacks (rota.worker.hooks).
        worker_id: the drive's worker id, which the jobs it runs record (default: a new one).
    """

    def __init__(
        self, store: Store, clock: Clock, handlers: Mapping[str, Handler],
        retry_for: Callable[[JobRecord], RetryPolicy],
        outcome_callbacks: Callable[[], Sequence[OutcomeCallback]],
        extra_hooks: Sequence[AttemptHook] = (), *, worker_id: str | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.handlers = handlers
        self.retry_for = retry_for
        self.outcome_callbacks = outcome_callbacks
        self.extra_hooks = tuple(extra_hooks)
        self.progress = InlineProgress(store, clock)
        # The drive's own worker id: the `JobRecord.worker` of the jobs it runs.
        self.worker_id = new_worker_id() if worker_id is None else worker_id

    async def drain(self, runners: Sequence[GroupRunner],
                    max_executions: int | None = None) -> int:
        """Round after round until idle; returns the number of job executions."""
        executions = 0
        for runner in runners:
            if not runner.owner.endswith(f"@{self.worker_id}"):
                runner.use_worker_id(self.worker_id)
        while True:
            now = self.clock.now()
            sweep_expired_leases(self.store, now, self.retry_for)
            claimed_any = False
            for runner in runners:
                runner.take_hints()  # before the pass's time is read
                now = self.clock.now()
                plan, jobs = runner.claim_pass(self.store, runner.options.claim_capacity, now,
                                               raise_errors=True)
                if runner.expired:  # ended by the claim, not run: only reported
                    self._report_expired(runner, now)
                claimed_any = claimed_any or bool(jobs) or bool(runner.expired)
                executions += await self._run(runner, plan, jobs, executions, max_executions)
            if not claimed_any and not any(runner.probe_pending for runner in runners):
                return executions

    async def _run(
        self, runner: GroupRunner, plan: PassPlan[JobRecord], jobs: list[JobRecord],
        ran: int, max_executions: int | None,
    ) -> int:
        """Run one pass's jobs one after another in dispatch order and record each outcome
        (`ran` jobs ran before this pass). If anything raises, or a job would run past
        `max_executions`, the jobs not run yet are handed back and the exception
        propagates."""
        hooks = self.hooks()
        index = 0
        try:
            for index, job in enumerate(jobs):
                if max_executions is not None and ran + index >= max_executions:
                    raise RuntimeError(
                        f"run_until_idle() ran max_executions={max_executions} jobs and "
                        "was not idle yet: most likely a job enqueues a follow-up due "
                        "now, for ever (or its retries are due at once); advance the "
                        "clock between drives, or raise max_executions")
                plan.serve()
                started_at = self.clock.now()
                current = CurrentJob(job, self.progress)
                if hooks:
                    result = await self._execute_hooked(runner, job, hooks, current)
                else:
                    result = await execute(job, self.handlers, runner, self.clock,
                                           current=current)
                if current._pacing is not None:  # it reported progress: the last is written
                    await flush_progress(current)
                finished_at = self.clock.now()
                index += 1  # this one ran: from here on, only the rest goes back
                record_outcome(self.store, job, result, finished_at, runner.name)
                if hooks:
                    call_on_outcome(hooks, job, runner.name, result, started_at, finished_at)
        except BaseException:
            if jobs[index:]:
                self.store.release([j.lease for j in jobs[index:]], self.clock.now())
            raise
        return len(jobs)

    def _report_expired(self, runner: GroupRunner, now: datetime) -> None:
        """The jobs the pass's claims ended past their `expires_at`: logged, and told to
        the hooks' `on_outcome` (started and finished at the pass's time)."""
        hooks = self.hooks()
        for job, outcome in zip(runner.expired, report_expired(runner.name, runner.expired),
                                strict=True):
            if hooks:
                call_on_outcome(hooks, job, runner.name, outcome, now, now)

    def hooks(self) -> tuple[AttemptHook, ...]:
        """The attempt hooks of one pass (tracing read now, as a runtime reads it when it
        starts; the outcome callbacks per outcome)."""
        return attempt_hooks(tracing=Tracing.active(),
                             outcome_callbacks=self.outcome_callbacks, extra=self.extra_hooks)

    async def _execute_hooked(self, runner: GroupRunner, job: JobRecord,
                              hooks: Sequence[AttemptHook], current: CurrentJob) -> Outcome:
        """`execute` with the hooks' before and after around it (rota.worker.hooks): the
        after sees None when the handler's run was cut short (then the job goes back)."""
        tokens = call_before(hooks, job, runner.name)
        result: Outcome | None = None
        try:
            result = await execute(job, self.handlers, runner, self.clock, current=current)
            return result
        finally:
            call_after(hooks, tokens, job, runner.name, result)
