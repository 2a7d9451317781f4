"""The storage contract: one Protocol every store implements, and the errors it raises.

Rules every store follows (the contract suite in tests/store/ checks each one):
- Time is an input. Every call that depends on time takes `now`; no store reads a clock,
  except `store_time()`, which answers the store's own clock (the database server's) so
  that callers on machines whose clocks disagree take `now` from one clock
  (`rota.store.clock.StoreClock`).
- `claim(queues, limit, ...)` leases up to `limit` due jobs (`due_at <= now`, state
  scheduled), taking the first Queue's due jobs first, then the next Queue's (Strict
  order); within a Queue, due-time order, ties in enqueue order (ascending id). Each claimed
  job becomes leased to `owner` until `lease_expires_at`, its `attempt` one higher. No job
  is ever leased to two claimers at once.
- Every outcome (`complete`, `retry`, `dead_letter`, `quarantine`, `release`) is fenced by
  the `Lease` (job id, owner, attempt): it applies only while the job is still leased under
  exactly that lease, and otherwise changes nothing and reports so. An expired but not yet
  swept lease still accepts its owner's outcome (the work did finish).
- `heartbeat` renews only live leases (unexpired at `now`) of the given owner and attempt.
- `expire_lease` applies only if the lease is still held and expired at `now`, so two
  sweepers racing on one job apply it exactly once.
- `release` hands an unfinished job back: scheduled again at its old due time, and the
  attempt it was claimed for does not count (attempt - 1). `snooze` (`rota.Snooze`) is
  the same at a new due time, and counts the snooze (`snoozes` + 1); neither touches
  `last_error`.
- Expiry (`NewJob.expires_at`): a claim at `now` never leases a due job whose
  `expires_at` is before `now`; it ends it `cancelled` instead, in the same transaction
  (`finished_at` = `now`, `last_error` `expired_error(expires_at)`, attempt unchanged)
  and answers its record (as ended) in `Claimed.expired`, never in the list. Such a job
  counts against the claim's `limit` and its Queue's take like a leased one (the claim
  walks it), but takes no concurrency room and no rate token that it keeps.
- Bad input never half-writes: `enqueue` stores all of its jobs or none.
- Cancel: `cancel` ends a scheduled (or waiting) job at once and marks a leased one
  `cancel_requested`; `heartbeat` reports the marked jobs among the leases it renewed,
  and the worker ends them with `cancel_leased`. A marked job never goes back to
  scheduled: `retry`, `release`, `snooze` and a retrying `expire_lease` end it cancelled
  instead (last_error `CANCELLED_ON_REQUEST`).
- `requeue` takes a dead_lettered, quarantined or cancelled job back to scheduled, attempt
  0, due at `now`, its result, cancel request, `finished_at`, `last_error`,
  `last_traceback`, `snoozes` and `expires_at` cleared: a fresh run.
- `last_traceback` goes with `last_error`: every write of `last_error` writes it too, the
  traceback given to `retry` or `dead_letter` (bounded by
  `rota.core.outcomes.bound_traceback`), else None (quarantine, cancel, lease expiry);
  writes that keep `last_error` keep it. Claims and successes never touch either.
- A claim records `now` as the job's `started_at`, its owner's worker id as `worker`
  (`rota.core.progress.worker_of_owner`: kept after the job finishes) and clears its
  `progress`; `complete` stores each job's result.
- Failed attempts: `retry`, `dead_letter`, `quarantine` and `expire_lease` append one
  `AttemptError` (the lease's attempt, `now`, the error and its bounded traceback, the
  lease owner's worker id) to the job's `errors`, in the same write, keeping the last
  `MAX_KEPT_ERRORS` (20); nothing else changes `errors` (a requeue keeps them).
- `set_progress` is fenced by the lease; a claim and a requeue clear `progress`.
- `cancel` of a scheduled or waiting job records `CANCELLED_BEFORE_RUN` as its last error.
- Every change into a finished state (`complete`, `dead_letter`, `quarantine`, `cancel`,
  `cancel_leased`, `expire_lease` dead-lettering, and `retry`/`release`/`expire_lease`
  of a job whose cancel was requested) sets `finished_at` to its `now`; nothing else sets it, and
  `requeue` clears it.
- `purge` deletes only finished jobs (by `finished_at`), at most `limit` per call, and is
  safe when several processes purge at once: each row is deleted once, none waits for
  another purger, and a job that left its finished state meanwhile is never deleted.
- Batched claims (for thousands of tenant Queues): `claim(..., limits=[...])` takes
  up to `limits[i]` due jobs from `queues[i]`, Queue after Queue in the order given, at
  most `limit` in all, in one round trip (one transaction); the Queue names must then be
  distinct. Each Queue's take is also capped by its Queue controls, as in any claim.
  `claim(..., probe=[...])` also answers which of the probed Queues have a due scheduled
  job left after the claim and are not paused (`Claimed.due`); a probe with `limit` 0 and
  no `queues` leases nothing. A Queue at its concurrency limit still counts as having
  due work there (a claim then finds it empty). `Claimed.controlled` names the Queues of
  the claim that are paused or limited, at least those it took fewer jobs from than asked.
- Outcomes with the claim (fewer commits per job): `claim(..., outcomes=[(lease,
  outcome), ...])` first applies each outcome exactly as `complete` (`Succeeded`, its
  result), `retry` (`RetryAt`), `snooze` (`Snoozed`), `dead_letter`, `quarantine` or
  `cancel_leased` would, fenced by its lease the same way, then claims, all in one
  transaction (one commit): a job the outcomes send back to scheduled, due by `now`, may
  be claimed by the same call.
  `Claimed.applied` counts the outcomes whose lease was still held. If the call raises,
  none of them was applied (nothing of the transaction is kept), so the caller writes them
  again later; a crash before the commit loses nothing either (the leases expire). One
  exception: on PostgreSQL a claim over a Queue with a concurrency limit runs as a second
  transaction after the one that applied the outcomes; if that second one fails, the
  outcomes stay applied, and writing them again is fenced (reported not applied).
  Whether rota's worker hands its outcomes to its claims is the store's call: a store
  whose class sets `outcomes_beside_claims = True` (PostgreSQL) has them written by the
  worker's outcome writer on another connection while the next claim runs, since there
  the claim every handler waits for is faster alone (docs/decisions/0016); any other
  store that takes `outcomes` gets them with claims.
- Queue controls (`pause_queue`, `resume_queue`, `set_queue_limit`) are stored beside the
  jobs and read by every claim, with no cache. A claim takes nothing from a paused Queue
  (it goes on to the next one), and takes from a Queue with a limit at most
  `rota.core.queue_controls.room(...)` jobs: the limit less the jobs of that Queue leased
  right now, by anyone. The check and the lease are one atomic step: no interleaving of
  claimers (threads, processes, machines) ever leases more than the limit. Settings may
  name a Queue that has no jobs. A claim already running when a setting changes may still
  finish under the old one.
- Rate limits (`set_queue_rate`): a rated Queue's token bucket (`rota.core.rates`) is
  stored beside its settings and taken from inside the claim, in the same atomic step as
  the lease: a claim at `now` takes from the Queue at most `available(rate, bucket, now)`
  jobs (also capped by its room), and the bucket loses one token per job leased. So over
  any interval T, claims whose `now` lies in it lease at most `burst + jobs * T / per` jobs
  of the Queue, all claimers together. A new rate starts with a full bucket. A rated Queue
  is controlled (`Claimed.controlled`), and one out of tokens still counts as having due
  work in a probe; `Claimed.next_token_at` is the earliest instant a Queue the claim took
  fewer jobs from than asked, for want of tokens, has a token again.
- Workflows (`NewJob.parents`, rota.core.workflows): `enqueue` of a job with parents
  checks they all exist (else `ValueError`, nothing of the batch stored) and stores the
  child with its parents in the same transaction, starting as `workflows.at_enqueue`
  says: `waiting` while a parent has not finished. Every change of a parent into a
  finished state (by any method above, or by the outcomes of a claim) settles its waiting
  children in the same transaction, by reading that parent's own children only: each
  child is scheduled once its last parent's end lets it run (due at the later of its
  due time and that parent's `finished_at`), or cancelled at the parent's `finished_at`
  with `workflows.parent_failed_error`, which settles its own children in turn. A
  parent's end counts once for each child, however often the parent is requeued and
  finishes again. `cancel` of a waiting job cancels it (and so settles its children).
  `purge` never deletes a job while a child of it has not finished (waiting, scheduled
  or leased). `JobRecord.parents` is filled by every read and claim;
  `job_children(id)` lists a job's children.
- Meta (`NewJob.meta_json`, rota.core.meta): stored with the job by every enqueue path
  (unique, debounced and child jobs too; a debounced update keeps the collecting job's
  meta), exactly as `encode_meta` wrote it (other text is refused like a bad job), and
  filled in `JobRecord.meta` by every read and claim. `find_jobs` matches it by
  `meta_matches`; the bulk actions (rota.store.bulk) page through `find_jobs` by id.
- Worker registry (`register_worker`, `refresh_worker`, ...): one row per worker process,
  written with the heartbeats (never per job). `list_workers(now)` computes `alive` from
  the row's `dead_at` and `now`. `refresh_worker` adds its `new` counts to the per-minute
  history bucket of `now` (minute, group, Queue, outcome), summing with what is there;
  `register_worker` keeps each group's policy in a groups table (last registration wins)
  that outlives the worker rows.

Imports only the pure core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from rota.core.group_policies import StoredPolicy
from rota.core.jobs import JobRecord, JobState, JsonValue, Lease, NewJob
from rota.core.outcomes import (
    Cancelled,
    DeadLettered,
    Outcome,
    Quarantined,
    RetryAt,
    Snoozed,
    Succeeded,
)
from rota.core.policy import DispatchPolicy
from rota.core.progress import Progress
from rota.core.queue_controls import QueueInfo, QueueSettings
from rota.core.rates import QueueRate
from rota.core.schedules import FireOutcome, ScheduleRegistration, ScheduleRow
from rota.core.storage_health import StorageHealth
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo


class StoreError(RuntimeError):
    """A store could not do what was asked (connection lost, database locked, ...)."""


class StoreConfigError(ValueError):
    """A store URL or configuration is malformed; the message names the expected form."""


class SchemaTooNew(StoreError):
    """The database was migrated by a newer rota than this one."""


class Renewal(frozenset[int]):
    """What `heartbeat` answers: the ids of the leases still held (a frozenset, so callers
    that only ask "still held?" need nothing more), and as `cancel_requested` those among
    them whose cancel was requested (`Store.cancel` on a leased job)."""

    __slots__ = ("cancel_requested",)
    cancel_requested: frozenset[int]

    def __new__(cls, renewed: Iterable[int] = (), cancel_requested: Iterable[int] = ()) -> Renewal:
        self = super().__new__(cls, renewed)
        self.cancel_requested = frozenset(cancel_requested)
        return self

    def __repr__(self) -> str:
        return f"Renewal({sorted(self)}, cancel_requested={sorted(self.cancel_requested)})"


class Claimed(list[JobRecord]):
    """What `claim` answers: the leased jobs (a list, so callers that only want the jobs need
    nothing more); as `due`, the Queues among those named in `probe` that have a due
    scheduled job left and are not paused (empty when nothing was probed); as
    `controlled`, Queues of the claim that are paused or have a concurrency limit: at
    least every such Queue the claim took fewer jobs from than it asked (a planner does not
    hold those for empty: a Queue control, not a lack of due work, may be why); as
    `applied`, how many of the claim's `outcomes` were applied (their lease still held);
    as `next_token_at`, when the earliest of the rated Queues that gave fewer jobs than
    asked for want of tokens has a token again (None: no Queue was held back by its rate),
    so that an idle worker sleeps until then rather than polling; as `expired`, the
    records (as ended: cancelled) of the due jobs past their `expires_at` that the claim
    ended instead of leasing, for the caller to report (module doc)."""

    __slots__ = ("applied", "controlled", "due", "expired", "next_token_at")
    due: frozenset[str]
    controlled: frozenset[str]
    applied: int
    next_token_at: datetime | None
    expired: list[JobRecord]

    def __init__(
        self, jobs: Iterable[JobRecord] = (), due: Iterable[str] = (),
        controlled: Iterable[str] = (), applied: int = 0,
        next_token_at: datetime | None = None, expired: Iterable[JobRecord] = (),
    ) -> None:
        super().__init__(jobs)
        self.due = frozenset(due)
        self.controlled = frozenset(controlled)
        self.applied = applied
        self.next_token_at = next_token_at
        self.expired = list(expired)

    def __repr__(self) -> str:
        return (f"Claimed({list.__repr__(self)}, due={sorted(self.due)}, "
                f"controlled={sorted(self.controlled)}, applied={self.applied}, "
                f"next_token_at={self.next_token_at}, "
                f"expired={[job.id for job in self.expired]})")


LeaseOutcome = tuple[Lease, Outcome]
"""One outcome for `claim(..., outcomes=...)`: the lease it is fenced by, and what to
record (rota.core.outcomes)."""


# Built once: `A | B | ...` in the loop below built a union type per outcome (per job).
# (Not Expired: a claim reports it, no store call takes it.)
_OUTCOME_TYPES = (Succeeded, RetryAt, DeadLettered, Quarantined, Cancelled, Snoozed)


def check_outcomes(outcomes: Sequence[LeaseOutcome]) -> None:
    """Refuse outcomes a claim cannot apply, before anything is written.

    Raises:
        TypeError: if an item is not a (Lease, Outcome) pair.
        ValueError: if a retry's `due_at` is not timezone-aware.
    """
    for item in outcomes:
        if (not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], Lease)
                or not isinstance(item[1], _OUTCOME_TYPES)):
            raise TypeError(
                "a claim's outcomes are (rota.core.jobs.Lease, rota.core.outcomes outcome) "
                f"pairs; got {item!r}")
        outcome = item[1]
        if isinstance(outcome, RetryAt | Snoozed) and outcome.due_at.utcoffset() is None:
            raise ValueError(
                f"a retry's or snooze's due_at must be a timezone-aware datetime; got "
                f"{outcome.due_at!r}")


def claim_caps(
    queues: Sequence[str], limit: int, limits: Sequence[int] | None
) -> list[tuple[str, int]]:
    """Each Queue a claim walks, in order, with the most it may take from it: `limit` for
    each (a Queue named twice is walked once, at its first place), or `limits[i]` for
    `queues[i]`.

    Raises:
        ValueError: if `limits` does not give one count >= 0 per Queue, or names a Queue
            twice.
        TypeError: if a count in `limits` is not an int.
    """
    if limits is None:
        return [(queue, limit) for queue in dict.fromkeys(queues)]
    if len(limits) != len(queues):
        raise ValueError(
            f"a claim's limits give one count per Queue: got {len(limits)} counts for "
            f"{len(queues)} Queues"
        )
    if len(set(queues)) != len(queues):
        raise ValueError("a claim with per-Queue limits must name each Queue once")
    # Checked in C when every count is a plain int (a planner's round: one per Queue
    # asked); the loop below only runs to name what is wrong.
    if not (set(map(type, limits)) <= {int} and min(limits, default=0) >= 0):
        for count in limits:
            if not isinstance(count, int) or isinstance(count, bool):
                raise TypeError(f"a claim's per-Queue limit must be an int; got {count!r}")
            if count < 0:
                raise ValueError(f"a claim's per-Queue limit must be >= 0; got {count}")
    return list(zip(queues, limits, strict=True))


def listing_statement(newest: bool, state: JobState | None) -> str:
    """Which listing `list_jobs` runs: by id (`list_jobs`, `list_jobs_newest`), or, for the
    newest jobs of a finished state, `list_jobs_finished`: by finish time, walking the
    finished-rows index of that state backwards, so a page never reads the jobs of other
    states (by id, it walked every newer scheduled job: 0.7-1.35 s under five million)."""
    if not newest:
        return "list_jobs"
    return "list_jobs_finished" if state is not None and state.finished else "list_jobs_newest"


# -- Group policies -----------------------------------------------------------------------


@runtime_checkable
class GroupPolicyStore(Protocol):
    """Worker Group policies set while workers run: part of `Store` (the contract suite
    tests/store/test_contract_group_policies.py runs on each store).

    Rules:
    - One row per group. `set_group_policy` writes the whole policy in one statement,
      however many Queues it names, after the checks of a group's start
      (`rota.core.group_policies.checked_policy`: the same errors); None clears it (the
      group runs the policy in its code again). Either way the row's `version` moves on
      by one and is returned: a version is never reused for a group.
    - `group_policy_versions` returns every row's version, cleared rows included: a worker
      compares them with the versions it knows, and reads `group_policy` only for a group
      whose version moved, so following the policies costs one small read per interval.
    """

    def set_group_policy(self, group: str, policy: DispatchPolicy | None,
                         now: datetime) -> int:
        """Store (None: clear) `group`'s policy; return the row's new version.

        Raises:
            TypeError, ValueError: for an invalid group name or policy, as a group's
                start raises them; nothing is written then.
        """
        ...

    def group_policy(self, group: str) -> StoredPolicy | None:
        """`group`'s stored policy; None if none is stored (or it was cleared)."""
        ...

    def group_policy_versions(self) -> dict[str, int]:
        """The version of every group's row (see the class), by group name."""
        ...


