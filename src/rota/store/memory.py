"""The `memory://` store: the whole contract in one process's memory.

Not durable. For tests, `run_until_idle()` and the simulator. It applies the core's state
table (`rota.core.jobs.transition`) directly. Thread-safe through one lock. Its finish
hints (`FinishSource`) are calls made by the thread that finished the jobs, once it has
let go of the lock.

Imports only the core and the store contract.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TypeVar

from rota.core.clock import ensure_utc
from rota.core.families import family_prefix, is_family, validate_entry
from rota.core.group_policies import StoredPolicy, checked_policy
from rota.core.groups import validate_group_name
from rota.core.jobs import (
    CANCELLED_BEFORE_RUN,
    CANCELLED_ON_REQUEST,
    LIVE_STATES,
    REQUEUEABLE_STATES,
    JobEvent,
    JobRecord,
    JobState,
    JsonValue,
    Lease,
    NewJob,
    check_new_jobs,
    check_requeueable,
    decode_arguments,
    decode_result,
    expired_error,
    is_expired,
    transition,
)
from rota.core.meta import decode_meta, meta_filter, meta_matches
from rota.core.outcomes import Outcome, bound_traceback, ending
from rota.core.policy import DispatchPolicy
from rota.core.progress import AttemptError, Progress, kept_errors, worker_of_owner
from rota.core.queue_controls import (
    QueueInfo,
    QueueSettings,
    build_queue_infos,
    room,
    settings_in_force,
    validate_queue_limit,
)
from rota.core.rates import Bucket, QueueRate, available, check_rate, next_token_at, take
from rota.core.retention import purgeable_states
from rota.core.schedules import (
    FireOutcome,
    ScheduleRegistration,
    ScheduleRow,
    code_schedule_clash,
)
from rota.core.workers import (
    ServedCount,
    WorkerGroupInfo,
    WorkerInfo,
    minute_of,
    policy_parts,
)
from rota.core.workflows import (
    at_enqueue,
    due_when_released,
    parent_failed_error,
    parent_lets_child_run,
    unknown_parent_error,
)
from rota.store.base import (
    Claimed,
    LeaderLease,
    LeaseOutcome,
    Renewal,
    check_leadership,
    check_outcomes,
    claim_caps,
)

_V = TypeVar("_V")
# The lease endings that record a failed attempt in `JobRecord.errors`.
_FAILURES = frozenset({JobEvent.RETRY, JobEvent.DEAD_LETTER, JobEvent.QUARANTINE})
log = logging.getLogger(__name__)


class MemoryStore:
    """A real, non-durable implementation of the `Store` contract."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Group policies set while workers run: the policy and when it was set, and each
        # group's version (kept after a clear, so that it never goes back).
        self._policies: dict[str, tuple[DispatchPolicy, datetime]] = {}
        self._policy_versions: dict[str, int] = {}
        self._leaders: dict[str, LeaderLease] = {}
        self._jobs: dict[int, JobRecord] = {}
        # Per Queue, a heap of (due_at, id) for scheduled jobs; stale entries are skipped.
        self._due: defaultdict[str, list[tuple[datetime, int]]] = defaultdict(list)
        self._next_id = 1
        self._settings: dict[str, QueueSettings] = {}
        # Rated Queues and families: their rate and bucket (None: full, never taken from;
        # a family's is always None: each member has its own, in _member_buckets).
        self._rates: dict[str, tuple[QueueRate, Bucket | None]] = {}
        # The bucket of each Queue whose rate is a family's (absent: full).
        self._member_buckets: dict[str, Bucket] = {}
        # Every family with a setting: name -> (settings, rate); empty: no family lookups.
        self._families: dict[str, tuple[QueueSettings | None, QueueRate | None]] = {}
        # Per Queue with a limit, ids of its jobs leased at some point (seeded from the jobs
        # when first counted); those no longer leased are pruned when counted, so every
        # path that ends a lease keeps this right without touching it.
        self._leased: dict[str, set[int]] = {}
        # Ids of every job leased since the last lease sweep; the sweep prunes those no
        # longer leased, so it walks the jobs leased now, not every job (a sweep runs each
        # round of run_until_idle: walking 10,000 finished jobs each time was half of a
        # one-Queue drain's time).
        self._lease_holders: set[int] = set()
        # Unique jobs: each keyed job's (name, key), and per (name, key) the id of the job
        # that last took it; that job holds the key while it is live (LIVE_STATES).
        self._keys: dict[int, tuple[str, str]] = {}
        self._key_holder: dict[tuple[str, str], int] = {}
        # Debounce: per (name, key) the id of the job that last collected its enqueues (it
        # collects them while it is scheduled and has never been claimed: `_collector`),
        # and the other way round, so a requeue can take a job out of collecting.
        self._debounce_holder: dict[tuple[str, str], int] = {}
        self._debounce_of: dict[int, tuple[str, str]] = {}
        # Workflows: per parent, its children and whether its end is still to be counted
        # for each (pending); per waiting child, how many parents it still waits for and
        # its after_outcome. While a claim applies outcomes, `_undo` collects how to take
        # back what settling children changed (the claim's "transaction").
        self._edges: dict[int, dict[int, bool]] = {}
        self._waiting_for: dict[int, int] = {}
        self._after_outcome: dict[int, str] = {}
        self._undo: list[Callable[[], None]] | None = None
        self._schedules: dict[str, ScheduleRow] = {}
        # Worker registry: rows by worker id, history by (minute, group, Queue, outcome),
        # groups as last registered.
        self._workers: dict[str, WorkerInfo] = {}
        self._served: dict[tuple[datetime, str, str, str], int] = {}
        self._groups: dict[str, WorkerGroupInfo] = {}
        # Finish hints: the listeners (replaced, never mutated), and whether a call under
        # the lock moved a job into a finished state (set only while someone listens).
        self._finish_listeners: tuple[Callable[[], None], ...] = ()
        self._finishing = False

    @property
    def url(self) -> str:
        return "memory://"

    def __repr__(self) -> str:
        return "MemoryStore()"

    def store_time(self) -> None:
        return None  # one process, one clock

    # -- writes -------------------------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        check_new_jobs(jobs)  # the same jobs refused on every store
        decoded = [decode_arguments(job.args_json, job.kwargs_json) for job in jobs]
        with self._lock:
            for job in jobs:  # before anything is stored: all of the batch or none
                for parent in job.parents:
                    if parent not in self._jobs:
                        raise ValueError(unknown_parent_error(parent))
            ids: list[int] = []
            for job, (args, kwargs) in zip(jobs, decoded, strict=True):
                if job.parents:
                    ids.append(self._enqueue_child(job, args, kwargs, now))
                    continue
                if job.debounced:
                    ids.append(self._enqueue_debounced(job, args, kwargs, now))
                    continue
                if job.key is not None:
                    holder = self._live_holder((job.name, job.key))
                    if holder is not None:
                        ids.append(holder)
                        continue
                    self._keys[self._next_id] = (job.name, job.key)
                    self._key_holder[(job.name, job.key)] = self._next_id
                job_id = self._next_id
                self._next_id += 1
                self._jobs[job_id] = JobRecord(
                    id=job_id, name=job.name, queue=job.queue, state=JobState.SCHEDULED,
                    attempt=0, due_at=job.due_at, args=args, kwargs=kwargs, created_at=now,
                    key=job.key, trace_context=job.trace_context,
                    meta=decode_meta(job.meta_json), expires_at=job.expires_at,
                )
                heapq.heappush(self._due[job.queue], (job.due_at, job_id))
                ids.append(job_id)
            return ids

    def _enqueue_child(self, job: NewJob, args: tuple[object, ...],
                       kwargs: dict[str, object], now: datetime) -> int:
        """One job with parents, under the lock (its parents exist: `enqueue` checked)."""
        states = {parent: self._jobs[parent].state for parent in job.parents}
        start = at_enqueue(job.parents, states, job.after_outcome)
        job_id = self._next_id
        self._next_id += 1
        self._jobs[job_id] = JobRecord(
            id=job_id, name=job.name, queue=job.queue, state=start.state, attempt=0,
            due_at=job.due_at, args=args, kwargs=kwargs, created_at=now,
            last_error=start.error, finished_at=now if start.state.finished else None,
            trace_context=job.trace_context, parents=job.parents,
            meta=decode_meta(job.meta_json), expires_at=job.expires_at,
            after_outcome=job.after_outcome,
        )
        for parent in job.parents:
            self._edges.setdefault(parent, {})[job_id] = not states[parent].finished
        if start.state is JobState.WAITING:
            self._waiting_for[job_id] = start.waiting_for
            self._after_outcome[job_id] = job.after_outcome
        elif start.state is JobState.SCHEDULED:
            heapq.heappush(self._due[job.queue], (job.due_at, job_id))
        return job_id

    def _parent_finished(self, parent: JobRecord) -> None:
        """Under the lock, once `parent` has just changed into a finished state: settle its
        waiting children (rota.core.workflows), and theirs in turn when one is cancelled."""
        ended = [parent]
        while ended:
            job = ended.pop()
            edges = self._edges.get(job.id)
            if not edges:
                continue
            assert job.finished_at is not None
            pending = [child for child, waiting in edges.items() if waiting]
            for child_id in pending:
                self._write_undoable(edges, child_id, False)
                child = self._jobs.get(child_id)
                if child is None or child.state is not JobState.WAITING:
                    continue
                if parent_lets_child_run(job.state, self._after_outcome[child_id]):
                    left = self._waiting_for[child_id] - 1
                    self._write_undoable(self._waiting_for, child_id, left)
                    if left == 0:
                        self._put(replace(
                            child, state=transition(child.state, JobEvent.PARENTS_DONE),
                            due_at=due_when_released(child.due_at, job.finished_at),
                        ))
                        heapq.heappush(self._due[child.queue], (
                            self._jobs[child_id].due_at, child_id))
                else:
                    cancelled = replace(
                        child, state=transition(child.state, JobEvent.CANCEL),
                        finished_at=job.finished_at,
                        last_error=parent_failed_error(job.id, job.state), last_traceback=None,
                    )
                    self._put(cancelled)
                    ended.append(cancelled)

    def _put(self, job: JobRecord) -> None:
        """Store `job`'s new record, undoably while a claim applies outcomes."""
        self._write_undoable(self._jobs, job.id, job)

    def _write_undoable(self, table: dict[int, _V], key: int, value: _V) -> None:
        if self._undo is not None:
            old = table[key]
            self._undo.append(lambda: table.__setitem__(key, old))
        table[key] = value

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        raise TypeError(
            "the memory:// store keeps its jobs in this process, not in a database, so it "
            f"cannot enqueue on a connection (got {type(connection).__name__}); "
            "transactional enqueue needs a sqlite:/// or postgresql:// store"
        )

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
        caps = claim_caps(queues, limit, limits)
        check_outcomes(outcomes)
        with self._lock:
            # One "transaction": if the claim raises, the outcomes and the leases it took
            # are undone (the heaps tolerate the stale entries this leaves).
            before = {lease.job_id: self._jobs.get(lease.job_id) for lease, _ in outcomes}
            buckets = dict(self._rates) if self._rates else None
            member_buckets = dict(self._member_buckets) if self._families else None
            taken: list[JobRecord] = []
            self._undo = [] if outcomes else None
            try:
                applied = self._apply_outcomes(outcomes, now)
                claimed = self._claim_locked(caps, limit, now, owner, lease_expires_at, probe,
                                             taken)
            except BaseException:
                for undo in reversed(self._undo or ()):
                    undo()
                if buckets is not None:
                    self._rates = buckets
                if member_buckets is not None:
                    self._member_buckets = member_buckets
                for job in taken:
                    self._jobs[job.id] = job
                    heapq.heappush(self._due[job.queue], (job.due_at, job.id))
                for job_id, old in before.items():
                    if old is not None:
                        self._jobs[job_id] = old
                        if old.state is JobState.LEASED and old.queue in self._leased:
                            self._leased[old.queue].add(job_id)
                raise
            finally:
                self._undo = None
        if self._finishing:
            self._tell_finished()
        claimed.applied = applied
        return claimed

    def _apply_outcomes(self, outcomes: Sequence[LeaseOutcome], now: datetime) -> int:
        """Under the lock: each outcome as its own method would record it; how many were
        still held."""
        applied = 0
        for lease, outcome in outcomes:
            job = self._held(lease)
            if job is not None:
                self._record(job, outcome, now)
                applied += 1
        return applied

    def _record(self, job: JobRecord, outcome: Outcome, now: datetime) -> None:
        """As `rota.core.outcomes.ending` says: every kind is one event of `_end_lease`."""
        event, error, traceback, due_at, result = ending(outcome)
        if event is JobEvent.EXPIRE:  # refused by check_outcomes: no lease to end
            raise TypeError("an Expired outcome is a claim's report, not a write")
        self._end_lease(job, event, now, due_at=due_at, error=error, result=result,
                        traceback=traceback)

    def _claim_locked(
        self, caps: Sequence[tuple[str, int]], limit: int, now: datetime, owner: str,
        lease_expires_at: datetime, probe: Sequence[str], taken: list[JobRecord],
    ) -> Claimed:
        """Under the lock: the claim itself (see `claim`); appends each job it leases, as
        it was before, to `taken`."""
        claimed = Claimed()
        controlled: list[str] = []
        rates = self._rates
        # With many tenant Queues this loop runs once per Queue asked, for about one job
        # each: what it reads of `self` is read once, and a Queue with no due entry costs a
        # lookup or two.
        settings_of, heap_of, jobs, leased_of = (
            self._settings.get, self._due.get, self._jobs, self._leased)
        count = 0  # len(claimed)
        worker = worker_of_owner(owner)
        families = self._families
        for queue, cap in caps:
            wanted = min(cap, limit - count)
            settings = settings_of(queue)
            rated = rates.get(queue) if rates else None
            of_family = False
            if families:
                force = settings_in_force(queue, settings, rated and rated[0], families)
                settings = force.settings
                if force.rate_of_family:
                    assert force.rate is not None
                    rated, of_family = (force.rate, self._member_buckets.get(queue)), True
            if settings is not None and (settings.paused or settings.limit is not None):
                controlled.append(queue)
                held = 0 if settings.limit is None else self._count_leased(queue)
                wanted = room(settings, held, wanted)
            starved = False
            if rated is not None:
                controlled.append(queue)
                tokens = available(rated[0], rated[1], now)
                if tokens < wanted:
                    wanted, starved = tokens, True
            heap = heap_of(queue)
            if not heap:
                continue  # (no job: nothing waits for a token)
            start = count
            stop = count + wanted
            walked = count  # the jobs leased, and those expired, count against the take
            while heap and walked < stop and heap[0][0] <= now:
                due_at, job_id = heapq.heappop(heap)
                job = jobs.get(job_id)
                if job is None or job.state is not JobState.SCHEDULED or job.due_at != due_at:
                    continue  # stale entry: the job moved on (or was purged) since
                walked += 1
                if job.expires_at is not None and is_expired(job.expires_at, now):
                    self._expire(job, now, claimed, taken)
                    continue
                leased = replace(
                    job, state=transition(job.state, JobEvent.CLAIM),
                    attempt=job.attempt + 1, lease_owner=owner,
                    lease_expires_at=lease_expires_at, started_at=now, progress=None,
                    worker=worker,
                )
                jobs[job_id] = leased
                taken.append(job)
                self._lease_holders.add(job_id)
                if queue in leased_of:
                    leased_of[queue].add(job_id)
                claimed.append(leased)
                count += 1
            if rated is not None:
                if count > start:
                    bucket = take(*rated, now, count - start)
                    if of_family:
                        self._member_buckets[queue] = bucket
                    else:
                        rates[queue] = (rated[0], bucket)
                    rated = (rated[0], bucket)
                if starved:
                    self._starved(claimed, rated, now)
        if probe:
            has_due = self._has_due
            claimed.due = frozenset([queue for queue in probe if has_due(queue, now)])
        claimed.controlled = frozenset(controlled)
        return claimed

    def _expire(self, job: JobRecord, now: datetime, claimed: Claimed,
                taken: list[JobRecord]) -> None:
        """Under the lock, in a claim: end the due `job`, past its `expires_at`, cancelled
        instead of leasing it, and report it in `claimed.expired`."""
        assert job.expires_at is not None
        ended = replace(job, state=transition(job.state, JobEvent.EXPIRE), finished_at=now,
                        last_error=expired_error(job.expires_at), last_traceback=None)
        self._jobs[job.id] = ended
        taken.append(job)
        claimed.expired.append(ended)
        self._parent_finished(ended)
        if self._finish_listeners:
            self._finishing = True

    @staticmethod
    def _starved(claimed: Claimed, rated: tuple[QueueRate, Bucket | None],
                 now: datetime) -> None:
        """A Queue was held back by its rate: note when its next token comes."""
        due = next_token_at(rated[0], rated[1], now)
        if claimed.next_token_at is None or due < claimed.next_token_at:
            claimed.next_token_at = due

    def _has_due(self, queue: str, now: datetime) -> bool:
        """Whether `queue` has a due scheduled job and is not paused (for a probe)."""
        heap = self._due.get(queue)
        if not heap:  # (first: a tenant the claim just drained, the usual case)
            return False
        if self._paused(queue):
            return False
        return self._has_scheduled_due(queue, now)

    def _paused(self, queue: str) -> bool:
        """Whether `queue` is paused, by its own flag or a family's."""
        settings = self._settings.get(queue)
        if settings is not None and settings.paused:
            return True
        return any(family[0] is not None and family[0].paused
                   and queue.startswith(family_prefix(name))
                   for name, family in self._families.items())

    def _has_scheduled_due(self, queue: str, now: datetime) -> bool:
        """Whether `queue` has a due scheduled job (its heap's stale head entries go)."""
        heap = self._due.get(queue)
        while heap:
            due_at, job_id = heap[0]
            job = self._jobs.get(job_id)
            if job is None or job.state is not JobState.SCHEDULED or job.due_at != due_at:
                heapq.heappop(heap)  # stale entry (see claim)
                continue
            return due_at <= now
        return False

    def _count_leased(self, queue: str) -> int:
        ids = self._leased.get(queue)
        if ids is None:
            ids = self._leased[queue] = {
                job.id for job in self._jobs.values()
                if job.queue == queue and job.state is JobState.LEASED}
        ids.difference_update(
            [job_id for job_id in ids if self._jobs[job_id].state is not JobState.LEASED]
        )
        return len(ids)

    def _held(self, lease: Lease) -> JobRecord | None:
        job = self._jobs.get(lease.job_id)
        if (
            job is None
            or job.state is not JobState.LEASED
            or job.lease_owner != lease.owner
            or job.attempt != lease.attempt
        ):
            return None
        return job

    def _end_lease(
        self, job: JobRecord, event: JobEvent, now: datetime, *,
        due_at: datetime | None = None, error: str | None = None, attempt: int | None = None,
        result: str | None = None, traceback: str | None = None,
    ) -> None:
        snoozes = job.snoozes
        errors = job.errors
        if error is not None and event in _FAILURES:
            assert job.lease_owner is not None  # (a leased job's)
            errors = kept_errors(errors, AttemptError(
                job.attempt, now, error,
                None if traceback is None else bound_traceback(traceback),
                worker_of_owner(job.lease_owner)))
        if job.cancel_requested and event in (JobEvent.RETRY, JobEvent.RELEASE,
                                              JobEvent.SNOOZE):
            # A job whose cancel was requested never goes back to scheduled.
            event, due_at, error, attempt = JobEvent.CANCEL, None, CANCELLED_ON_REQUEST, None
            traceback = None
        elif event is JobEvent.SNOOZE:  # the attempt does not count; the snooze does
            attempt, snoozes = job.attempt - 1, job.snoozes + 1
        state = transition(job.state, event)
        # A new error replaces the traceback too: the traceback goes with the error it
        # explains, None when that error came from no exception.
        updated = replace(
            job, state=state, lease_owner=None, lease_expires_at=None,
            finished_at=now if state.finished else None,
            due_at=due_at if due_at is not None else job.due_at,
            last_error=error if error is not None else job.last_error,
            last_traceback=(job.last_traceback if error is None else
                            None if traceback is None else bound_traceback(traceback)),
            attempt=attempt if attempt is not None else job.attempt,
            result=decode_result(result), snoozes=snoozes, errors=errors,
        )
        self._jobs[job.id] = updated
        if state is JobState.SCHEDULED:
            heapq.heappush(self._due[job.queue], (updated.due_at, job.id))
        elif state.finished:
            self._parent_finished(updated)
            if self._finish_listeners:
                self._finishing = True

    def _after_finishing(self) -> None:
        if self._finishing:
            self._tell_finished()

    def _tell_finished(self) -> None:
        """After the lock is let go: call the finish listeners (`listen_finished`)."""
        self._finishing = False
        for listener in self._finish_listeners:
            try:
                listener()
            except Exception:
                log.exception("a finish listener failed; hint dropped")

    def listen_finished(self, on_finished: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._finish_listeners = (*self._finish_listeners, on_finished)

        def stop() -> None:
            with self._lock:
                self._finish_listeners = tuple(
                    listener for listener in self._finish_listeners
                    if listener is not on_finished)

        return stop

    def job_states(self, job_ids: Sequence[int]) -> dict[int, JobState]:
        with self._lock:
            jobs = [self._jobs.get(job_id) for job_id in job_ids]
        return {job.id: job.state for job in jobs if job is not None}

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        done = 0
        with self._lock:
            for index, lease in enumerate(leases):
                job = self._held(lease)
                if job is not None:
                    result = None if results is None else results[index]
                    self._end_lease(job, JobEvent.COMPLETE, now, result=result)
                    done += 1
        if self._finishing:
            self._tell_finished()
        return done

    def retry(self, lease: Lease, now: datetime, due_at: datetime, error: str,
              *, traceback: str | None = None) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._end_lease(job, JobEvent.RETRY, now, due_at=due_at, error=error,
                            traceback=traceback)
        self._after_finishing()
        return True

    def snooze(self, lease: Lease, now: datetime, due_at: datetime) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._end_lease(job, JobEvent.SNOOZE, now, due_at=due_at)
        self._after_finishing()
        return True

    def dead_letter(self, lease: Lease, now: datetime, error: str,
                    *, traceback: str | None = None) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._end_lease(job, JobEvent.DEAD_LETTER, now, error=error,
                            traceback=traceback)
        self._after_finishing()
        return True

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._end_lease(job, JobEvent.QUARANTINE, now, error=error)
        self._after_finishing()
        return True

    def set_progress(self, lease: Lease, progress: Progress) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._jobs[job.id] = replace(job, progress=progress)
        return True

    def cancel_leased(self, lease: Lease, now: datetime, error: str) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None:
                return False
            self._end_lease(job, JobEvent.CANCEL, now, error=error)
        self._after_finishing()
        return True

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        released = 0
        with self._lock:
            for lease in leases:
                job = self._held(lease)
                if job is not None:
                    self._end_lease(job, JobEvent.RELEASE, now, attempt=job.attempt - 1)
                    released += 1
        self._after_finishing()
        return released

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        renewed: set[int] = set()
        cancel_requested: set[int] = set()
        with self._lock:
            for lease in leases:
                job = self._held(lease)
                if job is None or job.lease_expires_at is None or job.lease_expires_at <= now:
                    continue
                self._jobs[job.id] = replace(job, lease_expires_at=lease_expires_at)
                renewed.add(job.id)
                if job.cancel_requested:
                    cancel_requested.add(job.id)
        return Renewal(renewed, cancel_requested)

    def cancel_requests(self, job_ids: Sequence[int]) -> set[int]:
        with self._lock:
            jobs = [self._jobs.get(job_id) for job_id in job_ids]
        return {job.id for job in jobs if job is not None and job.state is JobState.LEASED
                and job.cancel_requested}

    def find_expired_leases(self, now: datetime, limit: int) -> list[JobRecord]:
        if limit <= 0:
            return []
        with self._lock:
            expired: list[JobRecord] = []
            ended: list[int] = []
            for job_id in self._lease_holders:
                job = self._jobs.get(job_id)
                if job is None or job.state is not JobState.LEASED:
                    ended.append(job_id)
                elif job.lease_expires_at is not None and job.lease_expires_at <= now:
                    expired.append(job)
            self._lease_holders.difference_update(ended)
        expired.sort(key=lambda job: (job.lease_expires_at, job.id))
        return expired[:limit]

    def expire_lease(
        self, lease: Lease, now: datetime, due_at: datetime | None, error: str
    ) -> bool:
        with self._lock:
            job = self._held(lease)
            if job is None or job.lease_expires_at is None or job.lease_expires_at > now:
                return False
            if due_at is None:
                self._end_lease(job, JobEvent.DEAD_LETTER, now, error=error)
            else:
                self._end_lease(job, JobEvent.RETRY, now, due_at=due_at, error=error)
        self._after_finishing()
        return True

    def cancel(self, job_id: int, now: datetime) -> bool:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return False
            if job.state is JobState.LEASED:
                self._jobs[job_id] = replace(job, cancel_requested=True)
                return True
            if job.state is not JobState.SCHEDULED and job.state is not JobState.WAITING:
                return False
            cancelled = replace(job, state=transition(job.state, JobEvent.CANCEL),
                                finished_at=now, last_error=CANCELLED_BEFORE_RUN,
                                last_traceback=None)
            self._jobs[job_id] = cancelled
            self._parent_finished(cancelled)
            if self._finish_listeners:
                self._finishing = True
        self._after_finishing()
        return True

    def _enqueue_debounced(self, job: NewJob, args: tuple[object, ...],
                           kwargs: dict[str, object], now: datetime) -> int:
        """One debounced job, under the lock: the key's collecting job takes its arguments
        and due time (capped at its created_at + max_wait), or a new job collects."""
        assert job.key is not None  # check_new_jobs
        name_key = (job.name, job.key)
        collector = self._collector(name_key)
        if collector is None:
            job_id = self._next_id
            self._next_id += 1
            self._jobs[job_id] = JobRecord(
                id=job_id, name=job.name, queue=job.queue, state=JobState.SCHEDULED,
                attempt=0, due_at=job.due_at, args=args, kwargs=kwargs, created_at=now,
                trace_context=job.trace_context, meta=decode_meta(job.meta_json),
                expires_at=job.expires_at,
            )
            self._debounce_holder[name_key] = job_id
            self._debounce_of[job_id] = name_key
            heapq.heappush(self._due[job.queue], (job.due_at, job_id))
            return job_id
        due_at = job.due_at
        if job.max_wait is not None and collector.created_at is not None:
            due_at = min(due_at, collector.created_at + job.max_wait)
        self._jobs[collector.id] = replace(collector, args=args, kwargs=kwargs, due_at=due_at)
        if due_at != collector.due_at:
            # The entry at the old due time goes stale: claims skip an entry whose due
            # time is not the job's.
            heapq.heappush(self._due[collector.queue], (due_at, collector.id))
        return collector.id

    def _collector(self, name_key: tuple[str, str]) -> JobRecord | None:
        """The job collecting the enqueues of a debounced (name, key), if any."""
        holder = self._debounce_holder.get(name_key)
        job = None if holder is None else self._jobs.get(holder)
        if job is None or job.state is not JobState.SCHEDULED or job.started_at is not None:
            return None
        return job

    def _live_holder(self, name_key: tuple[str, str]) -> int | None:
        """The id of the live job holding (name, key), if any."""
        holder = self._key_holder.get(name_key)
        if holder is None:
            return None
        job = self._jobs.get(holder)
        return holder if job is not None and job.state in LIVE_STATES else None

    def _requeue(self, job: JobRecord, now: datetime) -> bool:
        """Requeue `job`, unless another live job holds its name and key. A debounced job
        comes back as a plain one: it no longer collects its key's enqueues."""
        debounce_key = self._debounce_of.pop(job.id, None)
        if debounce_key is not None and self._debounce_holder.get(debounce_key) == job.id:
            del self._debounce_holder[debounce_key]
        name_key = self._keys.get(job.id)
        if name_key is not None:
            if self._live_holder(name_key) is not None:
                return False
            self._key_holder[name_key] = job.id
        self._jobs[job.id] = replace(
            job, state=transition(job.state, JobEvent.REQUEUE), attempt=0, due_at=now,
            result=None, cancel_requested=False, finished_at=None, last_error=None,
            last_traceback=None, snoozes=0, expires_at=None, progress=None,
        )
        heapq.heappush(self._due[job.queue], (now, job.id))
        return True

    def requeue(self, job_id: int, now: datetime) -> bool:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state not in REQUEUEABLE_STATES:
                return False
            return self._requeue(job, now)

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        check_requeueable(state)
        with self._lock:
            found = [
                job for job in self._jobs.values()
                if job.state is state and (queue is None or job.queue == queue)
            ]
            # In id order: of several jobs sharing a name and key, the oldest goes back.
            return sum(self._requeue(job, now) for job in sorted(found, key=lambda j: j.id))

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        wanted = frozenset(purgeable_states(states))
        with self._lock:
            doomed: list[int] = []
            for job in self._jobs.values():
                if len(doomed) >= limit:
                    break
                if (job.state in wanted and job.finished_at is not None
                        and job.finished_at < finished_before
                        and not self._has_unfinished_child(job.id)):
                    doomed.append(job.id)
            for job_id in doomed:
                # (stale due-heap entries of it are skipped by claim)
                parents = self._jobs.pop(job_id).parents
                self._edges.pop(job_id, None)
                self._waiting_for.pop(job_id, None)
                self._after_outcome.pop(job_id, None)
                for parent in parents:
                    self._edges.get(parent, {}).pop(job_id, None)
                debounce_key = self._debounce_of.pop(job_id, None)
                if debounce_key is not None and \
                        self._debounce_holder.get(debounce_key) == job_id:
                    del self._debounce_holder[debounce_key]
                name_key = self._keys.pop(job_id, None)
                if name_key is not None and self._key_holder.get(name_key) == job_id:
                    del self._key_holder[name_key]
            return len(doomed)

    def _has_unfinished_child(self, job_id: int) -> bool:
        jobs = self._jobs
        return any(child in jobs and not jobs[child].state.finished
                   for child in self._edges.get(job_id, ()))

    # -- Queue controls -------------------------------------------------------------------

    def _change_settings(
        self, queue: str, change: Callable[[QueueSettings], QueueSettings]
    ) -> QueueSettings:
        validate_entry(queue)
        with self._lock:
            settings = change(self._settings.get(queue, QueueSettings(queue)))
            self._settings[queue] = settings
            self._index_families()
            return settings

    def _index_families(self) -> None:
        """Under the lock, after a setting changed: `_families` again."""
        self._families = {
            name: (self._settings.get(name), rated[0] if (rated := self._rates.get(name))
                   else None)
            for name in {*self._settings, *self._rates} if is_family(name)}

    def pause_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(queue, lambda old: replace(old, paused=True))

    def resume_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(queue, lambda old: replace(old, paused=False))

    def set_queue_limit(self, queue: str, limit: int | None) -> QueueSettings:
        checked = validate_queue_limit(limit)

        def change(old: QueueSettings) -> QueueSettings:
            return replace(old, limit=checked)

        return self._change_settings(queue, change)

    def set_queue_rate(self, queue: str, rate: QueueRate | None) -> QueueRate | None:
        checked = check_rate(rate)
        validate_entry(queue)
        with self._lock:
            if checked is None:
                self._rates.pop(queue, None)
            else:
                self._rates[queue] = (checked, None)
            if is_family(queue):  # its members' buckets start full again
                prefix = family_prefix(queue)
                for member in [m for m in self._member_buckets if m.startswith(prefix)]:
                    del self._member_buckets[member]
                self._index_families()
        return checked

    def queue_infos(self, now: datetime) -> list[QueueInfo]:
        counts: defaultdict[tuple[str, JobState], int] = defaultdict(int)
        due: dict[str, tuple[int, datetime | None]] = {}
        with self._lock:
            settings = list(self._settings.values())
            rates = dict(self._rates)
            buckets = dict(self._member_buckets)
            for job in self._jobs.values():
                counts[(job.queue, job.state)] += 1
                if job.state is JobState.SCHEDULED and job.due_at <= now:
                    count, oldest = due.get(job.queue, (0, None))
                    if oldest is None or job.due_at < oldest:
                        oldest = job.due_at
                    due[job.queue] = (count + 1, oldest)
        return build_queue_infos(settings, counts, due, rates, now, buckets)

    # -- reads --------------------------------------------------------------------------

    def get_job(self, job_id: int) -> JobRecord | None:
        with self._lock:
            return self._jobs.get(job_id)

    def job_children(self, job_id: int) -> list[int]:
        with self._lock:
            return sorted(self._edges.get(job_id, ()))

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
        if limit <= 0:
            return []
        with self._lock:
            found: list[JobRecord] = []
            skip = offset
            jobs: Iterable[JobRecord] = self._jobs.values()  # insertion (= id) order
            if newest and state is not None and state.finished:
                # Most recently finished first, as the durable stores' finished-rows index
                # walk gives them (rota.store.base.listing_statement).
                jobs = sorted((job for job in jobs if job.state is state),
                              key=lambda job: (job.finished_at, job.id), reverse=True)
            elif newest:
                jobs = reversed(self._jobs.values())
            for job in jobs:
                if ((queue is None or job.queue == queue) and (state is None or job.state is state)
                        and (name is None or job.name == name)):
                    if skip > 0:
                        skip -= 1
                        continue
                    found.append(job)
                    if len(found) >= limit:
                        break
            return found

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
        if limit <= 0:
            return []
        wanted = meta_filter(meta)
        with self._lock:
            found: list[JobRecord] = []
            # Insertion order is id order.
            jobs = reversed(self._jobs.values()) if newest else iter(self._jobs.values())
            for job in jobs:
                if beyond is not None and (job.id >= beyond if newest else job.id <= beyond):
                    continue
                if ((queue is None or job.queue == queue) and (state is None or job.state is state)
                        and (name is None or job.name == name)
                        and (wanted is None or meta_matches(job.meta, wanted))):
                    found.append(job)
                    if len(found) >= limit:
                        break
            return found

    def count_jobs(self) -> dict[tuple[str, JobState], int]:
        counts: defaultdict[tuple[str, JobState], int] = defaultdict(int)
        with self._lock:
            for job in self._jobs.values():
                counts[(job.queue, job.state)] += 1
        return dict(counts)

    def due_queues(self, prefixes: Sequence[str], now: datetime, *, after: str = "",
                   limit: int = 1000) -> list[str]:
        with self._lock:
            found = sorted(queue for queue, heap in self._due.items()
                           if queue > after and heap
                           and any(queue.startswith(prefix) for prefix in prefixes)
                           and self._has_scheduled_due(queue, now))
        return found[:max(limit, 0)]

    # -- the dashboard's "when will it run?" ---------------------------------------------

    def due_position(self, job_id: int, now: datetime) -> int | None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state is not JobState.SCHEDULED or job.due_at > now:
                return None
            key = (job.due_at, job.id)
            return sum(
                1 for other in self._jobs.values()
                if other.queue == job.queue and other.state is JobState.SCHEDULED
                and (other.due_at, other.id) < key
            )

    def close(self) -> None:
        pass

    # -- Schedules ------------------------------------------------------------------------

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        with self._lock:
            for s in schedules:
                old = self._schedules.get(s.name)
                self._schedules[s.name] = ScheduleRow(
                    s.name, s.definition, s.rule, s.timezone, s.job_name, s.queue,
                    registered_at=now if old is None else old.registered_at,
                    updated_at=now,
                    last_fire_at=None if old is None else old.last_fire_at,
                    args_json=s.args_json, kwargs_json=s.kwargs_json,
                    paused=old is not None and old.paused, stored=False,
                )

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        check_new_jobs([job])  # the same jobs refused on every store
        args, kwargs = decode_arguments(job.args_json, job.kwargs_json)
        with self._lock:  # the check, the update and the insert: one atomic step
            row = self._schedules.get(name)
            if row is None or row.definition != definition:
                return FireOutcome(None, current=False)
            if row.paused or row.registered_at >= job.due_at or (
                    row.last_fire_at is not None and row.last_fire_at >= job.due_at):
                return FireOutcome(None)
            self._schedules[name] = replace(row, last_fire_at=job.due_at)
            job_id = self._next_id
            self._next_id += 1
            self._jobs[job_id] = JobRecord(
                id=job_id, name=job.name, queue=job.queue, state=JobState.SCHEDULED,
                attempt=0, due_at=job.due_at, args=args, kwargs=kwargs, created_at=now,
            )
            heapq.heappush(self._due[job.queue], (job.due_at, job_id))
            return FireOutcome(job_id)

    def list_schedules(self) -> list[ScheduleRow]:
        with self._lock:
            return [self._schedules[name] for name in sorted(self._schedules)]

    def set_stored_schedule(self, schedule: ScheduleRegistration, now: datetime) -> None:
        decode_arguments(schedule.args_json, schedule.kwargs_json)  # JSON, before writing
        s = schedule
        with self._lock:
            old = self._schedules.get(s.name)
            if old is not None and not old.stored:
                raise code_schedule_clash(s.name)
            self._schedules[s.name] = ScheduleRow(
                s.name, s.definition, s.rule, s.timezone, s.job_name, s.queue,
                registered_at=now if old is None else old.registered_at, updated_at=now,
                last_fire_at=None if old is None else old.last_fire_at,
                args_json=s.args_json, kwargs_json=s.kwargs_json,
                paused=old is not None and old.paused, stored=True,
            )

    def delete_stored_schedule(self, name: str) -> bool:
        with self._lock:
            row = self._schedules.get(name)
            if row is None or not row.stored:
                return False
            del self._schedules[name]
            return True

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        with self._lock:
            row = self._schedules.get(name)
            if row is None:
                return False
            registered_at = row.registered_at
            if row.paused and not paused and registered_at < now:
                registered_at = now  # instants passed while paused never fire
            self._schedules[name] = replace(row, paused=paused, registered_at=registered_at)
            return True

    # -- worker registry -------------------------------------------------------------------

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        with self._lock:
            self._workers[worker.id] = replace(worker, last_seen=now, alive=True)
            for group in worker.groups:
                self._groups[group.name] = WorkerGroupInfo(
                    name=group.name, policy=group.policy, pool_size=group.pool_size,
                    seen_at=now,
                )

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
        with self._lock:
            worker = self._workers.get(worker_id)
            if worker is None:
                return False
            groups = tuple(
                replace(group, in_flight=in_flight.get(group.name, 0))
                for group in worker.groups
            )
            self._workers[worker_id] = replace(
                worker, last_seen=now, dead_at=dead_at, groups=groups,
                served=tuple(replace(count, minute=None) for count in served),
                clock_offset=clock_offset,
            )
            minute = minute_of(now)
            for count in new:
                key = (minute, count.group, count.queue, count.outcome)
                self._served[key] = self._served.get(key, 0) + count.count
            return True

    def unregister_worker(self, worker_id: str) -> bool:
        with self._lock:
            return self._workers.pop(worker_id, None) is not None

    def remove_dead_workers(self, dead_before: datetime) -> int:
        with self._lock:
            doomed = [w.id for w in self._workers.values() if w.dead_at < dead_before]
            for worker_id in doomed:
                del self._workers[worker_id]
            return len(doomed)

    def prune_served(self, before: datetime) -> int:
        with self._lock:
            doomed = [key for key in self._served if key[0] < before]
            for key in doomed:
                del self._served[key]
            return len(doomed)

    def list_workers(self, now: datetime) -> list[WorkerInfo]:
        with self._lock:
            workers = list(self._workers.values())
        workers.sort(key=lambda w: (w.started_at, w.id))
        return [replace(w, alive=now < w.dead_at) for w in workers]

    def jobs_in_flight(self, owners: Sequence[str], limit: int = 1000) -> list[JobRecord]:
        if limit <= 0 or not owners:
            return []
        wanted = set(owners)
        with self._lock:
            jobs = [job for job in map(self._jobs.get, self._lease_holders)
                    if job is not None and job.state is JobState.LEASED
                    and job.lease_owner in wanted]
        # A leased job always has started_at (its claim's time); due_at only for the type.
        jobs.sort(key=lambda job: (job.started_at or job.due_at, job.id))
        return jobs[:limit]

    def served_counts(self, since: datetime) -> list[ServedCount]:
        start = minute_of(since)
        with self._lock:
            rows = [(key, count) for key, count in self._served.items() if key[0] >= start]
        rows.sort(key=lambda row: row[0])
        return [
            ServedCount(group=group, queue=queue, outcome=outcome, count=count, minute=minute)
            for (minute, group, queue, outcome), count in rows
        ]

    def worker_groups(self) -> list[WorkerGroupInfo]:
        with self._lock:
            return sorted(self._groups.values(), key=lambda group: group.name)

    # -- group policies -------------------------------------------------------------------

    def set_group_policy(self, group: str, policy: DispatchPolicy | None,
                         now: datetime) -> int:
        validate_group_name(group)
        moment = ensure_utc(now, "now")
        stored = None if policy is None else (checked_policy(group, policy), moment)
        with self._lock:
            version = self._policy_versions.get(group, 0) + 1
            self._policy_versions[group] = version
            if stored is None:
                self._policies.pop(group, None)
            else:
                self._policies[group] = stored
            return version

    def group_policy(self, group: str) -> StoredPolicy | None:
        validate_group_name(group)
        with self._lock:
            stored = self._policies.get(group)
            version = self._policy_versions.get(group, 0)
        if stored is None:
            return None
        kind, queues, weights = policy_parts(stored[0])
        return StoredPolicy(group, kind, queues, weights, version, stored[1])

    def group_policy_versions(self) -> dict[str, int]:
        with self._lock:
            return dict(self._policy_versions)


    # -- leader leases ------------------------------------------------------------------

    def take_leadership(self, name: str, owner: str, now: datetime,
                        ttl: timedelta) -> LeaderLease | None:
        check_leadership(name, owner, ttl)
        moment = ensure_utc(now, "now")
        with self._lock:
            held = self._leaders.get(name)
            if held is not None and held.owner != owner and held.expires_at > moment:
                return held
            self._leaders[name] = LeaderLease(owner, moment + ttl)
            return self._leaders[name]

    def give_up_leadership(self, name: str, owner: str) -> bool:
        check_leadership(name, owner)
        with self._lock:
            held = self._leaders.get(name)
            if held is None or held.owner != owner:
                return False
            del self._leaders[name]
            return True

    def leader(self, name: str, now: datetime) -> str | None:
        check_leadership(name)
        moment = ensure_utc(now, "now")
        with self._lock:
            held = self._leaders.get(name)
        return held.owner if held is not None and held.expires_at > moment else None
