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
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, assert_never

from rota.core.dispatch import Membership, PassPlan, RoundTrip, for_policy, switch
from rota.core.durations import due_after
from rota.core.families import family_prefix, is_family
from rota.core.group_policies import StoredPolicy
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import DEFAULT_MAX_PAYLOAD_BYTES, JobEvent, JobRecord
from rota.core.outcomes import (
    Expired,
    Outcome,
    RetryAt,
    Snoozed,
    Succeeded,
    after_failure,
    describe,
    describe_error,
    ending,
)
from rota.core.plurals import counted
from rota.core.policy import DispatchPolicy, name_in_fault
from rota.core.retry import Retry, RetryPolicy, Snooze
from rota.core.suspects import lease_expired_error
from rota.core.typed_arguments import ArgumentTypes
from rota.store.base import Claimed, LeaseOutcome, Store, StoreError

logger = logging.getLogger("rota")

# How many family members with work one survey of the store names at most (its next
# survey goes on after the last): a bounded read whatever a family's size.
SURVEY_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Handler:
    """What the runtime needs to know of a registered job."""

    name: str
    func: Callable[..., object]
    retry: RetryPolicy | None
    timeout: timedelta | None = None  # an attempt running longer fails (TimeoutError)
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES  # the largest result, as JSON
    # Its dataclass / pydantic parameters: the stored JSON becomes instances before the
    # call (rota.core.typed_arguments); None: the arguments go in as stored.
    arguments: ArgumentTypes | None = None
    # Decided once: inspect.iscoroutinefunction per job was ~2 % of a noop drain.
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.func))


def retry_policy(handler: Handler | None, group_policy: RetryPolicy) -> RetryPolicy:
    """A job's RetryPolicy: its own (`@app.job(retry=...)`), else its group's."""
    if handler is not None and handler.retry is not None:
        return handler.retry
    return group_policy


def new_worker_id() -> str:
    """`host:pid:token`, unique per process start, or per drive: the id `rota workers`
    lists, and the part of a lease owner id after `@`."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def new_owner_id(group: str, worker_id: str | None = None) -> str:
    """A lease owner id unique to this process and group: group@host:pid:token, the
    worker's id after the `@` (a new one when None)."""
    return f"{group}@{new_worker_id() if worker_id is None else worker_id}"