@dataclass(frozen=True, slots=True)
class LeaderLease:
    """A leader lease as `take_leadership` found or left it: held by `owner` until
    `expires_at`."""

    owner: str
    expires_at: datetime


@runtime_checkable
class LeaderStore(Protocol):
    """Leader leases: which worker process runs the store's maintenance (part of `Store`;
    the contract suite tests/store/test_contract_leaders.py runs on each store).

    Rules:
    - One lease per `name`, held by at most one `owner` at a time, until its
      `expires_at`; a lease with `expires_at <= now` is expired.
    - `take_leadership(name, owner, now, ttl)` sets the lease to (`owner`, `now + ttl`)
      when there is no lease, when it expired, or when `owner` holds it (a renewal, also
      after expiry if nobody took it meanwhile), and returns it; otherwise it changes
      nothing and returns the live lease of its holder (so the caller knows when to try
      again), or None if the call lost a race (to create the lease, or to take it once
      it expired) and could not read the winner's. The caller holds the lease if and
      only if the returned lease's owner is `owner`. Check and write are one atomic
      step in one round trip: however many processes try at once, one live lease has
      one owner. A refused try writes nothing (PostgreSQL:
      takes no row lock).
    - `give_up_leadership(name, owner)` deletes the lease if `owner` holds it (live or
      expired), so that the next take by anyone succeeds at once; never another owner's.
    - `leader(name, now)` is the owner of the live lease at `now`, or None.
    - A blank name or owner, a `ttl` that is not positive, or a naive `now` is a
      `ValueError`, and nothing is written.
    """

    def take_leadership(self, name: str, owner: str, now: datetime,
                        ttl: timedelta) -> LeaderLease | None:
        """Take or renew the lease `name` for `owner` until `now + ttl`; the lease as it
        stands (see the class)."""
        ...

    def give_up_leadership(self, name: str, owner: str) -> bool:
        """Delete the lease `name` if `owner` holds it; True if it did."""
        ...

    def leader(self, name: str, now: datetime) -> str | None:
        """The owner of the live lease `name` at `now`, or None."""
        ...


