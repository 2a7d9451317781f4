"""The store contract, job lifecycle part: cancel requests delivered by heartbeats,
requeue, results and start times. Run unchanged on every store (see rota/store/base.py).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota.core.jobs import CANCELLED_ON_REQUEST, JobState, Lease
from rota.store import Store
from tests.store.test_contract import LEASE, T0, claim, lease_of, new

LATER = T0 + timedelta(minutes=5)


def state_of(store: Store, job_id: int) -> JobState:
    job = store.get_job(job_id)
    assert job is not None
    return job.state


# -- results and start times ------------------------------------------------------------


def test_a_claim_records_when_the_attempt_started(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    fresh = store.get_job(job_id)
    assert fresh is not None and fresh.started_at is None
    (claimed,) = store.claim(["q"], 1, now=LATER, owner="w1", lease_expires_at=LATER + LEASE)
    assert claimed.started_at == LATER
    stored = store.get_job(job_id)
    assert stored is not None and stored.started_at == LATER
    assert not stored.cancel_requested and stored.result is None


def test_complete_stores_each_jobs_result(store: Store) -> None:
    ids = store.enqueue([new(), new(), new()], T0)
    claim(store, ["q"], 3)
    leases = [lease_of(store, i) for i in ids]
    # When three jobs complete with a dict, no result and a string
    assert store.complete(leases, T0, ['{"sent":2,"to":["a","é"]}', None, '"ok"']) == 3
    results = [store.get_job(i) for i in ids]
    assert [r.result if r else "missing" for r in results] == [
        {"sent": 2, "to": ["a", "é"]}, None, "ok"]


def test_complete_without_results_stores_none(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.complete([lease_of(store, job_id)], T0) == 1
    job = store.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED and job.result is None


# -- cancel requests ----------------------------------------------------------------------


def test_heartbeat_reports_the_cancel_requests_of_the_leases_it_renewed(store: Store) -> None:
    a, b, c = store.enqueue([new(), new(), new()], T0)
    claim(store, ["q"], 3)
    leases = [lease_of(store, i) for i in (a, b, c)]
    # Given a cancel request for a only
    before = store.heartbeat(leases, T0, T0 + LEASE)
    assert before == {a, b, c} and before.cancel_requested == frozenset()
    assert store.cancel(a, T0)
    assert store.cancel(a, T0)  # asking again is harmless
    # Then the next heartbeat renews all three and names a
    renewed = store.heartbeat(leases, T0 + timedelta(seconds=1), T0 + 2 * LEASE)
    assert renewed == {a, b, c}
    assert renewed.cancel_requested == {a}
    # A lease no longer held is reported neither way
    gone = store.heartbeat([Lease(a, "intruder", 1)], T0, T0 + LEASE)
    assert gone == set() and gone.cancel_requested == frozenset()


def test_cancel_requests_names_the_leased_jobs_marked_and_writes_nothing(
        store: Store) -> None:
    # Given three leased jobs, one of them with a cancel request, and a scheduled one
    a, b, c, waiting = store.enqueue([new(), new(), new(), new()], T0)
    claim(store, ["q"], 3)
    assert store.cancel(b, T0)
    before = [store.get_job(i) for i in (a, b, c)]
    # Then cancel_requests names b among them, and among any ids asked about
    assert store.cancel_requests([a, b, c]) == {b}
    assert store.cancel_requests([c, b, b, 999_999, waiting]) == {b}
    assert store.cancel_requests([]) == set()
    # And it changed nothing (no lease renewed, nothing ended)
    assert [store.get_job(i) for i in (a, b, c)] == before
    # A job that ended (here: cancelled as asked) is no longer named
    assert store.cancel_leased(lease_of(store, b), T0, CANCELLED_ON_REQUEST)
    assert store.cancel_requests([a, b, c]) == set()


def test_cancel_leased_ends_the_job_cancelled_fenced_by_its_lease(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    store.cancel(job_id, T0)
    assert not store.cancel_leased(Lease(job_id, "intruder", 1), T0, CANCELLED_ON_REQUEST)
    assert store.cancel_leased(Lease(job_id, "w1", 1), T0, CANCELLED_ON_REQUEST)
    assert not store.cancel_leased(Lease(job_id, "w1", 1), T0, CANCELLED_ON_REQUEST)
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error, job.lease_owner, job.finished_at) == (
        JobState.CANCELLED, CANCELLED_ON_REQUEST, None, T0)
    assert not store.cancel(job_id, T0)  # finished


@pytest.mark.parametrize("way_back", ["retry", "release", "expire_lease"])
def test_a_job_with_a_cancel_request_never_goes_back_to_scheduled(
    store: Store, way_back: str
) -> None:
    # Given a leased job whose cancel was requested
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    store.cancel(job_id, T0)
    lease = Lease(job_id, "w1", 1)
    # When its lease ends in a way that would schedule it again
    expired_at = T0 + LEASE
    if way_back == "retry":
        assert store.retry(lease, expired_at, T0 + timedelta(seconds=2), "ValueError: boom")
    elif way_back == "release":
        assert store.release([lease], expired_at) == 1
    else:
        assert store.expire_lease(lease, expired_at, expired_at, "LeaseExpired")
    # Then it ends cancelled, on request, finished then, and is never claimed again
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error) == (JobState.CANCELLED, CANCELLED_ON_REQUEST)
    assert job.finished_at == expired_at
    assert claim(store, ["q"], 10, now=T0 + timedelta(hours=1)) == []


def test_a_retry_without_a_cancel_request_still_schedules_again(store: Store) -> None:
    a, b = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    store.cancel(b, T0)  # another job's request changes nothing for a
    assert store.retry(Lease(a, "w1", 1), T0, T0, "ValueError: boom")
    assert state_of(store, a) is JobState.SCHEDULED


# -- requeue -----------------------------------------------------------------------------


def finished_jobs(store: Store) -> dict[str, int]:
    """One job in each finished state plus a scheduled and a leased one, on Queue q."""
    dead, quarantined, cancelled, succeeded, leased, scheduled = store.enqueue(
        [new() for _ in range(6)], T0)
    claim(store, ["q"], 5)
    assert store.dead_letter(lease_of(store, dead), T0, "ValueError: boom")
    assert store.quarantine(lease_of(store, quarantined), T0, "UnknownJob: x")
    store.cancel(cancelled, T0)
    assert store.cancel_leased(lease_of(store, cancelled), T0, CANCELLED_ON_REQUEST)
    assert store.complete([lease_of(store, succeeded)], T0, ['"done"']) == 1
    return {"dead_lettered": dead, "quarantined": quarantined, "cancelled": cancelled,
            "succeeded": succeeded, "leased": leased, "scheduled": scheduled}


def test_requeue_brings_back_failed_and_cancelled_jobs_at_attempt_zero_due_now(
    store: Store,
) -> None:
    jobs = finished_jobs(store)
    for state in ("dead_lettered", "quarantined", "cancelled"):
        before = store.get_job(jobs[state])
        assert before is not None and before.finished_at is not None
        assert store.requeue(jobs[state], LATER), state
        job = store.get_job(jobs[state])
        assert job is not None
        assert (job.state, job.attempt, job.due_at, job.queue) == (
            JobState.SCHEDULED, 0, LATER, "q")
        assert not job.cancel_requested and job.result is None
        assert job.finished_at is None  # not finished any more: retention leaves it alone
    # And they are claimable at once, in due order after the older scheduled one
    claimed = claim(store, ["q"], 10, now=LATER, owner="w2")
    assert claimed == [jobs["scheduled"], jobs["dead_lettered"], jobs["quarantined"],
                       jobs["cancelled"]]
    job = store.get_job(jobs["dead_lettered"])
    assert job is not None and job.attempt == 1


def test_requeue_refuses_other_states_and_unknown_jobs(store: Store) -> None:
    jobs = finished_jobs(store)
    for state in ("succeeded", "leased", "scheduled"):
        before = store.get_job(jobs[state])
        assert not store.requeue(jobs[state], LATER), state
        assert store.get_job(jobs[state]) == before
    assert not store.requeue(10**9, LATER)


def test_requeue_many_takes_one_state_of_one_queue_or_of_all(store: Store) -> None:
    dead = store.enqueue([new("a"), new("a"), new("b")], T0)
    (other,) = store.enqueue([new("a")], T0)
    claim(store, ["a", "b"], 4)
    for job_id in dead:
        assert store.dead_letter(lease_of(store, job_id), T0, "ValueError: boom")
    assert store.quarantine(lease_of(store, other), T0, "UnknownJob: x")
    # When the dead letters of Queue a are requeued
    assert store.requeue_many(state=JobState.DEAD_LETTERED, queue="a", now=LATER) == 2
    assert [state_of(store, i) for i in dead] == [
        JobState.SCHEDULED, JobState.SCHEDULED, JobState.DEAD_LETTERED]
    assert state_of(store, other) is JobState.QUARANTINED
    # Then those of every Queue
    assert store.requeue_many(state=JobState.DEAD_LETTERED, queue=None, now=LATER) == 1
    assert state_of(store, dead[2]) is JobState.SCHEDULED
    assert store.requeue_many(state=JobState.DEAD_LETTERED, queue=None, now=LATER) == 0
    assert store.requeue_many(state=JobState.QUARANTINED, queue="nothing", now=LATER) == 0


@pytest.mark.parametrize("state", [JobState.SUCCEEDED, JobState.LEASED, JobState.SCHEDULED])
def test_requeue_many_refuses_states_that_cannot_be_requeued(
    store: Store, state: JobState
) -> None:
    with pytest.raises(ValueError, match="can be requeued"):
        store.requeue_many(state=state, queue=None, now=LATER)


# -- listing ----------------------------------------------------------------------------


def test_list_jobs_newest_first_with_an_offset(store: Store) -> None:
    a = store.enqueue([new("a") for _ in range(4)], T0)
    (b,) = store.enqueue([new("b")], T0)
    assert [j.id for j in store.list_jobs(newest=True)] == [b, *reversed(a)]
    assert [j.id for j in store.list_jobs(newest=True, limit=2, offset=1)] == [a[3], a[2]]
    assert [j.id for j in store.list_jobs(queue="a", limit=2, offset=2)] == [a[2], a[3]]
    assert [j.id for j in store.list_jobs(queue="a", newest=True, offset=3)] == [a[0]]
    assert store.list_jobs(offset=10) == []


def test_newest_jobs_of_a_finished_state_are_the_most_recently_finished(store: Store) -> None:
    # Given five jobs finished out of id order: c and d at one instant, e later, a last;
    # b still scheduled, and one dead-lettered job
    a, b, c, d, e, f = store.enqueue([new() for _ in range(6)], T0)
    claim(store, ["q"], 6)
    store.release([lease_of(store, b)], T0)
    finished_at = {c: T0 + timedelta(seconds=1), d: T0 + timedelta(seconds=1),
                   e: T0 + timedelta(seconds=2), a: T0 + timedelta(seconds=3)}
    for job_id, at in finished_at.items():
        assert store.complete([lease_of(store, job_id)], at) == 1
    assert store.dead_letter(lease_of(store, f), T0 + timedelta(seconds=4), "boom")
    # When the newest succeeded jobs are listed, then paged
    newest = store.list_jobs(state=JobState.SUCCEEDED, newest=True)
    # Then the last to finish comes first (ties: the higher id first), and nothing else
    assert [job.id for job in newest] == [a, e, d, c]
    assert [job.id for job in store.list_jobs(state=JobState.SUCCEEDED, newest=True,
                                              limit=2, offset=1)] == [e, d]
    assert [job.id for job in store.list_jobs(state=JobState.SUCCEEDED, newest=True,
                                              queue="other")] == []
    # ...while other listings keep id order
    assert [job.id for job in store.list_jobs(state=JobState.SUCCEEDED)] == [a, c, d, e]
    assert [job.id for job in store.list_jobs(newest=True)] == [f, e, d, c, b, a]
    assert [job.id for job in store.list_jobs(state=JobState.SCHEDULED, newest=True)] == [b]
