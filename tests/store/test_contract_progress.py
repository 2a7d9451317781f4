"""The store contract, what a job reports and what it went through: `set_progress` is
fenced by the lease and cleared by a claim and a requeue; every failed attempt is kept in
`errors` (the last 20, oldest first), written by the call that records the failure; a
job names the worker id of its lease owner as `worker`, kept however the lease ends;
`cancel` of a job that never ran says so in `last_error`. Run unchanged on every store
(see rota/store/base.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from rota.core.jobs import CANCELLED_BEFORE_RUN, JobRecord, JobState, Lease, NewJob
from rota.core.outcomes import RetryAt, Succeeded
from rota.core.progress import MAX_KEPT_ERRORS, AttemptError, Progress
from rota.store import Store
from tests.store.test_contract import LEASE, T0, claim, lease_of, new

OWNER = "fast@host-a:4242:abcd1234"
WORKER = "host-a:4242:abcd1234"
TRACEBACK = 'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: é\n'


def record(store: Store, job_id: int) -> JobRecord:
    job = store.get_job(job_id)
    assert job is not None
    return job


def listed(store: Store, job_id: int) -> JobRecord:
    (job,) = [job for job in store.list_jobs(limit=1000) if job.id == job_id]
    return job


def progress(done: float, total: float | None = 10, message: str = "", seconds: int = 0
             ) -> Progress:
    return Progress(done, total, message, T0 + timedelta(seconds=seconds))


# -- progress -------------------------------------------------------------------------------


def test_progress_is_stored_and_read_by_get_job_and_list_jobs(store: Store) -> None:
    # Given a leased job
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1, owner=OWNER)
    assert record(store, job_id).progress is None
    # When its attempt reports progress twice
    assert store.set_progress(lease_of(store, job_id), progress(3, 10, "rows: é"))
    assert store.set_progress(lease_of(store, job_id), progress(7.5, None, "", 1))
    # Then both reads give the last one, exactly
    for job in (record(store, job_id), listed(store, job_id)):
        assert job.progress == progress(7.5, None, "", 1)
        assert job.state is JobState.LEASED


def test_progress_is_fenced_by_the_lease(store: Store) -> None:
    # Given a job leased by one owner, and a job not leased
    leased, scheduled = store.enqueue([new(), new(queue="other")], T0)
    claim(store, ["q"], 1, owner=OWNER)
    lease = lease_of(store, leased)
    # Then another owner, another attempt or an unleased job write nothing
    assert not store.set_progress(Lease(leased, "other@h:1:x", lease.attempt), progress(1))
    assert not store.set_progress(Lease(leased, lease.owner, lease.attempt + 1), progress(1))
    assert not store.set_progress(Lease(scheduled, OWNER, 1), progress(1))
    assert record(store, leased).progress is None
    assert record(store, scheduled).progress is None
    # And once the attempt has ended, its lease writes nothing either
    assert store.complete([lease], T0) == 1
    assert not store.set_progress(lease, progress(2))
    assert record(store, leased).progress is None


def test_progress_is_kept_after_the_job_finishes_and_cleared_by_the_next_claim(
    store: Store,
) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1, owner=OWNER)
    assert store.set_progress(lease_of(store, job_id), progress(5))
    # A retried attempt leaves its progress to read
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: x")
    assert record(store, job_id).progress == progress(5)
    # The next attempt starts with none
    claim(store, ["q"], 1, owner=OWNER)
    assert record(store, job_id).progress is None
    assert store.set_progress(lease_of(store, job_id), progress(10))
    assert store.dead_letter(lease_of(store, job_id), T0, "ValueError: y")
    assert record(store, job_id).progress == progress(10)
    # A requeue is a fresh run: no progress
    assert store.requeue(job_id, T0)
    assert record(store, job_id).progress is None


# -- errors ---------------------------------------------------------------------------------


def test_a_job_that_never_failed_has_no_errors(store: Store) -> None:
    done, waiting = store.enqueue([new(), new(queue="later")], T0)
    claim(store, ["q"], 1, owner=OWNER)
    assert store.complete([lease_of(store, done)], T0) == 1
    for job_id in (done, waiting):
        assert record(store, job_id).errors == ()
        assert listed(store, job_id).errors == ()


def test_every_failed_attempt_is_kept_oldest_first(store: Store) -> None:
    # Given a job retried, its lease expired, then dead-lettered
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1, owner=OWNER)
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: é", traceback=TRACEBACK)
    t1 = T0 + timedelta(seconds=1)
    claim(store, ["q"], 1, now=t1, owner="slow@host-b:7:ffff0000")
    expired_at = t1 + LEASE
    assert store.expire_lease(lease_of(store, job_id), expired_at, expired_at, "lease lost")
    claim(store, ["q"], 1, now=expired_at, owner=OWNER)
    assert store.dead_letter(lease_of(store, job_id), expired_at, "KeyError: 'k'",
                             traceback="Traceback: k\n")
    # Then every attempt's error is there, in order, with its worker
    expected = (
        AttemptError(1, T0, "ValueError: é", TRACEBACK, WORKER),
        AttemptError(2, expired_at, "lease lost", None, "host-b:7:ffff0000"),
        AttemptError(3, expired_at, "KeyError: 'k'", "Traceback: k\n", WORKER),
    )
    for job in (record(store, job_id), listed(store, job_id)):
        assert job.errors == expected
        assert job.last_error == "KeyError: 'k'"


def test_quarantine_keeps_its_error_and_a_cancel_records_none(store: Store) -> None:
    quarantined, cancelled = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2, owner=OWNER)
    assert store.quarantine(lease_of(store, quarantined), T0, "UnknownJob: x")
    assert store.cancel(cancelled, T0)
    assert store.cancel_leased(lease_of(store, cancelled), T0, "Cancelled: on request")
    assert record(store, quarantined).errors == (
        AttemptError(1, T0, "UnknownJob: x", None, WORKER),)
    assert record(store, cancelled).errors == ()


def test_the_last_20_errors_are_kept_and_a_requeue_keeps_them(store: Store) -> None:
    # Given a job that failed 25 times
    (job_id,) = store.enqueue([new()], T0)
    for attempt in range(1, 26):
        claim(store, ["q"], 1, owner=OWNER)
        assert store.retry(lease_of(store, job_id), T0, T0, f"ValueError: {attempt}")
    # Then the last 20 are kept, oldest first
    errors = record(store, job_id).errors
    assert len(errors) == MAX_KEPT_ERRORS == 20
    assert [e.attempt for e in errors] == list(range(6, 26))
    assert [e.error for e in errors] == [f"ValueError: {n}" for n in range(6, 26)]
    # And a requeue (a fresh run) keeps the history
    claim(store, ["q"], 1, owner=OWNER)
    assert store.dead_letter(lease_of(store, job_id), T0, "ValueError: last")
    assert store.requeue(job_id, T0)
    job = record(store, job_id)
    assert (job.attempt, job.last_error) == (0, None)
    assert [e.attempt for e in job.errors] == list(range(7, 27))


def test_outcomes_carried_by_a_claim_keep_their_errors(store: Store) -> None:
    # Given two leased jobs, one failing and one succeeding
    failing, passing = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2, owner=OWNER)
    # When their outcomes ride on the next claim
    later = T0 + timedelta(minutes=1)
    store.claim(["q"], 0, now=T0, owner=OWNER, lease_expires_at=T0 + LEASE, outcomes=[
        (lease_of(store, failing), RetryAt(later, "ValueError: carried", "Traceback: c\n")),
        (lease_of(store, passing), Succeeded()),
    ])
    assert record(store, failing).errors == (
        AttemptError(1, T0, "ValueError: carried", "Traceback: c\n", WORKER),)
    assert record(store, passing).errors == ()


# -- worker ---------------------------------------------------------------------------------


def test_a_claim_records_the_worker_and_it_is_kept_after_the_job_finishes(
    store: Store,
) -> None:
    (job_id,) = store.enqueue([new()], T0)
    assert record(store, job_id).worker is None
    (claimed,) = store.claim(["q"], 1, now=T0, owner=OWNER, lease_expires_at=T0 + LEASE)
    assert claimed.worker == WORKER
    assert record(store, job_id).worker == WORKER
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: x")
    assert record(store, job_id).worker == WORKER
    # The next attempt, elsewhere: its worker now, kept once it succeeded
    claim(store, ["q"], 1, owner="fast@host-b:9:00000000")
    assert store.complete([lease_of(store, job_id)], T0) == 1
    assert record(store, job_id).worker == "host-b:9:00000000"
    assert listed(store, job_id).worker == "host-b:9:00000000"


# Every way a lease ends, each keeping the worker of the attempt it ended.
ENDINGS: dict[str, Callable[[Store, Lease], object]] = {
    "complete": lambda store, lease: store.complete([lease], T0),
    "retry": lambda store, lease: store.retry(lease, T0, T0, "ValueError: x"),
    "snooze": lambda store, lease: store.snooze(lease, T0, T0 + LEASE),
    "release": lambda store, lease: store.release([lease], T0),
    "dead_letter": lambda store, lease: store.dead_letter(lease, T0, "ValueError: x"),
    "quarantine": lambda store, lease: store.quarantine(lease, T0, "bad arguments"),
    "cancel_leased": lambda store, lease: store.cancel_leased(lease, T0, "cancelled"),
    "expire_lease retrying": lambda store, lease: store.expire_lease(
        lease, T0 + 2 * LEASE, T0 + 2 * LEASE, "LeaseExpired"),
    "expire_lease dead-lettering": lambda store, lease: store.expire_lease(
        lease, T0 + 2 * LEASE, None, "LeaseExpired"),
}


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(("owner", "worker"), [
    (OWNER, WORKER),
    ("team@eu@host-c:7:0000cafe", "host-c:7:0000cafe"),  # a group name holding `@`
    ("w1", "w1"),  # an owner without `@` is its own worker id
])
def test_the_worker_of_a_lease_is_kept_however_the_lease_ends(
    store: Store, ending: str, owner: str, worker: str,
) -> None:
    # Given a job that ran once on another worker, leased now by `owner`
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1, owner="fast@host-z:1:00000001")
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: first")
    assert record(store, job_id).worker == "host-z:1:00000001"
    claim(store, ["q"], 1, owner=owner)
    assert record(store, job_id).worker == worker
    # When its lease ends this way, then the job names the worker of that attempt
    assert ENDINGS[ending](store, lease_of(store, job_id))
    assert record(store, job_id).state != JobState.LEASED
    assert record(store, job_id).worker == worker
    assert listed(store, job_id).worker == worker


# -- cancel ---------------------------------------------------------------------------------


def test_a_cancel_before_the_job_ran_says_so(store: Store) -> None:
    # Given a scheduled job, and a waiting child of an unfinished parent
    scheduled, parent = store.enqueue([new(), new(queue="p")], T0)
    (child,) = store.enqueue([NewJob(name="job", queue="q", due_at=T0, args_json="[]",
                                     parents=(parent,))], T0)
    assert record(store, child).state is JobState.WAITING
    # When both are cancelled
    assert store.cancel(scheduled, T0)
    assert store.cancel(child, T0)
    # Then each says it was cancelled on request, with no traceback
    for job_id in (scheduled, child):
        job = record(store, job_id)
        assert (job.state, job.last_error, job.last_traceback) == (
            JobState.CANCELLED, CANCELLED_BEFORE_RUN, None)
        assert job.errors == ()