def check_leadership(name: str, owner: str | None = None,
                     ttl: timedelta | None = None) -> None:
    """The input checks of `LeaderStore`'s calls (the caller checks `now` as usual)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a leader lease needs a non-blank name; got {name!r}")
    if owner is not None and (not isinstance(owner, str) or not owner.strip()):
        raise ValueError(f"a leader lease needs a non-blank owner; got {owner!r}")
    if ttl is not None and ttl <= timedelta(0):
        raise ValueError(f"a leader lease's ttl must be positive; got {ttl!r}")


@runtime_checkable
class Store(GroupPolicyStore, LeaderStore, Protocol):
    """Where jobs live. Methods are synchronous and safe to call from several threads.

    Internal: this protocol is how rota's own stores (memory, SQLite, PostgreSQL) meet
    the rest of rota, not an interface for stores written outside rota. It is not stable:
    it changes with rota, in any release, without a deprecation, and rota keeps no
    branches for a store of an earlier shape. Do not implement it outside rota; wrap one
    of rota's stores (delegating every call) if you need to observe or fault calls."""

    @property
    def url(self) -> str:
        """The store's URL with any password masked, for messages."""
        ...

    def store_time(self) -> datetime | None:
        """The store's own clock now (PostgreSQL: the database server's), or None for a
        store whose callers share one clock with it (memory: one process; SQLite: the
        processes of one host)."""
        ...

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        """Store `jobs` atomically (all or none); return their ids in the same order."""
        ...

    def claim(
        self,
        queues: Sequence[str],
        limit: int,
        *,
        now: datetime,
        owner: str,
        lease_expires_at: datetime,
        limits: Sequence[int] | None = None,
        probe: Sequence[str] = (),
        outcomes: Sequence[LeaseOutcome] = (),
    ) -> Claimed:
        """Lease up to `limit` due jobs from `queues`, first Queue first (see module doc).

        `limits`: at most `limits[i]` from `queues[i]` (one round trip for many Queues).
        `probe`: Queues to report on; `Claimed.due` names those with due work left.
        `outcomes`: (lease, outcome) pairs applied first, in the same transaction (module
        doc); `Claimed.applied` says how many were still held.

        Raises:
            TypeError, ValueError: for outcomes `check_outcomes` refuses (nothing written).
        """
        ...

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        """Mark the leased jobs succeeded; return how many leases were still held.

        `results`, if given, holds each job's result as JSON text (None: no result), in
        the order of `leases`."""
        ...

    def retry(self, lease: Lease, now: datetime, due_at: datetime, error: str,
              *, traceback: str | None = None) -> bool:
        """Schedule the job again at `due_at`, recording `error` as its last error and
        `traceback` (the exception's formatted traceback, None for none) beside it, in the
        same write."""
        ...

    def snooze(self, lease: Lease, now: datetime, due_at: datetime) -> bool:
        """Schedule the job again at `due_at` without counting the attempt it was claimed
        for (`attempt` - 1, as `release`), its `snoozes` one higher, `last_error` and
        `last_traceback` kept; a job whose cancel was requested ends cancelled instead.
        Fenced by the lease: False if it was no longer held."""
        ...

    def dead_letter(self, lease: Lease, now: datetime, error: str,
                    *, traceback: str | None = None) -> bool:
        """Give up on the job: dead_lettered, with `error` as its last error and
        `traceback` beside it (as in `retry`)."""
        ...

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool:
        """Set the job aside without retrying (e.g. its name is unknown)."""
        ...

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        """Hand unfinished jobs back to their Queues at once (graceful shutdown)."""
        ...

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        """Extend the live leases among `leases`; return the ids of those still held, with
        those whose cancel was requested as `.cancel_requested`."""
        ...

    def cancel_requests(self, job_ids: Sequence[int]) -> set[int]:
        """The ids among `job_ids` of leased jobs whose cancel was requested. Reads only: a
        worker asks about every second while it holds jobs, so a cancel reaches a running
        handler within about a second, with no write (`heartbeat` reports them too)."""
        ...

    def find_expired_leases(self, now: datetime, limit: int) -> list[JobRecord]:
        """Leased jobs whose lease expired at or before `now`, oldest expiry first, at most
        `limit` (none when `limit` <= 0)."""
        ...

    def expire_lease(
        self, lease: Lease, now: datetime, due_at: datetime | None, error: str
    ) -> bool:
        """End an expired lease: retry at `due_at`, or dead-letter when `due_at` is None."""
        ...

    def cancel(self, job_id: int, now: datetime) -> bool:
        """Cancel a scheduled or waiting job at once, or mark a leased one `cancel_requested` (its
        worker learns it within about a second, `cancel_requests`). False for a finished or
        unknown job."""
        ...

    def set_progress(self, lease: Lease, progress: Progress) -> bool:
        """Store `progress` as the job's `JobRecord.progress`, fenced by `lease` like every
        write of an attempt: only while the job is leased under exactly that lease; False
        (nothing written) otherwise. The worker paces these (rota.core.progress)."""
        ...

    def cancel_leased(self, lease: Lease, now: datetime, error: str) -> bool:
        """End a leased job as cancelled (its cancel was requested), `error` as its last
        error; fenced by the lease like every outcome."""
        ...

    def requeue(self, job_id: int, now: datetime) -> bool:
        """A dead_lettered, quarantined or cancelled job back to scheduled in its Queue,
        attempt 0, due at `now`; False for a job in another state or an unknown one."""
        ...

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        """`requeue` every job in `state` (of `queue`, or of every Queue when None);
        return how many. `state` must be dead_lettered, quarantined or cancelled.

        Raises:
            ValueError: for any other state.
        """
        ...

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        """Delete up to `limit` jobs in `states` (finished states only) whose
        `finished_at` is before `finished_before`; return how many were deleted.

        Raises:
            ValueError: if `states` names a state that is not finished.
        """
        ...

    def get_job(self, job_id: int) -> JobRecord | None: ...

    def job_children(self, job_id: int) -> list[int]:
        """The ids of the jobs enqueued after `job_id` (its children), ascending; [] for
        a job without any, or an unknown one."""
        ...

    def list_jobs(
        self,
        *,
        queue: str | None = None,
        state: JobState | None = None,
        limit: int = 100,
        newest: bool = False,
        offset: int = 0,
        name: str | None = None,
    ) -> list[JobRecord]:
        """Jobs in id order (`newest`: descending), optionally filtered by Queue, state and
        job `name` (exact); `offset` skips that many matching jobs first (paging), and at
        most `limit` come back (none when `limit` <= 0: it is never "no limit").
        `newest` with a finished `state`: the most recently finished first (`finished_at`,
        then id, descending; `listing_statement`)."""
        ...

    def find_jobs(
        self,
        *,
        queue: str | None = None,
        state: JobState | None = None,
        name: str | None = None,
        meta: Mapping[str, JsonValue] | None = None,
        limit: int = 100,
        newest: bool = True,
        beyond: int | None = None,
    ) -> list[JobRecord]:
        """Jobs matching every filter given (None: any), in id order (`newest`:
        descending), at most `limit` (none when `limit` <= 0). `meta`: jobs whose meta
        holds every key of it with an equal JSON value (`rota.core.meta.meta_matches`;
        None or {}: any). `beyond`: only jobs past that id in the order asked (above it,
        or below it when `newest`): keyset paging, which a change to the jobs already seen
        cannot shift. Indexed on PostgreSQL (a GIN index on meta); a scan on SQLite."""
        ...

    def count_jobs(self) -> dict[tuple[str, JobState], int]:
        """How many jobs each (Queue, state) pair holds; pairs with none are left out."""
        ...

    def due_queues(self, prefixes: Sequence[str], now: datetime, *, after: str = "",
                   limit: int = 1000) -> list[str]:
        """The Queues whose names start with one of `prefixes` (a `""` prefix: every
        Queue) and that hold a scheduled job due at `now`, paused or not; in name order
        (the store's), those after `after` only, at most `limit`. How a group finds the
        members of its policy's families that have work (rota.core.families): it reads
        each Queue holding a scheduled job once, never every member nor every job."""
        ...

    # -- the dashboard's "when will it run?" ---------------------------------------------

    def due_position(self, job_id: int, now: datetime) -> int | None:
        """How many due jobs of its Queue a claim takes before the scheduled job `job_id`
        (claim order: due time, then id; 0: it is next); None if the job is unknown, not
        scheduled, or not due at `now`."""
        ...

    def pause_queue(self, queue: str) -> QueueSettings:
        """Claims take nothing from `queue` until it is resumed; leased jobs finish
        normally. Returns the Queue's settings after the change.

        Raises:
            TypeError, ValueError: if `queue` breaks the Queue name rule.
        """
        ...

    def resume_queue(self, queue: str) -> QueueSettings:
        """Undo `pause_queue`; returns the Queue's settings after the change."""
        ...

    def set_queue_limit(self, queue: str, limit: int | None) -> QueueSettings:
        """At most `limit` jobs of `queue` leased at once, by all claimers together
        (None: no limit). Returns the Queue's settings after the change.

        Raises:
            TypeError: if `limit` is not an int or None (a bool is refused too).
            ValueError: if `limit` < 0, or `queue` breaks the Queue name rule.
        """
        ...

    def set_queue_rate(self, queue: str, rate: QueueRate | None) -> QueueRate | None:
        """Rate-limit `queue` to `rate` (None: no rate limit), with a full bucket; returns
        the rate in force after the change.

        Raises:
            TypeError, ValueError: if `rate` is not a `QueueRate` that
                `rota.core.rates.validate_rate` accepts, or `queue` breaks the Queue name
                rule.
        """
        ...

    def queue_infos(self, now: datetime) -> list[QueueInfo]:
        """Every Queue that has jobs or settings, sorted by name (see `QueueInfo`);
        `due` and `oldest_due_at` count the scheduled jobs due at `now`, and a rated
        Queue's `tokens` and `next_token_at` are its bucket at `now` (the read takes no
        token)."""
        ...

    def close(self) -> None: ...

    # -- transactional enqueue --------------------------------------------------------------

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """Store `jobs` on the caller's own open database `connection`, inside its current
        transaction (all or none); return their ids in order. The jobs exist if and only if
        the caller commits; this never commits or rolls back the caller's transaction.

        Raises:
            TypeError: if `connection` is not the kind this store writes on (a
                `sqlite3.Connection` to the same file, a `psycopg.Connection`); the memory
                store has no connection and always raises it.
            StoreError: if the connection's database does not hold this store's schema.
            Errors of the caller's database driver propagate unchanged.
        """
        ...


    # -- worker registry -------------------------------------------------------------------

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        """Insert or replace `worker`'s row (its `last_seen` becomes `now`; `alive` is not
        stored), and record each of its groups (name, policy, pool size) in the groups
        table, `seen_at` `now`."""
        ...

    def refresh_worker(
        self,
        worker_id: str,
        now: datetime,
        *,
        dead_at: datetime,
        in_flight: Mapping[str, int],
        served: Sequence[ServedCount],
        new: Sequence[ServedCount] = (),
        clock_offset: timedelta = timedelta(0),
    ) -> bool:
        """Refresh a registered worker: `last_seen` = `now`, `dead_at`, jobs in flight per
        group, `served` (its totals since start, replacing the stored ones), its
        `clock_offset`; add `new`
        (served since the previous refresh; their `minute` is ignored) to the history
        bucket of `now`'s minute. One transaction.

        Returns:
            False if there is no such row (removed as dead meanwhile); nothing is written
            then, and the worker should `register_worker` again.
        """
        ...

    def unregister_worker(self, worker_id: str) -> bool:
        """Remove the worker's row (graceful stop); False if there was none."""
        ...

    def remove_dead_workers(self, dead_before: datetime) -> int:
        """Remove the rows whose `dead_at` is before `dead_before`; return how many."""
        ...

    def prune_served(self, before: datetime) -> int:
        """Delete the history buckets of minutes before `before`; return how many rows."""
        ...

    def list_workers(self, now: datetime) -> list[WorkerInfo]:
        """Every registered worker, by `started_at` then id, `alive` = `now` < `dead_at`."""
        ...

    def jobs_in_flight(self, owners: Sequence[str], limit: int = 1000) -> list[JobRecord]:
        """The leased jobs whose `lease_owner` is one of `owners` (a worker's groups'
        `WorkerGroupInfo.owner`): what those workers run now. Longest running first
        (`started_at`, then id), at most `limit` (none when `limit` <= 0 or `owners` is
        empty). Reads only, from the lease columns the claim writes anyway: nothing is
        written per job to answer it. The SQL stores walk the leased rows only (the
        lease-expiry index), never the whole jobs table."""
        ...

    def served_counts(self, since: datetime) -> list[ServedCount]:
        """The history rows of every minute bucket starting at or after `since`'s minute,
        by (minute, group, Queue, outcome)."""
        ...

    def worker_groups(self) -> list[WorkerGroupInfo]:
        """Every Worker Group any worker registered (as last registered), by name."""
        ...


