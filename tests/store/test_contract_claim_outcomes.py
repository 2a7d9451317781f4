"""The store contract, outcomes written with a claim: `claim(..., outcomes=...)`
applies each outcome exactly as `complete`/`retry`/`dead_letter`/`quarantine`/
`cancel_leased` would, fenced the same way, then claims, in one transaction. Run
unchanged on every store (see rota/store/base.py)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from datetime import datetime, timedelta

import pytest

from rota.core.jobs import CANCELLED_ON_REQUEST, JobRecord, JobState, Lease
from rota.core.outcomes import Cancelled, DeadLettered, Outcome, Quarantined, RetryAt, Succeeded
from rota.store import Store
from rota.store.base import Claimed, StoreError
from rota.store.memory import MemoryStore
from rota.store.sqlite import SQLiteStore
from tests.store.test_contract import LEASE, T0, claim, lease_of, new
from tests.store.test_contract_job_counts import assert_counts_exact

LATER = T0 + timedelta(minutes=5)


def claim_with(
    store: Store, outcomes: list[tuple[Lease, Outcome]], limit: int = 10,
    now: datetime = LATER, owner: str = "w1", probe: tuple[str, ...] = (),
) -> Claimed:
    answer = store.claim(["q"], limit, now=now, owner=owner, lease_expires_at=now + LEASE,
                         outcomes=outcomes, probe=probe)
    assert isinstance(answer, Claimed)
    return answer


def record(store: Store, job_id: int) -> JobRecord:
    job = store.get_job(job_id)
    assert job is not None
    return job


def comparable(job: JobRecord) -> dict[str, object]:
    fields = dataclasses.asdict(job)
    del fields["id"]  # two twin jobs, written two ways
    return fields


OUTCOMES: list[Outcome] = [
    Succeeded(),
    Succeeded('{"sent":2}'),
    RetryAt(T0 + timedelta(hours=1), "ValueError: boom"),
    RetryAt(T0 + timedelta(hours=1), "ValueError: boom", "Traceback ...\nValueError: boom\n"),
    DeadLettered("ValueError: no attempts left"),
    DeadLettered("ValueError: no attempts left", "Traceback ...\nValueError: boom\n"),
    Quarantined("UnknownJob: no handler"),
    Cancelled(),
]


def write_alone(store: Store, lease: Lease, outcome: Outcome, now: datetime) -> bool:
    """The outcome through its own store method."""
    if isinstance(outcome, Succeeded):
        return store.complete([lease], now, [outcome.result_json]) == 1
    if isinstance(outcome, RetryAt):
        return store.retry(lease, now, outcome.due_at, outcome.error,
                           traceback=outcome.traceback)
    if isinstance(outcome, DeadLettered):
        return store.dead_letter(lease, now, outcome.error, traceback=outcome.traceback)
    if isinstance(outcome, Cancelled):
        return store.cancel_leased(lease, now, outcome.error)
    return store.quarantine(lease, now, outcome.error)


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: type(o).__name__)
def test_an_outcome_with_a_claim_is_recorded_as_its_own_method_records_it(
    store: Store, outcome: Outcome
) -> None:
    # Given two twin jobs leased, one cancel-requested pair too (retry then ends cancelled)
    alone, carried = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    # When one's outcome is written alone and the other's rides with a claim
    assert write_alone(store, lease_of(store, alone), outcome, LATER)
    answer = claim_with(store, [(lease_of(store, carried), outcome)])
    # Then both are stored alike, and the claim says it applied it
    assert answer.applied == 1
    assert comparable(record(store, carried)) == comparable(record(store, alone))


def test_a_retry_of_a_cancel_requested_job_ends_it_cancelled(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.cancel(job_id, T0)
    answer = claim_with(store, [(lease_of(store, job_id), RetryAt(LATER, "E: x"))])
    job = record(store, job_id)
    assert answer.applied == 1 and answer == []
    assert job.state is JobState.CANCELLED and job.last_error == CANCELLED_ON_REQUEST


def test_outcomes_are_applied_before_the_claim_and_jobs_are_claimed_as_usual(
    store: Store,
) -> None:
    # Given two jobs leased and three more due
    first = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    waiting = store.enqueue([new(), new(), new()], T0)
    # When a claim carries one success and one retry due now
    leases = [lease_of(store, job_id) for job_id in first]
    answer = claim_with(store, [(leases[0], Succeeded()),
                                (leases[1], RetryAt(LATER, "E: again"))], limit=10)
    # Then the success is stored, and the retried job is claimable by that same claim
    assert answer.applied == 2
    assert record(store, first[0]).state is JobState.SUCCEEDED
    assert sorted(job.id for job in answer) == sorted([first[1], *waiting])
    again = record(store, first[1])
    assert again.state is JobState.LEASED and again.attempt == 2


def test_a_stale_outcome_is_fenced_and_the_rest_applied(store: Store) -> None:
    ids = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    held = lease_of(store, ids[0])
    stale = Lease(ids[1], "w1", attempt=7)  # not the attempt it holds
    answer = claim_with(store, [(held, Succeeded()), (stale, Succeeded())], limit=0)
    assert answer.applied == 1 and answer == []
    assert record(store, ids[0]).state is JobState.SUCCEEDED
    assert record(store, ids[1]).state is JobState.LEASED


def test_outcomes_with_a_claim_of_nothing_still_probe(store: Store) -> None:
    (done,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    store.enqueue([new(queue="other")], T0)
    answer = claim_with(store, [(lease_of(store, done), Succeeded())], limit=0,
                        probe=("other", "q"))
    assert answer.applied == 1 and answer.due == {"other"}
    assert record(store, done).state is JobState.SUCCEEDED


def test_bad_outcomes_are_refused_before_anything_is_written(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    lease = lease_of(store, job_id)
    naive = RetryAt(datetime(2026, 1, 1, 13, 0), "E: x")  # naive: the point
    with pytest.raises(ValueError, match="timezone-aware"):
        claim_with(store, [(lease, Succeeded()), (lease, naive)])
    with pytest.raises(TypeError, match="outcomes"):
        claim_with(store, [(lease, "succeeded")])  # type: ignore[list-item]
    assert record(store, job_id).state is JobState.LEASED


def _break_the_claim(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the claim fail inside its transaction, after the outcomes were applied."""
    if isinstance(store, MemoryStore):
        def fail_memory(*_args: object) -> bool:
            raise StoreError("injected failure")
        monkeypatch.setattr(store, "_has_due", fail_memory)
    elif isinstance(store, SQLiteStore):
        def fail_sqlite(*_args: object) -> list[str]:
            raise sqlite3.OperationalError("injected failure")
        monkeypatch.setattr(store, "_probe", fail_sqlite)
    else:  # PostgreSQL: the server refuses the probe statement
        query = store._query  # type: ignore[attr-defined]

        def broken(name: str) -> str:
            return "SELECT 1 / 0" if name == "probe" else str(query(name))
        monkeypatch.setattr(store, "_query", broken)


