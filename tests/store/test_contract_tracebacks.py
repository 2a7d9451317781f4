"""The store contract, failures you can read: `last_traceback` is written with
`last_error`, in the same call, bounded to 16 KiB with its end kept, and cleared by a
requeue with the last error. Run unchanged on every store (see rota/store/base.py)."""

from __future__ import annotations

from datetime import timedelta

from rota.core.jobs import CANCELLED_ON_REQUEST, JobRecord, JobState
from rota.core.outcomes import MAX_TRACEBACK_BYTES, DeadLettered, RetryAt
from rota.store import Store
from rota.store.base import Claimed
from tests.store.test_contract import LEASE, T0, claim, lease_of, new

LATER = T0 + timedelta(minutes=5)
TRACEBACK = ('Traceback (most recent call last):\n  File "app.py", line 7, in send\n'
             '    raise ValueError("bounced: é")\nValueError: bounced: é\n')


def record(store: Store, job_id: int) -> JobRecord:
    job = store.get_job(job_id)
    assert job is not None
    return job


def listed(store: Store, job_id: int) -> JobRecord:
    (job,) = [job for job in store.list_jobs(limit=1000) if job.id == job_id]
    return job


def test_a_retry_stores_the_traceback_beside_its_error(store: Store) -> None:
    # Given a leased job
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    # When its attempt is retried with the error's traceback
    assert store.retry(lease_of(store, job_id), T0, LATER, "ValueError: bounced: é",
                       traceback=TRACEBACK)
    # Then get_job and list_jobs both give the error and its traceback
    for job in (record(store, job_id), listed(store, job_id)):
        assert job.state is JobState.SCHEDULED
        assert (job.last_error, job.last_traceback) == ("ValueError: bounced: é", TRACEBACK)


def test_a_dead_letter_stores_the_traceback_and_a_newest_listing_shows_it(
    store: Store,
) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.dead_letter(lease_of(store, job_id), T0, "ValueError: x", traceback=TRACEBACK)
    job = record(store, job_id)
    assert (job.state, job.last_traceback) == (JobState.DEAD_LETTERED, TRACEBACK)
    # The listing of a finished state's newest jobs reads its own index: it shows it too
    (newest,) = store.list_jobs(state=JobState.DEAD_LETTERED, newest=True)
    assert newest.last_traceback == TRACEBACK


def test_a_later_failure_replaces_the_traceback(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: first",
                       traceback="Traceback: first\n")
    claim(store, ["q"], 1)
    assert store.dead_letter(lease_of(store, job_id), T0, "KeyError: second",
                             traceback="Traceback: second\n")
    job = record(store, job_id)
    assert (job.last_error, job.last_traceback) == ("KeyError: second", "Traceback: second\n")


def test_jobs_that_never_failed_have_no_traceback(store: Store) -> None:
    # Given a job leased, one succeeded and one never claimed
    leased, succeeded, scheduled = store.enqueue([new(), new(), new()], T0)
    claim(store, ["q"], 2)
    assert store.complete([lease_of(store, succeeded)], T0) == 1
    # Then none has a traceback, read alone or listed
    for job_id in (leased, succeeded, scheduled):
        assert record(store, job_id).last_traceback is None
        assert listed(store, job_id).last_traceback is None
    assert record(store, leased).state is JobState.LEASED


def test_a_retry_without_a_traceback_stores_none(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: first",
                       traceback=TRACEBACK)
    claim(store, ["q"], 1)
    # When the next attempt's error comes with no traceback (a `rota.Retry`, say)
    assert store.retry(lease_of(store, job_id), T0, T0, "retry requested in 5 s")
    # Then the old traceback does not linger beside the new error
    job = record(store, job_id)
    assert (job.last_error, job.last_traceback) == ("retry requested in 5 s", None)


def test_a_long_traceback_is_bounded_to_16_kib_with_its_end_kept(store: Store) -> None:
    # Given a traceback of ~120 KB whose end names the exception
    frames = "".join(f'  File "app.py", line {n}, in recurse\n' for n in range(3000))
    text = "Traceback (most recent call last):\n" + frames + "RecursionError: deep\n"
    assert len(text.encode()) > 6 * MAX_TRACEBACK_BYTES
    retried, dead = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    # When it is stored with a retry and with a dead letter
    assert store.retry(lease_of(store, retried), T0, LATER, "RecursionError: deep",
                       traceback=text)
    assert store.dead_letter(lease_of(store, dead), T0, "RecursionError: deep",
                             traceback=text)
    # Then each store keeps at most 16 KiB: a line saying the start was cut, then the end
    for job_id in (retried, dead):
        kept = record(store, job_id).last_traceback
        assert kept is not None and len(kept.encode()) <= MAX_TRACEBACK_BYTES
        marker, rest = kept.split("\n", 1)
        assert marker.startswith("[the first ") and marker.endswith(" were cut]")
        assert text.endswith(rest) and len(rest) > MAX_TRACEBACK_BYTES // 2
        assert rest.endswith("RecursionError: deep\n")


