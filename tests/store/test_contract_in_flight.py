"""The store contract for `jobs_in_flight`: what a worker runs now, read from the leases
its groups' owner ids hold. Run unchanged against every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rota.core.jobs import JobState, NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
# Owner ids with the characters a literal or a JSON list must carry through.
ODD = 'odd "owner", {x}\\ NULL'


def enqueue(store: Store, count: int, queue: str = "q", name: str = "job") -> list[int]:
    return store.enqueue([NewJob(name=name, queue=queue, due_at=T0) for _ in range(count)], T0)


def claim(store: Store, owner: str, limit: int, now: datetime, queue: str = "q") -> list[int]:
    jobs = store.claim([queue], limit, now=now, owner=owner, lease_expires_at=now + LEASE)
    return [job.id for job in jobs]


def test_the_jobs_in_flight_are_the_leases_of_the_given_owners_longest_running_first(
        store: Store) -> None:
    # Given jobs leased by three owners at different times
    enqueue(store, 6)
    late = claim(store, "a@h:1:x", 2, T0 + timedelta(seconds=5))
    early = claim(store, "b@h:1:y", 1, T0 + timedelta(seconds=1))
    other = claim(store, "c@h:2:z", 3, T0 + timedelta(seconds=2))
    # When the jobs in flight of the first two owners are read
    running = store.jobs_in_flight(["a@h:1:x", "b@h:1:y"])
    # Then they are those owners' leased jobs, the longest running first, with their
    # owner and start
    assert [job.id for job in running] == early + late
    assert [job.lease_owner for job in running] == ["b@h:1:y", "a@h:1:x", "a@h:1:x"]
    assert [job.started_at for job in running] == [
        T0 + timedelta(seconds=1), T0 + timedelta(seconds=5), T0 + timedelta(seconds=5)]
    assert all(job.state is JobState.LEASED and job.name == "job" and job.queue == "q"
               for job in running)
    assert [job.id for job in store.jobs_in_flight(["c@h:2:z"])] == other


def test_finished_released_and_retried_jobs_are_no_longer_in_flight(store: Store) -> None:
    enqueue(store, 4)
    claim(store, "w", 4, T0)
    leases = [job.lease for job in store.jobs_in_flight(["w"])]
    store.complete([leases[0]], T0)
    store.release([leases[1]], T0)
    store.retry(leases[2], T0, T0 + timedelta(hours=1), "boom")
    assert [job.id for job in store.jobs_in_flight(["w"])] == [leases[3].job_id]


def test_a_job_claimed_again_counts_for_its_new_owner_only(store: Store) -> None:
    # Given a job whose lease expired and was retried, then claimed by another owner
    [job_id] = enqueue(store, 1)
    claim(store, "old", 1, T0)
    [job] = store.jobs_in_flight(["old"])
    assert store.expire_lease(job.lease, T0 + LEASE, T0 + LEASE, "lease expired")
    claim(store, "new", 1, T0 + LEASE)
    # Then only the new owner has it, in its second attempt
    assert store.jobs_in_flight(["old"]) == []
    [again] = store.jobs_in_flight(["new"])
    assert (again.id, again.attempt) == (job_id, 2)


def test_the_limit_caps_and_no_owners_or_no_room_reads_nothing(store: Store) -> None:
    enqueue(store, 3)
    ids = claim(store, "w", 3, T0)
    assert [job.id for job in store.jobs_in_flight(["w"], limit=2)] == ids[:2]
    assert store.jobs_in_flight(["w"], limit=0) == []
    assert store.jobs_in_flight([]) == []
    assert store.jobs_in_flight(["nobody"]) == []


def test_owner_ids_with_quotes_commas_braces_and_backslashes_are_matched_exactly(
        store: Store) -> None:
    enqueue(store, 2)
    [odd] = claim(store, ODD, 1, T0)
    claim(store, "odd", 1, T0)
    assert [job.id for job in store.jobs_in_flight([ODD])] == [odd]