@runtime_checkable
class AsyncTransactionalEnqueue(Protocol):
    """A store that can also enqueue on the caller's *async* connection (PostgreSQL:
    `psycopg.AsyncConnection`), awaiting its statements on the caller's event loop.
    `enqueue_async` with `configure(connection=...)` uses it when the store has it."""

    async def enqueue_on_async(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """`Store.enqueue_on` for async code; a sync connection is written on inline."""
        ...


@runtime_checkable
class WakeupSource(Protocol):
    """A store that can push wake-up hints when jobs are enqueued (or made claimable again).

    An optimisation only: polling stays the source of truth, so a lost hint delays work by
    at most one poll interval and never loses it.
    """

    def listen(self, on_enqueue: Callable[[str], None]) -> Callable[[], None]:
        """Call `on_enqueue(queue)` after each transaction that enqueued into `queue`
        (possibly from another thread, possibly from another process's enqueue), or made
        its jobs claimable again: a requeue into it, its resume, a change of its limit.
        Returns a function that stops listening. Hints only: a missed one is made up by
        the worker's poll."""
        ...


@runtime_checkable
class FinishSource(Protocol):
    """A store that says when jobs may have finished, so that `App.wait` sleeps until one
    of the jobs waited on does, rather than polling (every store of rota implements it;
    tests/store/test_contract_finish_hints.py runs on each).

    Rules:
    - `listen_finished(on_finished)` calls `on_finished()` after the commit of every
      transaction that moved a job into a finished state, by every path there is:
      `complete`, `dead_letter`, `quarantine`, `cancel` of a scheduled job,
      `cancel_leased`, `expire_lease` dead-lettering, `retry`/`release`/`expire_lease` of
      a job whose cancel was requested, and the outcomes of `claim(..., outcomes=...)`;
      made by any thread of this process or, on SQLite and PostgreSQL, by any process
      sharing the database. It may also be called when nothing finished (SQLite: after
      any commit), and a hint may be lost (a dropped connection): the caller re-reads
      what it waits for, and re-reads now and then anyway.
    - `job_states(ids)` reads the states of those jobs in one query; an id with no job
      (never enqueued, or purged) is left out of the answer.
    """

    def listen_finished(self, on_finished: Callable[[], None]) -> Callable[[], None]:
        """Call `on_finished()` after each transaction that finished jobs (see the class),
        from a thread of the store's (memory: the thread that finished them). The
        callback must return quickly and must not call the store. Listening is in effect
        when this returns. Returns a function that stops listening (idempotent).

        Raises:
            StoreError: if the store cannot start listening (PostgreSQL unreachable).
        """
        ...

    def job_states(self, job_ids: Sequence[int]) -> dict[int, JobState]:
        """The state of each job of `job_ids` that exists, by id, in one read."""
        ...


@runtime_checkable
class Migratable(Protocol):
    """A store with a versioned schema (SQLite, PostgreSQL). Both migrate on first use;
    `migrate()` lets a deployment do it explicitly, before starting workers."""

    def schema_version(self) -> int:
        """The schema version the database is at (0: not created). Reads it without
        migrating, also on a store that migrates on first use."""
        ...

    def known_schema_version(self) -> int:
        """The schema version this rota's migrations bring a database to: the database
        is current when `schema_version()` equals it."""
        ...

    def migrate(self) -> list[int]:
        """Apply the migrations the database lacks; return the versions applied.

        Raises:
            SchemaTooNew: if the database was migrated by a newer rota.
        """
        ...


@runtime_checkable
class WalCheckpointing(Protocol):
    """A store with a write-ahead log that the worker keeps small (SQLite): every worker
    calls `checkpoint_wal()` on a cadence (`rota.worker.checkpoint`). PostgreSQL manages
    its own WAL; the memory store has none."""

    def checkpoint_wal(self) -> int:
        """Fold the write-ahead log back into the database as far as readers allow, without
        waiting for anyone; return the pages left in it (0: all folded back)."""
        ...


@runtime_checkable
class StorageReporting(Protocol):
    """A store that can tell, ahead of time, that its own storage is about to slow the
    queue (PostgreSQL: what holds back vacuum and the dead rows of rota's tables; SQLite:
    the size of the -wal file). Read by `rota health`, `/healthz`, the dashboard and its
    `/metrics` on every call or scrape, so it is one cheap statement (or a `stat`) that
    needs no superuser; rota.core.storage_health turns it into warnings."""

    def storage_health(self) -> StorageHealth:
        """The numbers as they stand; the store's connection for this call is left out
        of the xmin horizon's holders.

        Raises:
            StoreError: if the store does not answer.
        """
        ...


# -- Schedules ----------------------------------------------------------------------------


@runtime_checkable
class ScheduleStore(Protocol):
    """The schedules part of the contract (every store of rota implements it; the contract
    suite tests/store/test_contract_schedules.py runs on each).

    Rules:
    - `register_schedules` creates a missing row with `registered_at = now` (kept for good:
      the schedule never fires for an instant at or before it) and otherwise overwrites the
      row's definition, rule, time zone, job name and Queue with the caller's, setting
      `updated_at = now`. The last App to register a schedule owns it.
    - `fire_schedule` enqueues the schedule's job for the instant `fire_at` (due at
      `fire_at`) if and only if the row exists, holds the caller's `definition`, and
      `registered_at < fire_at` and (`last_fire_at` is None or `last_fire_at < fire_at`);
      it then sets `last_fire_at = fire_at`. The check, the update and the insert are one
      atomic step: however many processes and machines fire at once, an instant is fired
      at most once, and `last_fire_at` only ever moves forward (so no earlier instant can
      fire after a later one). The job goes through `check_new_jobs` like every enqueue.
    - Rows of schedules in code are never deleted by rota: a schedule removed from the
      code keeps its row, which nothing fires (firing is driven by the Apps that define
      the schedule).
    - Stored schedules (managed at run time, `stored = True`): `set_stored_schedule`
      creates one (registered now) or replaces the stored one of that name (keeping its
      registration, last fire and pause); it refuses, with ValueError, a name whose row is
      a schedule in code. `register_schedules` over a stored row turns it into the code's
      schedule (the code deployed takes the name). `delete_stored_schedule` deletes a
      stored row only. Any worker fires a stored row (with the row's own definition).
    - Pause: `set_schedule_paused` flags any row; `fire_schedule` of a paused row fires
      nothing (`current` stays True). Resuming a paused row moves `registered_at` to `now`
      if it was earlier, so instants that passed while paused are skipped, on every
      worker. Registering keeps the flag: a pause survives deploys and restarts.
    """

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        """Create or update the rows of `schedules` (see the class)."""
        ...

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        """Enqueue `job` for the instant `job.due_at` of schedule `name`, at most once per
        instant (see the class)."""
        ...

    def list_schedules(self) -> list[ScheduleRow]:
        """Every schedule row, sorted by name."""
        ...

    def set_stored_schedule(self, schedule: ScheduleRegistration, now: datetime) -> None:
        """Create the stored schedule `schedule` (registered at `now`), or replace the
        stored one of its name (its rule, job, Queue, arguments and definition; its
        registration, last fire and pause are kept). Its arguments were checked by the
        caller.

        Raises:
            ValueError: if the name belongs to a schedule in code (nothing is written).
        """
        ...

    def delete_stored_schedule(self, name: str) -> bool:
        """Delete the stored schedule `name`; False if there is no stored one of that name
        (a schedule in code is never deleted)."""
        ...

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        """Pause or resume the schedule `name`, stored or in code (see the class); False if
        the store has no row of that name."""
        ...