def test_a_traceback_with_nul_or_a_lone_surrogate_is_saved_escaped(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.dead_letter(lease_of(store, job_id), T0, "ValueError: a\\x00b",
                             traceback="ValueError: a\x00b \udc80\n")
    assert record(store, job_id).last_traceback == "ValueError: a\\x00b \\udc80\n"


def test_errors_from_no_exception_clear_the_traceback(store: Store) -> None:
    # Given four jobs whose first attempt failed with a traceback
    expired, quarantined, cancelled, expired_dead = store.enqueue([new() for _ in range(4)],
                                                                  T0)
    claim(store, ["q"], 4)
    for job_id in (expired, quarantined, cancelled, expired_dead):
        assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: x",
                           traceback=TRACEBACK)
    claim(store, ["q"], 4, now=LATER)
    # When their next attempts end with errors no exception raised: an expired lease
    # (retried, and dead-lettered), a quarantine, a cancel
    late = LATER + LEASE
    assert store.expire_lease(lease_of(store, expired), late, late, "LeaseExpired: w1")
    assert store.expire_lease(lease_of(store, expired_dead), late, None, "LeaseExpired: w1")
    assert store.quarantine(lease_of(store, quarantined), LATER, "UnknownJob: x")
    assert store.cancel(cancelled, LATER)
    assert store.cancel_leased(lease_of(store, cancelled), LATER, CANCELLED_ON_REQUEST)
    # Then each keeps its new error, and no traceback that explains another one
    for job_id, error in ((expired, "LeaseExpired: w1"), (expired_dead, "LeaseExpired: w1"),
                          (quarantined, "UnknownJob: x"), (cancelled, CANCELLED_ON_REQUEST)):
        job = record(store, job_id)
        assert (job.last_error, job.last_traceback) == (error, None)


def test_a_retry_of_a_cancel_requested_job_keeps_no_traceback(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.cancel(job_id, T0)
    assert store.retry(lease_of(store, job_id), T0, LATER, "ValueError: x", traceback=TRACEBACK)
    job = record(store, job_id)
    assert (job.state, job.last_error, job.last_traceback) == (
        JobState.CANCELLED, CANCELLED_ON_REQUEST, None)


def test_a_release_keeps_the_traceback_of_the_error_it_keeps(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.retry(lease_of(store, job_id), T0, T0, "ValueError: x", traceback=TRACEBACK)
    claim(store, ["q"], 1)
    assert store.release([lease_of(store, job_id)], T0) == 1
    job = record(store, job_id)
    assert (job.last_error, job.last_traceback) == ("ValueError: x", TRACEBACK)


def test_outcomes_carried_by_a_claim_store_their_tracebacks(store: Store) -> None:
    retried, dead = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    answer = store.claim(["q"], 0, now=LATER, owner="w1", lease_expires_at=LATER + LEASE,
                         outcomes=[
                             (lease_of(store, retried),
                              RetryAt(LATER + LEASE, "ValueError: x", TRACEBACK)),
                             (lease_of(store, dead), DeadLettered("KeyError: y", "tb: y\n")),
                         ])
    assert isinstance(answer, Claimed) and answer.applied == 2
    assert record(store, retried).last_traceback == TRACEBACK
    assert record(store, dead).last_traceback == "tb: y\n"


def test_requeue_starts_a_fresh_run_without_the_last_error_or_traceback(store: Store) -> None:
    # Given a dead letter, a quarantined and a cancelled job, each with a last error, and
    # two dead letters in another Queue for requeue_many
    dead, quarantined, cancelled = store.enqueue([new(), new(), new()], T0)
    many = store.enqueue([new("other"), new("other")], T0)
    claim(store, ["q", "other"], 5)
    assert store.dead_letter(lease_of(store, dead), T0, "ValueError: x", traceback=TRACEBACK)
    assert store.quarantine(lease_of(store, quarantined), T0, "UnknownJob: x")
    assert store.cancel(cancelled, T0)
    assert store.cancel_leased(lease_of(store, cancelled), T0, CANCELLED_ON_REQUEST)
    for job_id in many:
        assert store.dead_letter(lease_of(store, job_id), T0, "KeyError: y",
                                 traceback=TRACEBACK)
    # When they are requeued, one by one and many at once
    for job_id in (dead, quarantined, cancelled):
        assert store.requeue(job_id, LATER)
    assert store.requeue_many(state=JobState.DEAD_LETTERED, queue="other", now=LATER) == 2
    # Then each starts afresh: attempt 0, no last error, no traceback
    for job_id in (dead, quarantined, cancelled, *many):
        job = record(store, job_id)
        assert (job.state, job.attempt, job.last_error, job.last_traceback) == (
            JobState.SCHEDULED, 0, None, None)
