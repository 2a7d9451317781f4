"""One Worker Group's claiming and outcome recording, shared by every way of running it.

`GroupRunner` turns the pure core's pass plan into store claims, and a handler's outcome
into the one store call that records it. The inline drive (`App.run_until_idle`) and the
real-time runtime both use it, so the two cannot drift apart.

Imports the core and the store contract; no asyncio.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import operator
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from rota.core.dispatch import ClaimRequest, Dispatcher, PassPlan, WeightedDispatcher
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import DEFAULT_MAX_PAYLOAD_BYTES, JobRecord
from rota.core.outcomes import (
    Cancelled,
    DeadLettered,
    Outcome,
    RetryAt,
    Succeeded,
    after_failure,
    describe,
    describe_error,
)
from rota.core.policy import PolicyFault
from rota.core.retry import RetryPolicy
from rota.core.suspects import lease_expired_error
from rota.store.base import Claimed, LeaseOutcome, Store, StoreError

logger = logging.getLogger("rota")


@dataclass(frozen=True, slots=True)
class Handler:
    """What the runtime needs to know of a registered job."""

    name: str
    func: Callable[..., object]
    retry: RetryPolicy | None
    timeout: timedelta | None = None  # an attempt running longer fails (TimeoutError)
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES  # the largest result, as JSON
    # Decided once: inspect.iscoroutinefunction per job was ~2 % of a noop drain.
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.func))


def retry_policy(handler: Handler | None, group_policy: RetryPolicy) -> RetryPolicy:
    """A job's RetryPolicy: its own (`@app.job(retry=...)`), else its group's."""
    if handler is not None and handler.retry is not None:
        return handler.retry
    return group_policy


def new_owner_id(group: str) -> str:
    """A lease owner id unique to this process and group: group@host:pid:token."""
    return f"{group}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class GroupRunner:
    """A started Worker Group: its options, its dispatch state and its lease owner id."""

    def __init__(self, options: WorkerGroupOptions) -> None:
        self.options = options
        # Validates the policy. A Weighted group remembers its Queues found empty across
        # passes and probes them again (one round trip) when a wake-up hint names one of
        # them, at least every poll interval, and before it goes idle: with thousands of
        # tenant Queues, asking each empty one every pass cost more round trips than the
        # jobs served (issue 13, docs/dispatch.md).
        try:
            self.dispatcher = Dispatcher.for_policy(options.policy, remember_empty=True)
        except ValueError as error:
            # The message may be exact by specification: the group is named in its cause.
            where = f"in Worker Group {options.name!r}: {options.policy!r}"
            fault = error.__cause__
            error.__cause__ = PolicyFault(
                f"{fault}, {where}" if isinstance(fault, PolicyFault) else where)
            error.__suppress_context__ = True
            raise
        self.owner = new_owner_id(options.name)
        # Whether the last claim_pass was cut short by a StoreError; read by the drive that
        # owns this runner (one pass at a time) to back off before the next pass.
        self.last_pass_failed = False
        self._recheck = False  # probe the Queues held for empty at the next pass
        self._recheck_at: datetime | None = None  # ... and no later than this
        self._probed = False  # whether the last pass probed
        # A Weighted group over more Queues than Workers surveys them all in its first pass;
        # `_no_work` holds the Queues that survey found without due work and that no
        # claim asked since.
        self._no_work: set[str] = set()
        self._weighted = isinstance(self.dispatcher, WeightedDispatcher)
        self._survey_pending = (isinstance(self.dispatcher, WeightedDispatcher)
                                and len(options.policy.queues) > options.claim_capacity)
        self._claimed_nothing = False  # whether the last pass claimed nothing
        # How many of the outcomes given to the last claim_pass were applied (their lease
        # still held), or None if no claim of that pass carried them (not written).
        self.outcomes_applied: int | None = None

    def note_work(self, queue: str) -> None:
        """A wake-up hint: jobs were enqueued into `queue`. If the group holds it for
        empty, its next pass probes again. Any thread (a bool store is atomic)."""
        dispatcher = self.dispatcher
        if isinstance(dispatcher, WeightedDispatcher):
            self._no_work.discard(queue)
            index = dispatcher.index.get(queue)
            if index is not None and index in dispatcher._out:
                self._recheck = True

    @property
    def name(self) -> str:
        return self.options.name

    def claim_pass(
        self, store: Store, free: int, now: datetime,
        *, stop: Callable[[], bool] | None = None,
        outcomes: Sequence[LeaseOutcome] = (),
    ) -> tuple[PassPlan[JobRecord], list[JobRecord]]:
        """Claim into `free` slots as the core plans; return the plan and the jobs in slot
        order. A claim that raises cuts the pass short, whatever it raises (`StoreError`
        logged at WARNING, anything else at ERROR with its traceback; `last_pass_failed`
        set); so does `stop()` turning true between two claims (shutdown). What was
        already claimed is still returned, so no claimed job is lost. If anything else
        raises (the planner, or a BaseException such as KeyboardInterrupt), the jobs
        claimed so far are handed back (`release`) before the exception propagates.

        `outcomes` (finished jobs' outcomes, for a store whose `claim` takes them) ride
        with the pass's first claim round, in its transaction; `outcomes_applied` then
        says how many were applied, or stays None if no claim carried them (the caller
        writes them itself)."""
        self.outcomes_applied = None
        recheck, self._recheck = self._recheck, False
        self._probed = False
        if self._recheck_at is not None and now >= self._recheck_at:
            recheck = True
        plan: PassPlan[JobRecord] = (
            self.dispatcher.begin_pass(free, recheck=recheck, queue_of=_queue_of)
            if self._weighted else self.dispatcher.begin_pass(free))
        lease_expires_at = now + self.options.lease_duration
        self.last_pass_failed = False
        claimed: list[JobRecord] = []
        no_work = self._no_work
        if recheck and no_work:
            self._survey_pending = True  # what the last survey said may be stale now
        try:
            if self._survey_pending and free > 0:
                # A pass over more Queues than free slots, the group's first (or the first
                # since a recheck) while some Queues were never asked: one probe of every
                # Queue, so that the claims the plan makes of Queues without due work are
                # answered here (found empty) instead of by a round trip each reflow
                # round. Held like the memory of empty Queues: until a recheck.
                self._survey_pending = False
                self._probed = True
                no_work = self._no_work = set()
                queues = self.options.policy.queues
                try:
                    answer = store.claim((), 0, now=now, owner=self.owner,
                                         lease_expires_at=lease_expires_at, probe=queues)
                except Exception as error:  # only a shortcut: the claims still ask all
                    logger.warning("group %s: surveying its Queues failed: %s", self.name,
                                   error)
                else:
                    if isinstance(answer, Claimed):
                        no_work = self._no_work = set(queues) - answer.due
            # The plan answers its claims of Queues in no_work itself (found empty now;
            # the dispatcher remembers them from here on, so no_work lets them go).
            # It keeps a reference: a claim's own probe adds the Queues it drained.
            answered: list[str] = []
            if self._weighted:
                plan.answer_known_empty(no_work, answered)
            while requests := plan.next_claims():
                no_work.difference_update(answered)
                answered.clear()
                if stop is not None and stop():
                    plan.cut_short()
                    break
                try:
                    if requests[0].probe:
                        self._probe(store, plan, requests[0], now, lease_expires_at)
                        continue
                    jobs = self._claim_round(store, requests, now, lease_expires_at,
                                             outcomes)
                    if outcomes:  # the caller logs them (log_recorded, warn_leases_lost)
                        self.outcomes_applied = (jobs.applied if isinstance(jobs, Claimed)
                                                 else len(outcomes))
                        outcomes = ()
                except Exception as error:
                    self._claim_failed([r.queues[0] for r in requests]
                                       if len(requests) > 1 else requests[0].queues, error)
                    plan.claim_failed(requests[0])  # the others were never issued
                    self.last_pass_failed = True
                    break
                claimed.extend(jobs)
                controlled = jobs.controlled if isinstance(jobs, Claimed) else frozenset()
                if len(requests) == 1:
                    if controlled and controlled & set(requests[0].queues):
                        plan.claimed(requests[0], jobs, controlled=True)
                    else:
                        plan.claimed(requests[0], jobs)
                    continue
                # One Queue per request. With tenants this runs once per Queue asked, for
                # about one job each (issue 13), so it spares what it can: no call of
                # ours per Queue, no list for a Queue that gave nothing, and the jobs
                # grouped in C (the store answers each Queue's jobs together, first
                # Queue first; a store that did not is still answered right: extend).
                by_queue: dict[str, list[JobRecord]] = {}
                for queue, group in itertools.groupby(jobs, _queue_of):
                    if (got := by_queue.get(queue)) is None:
                        by_queue[queue] = list(group)
                    else:
                        got.extend(group)
                record = plan.claimed
                for request in requests:
                    queue = request.queues[0]
                    if queue in controlled:
                        record(request, by_queue.get(queue, _NONE), controlled=True)
                    else:
                        record(request, by_queue.get(queue, _NONE))
            no_work.difference_update(answered)
            dispatched = plan.dispatch_order()
        except BaseException:
            self._hand_back(store, claimed, now)
            raise
        self._claimed_nothing = not dispatched
        return plan, dispatched

    def must_look_again(self) -> bool:
        """After a pass: True when it claimed nothing while the group held Queues for empty
        that it did not probe in it. The next pass then probes them; a drive must run it
        before it calls the group idle (no free Worker idles beside due work it could
        know of)."""
        dispatcher = self.dispatcher
        if (self._claimed_nothing and not self._probed
                and isinstance(dispatcher, WeightedDispatcher)
                and (dispatcher._out or self._no_work)):
            self._recheck = True
            return True
        return False

    def _claim_round(
        self, store: Store, requests: Sequence[ClaimRequest], now: datetime,
        lease_expires_at: datetime, outcomes: Sequence[LeaseOutcome] = (),
    ) -> list[JobRecord]:
        """One round of the plan's claims in one store round trip: a plain claim when the
        round asks one Queue set, else one claim with per-Queue limits. `outcomes`, if
        any, ride with it (passed only then: a store of the older contract lacks them)."""
        extra: dict[str, Any] = {"outcomes": outcomes} if outcomes else {}
        if not self._weighted:
            request = requests[0]
            return store.claim(request.queues, request.limit, now=now, owner=self.owner,
                               lease_expires_at=lease_expires_at, **extra)
        # Weighted: one Queue per request, but for a pass's last-resort sweep (a request
        # alone in its round, over several Queues, answered like Strict's claim). The
        # claim also probes its own Queues, so that a Queue it drains is known empty
        # (answered here, found empty, at its next turn) without a reflow round trip to
        # find it so.
        if len(requests) == 1:
            queues = list(requests[0].queues)
            jobs = store.claim(queues, requests[0].limit, now=now, owner=self.owner,
                               lease_expires_at=lease_expires_at, probe=queues, **extra)
        else:
            queues = [request.queues[0] for request in requests]
            limits = [request.limit for request in requests]
            jobs = store.claim(queues, sum(limits), now=now, owner=self.owner,
                               lease_expires_at=lease_expires_at, limits=limits,
                               probe=queues, **extra)
        if isinstance(jobs, Claimed):
            self._no_work.update(set(queues) - jobs.due - jobs.controlled)
        return jobs

    def _probe(
        self, store: Store, plan: PassPlan[JobRecord], request: ClaimRequest, now: datetime,
        lease_expires_at: datetime,
    ) -> None:
        """Ask the store which of the Queues held for empty have due work (a claim of
        nothing with `probe`); they take part again from this pass on."""
        answer = store.claim((), 0, now=now, owner=self.owner,
                             lease_expires_at=lease_expires_at, probe=request.queues)
        # A store that answers a plain list cannot probe: take every Queue to have work
        # (a claim then finds the empty ones empty, as before issue 13).
        due = answer.due if isinstance(answer, Claimed) else request.queues
        plan.probed(request, due)
        self._probed = True
        self._recheck_at = now + self.options.poll_interval

    def _claim_failed(self, queues: Sequence[str], error: Exception) -> None:
        where = ",".join(queues)
        if isinstance(error, StoreError):
            logger.warning("group %s: claim from %s failed, pass cut short: %s",
                           self.name, where, error)
        else:
            logger.error("group %s: claim from %s raised %s, pass cut short; the jobs "
                         "claimed before it still run", self.name, where,
                         type(error).__name__, exc_info=error)

    def _hand_back(self, store: Store, jobs: Sequence[JobRecord], now: datetime) -> None:
        """Release `jobs` (claimed by a pass that is failing) so they run again at once."""
        if not jobs:
            return
        try:
            store.release([job.lease for job in jobs], now)
        except Exception:
            logger.exception("group %s: handing back %d claimed jobs failed; they run again "
                             "when their leases expire", self.name, len(jobs))
        else:
            logger.warning("group %s: pass failed; its %d claimed jobs were handed back",
                           self.name, len(jobs))

    def retry_policy(self, handler: Handler | None) -> RetryPolicy:
        return retry_policy(handler, self.options.retry)

    def outcome_of_error(
        self, job: JobRecord, handler: Handler | None, error: BaseException, now: datetime
    ) -> Outcome:
        return after_failure(job.attempt, describe_error(error), self.retry_policy(handler), now,
                             exception=error, job_id=job.id)


# A job's Queue, in C (the planner's `queue_of`, and the grouping of a round's jobs).
_queue_of: Final[Callable[[JobRecord], str]] = operator.attrgetter("queue")
_NONE: Final[Sequence[JobRecord]] = ()  # a Queue of the round that gave no job


def record_outcome(store: Store, job: JobRecord, outcome: Outcome, now: datetime,
                   group: str) -> bool:
    """Write `outcome` for `job`'s lease; False if the lease was lost (outcome fenced)."""
    lease = job.lease
    if isinstance(outcome, Succeeded):
        applied = store.complete([lease], now, [outcome.result_json]) == 1
    elif isinstance(outcome, RetryAt):
        applied = store.retry(lease, now, outcome.due_at, outcome.error)
    elif isinstance(outcome, DeadLettered):
        applied = store.dead_letter(lease, now, outcome.error)
    elif isinstance(outcome, Cancelled):
        applied = store.cancel_leased(lease, now, outcome.error)
    else:
        applied = store.quarantine(lease, now, outcome.error)
    # The failure itself was logged at WARNING, with its traceback, where it happened.
    if applied:
        log_recorded(group, [(job, outcome)])
    else:
        warn_leases_lost(group, [job], 0)
    return applied


_SUCCEEDED: Final = Succeeded()  # outcomes are immutable: one for every logged success


def record_successes(
    store: Store, jobs: Sequence[JobRecord], now: datetime,
    results: Sequence[str | None] | None = None, *, group: str,
) -> int:
    """Mark `jobs` succeeded in one store call, with their `results` (JSON text, None for
    none) if given; return how many leases were still held.

    The ones not held were fenced (their lease was lost) and will run again."""
    if not jobs:
        return 0
    applied = store.complete([job.lease for job in jobs], now, results)
    log_recorded(group, zip(jobs, itertools.repeat(_SUCCEEDED)))
    warn_leases_lost(group, jobs, applied)
    return applied


def log_recorded(group: str, recorded: Iterable[tuple[JobRecord, Outcome]]) -> None:
    """The debug line of each job whose outcome was written, one wording for every path
    that writes outcomes (the outcome writer, a claim carrying them, `run_until_idle`).
    `recorded` is only iterated when DEBUG is on. A batch whose store call fenced some of
    its leases off says so in `warn_leases_lost` (the store answers how many, not which)."""
    if logger.isEnabledFor(logging.DEBUG):
        for job, outcome in recorded:
            logger.debug("group %s: job %s (%s) attempt %s recorded: %s", group, job.id,
                         job.name, job.attempt, describe(outcome))


def warn_leases_lost(group: str, jobs: Sequence[JobRecord], applied: int) -> None:
    """The warning for outcomes the store ignored, of the `jobs` written together, because
    their lease was lost before they were written (expired, or taken over by a sweep);
    nothing when all `applied`. One wording for every path that writes outcomes."""
    if applied >= len(jobs):
        return
    job = jobs[0]
    which = (f"job {job.id} ({job.name}) attempt {job.attempt}" if len(jobs) == 1
             else f"{len(jobs) - applied} of {len(jobs)} jobs")
    logger.warning("group %s: %s lost the lease before the outcome was recorded (it expired "
                   "or was taken over); such an outcome is ignored and its job runs again",
                   group, which)


def sweep_expired_leases(
    store: Store, now: datetime, retry_for: Callable[[JobRecord], RetryPolicy], limit: int = 500
) -> int:
    """Return expired leases to their Queues (with backoff) or dead-letter them.

    Fenced by the store, so concurrent sweepers apply each expiry exactly once.
    """
    expired = store.find_expired_leases(now, limit)
    applied = 0
    for job in expired:
        error = lease_expired_error(job.lease_owner)
        outcome = after_failure(job.attempt, error, retry_for(job), now, job_id=job.id)
        due_at = outcome.due_at if isinstance(outcome, RetryAt) else None
        if store.expire_lease(job.lease, now, due_at, error):
            applied += 1
            logger.warning("job %s (%s) attempt %s: lease expired", job.id, job.name, job.attempt)
    return applied

