"""The real-time runtime: every Worker Group of a process on one asyncio event loop.

A `Runtime` runs a set of started groups (`GroupRunner`s), each as a `GroupLoop`
(rota.worker.loop: its passes and job tasks, with its heartbeats and outcome writer in
modules of their own), and beside them its duties (rota.worker.duty): the lease sweeper
(rota.worker.sweeper), which it always runs, and those the App gives it (retention,
schedules, the worker registry, WAL checkpoints, the unserved-Queue warning). When one of
those is an `Election` (rota.worker.leadership), the sweeper runs only while this worker
process leads, as do the other maintenance duties the App wrapped in it. Every
long-lived task runs under `supervise` (rota.worker.supervision): an exception it does not
handle itself is logged once at ERROR with its traceback and the task starts again after
a backoff, so no duty dies silently.

The runtime owns what its groups share: the store threads, the wake-up listener, the
stop signal and the process's one **suspect** (rota.core.suspects), the claimed job whose
previous attempt ended with an expired lease. While there is a suspect no group claims;
it starts once no group runs, claims or has an outcome unwritten, and the isolation ends
when its own outcome is written. If it kills the process, it dies alone.

Store calls run on a small pool of store threads, never on the loop. Each long-lived task
has at most one store call in flight, and the pool has a thread for each (3 per group,
the sweeper, the probe, one per duty, and one spare), so no call waits for a thread and a slow
claim never delays a heartbeat. Every call has a deadline (`call_store`, with a
`CallKind`; duties' `store_call` get `DUTY_DEADLINE_S`): it runs inside
`call_deadline` on its thread, and a backstop on the loop gives up on a thread still
silent a little later (`StoreTimeout`; a replacement thread serves the next calls).
Every call's result goes to `health` (rota.worker.store_health): while the store is
unreachable no group claims, a probe reads one row every heartbeat interval until it
answers (`_probe_forever`), and each incident is logged once.

Shutdown (`stop`): claiming stops at once, running jobs get the grace period, then what
still runs is handed back and the pending outcomes are flushed (`GroupLoop.shutdown`);
then the duties stop, those with an `at_stop` given a bounded time for it. `abort` skips
all that: leases then expire and the jobs run again elsewhere (at-least-once).

Every field of concurrent state names its owner. All asyncio state lives on the loop's
thread; only the `threading.Event` `stop_flag` is read by store threads. Imports the core,
the store contract and `rota.worker`; never `rota.app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from rota.core.clock import Clock
from rota.core.families import FAMILY_MARK, family_prefix, is_family
from rota.core.jobs import JobRecord
from rota.core.retry import RetryPolicy
from rota.store.base import Store, StoreError, WakeupSource
from rota.store.deadlines import StoreTimeout, call_deadline
from rota.worker.deadlines import DUTY_DEADLINE_S, CallKind, backstop_s, call_deadline_s
from rota.worker.duty import Duty, DutyRuntime, HintedDuty, StoppingDuty
from rota.worker.events import OutcomeCallback
from rota.worker.group import GroupRunner, Handler
from rota.worker.held import Held
from rota.worker.hooks import AttemptHook, attempt_hooks
from rota.worker.host import JobObserver, SuspectOwner
from rota.worker.leadership import Election
from rota.worker.loop import GroupLoop
from rota.worker.outcome_writer import FLUSH_TIMEOUT_S
from rota.worker.progress import RuntimeProgress
from rota.worker.store_health import StoreHealth
from rota.worker.supervision import supervise
from rota.worker.sweeper import LeaseSweeper
from rota.worker.threads import Abandoned, DaemonPool
from rota.worker.tracing import Tracing

__all__ = ["Duty", "GroupLoop", "Runtime", "RuntimeObserver", "StoppingDuty"]

logger = logging.getLogger("rota")

T = TypeVar("T")
D = TypeVar("D")


class RuntimeObserver(JobObserver, Protocol):
    """Watches a runtime for metrics (`rota.metrics`): told when it starts and stops, and
    of every pass's claims and every handler's run time (`JobObserver`)."""

    def runtime_started(self, runtime: Runtime, /) -> None: ...

    def runtime_stopped(self, runtime: Runtime, /) -> None: ...


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
        hooks: attempt hooks besides tracing, observers and callbacks (rota.worker.hooks).
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
        hooks: Sequence[AttemptHook] = (),
    ) -> None:
        self.store = store
        self.observers = tuple(observers)
        # OpenTelemetry, when installed and a tracer provider is set (read at start).
        self.tracing: Tracing | None = None
        self.clock = clock
        self.handlers = handlers
        self.retry_for = retry_for
        self.outcome_callbacks = outcome_callbacks
        self._extra_hooks = tuple(hooks)
        # Told of every job attempt; decided at start, with tracing (rota.worker.hooks).
        self.attempt_hooks: tuple[AttemptHook, ...] = ()
        self.grace_s = grace_s
        # Set once by stop()/abort() on the loop thread; read by store threads mid-pass.
        self.stop_flag = threading.Event()
        self._stop_requested = asyncio.Event()  # the same, for tasks on the loop
        self._duties = tuple(duties)
        self._sweeper = LeaseSweeper(store, clock, retry_for)
        # With an election among its duties, the sweeper runs only while this worker leads.
        self._election = next((d for d in self._duties if isinstance(d, Election)), None)
        # Told of hints that name a Queue none of the groups serves (loop thread).
        self._hinted_duties = [d for d in self._duties if isinstance(d, HintedDuty)]
        # Three store threads per group (claims, heartbeats, outcomes), the sweeper's, the
        # probe's, one per duty (a duty has at most one store call in flight) and a spare.
        self._store_threads = DaemonPool(3 * len(runners) + 3 + len(self._duties), "rota-store")
        # Loop thread: what the store calls found (rota.worker.store_health).
        self.health = StoreHealth(self._store_answers_again)
        self.groups = [GroupLoop(self, runner) for runner in runners]
        self._by_queue: dict[str, list[GroupLoop]] = {}
        self._by_prefix: tuple[tuple[str, GroupLoop], ...] = ()
        self._map_queues()
        # Whether passes write outcomes with claims: yes, unless the store would rather
        # have them written beside its claims (PostgreSQL: rota.store.base, module doc).
        self.claims_take_outcomes = not getattr(store, "outcomes_beside_claims", False)
        # Owned by start()/stop() on the loop thread.
        self._loop: asyncio.AbstractEventLoop | None = None
        # How handlers' progress reports are written (rota.worker.progress); made at start.
        self.progress: RuntimeProgress | None = None
        self._sweeper_task: asyncio.Task[None] | None = None
        self._probe_task: asyncio.Task[None] | None = None
        self._duty_tasks: list[asyncio.Task[None]] = []
        self._unlisten: Callable[[], None] | None = None
        self._stopped = asyncio.Event()
        self._state = "new"  # new -> running -> stopping -> stopped
        # Loop thread. The one suspect job of this process (rota.core.suspects), waiting
        # until every group is idle or running alone; None almost always. Set by a pass
        # (adopt_suspect), cleared once its outcome is written or it is handed back.
        self._suspect: tuple[SuspectOwner, Held] | None = None

    # -- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start every group's tasks, the sweeper, the duties and the wake-up listener."""
        if self._state != "new":
            raise RuntimeError("a Runtime starts once; build a new one to run again")
        self._state = "running"
        self._loop = asyncio.get_running_loop()
        self.progress = RuntimeProgress(self.store, self.clock, self.store_call)
        self.tracing = Tracing.active()
        callbacks = tuple(self.outcome_callbacks)
        self.attempt_hooks = attempt_hooks(
            tracing=self.tracing, observers=self.observers,
            outcome_callbacks=lambda: callbacks, extra=self._extra_hooks)
        for group in self.groups:
            group.start()
        sweeper: Duty = self._sweep_forever
        if self._election is not None:
            sweeper = self._election.while_leading(sweeper)
        self._sweeper_task = asyncio.create_task(
            supervise("lease sweeper", functools.partial(sweeper, self)),
            name="rota-sweeper",
        )
        self._probe_task = asyncio.create_task(
            supervise("store probe", self._probe_forever, sleep=self.sleep_unless_stopping),
            name="rota-probe",
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

    async def _probe_forever(self) -> None:
        """While the store is unreachable, read one row by primary key every heartbeat
        interval (at most every second): the call that ends an incident when nothing else
        would (a worker that holds no lease and does not lead the maintenance makes no
        call that proves the store answers). Costs nothing while the store answers."""
        options = [group.options for group in self.groups]
        interval_s = min(1.0, *(o.heartbeat_interval.total_seconds() for o in options))
        lease_s = min(o.lease_duration.total_seconds() for o in options)
        kind = CallKind("a probe of the store", call_deadline_s(lease_s, interval_s))
        while not self.stopping:
            await self.sleep_unless_stopping(interval_s)
            if self.health.unreachable and not self.stopping:
                with contextlib.suppress(StoreError):
                    await self.call_store(kind, self.store.get_job, 0)

    async def _sweep_forever(self, _runtime: DutyRuntime) -> None:
        """The lease sweeper duty (this runtime's own), on the cadence of the shortest
        heartbeat interval, each sweep bounded like a claim of the shortest lease
        (rota.worker.deadlines); run while this worker leads the maintenance."""
        options = [group.options for group in self.groups]
        interval_s = min(o.heartbeat_interval.total_seconds() for o in options)
        lease_s = min(o.lease_duration.total_seconds() for o in options)
        kind = CallKind("the lease sweep", call_deadline_s(lease_s, interval_s), retried=True)

        def wake_groups() -> None:
            for group in self.groups:
                group.wake()

        await self._sweeper.run_forever(functools.partial(self.call_store, kind), interval_s,
                                        wake_groups)

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
            self.stop_flag.set()
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
            self.stop_flag.set()
            self._stop_requested.set()
            for group in self.groups:
                group.abort()
            self._finish()

    def _finish(self) -> None:
        if self._state == "stopped":
            return
        self._state = "stopped"
        for task in (self._sweeper_task, self._probe_task):
            if task is not None:
                task.cancel()
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

    def duty(self, kind: type[D]) -> D | None:
        """The runtime's first duty of type `kind`, if any (rota.metrics reads what the
        unserved-Queue duty last found)."""
        return next((duty for duty in self._duties if isinstance(duty, kind)), None)

    @property
    def election(self) -> Election | None:
        """The election among its duties (None: this worker runs the sweeper always)."""
        return self._election

    @property
    def stopping(self) -> bool:
        return self.stop_flag.is_set()

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

    def _map_queues(self) -> None:
        """Which groups an enqueue into each Queue wakes: those whose policy in force, or
        the one offered for their next pass, serves it (by name, or by a family: its
        prefix). Replaced whole, never mutated, so `_wake_queue` reads one map or the
        other."""
        by_queue: dict[str, list[GroupLoop]] = {}
        by_prefix: list[tuple[str, GroupLoop]] = []
        for group in self.groups:
            runner = group.runner
            for entry in dict.fromkeys((*runner.policy.queues, *runner.offered_queues)):
                if is_family(entry):
                    by_prefix.append((family_prefix(entry), group))
                else:
                    by_queue.setdefault(entry, []).append(group)
        self._by_queue, self._by_prefix = by_queue, tuple(by_prefix)

    def policies_offered(self) -> None:
        """Some groups were offered a new policy (rota.worker.policies): enqueues into its
        Queues wake them, and they switch at a pass they run now. Any thread."""
        loop = self._loop
        if loop is None or self._state != "running":
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._policies_offered)

    def _policies_offered(self) -> None:
        self._map_queues()
        for group in self.groups:
            if group.runner.offered_queues:
                group.wake()

    def _wake_queue(self, queue: str) -> None:
        if is_family(queue):  # a family's settings changed: the groups serving any of it
            self._wake_family(family_prefix(queue))
            return
        groups = self._by_queue.get(queue, [])
        if self._by_prefix:
            groups = list(dict.fromkeys((*groups, *(
                group for prefix, group in self._by_prefix if queue.startswith(prefix)))))
        if not groups:
            for duty in self._hinted_duties:  # the unserved-Queue warning
                duty.queue_hinted(queue)
            return
        for group in groups:
            group.runner.note_work(queue)
            group.wake()

    def _wake_family(self, prefix: str) -> None:
        """Wake the groups that serve a Queue of the family `prefix*`: by name, or by a
        family that holds some of its Queues."""
        groups = [group for queue, named in self._by_queue.items() if queue.startswith(prefix)
                  for group in named]
        groups += [group for held, group in self._by_prefix
                   if held.startswith(prefix) or prefix.startswith(held)]
        for group in dict.fromkeys(groups):
            group.runner.note_work(prefix + FAMILY_MARK)
            group.wake()

    # -- store calls ----------------------------------------------------------------------

    async def store_call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run the blocking `call(*args, **kwargs)` on a store thread, within the duties'
        deadline (`DUTY_DEADLINE_S`)."""
        kind = CallKind(getattr(call, "__name__", "a store call"), DUTY_DEADLINE_S,
                        reaches_store=False)
        return await self.call_store(kind, call, *args, **kwargs)

    async def call_store(self, kind: CallKind, call: Callable[..., T], *args: Any,
                         **kwargs: Any) -> T:
        """Run the blocking `call(*args, **kwargs)` on a store thread within
        `kind.deadline_s`, and report what it found to `health`.

        Raises:
            StoreTimeout: the call did not answer within its deadline and its backstop.
            StoreError: whatever the store raised.
        """
        deadline_s = kind.deadline_s
        health = self.health
        seen = health.failures_seen
        bound = functools.partial(_within, deadline_s, call, args, kwargs)
        try:
            result = await self._store_threads.run_within(bound, backstop_s(deadline_s))
        except Abandoned as abandoned:
            error = StoreTimeout(f"no answer within {deadline_s:.3g} s (call abandoned)")
            health.failed(kind, error)
            raise error from abandoned  # its `started` says whether the call may still run
        except StoreError as error:
            health.failed(kind, error)
            raise
        health.answered(kind, seen)
        return result

    @property
    def store_unreachable(self) -> bool:
        """A store call failed and none answered since: no group claims."""
        return self.health.unreachable

    def _store_answers_again(self) -> None:
        for group in self.groups:
            group.wake()

    # -- suspects -------------------------------------------------------------------------

    @property
    def isolating(self) -> bool:
        """A suspect job waits to run alone, or runs alone: no group claims meanwhile."""
        return self._suspect is not None

    def adopt_suspect(self, group: SuspectOwner, held: Held) -> None:
        """Make `held` (claimed by `group`, not started) the process's waiting suspect.
        The caller checked `isolating` first: there is one suspect at a time."""
        assert self._suspect is None, "one suspect at a time"
        self._suspect = (group, held)

    def start_suspect_if_idle(self) -> None:
        """Start the waiting suspect once no group runs, claims or writes anything."""
        suspect = self._suspect
        if suspect is None or not suspect[1].waiting or self.stop_flag.is_set():
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

    def forget_suspect(self, handed_back: Sequence[Held]) -> None:
        """Shutdown handed these waiting jobs back: if the suspect is one, there is none."""
        suspect = self._suspect
        if suspect is not None and suspect[1] in handed_back:
            self._suspect = None

    def end_isolation(self) -> None:
        self._suspect = None
        for group in self.groups:
            group.wake()


def _within(deadline_s: float, call: Callable[..., T], args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> T:
    """Store thread: `call(*args, **kwargs)` within a deadline the store may enforce."""
    with call_deadline(deadline_s):
        return call(*args, **kwargs)