# Successes alone: on PostgreSQL, completed inside the claim statement (claim_completing).
@pytest.mark.parametrize(("second", "state"), [
    (DeadLettered("E: x"), JobState.DEAD_LETTERED), (Succeeded(), JobState.SUCCEEDED)])
def test_when_the_claim_fails_no_outcome_is_applied_and_they_can_be_written_again(
    store: Store, monkeypatch: pytest.MonkeyPatch, second: Outcome, state: JobState,
) -> None:
    # Given two leased jobs and one more due
    ids = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    (waiting,) = store.enqueue([new()], T0)
    leases = [lease_of(store, job_id) for job_id in ids]
    outcomes: list[tuple[Lease, Outcome]] = [(leases[0], Succeeded()), (leases[1], second)]
    # When the claim carrying their outcomes fails inside its transaction
    with monkeypatch.context() as patch:
        _break_the_claim(store, patch)
        with pytest.raises(StoreError):
            claim_with(store, outcomes, probe=("q",))
    # Then nothing of it was kept: both still leased, the waiting job not claimed
    assert [record(store, job_id).state for job_id in ids] == [JobState.LEASED] * 2
    assert record(store, waiting).state is JobState.SCHEDULED
    # And the outcomes written again (here with the next claim) apply once
    answer = claim_with(store, outcomes)
    assert answer.applied == 2 and [job.id for job in answer] == [waiting]
    assert record(store, ids[0]).state is JobState.SUCCEEDED
    assert record(store, ids[1]).state is state
    assert_counts_exact(store, LATER)


