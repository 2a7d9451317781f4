"""The store contract of snoozes (`snooze`) and expiry (`NewJob.expires_at`, ended by the
claim), run unchanged against every store (rota/store/base.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import CANCELLED_ON_REQUEST, JobState, Lease, NewJob, expired_error
from rota.core.outcomes import Snoozed
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def claimed(store: Store, now: datetime = T0, limit: int = 10, queues: tuple[str, ...] = ("q",)):
    return store.claim(list(queues), limit, now=now, owner="w1", lease_expires_at=now + LEASE)


def one_leased(store: Store, now: datetime = T0) -> Lease:
    jobs = claimed(store, now, limit=1)
    assert len(jobs) == 1
    return jobs[0].lease


# -- snooze ---------------------------------------------------------------------------


def test_snooze_schedules_again_without_counting_the_attempt(store: Store) -> None:
    # Given a job that failed once (attempt 1, an error), then is claimed again
    (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
    first = one_leased(store)
    assert store.retry(first, T0, T0, "ValueError: boom", traceback="Traceback: boom")
    lease = one_leased(store)
    assert lease.attempt == 2
    # When its handler snoozes for a minute
    assert store.snooze(lease, T0, T0 + timedelta(minutes=1))
    # Then it is scheduled at the new time, attempt back to 1, one snooze, error kept
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.snoozes) == (JobState.SCHEDULED, 1, 1)
    assert job.due_at == T0 + timedelta(minutes=1)
    assert (job.last_error, job.last_traceback) == ("ValueError: boom", "Traceback: boom")
    assert job.lease_owner is None and job.finished_at is None
    # And it is not claimable before then, and is after
    assert claimed(store, T0 + timedelta(seconds=59)) == []
    again = claimed(store, T0 + timedelta(minutes=1))
    assert [j.id for j in again] == [job_id] and again[0].attempt == 2


def test_a_job_that_snoozes_for_ever_keeps_its_attempt_count(store: Store) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
    now = T0
    for _ in range(25):
        lease = one_leased(store, now)
        assert lease.attempt == 1
        assert store.snooze(lease, now, now)
    job = store.get_job(job_id)
    assert job is not None and (job.attempt, job.snoozes) == (0, 25)


def test_snooze_is_fenced_by_the_lease(store: Store) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
    lease = one_leased(store)
    stale = Lease(job_id, lease.owner, lease.attempt + 1)
    assert not store.snooze(stale, T0, T0 + timedelta(minutes=1))
    assert not store.snooze(Lease(job_id, "other", lease.attempt), T0, T0)
    job = store.get_job(job_id)
    assert job is not None and (job.state, job.snoozes) == (JobState.LEASED, 0)
    assert store.complete([lease], T0) == 1
    assert not store.snooze(lease, T0, T0)


def test_a_snoozed_job_whose_cancel_was_requested_ends_cancelled(store: Store) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
    lease = one_leased(store)
    assert store.cancel(job_id, T0)
    assert store.snooze(lease, T0 + timedelta(seconds=1), T0 + timedelta(minutes=1))
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error) == (JobState.CANCELLED, CANCELLED_ON_REQUEST)
    assert job.finished_at == T0 + timedelta(seconds=1)


def test_a_claim_applies_a_snooze_it_carries(store: Store) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
    lease = one_leased(store)
    answer = store.claim(["q"], 10, now=T0, owner="w1", lease_expires_at=T0 + LEASE,
                         outcomes=[(lease, Snoozed(T0))])
    # The snooze applies first, so the job is due again and taken by the same claim
    assert answer.applied == 1
    assert [(j.id, j.attempt) for j in answer] == [(job_id, 1)]
    job = store.get_job(job_id)
    assert job is not None and job.snoozes == 1


def test_a_requeue_clears_snoozes_and_expiry(store: Store) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0, expires_at=T0 + timedelta(hours=1))],
                              T0)
    lease = one_leased(store)
    assert store.snooze(lease, T0, T0)
    lease = one_leased(store)
    assert store.dead_letter(lease, T0, "ValueError: no")
    assert store.requeue(job_id, T0 + timedelta(hours=2))
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.snoozes, job.expires_at) == (JobState.SCHEDULED, 0, None)
    # A fresh run: not expired, although the old expiry has passed
    assert [j.id for j in claimed(store, T0 + timedelta(hours=2))] == [job_id]


# -- expiry ---------------------------------------------------------------------------


def test_a_claim_ends_a_due_job_past_its_expiry_cancelled_and_reports_it(store: Store) -> None:
    # Given a job that expires a minute after T0, and one without expiry behind it
    expires = T0 + timedelta(minutes=1, microseconds=250_000)
    expiring, plain = store.enqueue([
        NewJob("job", "q", T0, '["a"]', expires_at=expires),
        NewJob("job", "q", T0 + timedelta(seconds=1)),
    ], T0)
    stored = store.get_job(expiring)
    assert stored is not None and stored.expires_at == expires
    # When a claim runs after the expiry
    now = T0 + timedelta(minutes=2)
    answer = claimed(store, now)
    # Then it leases only the other job, and reports the expired one as ended
    assert [job.id for job in answer] == [plain]
    assert [job.id for job in answer.expired] == [expiring]
    report = answer.expired[0]
    assert report.state is JobState.CANCELLED and report.args == ("a",)
    assert report.last_error == "Expired: not started by 2026-01-01 12:01:00 UTC"
    assert report.last_error == expired_error(expires)
    assert report.finished_at == now and report.attempt == 0
    job = store.get_job(expiring)
    assert job is not None
    assert (job.state, job.attempt, job.last_error, job.finished_at) == (
        JobState.CANCELLED, 0, expired_error(expires), now)
    assert job.lease_owner is None and job.started_at is None
    assert store.count_jobs() == {("q", JobState.CANCELLED): 1, ("q", JobState.LEASED): 1}


def test_a_job_claimed_at_its_expiry_still_starts(store: Store) -> None:
    expires = T0 + timedelta(minutes=1)
    (job_id,) = store.enqueue([NewJob("job", "q", T0, expires_at=expires)], T0)
    answer = claimed(store, expires)
    assert [job.id for job in answer] == [job_id] and answer.expired == []


def test_a_retry_due_after_the_expiry_never_starts(store: Store) -> None:
    expires = T0 + timedelta(minutes=1)
    (job_id,) = store.enqueue([NewJob("job", "q", T0, expires_at=expires)], T0)
    lease = one_leased(store)
    assert store.retry(lease, T0, T0 + timedelta(minutes=5), "ValueError: boom")
    answer = claimed(store, T0 + timedelta(minutes=5))
    assert list(answer) == [] and [job.id for job in answer.expired] == [job_id]
    job = store.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.CANCELLED, 1)
    assert job.last_error == expired_error(expires)


def test_an_expiry_already_past_at_enqueue_is_stored_and_ends_at_the_first_claim(
    store: Store,
) -> None:
    (job_id,) = store.enqueue([NewJob("job", "q", T0, expires_at=T0 - timedelta(days=1))],
                              T0)
    job = store.get_job(job_id)
    assert job is not None and job.state is JobState.SCHEDULED
    answer = claimed(store)
    assert list(answer) == [] and [job.id for job in answer.expired] == [job_id]


def test_expired_jobs_count_against_the_claims_limit_but_are_never_leased(
    store: Store,
) -> None:
    past = T0 - timedelta(seconds=1)
    ids = store.enqueue([NewJob("job", "q", T0, expires_at=past),
                         NewJob("job", "q", T0), NewJob("job", "q", T0)], T0)
    first = claimed(store, limit=2)
    assert [job.id for job in first] == [ids[1]]
    assert [job.id for job in first.expired] == [ids[0]]
    assert [job.id for job in claimed(store, limit=2)] == [ids[2]]


def test_every_enqueue_path_stores_the_expiry(store: Store) -> None:
    expires = T0 + timedelta(hours=1)
    plain, keyed, debounced = store.enqueue([
        NewJob("job", "q", T0, expires_at=expires, trace_context='{"traceparent": "x"}'),
        NewJob("job", "q", T0, key="k", expires_at=expires),
        NewJob("other", "q", T0, key="d", debounced=True, expires_at=expires),
    ], T0)
    (child,) = store.enqueue([NewJob("job", "q", T0, parents=(plain,), expires_at=expires)],
                             T0)
    (alone,) = store.enqueue([NewJob("job", "q", T0, expires_at=expires)], T0)
    for job_id in (plain, keyed, debounced, child, alone):
        job = store.get_job(job_id)
        assert job is not None and job.expires_at == expires, job_id
    listed = store.list_jobs(queue="q")
    assert {job.id: job.expires_at for job in listed}[alone] == expires


def test_an_expiry_must_be_timezone_aware(store: Store) -> None:
    with pytest.raises(ValueError, match="expires_at must be a timezone-aware"):
        store.enqueue([NewJob("job", "q", T0),
                       NewJob("job", "q", T0, expires_at=datetime(2026, 1, 1))], T0)
    assert store.count_jobs() == {}


@pytest.mark.parametrize("limits", [[1, 1, 1], [2, 2, 1]], ids=["ones", "many"])
def test_a_batched_claim_reports_expired_jobs_of_every_queue_it_walks(
    store: Store, limits: list[int],
) -> None:
    # Given three Queues, the first two with an expired job ahead of a live one
    past = T0 - timedelta(seconds=1)
    ids = store.enqueue([NewJob("job", "a", T0, expires_at=past), NewJob("job", "a", T0),
                         NewJob("job", "b", T0, expires_at=past), NewJob("job", "b", T0),
                         NewJob("job", "c", T0)], T0)
    # When one batched claim (a planner's round, with its probe) walks them
    answer = store.claim(["a", "b", "c"], 5, now=T0, owner="w1", lease_expires_at=T0 + LEASE,
                         limits=limits, probe=["a", "b", "c"])
    # Then the expired ones are reported, never leased; the rest is leased in order
    assert sorted(job.id for job in answer.expired) == [ids[0], ids[2]]
    assert all(job.state is JobState.CANCELLED for job in answer.expired)
    expected = [ids[4]] if limits == [1, 1, 1] else [ids[1], ids[3], ids[4]]
    assert [job.id for job in answer] == expected
    assert all(job.state is JobState.LEASED for job in answer)
    for job_id in (ids[0], ids[2]):
        stored = store.get_job(job_id)
        assert stored is not None and stored.state is JobState.CANCELLED
