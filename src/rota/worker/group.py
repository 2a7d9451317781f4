"""One Worker Group's claiming and outcome recording, shared by every way of running it.

`GroupRunner` turns the pure core's pass plan into store claims, and a handler's outcome
into the one store call that records it. The inline drive (`App.run_until_idle`) and the
real-time runtime both use it, so the two cannot drift apart.

Imports the core and the store contract; no asyncio.
"""

from __future__ import annotations

import inspect
import logging
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.core.dispatch import Dispatcher, PassPlan
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
from rota.store.base import Store, StoreError

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
        try:
            self.dispatcher = Dispatcher.for_policy(options.policy)  # validates the policy
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

    @property
    def name(self) -> str:
        return self.options.name

    def claim_pass(
        self, store: Store, free: int, now: datetime,
        *, stop: Callable[[], bool] | None = None,
    ) -> tuple[PassPlan[JobRecord], list[JobRecord]]:
        """Claim into `free` slots as the core plans; return the plan and the jobs in slot
        order. A claim that raises cuts the pass short, whatever it raises (`StoreError`
        logged at WARNING, anything else at ERROR with its traceback; `last_pass_failed`
        set); so does `stop()` turning true between two claims (shutdown). What was
        already claimed is still returned, so no claimed job is lost. If anything else
        raises (the planner, or a BaseException such as KeyboardInterrupt), the jobs
        claimed so far are handed back (`release`) before the exception propagates."""
        plan: PassPlan[JobRecord] = self.dispatcher.begin_pass(free)
        lease_expires_at = now + self.options.lease_duration
        self.last_pass_failed = False
        claimed: list[JobRecord] = []
        try:
            while requests := plan.next_claims():
                for request in requests:
                    if stop is not None and stop():
                        plan.cut_short()
                        break
                    try:
                        jobs = store.claim(
                            request.queues, request.limit, now=now, owner=self.owner,
                            lease_expires_at=lease_expires_at,
                        )
                    except Exception as error:
                        self._claim_failed(request.queues, error)
                        plan.claim_failed(request)
                        self.last_pass_failed = True
                        break
                    claimed.extend(jobs)
                    plan.claimed(request, jobs)
            return plan, plan.dispatch_order()
        except BaseException:
            self._hand_back(store, claimed, now)
            raise

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


def record_outcome(store: Store, job: JobRecord, outcome: Outcome, now: datetime) -> bool:
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
        logger.debug("job %s (%s) attempt %s recorded: %s", job.id, job.name, job.attempt,
                     describe(outcome))
    else:
        logger.warning(
            "job %s (%s) attempt %s: lease lost before its outcome was recorded; "
            "the outcome was ignored and the job will run again",
            job.id, job.name, job.attempt,
        )
    return applied


def record_successes(
    store: Store, jobs: Sequence[JobRecord], now: datetime,
    results: Sequence[str | None] | None = None,
) -> int:
    """Mark `jobs` succeeded in one store call, with their `results` (JSON text, None for
    none) if given; return how many leases were still held.

    The ones not held were fenced (their lease was lost) and will run again."""
    if not jobs:
        return 0
    applied = store.complete([job.lease for job in jobs], now, results)
    if logger.isEnabledFor(logging.DEBUG):
        for job in jobs:
            logger.debug("job %s (%s) attempt %s recorded: succeeded", job.id, job.name,
                         job.attempt)
    if applied < len(jobs):
        logger.warning(
            "%d of %d successful jobs had lost their lease before the outcome was recorded; "
            "those outcomes were ignored and the jobs will run again",
            len(jobs) - applied, len(jobs),
        )
    return applied


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

