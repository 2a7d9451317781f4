"""One Worker Group running in real time: its passes, its job tasks and its shutdown.

A `GroupLoop` owns four tasks, each started under `supervise` (it survives any exception):

- the **pass task** waits for a trigger, then runs one pass: free capacity = pool_size -
  jobs held by running handlers - claims in flight, capped by `max_claim_batch`; with none
  free it claims nothing (Backpressure). Otherwise `GroupRunner.claim_pass` (the pure
  core's plan, in a store thread) claims, and the jobs are dispatched in slot order, each
  charged to the plan (`plan.serve()`) as it is handed to a Worker. Triggers: the poll
  interval, a job finishing (refill its slot at once), a wake-up hint (an enqueue through
  the App, or the store's `WakeupSource`), a sweep that returned jobs. They set one
  `asyncio.Event`, so a burst of triggers coalesces into one pass.
  A group claims nothing while the store is unreachable (a store call failed and none
  answered since: rota.worker.store_health), while a renewal of one of its leases is
  failing, or while a pass given up on by its deadline's backstop still runs on its
  thread; the answer that ends it wakes the group. A claim answered so late that less
  than one heartbeat interval is left of its lease (by the App's clock) is handed back
  unstarted, its attempt not counted. A job whose start fails (its task cannot be
  created: a task factory that raises, say) takes no Worker and stops no other job of
  the batch: it is handed back to its Queue, its attempt not counted (if that release
  fails too, its lease runs out and the sweeper returns it), and the error goes to the
  supervisor, which logs it and starts the passes again after its backoff.
- one **job task** per running job: an async handler is awaited in it; a sync handler runs
  on one of the group's `pool_size` Worker threads, so a long handler never blocks the loop.
- the **heartbeat task** (rota.worker.heartbeats) renews the leases of the held jobs,
  and its **lease watch** treats a lease that comes to its end unrenewed as lost.
- the **outcome writer** (rota.worker.outcome_writer) writes finished jobs' outcomes;
  when the store's claim takes them, a pass hands them to its claim instead.

**Suspects** (rota.core.suspects): a claimed job whose previous attempt ended with an
expired lease may be what killed its last worker, so it runs alone. The pass keeps it
waiting (`Held.waiting`) as the process's one suspect (the runtime's; a second one is
handed back unserved); while there is a suspect no group claims (free capacity 0); the
runtime starts it once no group runs, claims or has an outcome unwritten, and the
isolation ends when its own outcome is written.

Shutdown: claiming stops at once (a pass in progress is cut short between claims and
whatever it claimed but had not started is released); running jobs get the grace period;
then every job still running is handed back (`release`, its attempt not counted) and the
outcomes still pending are flushed. `abort` skips all that.

Held attempts are keyed by (job id, attempt) (rota.worker.held). Per-job shortcuts and
the invariants they rely on: docs/decisions/0026. All state here lives on the loop's
thread, but for `_pass_idle`. The runtime is reached through `GroupHost`, never imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any

from rota.core.dispatch import PassPlan
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome, describe
from rota.core.plurals import counted
from rota.core.suspects import is_suspect
from rota.store.base import StoreError
from rota.worker.backoff import STORE_RETRY_FIRST_S, Backoff
from rota.worker.context import CurrentJob, flush_progress
from rota.worker.deadlines import CallKind, GroupDeadlines
from rota.worker.execution import execute, execute_async
from rota.worker.group import GroupRunner, report_expired
from rota.worker.heartbeats import Heartbeats
from rota.worker.held import Held, lease_outcomes
from rota.worker.hooks import call_after, call_before, call_on_outcome
from rota.worker.host import GroupHost
from rota.worker.outcome_writer import OutcomeWriter
from rota.worker.supervision import supervise
from rota.worker.threads import Abandoned, DaemonPool

logger = logging.getLogger("rota")


class PassCutShort(StoreError):
    """A pass whose claim failed with a `StoreError`: what it had claimed before, so
    that the runtime counts the failure and the pass still dispatches those jobs."""

    def __init__(self, error: StoreError,
                 answer: tuple[PassPlan[JobRecord], list[JobRecord]]) -> None:
        super().__init__(str(error))
        self.answer = answer


class JobsNotStarted(Exception):
    """Jobs a pass claimed whose start failed (their task could not be created): they
    were handed back to their Queues, their attempts not counted; the cause is chained."""

    def __init__(self, group: str, jobs: Sequence[JobRecord]) -> None:
        ids = ", ".join(str(job.id) for job in jobs)
        super().__init__(f"group {group}: {counted(len(jobs), 'job')} could not start; "
                         f"handed back to the Queue (ids {ids})")
        self.jobs = list(jobs)


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


class GroupLoop:
    """One Worker Group running in real time (see the module docstring)."""

    def __init__(self, runtime: GroupHost, runner: GroupRunner) -> None:
        self.runtime = runtime
        self.runner = runner
        self.options = runner.options
        self._workers = DaemonPool(self.options.pool_size, f"rota-{runner.name}")
        self.deadlines = deadlines = GroupDeadlines.of(self.options)
        self._claims = CallKind(f"group {runner.name}: claims", deadlines.call_s, retried=True)
        self._releases = CallKind(f"group {runner.name}: releases", deadlines.call_s)
        # Loop thread. Held attempts by (job id, attempt): added by the pass task, marked
        # by job and heartbeat tasks, removed by the outcome writer (after the write), by
        # a job task whose lease lapsed, or by shutdown.
        self._held: dict[tuple[int, int], Held] = {}
        self.outcomes = OutcomeWriter(runner.name, self._held, runtime, deadlines.call_s)
        self.heartbeats = Heartbeats(runner.name, self.options, self._held,
                                     self.outcomes.writing, runtime, self.wake, deadlines)
        # Clear while a pass runs on its store thread, set by that thread when it is over
        # (a pass given up on by its backstop may still run: no second pass meanwhile).
        self._pass_idle = threading.Event()
        self._pass_idle.set()
        # Loop thread. Whether the last pass was cut short by a failed claim (the runner's
        # own flag is unsafe to read after a pass given up on).
        self._pass_failed = False
        # Loop thread. Jobs whose handlers occupy a Worker (held.running), counted as they
        # change so that a pass need not walk every held job.
        self._running = 0
        # Loop thread. Jobs asked for by the pass in progress (claims in flight).
        self._claiming = 0
        self._wake = asyncio.Event()  # set by any trigger; cleared by the pass task
        # Loop thread. True once a finished job set `_wake` since the pass task last
        # cleared it (so `_wake` is still set): the jobs finishing after it need not call.
        # Whoever clears `_wake` resets it.
        self._refill_asked = False
        # Created by start(), cancelled or awaited by shutdown()/abort().
        self._pass_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
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
        metrics, from any thread."""
        return self.outcomes.served

    @property
    def in_flight(self) -> int:
        """Jobs the group holds: running, waiting to run alone, or outcome unwritten."""
        return len(self._held)

    def start(self) -> None:
        self._pass_task = self._spawn(self._pass_forever, "passes",
                                      self.runtime.sleep_unless_stopping)
        self._heartbeat_task = self._spawn(self.heartbeats.run_forever, "heartbeats")
        self._watch_task = self._spawn(self.heartbeats.watch_leases, "lease watch")
        self._writer_task = self._spawn(self.outcomes.run_forever, "outcomes")
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
        return bool(self._running or self._claiming or self.outcomes.busy)

    def holds(self, held: Held) -> bool:
        return self._held.get(held.key) is held

    @property
    def claims_held_back(self) -> str | None:
        """Why the group claims nothing now whatever its free Workers, or None."""
        if self.runtime.store_unreachable:
            return "the store is not answering"
        if self.heartbeats.failing:
            return "renewing its leases is failing"
        if not self._pass_idle.is_set():
            return "a pass given up on still runs"
        return None

    def free_capacity(self) -> int:
        if self.runtime.isolating:
            return 0  # a suspect waits to run alone, or runs alone: nothing else starts
        if self.claims_held_back is not None:
            return 0
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
        backoff = Backoff()
        stopping = self.runtime.stop_flag
        self._wake.set()  # (re)started: pass at once
        while True:
            await self._wait_for_trigger(self._idle_wait_s(poll_s))
            if stopping.is_set():
                return
            free = self.free_capacity()
            if free == 0:
                if self.runtime.isolating:
                    self.runtime.start_suspect_if_idle()  # e.g. after a claim that failed
                elif logger.isEnabledFor(logging.DEBUG):
                    logger.debug("group %s: no claim: %s", self.name, self.claims_held_back
                                 or f"pool full ({self.running} running)")
                continue
            claimed = await self._pass(free, stopping)
            if self._pass_failed:
                delay_s = backoff.next_delay_s()
                logger.debug("group %s: claims failing; next pass in %.2f s", self.name,
                             delay_s)
                await self.runtime.sleep_unless_stopping(delay_s)
                self._wake.set()
            else:
                backoff.reset()
                if claimed and self.free_capacity() > 0:
                    self._wake.set()  # capped by max_claim_batch, or reflow left room
                elif self.runner.probe_pending:
                    self._wake.set()  # found nothing: probe the Queues held for empty

    def _idle_wait_s(self, poll_s: float) -> float:
        """How long to wait for a trigger: the poll interval, or less when a Queue the
        last pass found out of tokens has its next token sooner (then a pass claims it
        without anyone polling faster)."""
        due = self.runner.next_token_at
        if due is None:
            return poll_s
        return max(0.0, min(poll_s, (due - self.runtime.clock.now()).total_seconds()))

    async def _pass(self, free: int, stopping: threading.Event) -> int:
        """One pass: claim up to `free` jobs, handing the claim the outcomes waiting to be
        written when the store's claim takes them, then dispatch what it claimed.
        Returns how many jobs it claimed, and ended past their expiry (those count as
        claimed for the next pass: their Queues may have more)."""
        runtime = self.runtime
        runner = self.runner
        self.runner.take_hints()  # before the pass's time is read
        now = runtime.clock.now()
        lease_end = now + self.options.lease_duration  # the claims' (claim_pass's)
        self._claiming = free
        observers = runtime.observers
        began = time.perf_counter() if observers else 0.0
        writer = self.outcomes
        carried = writer.take() if runtime.claims_take_outcomes else []
        applied: int | None = None
        loop = asyncio.get_running_loop()
        given_up = False

        def claim() -> tuple[PassPlan[JobRecord], list[JobRecord], int | None]:
            # Store thread. Whatever a claim raises, claim_pass returns (or, for an error
            # outside the claims, hands back) what it had claimed.
            try:
                answer = runner.claim_pass(runtime.store, free, now, stop=stopping.is_set,
                                           outcomes=lease_outcomes(carried),
                                           log_store_errors=False)
                error = runner.last_error
                if isinstance(error, StoreError):
                    raise PassCutShort(error, answer)
                return (*answer, runner.outcomes_applied)
            finally:
                self._pass_idle.set()
                if given_up:  # the loop stopped waiting for this pass: wake it now
                    with contextlib.suppress(RuntimeError):
                        loop.call_soon_threadsafe(self.wake)

        self._pass_idle.clear()
        try:
            # An exception that gets out is logged by the supervisor, which starts this
            # duty again.
            plan, jobs, applied = await runtime.call_store(self._claims, claim)
        except PassCutShort as cut_short:
            plan, jobs = cut_short.answer
            applied = runner.outcomes_applied
            self._pass_failed = True
        except StoreError as error:
            # Given up on by its backstop: it claimed nothing we know of, and it runs on
            # until its thread returns (`_pass_idle`), unless it never began. Logged by
            # the runtime's health.
            given_up = True
            cause = error.__cause__
            if isinstance(cause, Abandoned) and not cause.started:
                self._pass_idle.set()
            self._pass_failed = True
            logger.debug("group %s: pass abandoned: %s", self.name, error)
            return 0
        else:
            self._pass_failed = runner.last_pass_failed
        finally:
            self._claiming = 0
            if carried:
                writer.carried_written(carried, applied)
        expired = len(runner.expired)
        if expired:  # ended by its claims, not run: only reported and counted
            self._report_expired(list(runner.expired), now)
        if observers:
            round_trip_s = time.perf_counter() - began
            for observer in observers:
                observer.claimed(self.name, round_trip_s, len(jobs))
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("group %s: pass claimed %d of %d free", self.name, len(jobs), free)
        if jobs and (lease_end - runtime.clock.now()) < self.options.heartbeat_interval:
            await self._hand_back_late(plan, jobs, lease_end)
            return 0
        await self._dispatch(plan, jobs, now, lease_end)
        return len(jobs) + expired

    def _report_expired(self, jobs: list[JobRecord], now: datetime) -> None:
        """The jobs a pass's claims ended past their `expires_at`: logged, counted among
        the served outcomes (`rota_jobs_total`, the registry) and told to the attempt
        hooks' `on_outcome`, started and finished at the pass's time."""
        outcomes = report_expired(self.name, jobs)
        self.outcomes.count_reported(jobs, outcomes)
        hooks = self.runtime.attempt_hooks
        if hooks:
            for job, outcome in zip(jobs, outcomes, strict=True):
                call_on_outcome(hooks, job, self.name, outcome, now, now)

    async def _hand_back_late(self, plan: PassPlan[JobRecord], jobs: list[JobRecord],
                              lease_end: datetime) -> None:
        """A claim answered with less than one heartbeat interval left of its lease: its
        jobs would lose the lease before a renewal could keep it, so none starts."""
        for _ in jobs:
            plan.skip()
        left_s = (lease_end - self.runtime.clock.now()).total_seconds()
        logger.warning(
            "group %s: a claim answered too late (%.2f s of its %.1f s lease left, less "
            "than one heartbeat interval); its %s handed back unstarted", self.name,
            left_s, self.options.lease_duration.total_seconds(),
            counted(len(jobs), "job was", "jobs were"))
        await self._release(jobs, "claimed too late to start")

    async def _dispatch(
        self, plan: PassPlan[JobRecord], jobs: list[JobRecord], now: datetime,
        lease_end: datetime,
    ) -> None:
        """Hand the jobs to Workers in slot order, charging the plan for each. Once
        shutdown has begun, the jobs not yet started are released instead.

        `now` is the pass's time, read once for the whole batch: a job's `started_at`
        (the start of its OutcomeEvent's duration) is read per job only when the runtime
        has attempt hooks (rota.worker.hooks). Per-job costs here are paid ~10,000 times a
        second in a busy drain, hence also no task names and no debug formatting unless
        enabled."""
        runtime = self.runtime
        clock = runtime.clock
        hooks = runtime.attempt_hooks
        timed = bool(hooks)  # an OutcomeEvent's duration starts here
        debug = logger.isEnabledFor(logging.DEBUG)
        held_jobs = self._held
        create_task = _task_starter(asyncio.get_running_loop())
        held_back: list[JobRecord] = []
        run_job = self._run_job_hooked if hooks else self._run_job
        # Shutdown is decided on this thread (the stop flag is set by stop()/abort(), on
        # the loop) and nothing below awaits before the release that ends the loop: asked
        # once, the answer holds for every job of the batch.
        if runtime.stop_flag.is_set():
            await self._release(jobs, "claimed but not started at shutdown")
            return
        not_started: list[JobRecord] = []
        first_error: Exception | None = None
        for job in jobs:
            # Per job: whatever fails to start one job neither takes a Worker's slot nor
            # stops the rest of the batch. A job counts as running (`_running`, `_held`)
            # only once its task exists; nothing after that can raise.
            coroutine = None
            try:
                if job.last_error is not None and is_suspect(job):
                    # Runs alone, later; a second suspect goes back to its Queue unserved.
                    if runtime.isolating:
                        plan.skip()
                        held_back.append(job)
                    else:
                        plan.serve()
                        held = Held(job, now, lease_end, running=False, waiting=True)
                        runtime.adopt_suspect(self, held)
                        held_jobs[held.key] = held
                    continue
                plan.serve()
                held = Held(job, clock.now() if timed else now, lease_end)
                coroutine = run_job(held)
                held.task = create_task(coroutine)
            except Exception as error:
                if coroutine is not None:
                    coroutine.close()
                not_started.append(job)
                first_error = first_error or error
                continue
            held_jobs[held.key] = held
            self._running += 1
            if debug:
                logger.debug("group %s: job %s (%s) attempt %s started from %s",
                             self.name, job.id, job.name, job.attempt, job.queue)
        if not_started:
            await self._release(not_started, "not started after an error")
        if held_back:
            await self._release(held_back, "another suspect runs alone first")
        if runtime.isolating:
            runtime.start_suspect_if_idle()
        if first_error is not None:
            # Logged once by the supervisor, which starts the passes again after its
            # backoff: a start that fails for every job does not spin through claims.
            raise JobsNotStarted(self.name, not_started) from first_error

    # -- job tasks ------------------------------------------------------------------------

    def start_job(self, held: Held) -> None:
        """Start a waiting suspect's handler (the runtime decided it may run now)."""
        run_job = self._run_job_hooked if self.runtime.attempt_hooks else self._run_job
        held.started_at = self.runtime.clock.now()
        held.task = asyncio.create_task(run_job(held))
        # Once its task exists (see _dispatch); it runs only when this returns.
        held.waiting = False
        held.running = True
        self._running += 1

    async def _run_job_hooked(self, held: Held) -> Outcome | None:
        """`_run_job` with the attempt hooks around it (rota.worker.hooks), in the job's
        task: the path of every job once a hook is installed, so that `_run_job`, the
        path without, reads no timer and calls nothing more per job."""
        hooks = self.runtime.attempt_hooks
        job = held.job
        tokens = call_before(hooks, job, self.name)
        outcome = None
        try:
            outcome = await self._run_job(held)
        finally:
            call_after(hooks, tokens, job, self.name, outcome)
        if outcome is not None:  # handed to the outcome writer
            call_on_outcome(hooks, job, self.name, outcome, held.started_at,
                            self.runtime.clock.now())
        return outcome

    async def _run_job(self, held: Held) -> Outcome | None:
        """Run the job's handler and queue its outcome for the writer; returns the
        outcome (None if the job was handed back)."""
        job = held.job
        runtime = self.runtime
        held.current = current = CurrentJob(job, runtime.progress)
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
            if current._pacing is not None:  # it reported progress: the last one is written
                await flush_progress(current)
        except asyncio.CancelledError:
            raise  # handed back at shutdown; nothing to record
        except BaseException as error:  # SystemExit & co. from a handler: still a failure
            handler = runtime.handlers.get(job.name)
            outcome = self.runner.outcome_of_error(job, handler, error, runtime.clock.now())
            logger.warning("job %s (%s) attempt %s failed: %s", job.id, job.name, job.attempt,
                           describe(outcome), exc_info=error)
        held.running = False
        if not held.overran:  # _worker_freed, inline (per job)
            self._running -= 1
            if not self._refill_asked:  # refill this Worker's slot at once
                self._refill_asked = True
                self._wake.set()
        if held.handed_back:
            return None
        if held.lapsed:  # its lease is lost and may be anyone's: nothing to write
            if self._held.get(held.key) is held:
                del self._held[held.key]
            return None
        held.outcome = outcome
        # The writer's event is set whenever its list holds anything (the writer clears
        # it only just before it takes them all), so only the first one in sets it.
        writer = self.outcomes
        finished = writer.finished
        if not finished:
            writer.ready.set()
        finished.append(held)
        return outcome

    def _overran(self, held: Held, thread: asyncio.Future[object]) -> None:
        """A sync handler past its timeout: its attempt fails now, but its Worker stays
        occupied (counted in _running) until the thread returns."""
        held.overran = True
        thread.add_done_callback(self._worker_freed)

    def _worker_freed(self, _thread: object = None) -> None:
        self._running -= 1
        self._wake.set()  # refill this Worker's slot at once

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
                released = await self.runtime.call_store(self._releases, store.release,
                                                         leases, now)
            except StoreError as error:
                logger.debug("group %s: releasing %s failed (try %d of 3): %s",
                             self.name, counted(len(leases), "job"), attempt + 1, error)
                await asyncio.sleep(STORE_RETRY_FIRST_S * 2**attempt)
                continue
            logger.debug("group %s: released %s (%s)", self.name, counted(released, "job"), why)
            return
        logger.warning("group %s: %s not released; they run again when their leases "
                       "expire", self.name, counted(len(leases), "job"))

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
        await self._hand_back_waiting()
        running = [h.task for h in self._held.values() if h.running and h.task is not None]
        if running:
            logger.debug("group %s: waiting up to %.1f s for %s", self.name,
                         grace_s, counted(len(running), "running job"))
            await asyncio.wait(running, timeout=grace_s)
        unfinished = [h for h in self._held.values() if h.running]
        for held in unfinished:
            held.handed_back = True
            if held.task is not None:
                held.task.cancel()
        if unfinished:
            logger.warning("group %s: %s still running after the %.1f s grace period, "
                           "handed back to their Queues", self.name,
                           counted(len(unfinished), "job"), grace_s)
            # A lapsed lease is not this worker's to hand back: the sweeper charges it.
            await self._release([h.job for h in unfinished if not h.lapsed],
                                "unfinished after the grace period")
            for held in unfinished:
                self._held.pop(held.key, None)
        await self.outcomes.flush()
        self._cancel_tasks()
        tasks: list[asyncio.Task[Any]] = [
            t for t in (self._heartbeat_task, self._watch_task, self._writer_task)
            if t is not None]
        tasks += [h.task for h in unfinished if h.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers.close()

    async def _hand_back_waiting(self) -> None:
        """Shutdown: a suspect claimed but not started goes back to its Queue."""
        waiting = [h for h in self._held.values() if h.waiting]
        if not waiting:
            return
        for held in waiting:
            held.handed_back = True
            self._held.pop(held.key, None)
        await self._release([h.job for h in waiting], "a suspect not started at shutdown")
        self.runtime.forget_suspect(waiting)

    def _cancel_tasks(self) -> None:
        for task in (self._pass_task, self._heartbeat_task, self._watch_task,
                     self._writer_task):
            if task is not None:
                task.cancel()

    def abort(self) -> None:
        self._cancel_tasks()
        for held in self._held.values():
            held.handed_back = True
            if held.task is not None:
                held.task.cancel()
        self._workers.close()