class GroupRunner:
    """A started Worker Group: its options, its dispatch state and its lease owner id."""

    def __init__(self, options: WorkerGroupOptions) -> None:
        self.options = options
        # Validates the policy. A Weighted group remembers the Queues it finds empty across
        # passes (rota.core.dispatch.memory); it probes them again at least every poll
        # interval (`_recheck_at`), so work that becomes due by the clock is found.
        try:
            options.policy.validate()
        except ValueError as error:
            # The message may be exact by specification: the group is named in its cause.
            name_in_fault(error, f"in Worker Group {options.name!r}: {options.policy!r}")
            raise
        # The members of the policy's families this group knows (rota.core.dispatch.members);
        # the dispatcher runs the policy over them.
        self.membership = Membership(options.policy)
        # Families named by hints (their settings changed), until the next take_hints.
        self._family_hints: deque[str] = deque()
        self.dispatcher = for_policy(self.membership.expanded(), remember_empty=True,
                                     validate=False)
        # When the next pass surveys the store for family members with work (None: the
        # first pass does), and the name the last full page of that survey ended at.
        self._survey_at: datetime | None = None
        self._survey_after = ""
        self.owner = new_owner_id(options.name)
        # The policy in force: the code's until a stored one is offered and switched to.
        self.policy: DispatchPolicy = options.policy
        # The stored row's version this runner has acted on (0: none seen), and the offer
        # waiting for the next pass: (version, stored row or None for the code's). Written
        # by whoever learns of a change (any thread: one tuple assignment), read by the
        # pass; an offer is applied when its version is newer than the one acted on.
        self.policy_version = 0
        self._offered: tuple[int, StoredPolicy | None] | None = None
        # Whether the last claim_pass was cut short by a failed claim; read by the drive
        # that owns this runner (one pass at a time) to back off before the next pass.
        self.last_pass_failed = False
        # What cut the last claim_pass short (a claim's exception), or None.
        self.last_error: Exception | None = None
        self._recheck_at: datetime | None = None
        # How many of the outcomes given to the last claim_pass were applied (their lease
        # still held), or None if no claim of that pass carried them (not written).
        self.outcomes_applied: int | None = None
        # When the first Queue the last pass found out of tokens (its rate) has one again,
        # or None; an idle drive sleeps no longer than until then (no busy polling).
        self.next_token_at: datetime | None = None
        # The jobs the last pass's claims found past their `expires_at` and ended (as
        # ended), for the drive to report (`report_expired`): none of them runs.
        self.expired: list[JobRecord] = []

    def use_worker_id(self, worker_id: str) -> None:
        """Lease jobs as `group@worker_id` from now on, so that the worker id a job records
        (`JobRecord.worker`) is the drive's: the one `rota workers` lists for a real-time
        worker. Only between drives: never while this runner holds leases."""
        self.owner = new_owner_id(self.options.name, worker_id)

    def note_work(self, queue: str) -> None:
        """A wake-up hint: jobs were enqueued into `queue` (any thread). A Queue that one of
        the policy's families holds joins at the next pass if it is new. A hint naming a
        family (its settings changed: a resume, a higher limit, a new rate) is a hint for
        each Queue it holds that the policy serves now."""
        if is_family(queue):  # acted on by take_hints, on the loop's thread
            self._family_hints.append(family_prefix(queue))
            return
        self.dispatcher.note_work(queue)
        self.membership.hinted(queue)

    def serves(self, queue: str) -> bool:
        """Whether the policy in force serves `queue` (named, or held by a family)."""
        return self.membership.entries.entry_of(queue) is not None

    def take_hints(self) -> None:
        """Act on the hints noted so far at the next `claim_pass`. Call it before reading
        that pass's `now` (rota.core.dispatch.plan.Dispatcher.take_hints says why)."""
        if self._family_hints:
            prefixes: set[str] = set()
            while self._family_hints:
                prefixes.add(self._family_hints.popleft())
            for served in self.dispatcher.policy.queues:  # the Queues it serves now
                if any(served.startswith(prefix) for prefix in prefixes):
                    self.dispatcher.note_work(served)
        self.dispatcher.take_hints()

    def offer_policy(self, version: int, stored: StoredPolicy | None) -> None:
        """The group's stored policy row is at `version`: `stored`, or None (cleared: the
        code's policy). Switched to at the next pass, not before: a pass already running
        finishes under the policy it began with. Any thread."""
        offered = self._offered
        if version > self.policy_version and (offered is None or version > offered[0]):
            self._offered = (version, stored)

    @property
    def offered_queues(self) -> tuple[str, ...]:
        """The Queues of the policy waiting for the next pass, if any (for wake-ups)."""
        offered = self._offered
        if offered is None or offered[0] <= self.policy_version:
            return ()
        return self.options.policy.queues if offered[1] is None else offered[1].queues

    def _switch_policy(self, version: int, stored: StoredPolicy | None) -> None:
        """Run the offered policy from this pass on; one this worker cannot use is not
        run: the group keeps the one it has and the log says why (once per version)."""
        self.policy_version = version
        try:
            policy = self.options.policy if stored is None else stored.policy()
            policy.validate()
        except ValueError as error:
            logger.error("group %s: keeps its policy %r: %s", self.name, self.policy, error)
            return
        if policy == self.policy:
            return
        self.membership = Membership(policy, known=self.membership.members)
        self.dispatcher = switch(self.dispatcher, self.membership.expanded(),
                                 remember_empty=True, validate=False)
        self._survey_at, self._survey_after = None, ""
        logger.info("group %s: policy switched to %r (%s)", self.name, policy,
                    "the code's" if stored is None else f"stored, version {version}")
        self.policy = policy

    @property
    def probe_pending(self) -> bool:
        """Whether the next pass first probes the Queues held for empty: a drive must run
        it before it calls the group idle (no free Worker idles beside due work it could
        know of)."""
        return self.dispatcher.probe_pending

    @property
    def name(self) -> str:
        return self.options.name

    def claim_pass(
        self, store: Store, free: int, now: datetime,
        *, stop: Callable[[], bool] | None = None,
        outcomes: Sequence[LeaseOutcome] = (), raise_errors: bool = False,
        log_store_errors: bool = True,
    ) -> tuple[PassPlan[JobRecord], list[JobRecord]]:
        """Claim into `free` slots as the core plans, one store round trip per round of
        its claims; return the plan and the jobs in slot order.

        A claim that raises cuts the pass short (`StoreError` logged at WARNING, anything
        else at ERROR with its traceback; `last_pass_failed` set), and so does `stop()`
        turning true between two round trips (shutdown): what was already claimed is
        still returned, so no claimed job is lost. With `raise_errors` (the inline drive),
        or for anything raised outside the claims (the planner, a BaseException such as
        KeyboardInterrupt), the jobs claimed so far are handed back (`release`) and the
        exception propagates.

        `outcomes` (finished jobs' outcomes, for a store whose `claim` takes them) ride
        with the pass's first claim, in its transaction; `outcomes_applied` then says how
        many were applied, or stays None if no claim carried them (the caller writes them
        itself). The real-time runtime logs store errors itself, once per incident
        (`log_store_errors=False`: at DEBUG here), and reads `last_error`."""
        self.outcomes_applied = None
        self.last_pass_failed = False
        self.last_error = None
        self.next_token_at = None
        self.expired = []
        offered = self._offered
        if offered is not None and offered[0] > self.policy_version:
            self._switch_policy(*offered)
        if self.membership.has_families:
            self._join_members(store, now, log_store_errors)
        if self._recheck_at is None:
            self._recheck_at = now + self.options.poll_interval
        plan: PassPlan[JobRecord] = self.dispatcher.begin_pass(
            free, recheck=now >= self._recheck_at, queue_of=_queue_of)
        lease_expires_at = now + self.options.lease_duration
        claimed: list[JobRecord] = []
        try:
            while requests := plan.next_claims():
                if stop is not None and stop():
                    plan.cut_short()
                    break
                trip = plan.round_trip(requests)
                carried = outcomes if trip.limit else ()
                try:
                    answer = self._round_trip(store, trip, now, lease_expires_at, carried)
                except Exception as error:
                    if raise_errors:
                        raise
                    self._claim_failed(trip.queues or trip.probe, error, log_store_errors)
                    plan.claim_failed(requests[0])  # the others were never issued
                    self.last_pass_failed = True
                    self.last_error = error
                    break
                if carried:  # the caller logs them (log_recorded, warn_leases_lost)
                    self.outcomes_applied = answer.applied
                    outcomes = ()
                if requests[0].probe:
                    self._recheck_at = now + self.options.poll_interval
                claimed.extend(answer)
                controlled = answer.controlled
                if answer.expired:
                    # The expired jobs took room of the claim without being leased, so any
                    # of its Queues that gave fewer jobs than asked (those after them in a
                    # sweep too) may have more: none is held for empty after this pass,
                    # like a Queue under a control.
                    self.expired.extend(answer.expired)
                    controlled = controlled | set(trip.queues)
                plan.record_round(requests, answer, due=answer.due, controlled=controlled)
                if answer.next_token_at is not None and (
                        self.next_token_at is None
                        or answer.next_token_at < self.next_token_at):
                    self.next_token_at = answer.next_token_at
            dispatched = plan.dispatch_order()
        except BaseException:
            self._hand_back(store, claimed, now)
            raise
        return plan, dispatched

    def _join_members(self, store: Store, now: datetime, log_store_errors: bool) -> None:
        """Family members join: those hinted since the last pass, and, at the first pass and
        every poll interval after, those the store holds due work for (one page of
        `SURVEY_PAGE` names a survey, the next survey going on after it)."""
        joined = self.membership.take_joining()
        if self._survey_at is None or now >= self._survey_at:
            self._survey_at = now + self.options.poll_interval
            try:
                found = store.due_queues(self.membership.entries.prefixes, now,
                                         after=self._survey_after, limit=SURVEY_PAGE)
            except Exception as error:
                self._claim_failed(self.membership.entries.prefixes, error, log_store_errors)
                self.last_pass_failed, self.last_error = True, error
                found = []
            self._survey_after = found[-1] if len(found) == SURVEY_PAGE else ""
            joined = self.membership.join(found) or joined
        if joined:
            self.dispatcher = switch(self.dispatcher, self.membership.expanded(),
                                     remember_empty=True, validate=False, joined=True)

    def _round_trip(
        self, store: Store, trip: RoundTrip, now: datetime, lease_expires_at: datetime,
        outcomes: Sequence[LeaseOutcome],
    ) -> Claimed:
        """The one store call for `trip`."""
        return store.claim(trip.queues, trip.limit, now=now, owner=self.owner,
                           lease_expires_at=lease_expires_at, limits=trip.limits,
                           probe=trip.probe, outcomes=outcomes)

    def _claim_failed(self, queues: Sequence[str], error: Exception,
                      log_store_errors: bool = True) -> None:
        where = ",".join(queues)
        if isinstance(error, StoreError):
            logger.log(logging.WARNING if log_store_errors else logging.DEBUG,
                       "group %s: claim from %s failed, pass cut short: %s",
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
            logger.exception("group %s: handing back %s failed; they run again "
                             "when their leases expire", self.name,
                             counted(len(jobs), "claimed job"))
        else:
            logger.warning("group %s: pass failed; its %s handed back",
                           self.name, counted(len(jobs), "claimed job was", "claimed jobs were"))

    def retry_policy(self, handler: Handler | None) -> RetryPolicy:
        return retry_policy(handler, self.options.retry)

    def outcome_of_error(
        self, job: JobRecord, handler: Handler | None, error: BaseException, now: datetime
    ) -> Outcome:
        """The retry or dead letter after `error`, carrying its formatted traceback (none
        for `rota.Retry`: the handler asked for it, nothing went wrong); for
        `rota.Snooze`, the snooze (a delay that puts the due time past the year 9999 is
        a failure instead, with that ValueError)."""
        if isinstance(error, Snooze):
            try:
                return Snoozed(due_after(now, error.delay, "Snooze(delay)"), error.reason)
            except ValueError as too_long:
                error = too_long
        formatted = None if isinstance(error, Retry) else format_traceback(error)
        return after_failure(job.attempt, describe_error(error), self.retry_policy(handler), now,
                             exception=error, job_id=job.id, traceback=formatted)


def report_expired(group: str, jobs: Sequence[JobRecord]) -> list[Outcome]:
    """Log each job a claim ended because it was due after its `expires_at` (it did not
    run), and return its `Expired` outcome, in order, for the drive's hooks and counts."""
    outcomes: list[Outcome] = []
    for job in jobs:
        outcome = Expired(job.last_error or "Expired")
        logger.warning("group %s: job %s (%s) from %s: %s", group, job.id, job.name,
                       job.queue, describe(outcome))
        outcomes.append(outcome)
    return outcomes


def format_traceback(error: BaseException) -> str:
    """`error`'s traceback as Python prints it, chained exceptions included (the store
    keeps the end of a long one)."""
    return "".join(traceback.format_exception(error))


# A job's Queue (the planner's `queue_of`, which tells a round's jobs apart).
_queue_of: Final[Callable[[JobRecord], str]] = operator.attrgetter("queue")


def record_outcome(store: Store, job: JobRecord, outcome: Outcome, now: datetime,
                   group: str) -> bool:
    """Write `outcome` for `job`'s lease; False if the lease was lost (outcome fenced)."""
    lease = job.lease
    event, error, trace, due_at, result = ending(outcome)
    match event:
        case JobEvent.COMPLETE:
            applied = store.complete([lease], now, [result]) == 1
        case JobEvent.RETRY:
            assert error is not None and due_at is not None
            applied = store.retry(lease, now, due_at, error, traceback=trace)
        case JobEvent.DEAD_LETTER:
            assert error is not None
            applied = store.dead_letter(lease, now, error, traceback=trace)
        case JobEvent.CANCEL:
            assert error is not None
            applied = store.cancel_leased(lease, now, error)
        case JobEvent.QUARANTINE:
            assert error is not None
            applied = store.quarantine(lease, now, error)
        case JobEvent.SNOOZE:
            assert due_at is not None
            applied = store.snooze(lease, now, due_at)
        case JobEvent.EXPIRE:  # the claim ended it: nothing to write (report_expired)
            raise TypeError("an Expired outcome is a claim's report, not a write")
        case _:
            assert_never(event)
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

