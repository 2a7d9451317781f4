"""The store contract for workflows (jobs enqueued after other jobs, `NewJob.parents`), run
unchanged against every store: a child waits until its parents have finished, then is
scheduled in the transaction that finished its last parent, or cancelled when a parent it
needed to succeed did not; parents and child are written atomically; cancels cascade;
retention keeps a parent while a child has not finished."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobRecord, JobState, Lease, NewJob
from rota.core.outcomes import DeadLettered, Succeeded
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
FINISHED = [JobState.SUCCEEDED, JobState.DEAD_LETTERED, JobState.QUARANTINED,
            JobState.CANCELLED]


def job(queue: str = "q", *, after: tuple[int, ...] = (), outcome: str = "succeeded",
        due_at: datetime = T0, name: str = "job") -> NewJob:
    return NewJob(name, queue, due_at, parents=after, after_outcome=outcome)


def run(store: Store, queue: str, now: datetime = T0) -> list[JobRecord]:
    """Claim every due job of `queue` at `now`."""
    return list(store.claim([queue], 1000, now=now, owner="w",
                            lease_expires_at=now + LEASE))


def state(store: Store, job_id: int) -> JobState:
    record = store.get_job(job_id)
    assert record is not None
    return record.state


def finish(store: Store, lease: Lease, how: JobState, now: datetime = T0) -> None:
    """End a leased job in the finished state `how`."""
    if how is JobState.SUCCEEDED:
        assert store.complete([lease], now) == 1
    elif how is JobState.DEAD_LETTERED:
        assert store.dead_letter(lease, now, "Boom: failed")
    elif how is JobState.QUARANTINED:
        assert store.quarantine(lease, now, "UnknownJob: no handler")
    else:
        assert store.cancel(lease.job_id, now)
        assert store.cancel_leased(lease, now, "Cancelled: on request")


def test_a_child_waits_until_its_parent_succeeds_then_is_scheduled(store: Store) -> None:
    # Given a parent and a child enqueued after it
    parent, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(parent,))], T0)
    # Then the child waits, is in no claim, and says who its parent is
    record = store.get_job(child)
    assert record is not None and record.state is JobState.WAITING
    assert record.parents == (parent,)
    assert run(store, "c", T0 + timedelta(hours=1)) == []
    assert store.count_jobs()[("c", JobState.WAITING)] == 1
    # When the parent runs and succeeds a minute later
    lease = run(store, "p")[0].lease
    assert state(store, child) is JobState.WAITING  # a running parent is not finished
    finished_at = T0 + timedelta(minutes=1)
    finish(store, lease, JobState.SUCCEEDED, finished_at)
    # Then the child is scheduled, due when its parent finished, and claimable
    record = store.get_job(child)
    assert record is not None and record.state is JobState.SCHEDULED
    assert record.due_at == finished_at
    assert store.count_jobs().get(("c", JobState.WAITING), 0) == 0
    claimed = run(store, "c", finished_at)
    assert [(j.id, j.parents) for j in claimed] == [(child, (parent,))]


def test_a_child_keeps_its_own_later_due_time(store: Store) -> None:
    # Given a child due in an hour, after a parent that succeeds now
    parent, = store.enqueue([job("p")], T0)
    later = T0 + timedelta(hours=1)
    child, = store.enqueue([job("c", after=(parent,), due_at=later)], T0)
    finish(store, run(store, "p")[0].lease, JobState.SUCCEEDED)
    # Then it is scheduled at its own due time, not before
    record = store.get_job(child)
    assert record is not None and record.state is JobState.SCHEDULED
    assert record.due_at == later
    assert run(store, "c", T0) == []


def test_a_fan_in_runs_once_after_its_last_parent(store: Store) -> None:
    # Given a child after five parents
    parents = store.enqueue([job("p") for _ in range(5)], T0)
    child, = store.enqueue([job("c", after=tuple(parents))], T0)
    leases = [record.lease for record in run(store, "p")]
    # When four succeed, in two batches
    assert store.complete(leases[:2], T0) == 2
    assert store.complete(leases[2:4], T0) == 2
    # Then the child still waits; and after the fifth it is scheduled
    assert state(store, child) is JobState.WAITING
    finish(store, leases[4], JobState.SUCCEEDED)
    assert state(store, child) is JobState.SCHEDULED
    assert [j.id for j in run(store, "c")] == [child]


def test_parents_finishing_in_one_batch_release_the_child_once(store: Store) -> None:
    parents = store.enqueue([job("p") for _ in range(3)], T0)
    child, = store.enqueue([job("c", after=tuple(parents))], T0)
    assert store.complete([r.lease for r in run(store, "p")], T0) == 3
    assert state(store, child) is JobState.SCHEDULED
    assert [j.id for j in run(store, "c")] == [child]


@pytest.mark.parametrize("how", FINISHED[1:])
def test_a_parent_that_fails_cancels_the_child_that_needed_it(store: Store,
                                                                how: JobState) -> None:
    # Given a chain parent -> child -> grandchild, and a second parent of the child
    parent, other = store.enqueue([job("p"), job("p")], T0)
    child, = store.enqueue([job("c", after=(parent, other))], T0)
    grandchild, = store.enqueue([job("g", after=(child,))], T0)
    first, second = (record.lease for record in run(store, "p"))
    assert first.job_id == parent
    # When the parent ends otherwise than succeeded
    finish(store, first, how, T0 + timedelta(seconds=5))
    # Then the child and its own child are cancelled, the error naming the parent
    for job_id in (child, grandchild):
        record = store.get_job(job_id)
        assert record is not None and record.state is JobState.CANCELLED
        assert record.finished_at == T0 + timedelta(seconds=5)
        assert record.last_error is not None
    child_record = store.get_job(child)
    assert child_record is not None and child_record.last_error is not None
    assert f"parent job {parent} ended {how.value}" in child_record.last_error
    grand_record = store.get_job(grandchild)
    assert grand_record is not None and grand_record.last_error is not None
    assert f"parent job {child} ended cancelled" in grand_record.last_error
    assert store.count_jobs().get(("c", JobState.WAITING), 0) == 0
    # And the other parent finishing later changes nothing
    finish(store, second, JobState.SUCCEEDED)
    assert state(store, child) is JobState.CANCELLED


@pytest.mark.parametrize("how", FINISHED)
def test_a_finished_child_runs_whatever_its_parents_did(store: Store, how: JobState) -> None:
    parents = store.enqueue([job("p"), job("p")], T0)
    child, = store.enqueue([job("c", after=tuple(parents), outcome="finished")], T0)
    leases = [r.lease for r in run(store, "p")]
    finish(store, leases[0], how)
    assert state(store, child) is JobState.WAITING
    finish(store, leases[1], JobState.DEAD_LETTERED)
    assert state(store, child) is JobState.SCHEDULED


def test_a_retried_parent_has_not_finished(store: Store) -> None:
    parent, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(parent,))], T0)
    lease = run(store, "p")[0].lease
    assert store.retry(lease, T0, T0, "Flaky: try again")
    assert state(store, child) is JobState.WAITING
    finish(store, run(store, "p")[0].lease, JobState.SUCCEEDED)
    assert state(store, child) is JobState.SCHEDULED


def test_an_expired_lease_that_dead_letters_the_parent_cancels_the_child(store: Store) -> None:
    parent, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(parent,))], T0)
    lease = run(store, "p")[0].lease
    assert store.expire_lease(lease, T0 + 2 * LEASE, None, "LeaseExpired: worker died")
    assert state(store, child) is JobState.CANCELLED


def test_outcomes_written_with_a_claim_release_children_in_that_claim(store: Store) -> None:
    # Given a parent leased, and a child in the same Queue after it
    parent, = store.enqueue([job("q")], T0)
    child, = store.enqueue([job("q", after=(parent,))], T0)
    lease = run(store, "q")[0].lease
    # When the parent's success goes with the next claim
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                          outcomes=[(lease, Succeeded())])
    # Then that claim already takes the child
    assert [j.id for j in claimed] == [child]


def test_outcomes_with_a_claim_cancel_children_too(store: Store) -> None:
    parent, = store.enqueue([job("q")], T0)
    child, = store.enqueue([job("q", after=(parent,))], T0)
    lease = run(store, "q")[0].lease
    store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                outcomes=[(lease, DeadLettered("Boom: failed"))])
    assert state(store, child) is JobState.CANCELLED


def test_a_child_of_finished_parents_starts_as_they_say(store: Store) -> None:
    # Given parents that already finished: one succeeded, one dead-lettered
    good, bad = store.enqueue([job("p"), job("p")], T0)
    leases = {r.id: r.lease for r in run(store, "p")}
    finish(store, leases[good], JobState.SUCCEEDED)
    finish(store, leases[bad], JobState.DEAD_LETTERED)
    # Then a child after the good one alone is scheduled at once
    ready, = store.enqueue([job("c", after=(good,))], T0)
    assert state(store, ready) is JobState.SCHEDULED
    # A child that needs both to succeed is cancelled at once, naming the bad one
    doomed, = store.enqueue([job("c", after=(good, bad))], T0)
    record = store.get_job(doomed)
    assert record is not None and record.state is JobState.CANCELLED
    assert record.finished_at == T0
    assert record.last_error is not None and f"parent job {bad} ended" in record.last_error
    # And one that runs whatever happened is scheduled
    anyway, = store.enqueue([job("c", after=(good, bad), outcome="finished")], T0)
    assert state(store, anyway) is JobState.SCHEDULED
    assert sorted(j.id for j in run(store, "c")) == [ready, anyway]
    counts = store.count_jobs()
    assert counts[("c", JobState.LEASED)] == 2
    assert counts[("c", JobState.CANCELLED)] == 1


def test_a_requeued_parent_does_not_count_twice(store: Store) -> None:
    # Given a finished-child after two parents; one dead-letters (counted), is requeued
    first, second = store.enqueue([job("p"), job("p")], T0)
    child, = store.enqueue([job("c", after=(first, second), outcome="finished")], T0)
    leases = {r.id: r.lease for r in run(store, "p")}
    finish(store, leases[first], JobState.DEAD_LETTERED)
    assert store.requeue(first, T0)
    # When it finishes again
    finish(store, run(store, "p")[0].lease, JobState.SUCCEEDED)
    # Then the child still waits for the other parent
    assert state(store, child) is JobState.WAITING
    finish(store, leases[second], JobState.SUCCEEDED)
    assert state(store, child) is JobState.SCHEDULED


def test_an_unknown_parent_stores_nothing(store: Store) -> None:
    # Given one real parent
    parent, = store.enqueue([job("p")], T0)
    before = store.count_jobs()
    # When a batch names a parent that does not exist
    with pytest.raises(ValueError, match="does not exist"):
        store.enqueue([job("c", after=(parent,)), job("c", after=(parent, 999_999))], T0)
    # Then nothing of the batch is stored, and the parent has no children
    assert store.count_jobs() == before
    assert store.list_jobs(queue="c") == []
    assert store.job_children(parent) == []


def test_children_and_parents_are_listed(store: Store) -> None:
    a, b = store.enqueue([job("p"), job("p")], T0)
    c1, c2 = store.enqueue([job("c", after=(b, a)), job("c", after=(a,))], T0)
    assert store.job_children(a) == [c1, c2]
    assert store.job_children(b) == [c1]
    assert store.job_children(c1) == []
    assert store.job_children(123_456) == []
    by_id = {record.id: record for record in store.list_jobs(limit=10)}
    assert by_id[c1].parents == (b, a)  # in the order given
    assert by_id[c2].parents == (a,)
    assert by_id[a].parents == ()


def test_cancelling_a_waiting_job_cancels_its_children(store: Store) -> None:
    parent, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(parent,))], T0)
    grandchild, = store.enqueue([job("g", after=(child,))], T0)
    anyway, = store.enqueue([job("g", after=(child,), outcome="finished")], T0)
    # When the waiting child is cancelled
    assert store.cancel(child, T0)
    # Then it and the grandchild that needed it are cancelled; the one that runs whatever
    # happened is scheduled
    assert state(store, child) is JobState.CANCELLED
    assert state(store, grandchild) is JobState.CANCELLED
    assert state(store, anyway) is JobState.SCHEDULED
    # And the parent finishing later leaves them so
    finish(store, run(store, "p")[0].lease, JobState.SUCCEEDED)
    assert state(store, child) is JobState.CANCELLED
    assert store.cancel(child, T0) is False  # finished: nothing to cancel


def test_retention_keeps_a_parent_while_its_child_has_not_finished(store: Store) -> None:
    # Given two finished parents of a child, and one of them long finished
    old, recent = store.enqueue([job("p"), job("p")], T0)
    lonely, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(old, recent))], T0)
    leases = {r.id: r.lease for r in run(store, "p")}
    finish(store, leases[old], JobState.SUCCEEDED)
    finish(store, leases[lonely], JobState.SUCCEEDED)
    later = T0 + timedelta(days=30)
    # When retention purges what finished before `later`
    assert store.purge([JobState.SUCCEEDED], later, 100) == 1
    # Then only the job with no waiting child went; the parent stays
    assert store.get_job(lonely) is None
    assert store.get_job(old) is not None
    # And once the child has run, both parents and the child may go
    finish(store, leases[recent], JobState.SUCCEEDED)
    assert state(store, child) is JobState.SCHEDULED
    assert store.purge([JobState.SUCCEEDED], later, 100) == 0  # the child is not finished
    finish(store, run(store, "c")[0].lease, JobState.SUCCEEDED)
    assert store.purge([JobState.SUCCEEDED], later, 100) == 3
    assert store.job_children(old) == []
    assert store.list_jobs(limit=10) == []


def test_a_purged_child_leaves_its_parent_without_children(store: Store) -> None:
    parent, = store.enqueue([job("p")], T0)
    child, = store.enqueue([job("c", after=(parent,))], T0)
    assert store.cancel(child, T0)
    assert store.purge([JobState.CANCELLED], T0 + timedelta(days=1), 10) == 1
    assert store.job_children(parent) == []
    assert state(store, parent) is JobState.SCHEDULED


def test_a_long_chain_cancels_to_its_end(store: Store) -> None:
    first, = store.enqueue([job("p")], T0)
    chain = [first]
    for _ in range(30):
        chain += store.enqueue([job("c", after=(chain[-1],))], T0)
    finish(store, run(store, "p")[0].lease, JobState.DEAD_LETTERED)
    assert {state(store, job_id) for job_id in chain[1:]} == {JobState.CANCELLED}


def test_a_chain_runs_link_after_link(store: Store) -> None:
    first, = store.enqueue([job("q")], T0)
    chain = [first]
    for _ in range(5):
        chain += store.enqueue([job("q", after=(chain[-1],))], T0)
    ran = []
    while claimed := run(store, "q"):
        assert len(claimed) == 1  # one link at a time
        ran.append(claimed[0].id)
        finish(store, claimed[0].lease, JobState.SUCCEEDED)
    assert ran == chain


def test_a_fan_in_of_many_parents(store: Store) -> None:
    parents = store.enqueue([job("p") for _ in range(2000)], T0)
    child, = store.enqueue([job("c", after=tuple(parents))], T0)
    record = store.get_job(child)
    assert record is not None and record.parents == tuple(parents)
    leases = [r.lease for r in run(store, "p")]
    assert len(leases) == 1000
    assert store.complete(leases, T0) == 1000
    assert state(store, child) is JobState.WAITING
    assert store.complete([r.lease for r in run(store, "p")], T0) == 1000
    assert state(store, child) is JobState.SCHEDULED


@pytest.mark.parametrize(("parents", "error"), [
    ((1, 1), ValueError),
    ((0,), ValueError),
])
def test_impossible_parents_are_refused(store: Store, parents: tuple[int, ...],
                                        error: type[Exception]) -> None:
    store.enqueue([job("p")], T0)
    with pytest.raises(error):
        store.enqueue([job("c", after=parents)], T0)
    assert store.list_jobs(queue="c") == []


def test_a_keyed_job_cannot_wait_for_parents(store: Store) -> None:
    parent, = store.enqueue([job("p")], T0)
    with pytest.raises(ValueError, match="cannot have a key"):
        store.enqueue([NewJob("job", "c", T0, key="k", parents=(parent,))], T0)
    assert store.list_jobs(queue="c") == []