def test_outcomes_with_a_claim_keep_the_job_counts_exact(store: Store) -> None:
    # Given one leased job per outcome kind (and more due)
    ids = store.enqueue([new() for _ in OUTCOMES], T0)
    claim(store, ["q"], len(OUTCOMES))
    store.enqueue([new(), new()], T0)
    # When one claim carries every kind of outcome
    answer = claim_with(store, [(lease_of(store, job_id), outcome)
                                for job_id, outcome in zip(ids, OUTCOMES, strict=True)])
    # Then the counts (kept as jobs change, migration 8) equal the rows
    assert answer.applied == len(OUTCOMES)
    assert_counts_exact(store, LATER)


@pytest.mark.parametrize("result", [None, '{"sent":2}'])
@pytest.mark.parametrize("probe", [(), ("q", "other")])
def test_successes_alone_are_completed_and_the_claim_made_as_one(
    store: Store, probe: tuple[str, ...], result: str | None
) -> None:
    # (PostgreSQL sends a batch of plain successes inside the claim statement itself.)
    # Given two leased jobs of one owner, one leased by another, and three more due
    held = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    (other,) = store.enqueue([new()], T0)
    store.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE)
    waiting = store.enqueue([new(), new(), new()], T0)
    stale = Lease(other, "w1", attempt=1)  # w1 never held it: fenced
    # When a claim carries their successes and the stale one
    outcomes: list[tuple[Lease, Outcome]] = [
        (lease_of(store, held[0]), Succeeded(result)), (stale, Succeeded()),
        (lease_of(store, held[1]), Succeeded())]
    answer = claim_with(store, outcomes, probe=probe)
    # Then the two held are succeeded, the stale one untouched, and the due jobs claimed
    assert answer.applied == 2
    assert [record(store, job_id).state for job_id in held] == [JobState.SUCCEEDED] * 2
    assert [record(store, job_id).result for job_id in held] == [
        None if result is None else json.loads(result), None]
    assert record(store, other).state is JobState.LEASED
    assert [job.id for job in answer] == waiting
    assert all(job.attempt == 1 and job.lease_owner == "w1" for job in answer)
    assert answer.due == set()  # the claim took every due job, of q and of other
    assert_counts_exact(store, LATER)


def test_successes_with_a_claim_over_a_limited_queue_free_its_room(store: Store) -> None:
    # Given a Queue limited to two leases, both held, and two more due
    store.set_queue_limit("q", 2)
    held = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    waiting = store.enqueue([new(), new()], T0)
    # When a claim carries both successes
    answer = claim_with(store, [(lease_of(store, job_id), Succeeded()) for job_id in held])
    # Then both are applied before the claim counts the Queue's leases: it takes two
    assert answer.applied == 2
    assert sorted(job.id for job in answer) == waiting
    assert_counts_exact(store, LATER)



def test_the_workers_writer_refuses_what_is_no_outcome_instead_of_quarantining(
    store: Store,
) -> None:
    # Given a leased job, and an outcome of a kind the writer does not know (as a new kind
    # added to rota.core.outcomes would be, before mypy points at the places to teach)
    from rota.worker.group import record_outcome

    @dataclasses.dataclass(frozen=True)
    class Postponed:
        error: str = "Postponed: a kind of outcome added later"

    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    job = record(store, job_id)
    # When the worker's writer is handed it
    with pytest.raises(AssertionError):
        record_outcome(store, job, Postponed(), LATER, "g")  # type: ignore[arg-type]
    # Then nothing is written: the job is still leased, not quarantined
    assert record(store, job_id).state is JobState.LEASED
