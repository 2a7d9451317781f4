"""The store contract, run unchanged against every store (see rota/store/base.py).

A store behaviour not covered here is not part of the contract.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, Lease, NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def new(queue: str = "q", due_at: datetime = T0, name: str = "job", args: str = "[]") -> NewJob:
    return NewJob(name=name, queue=queue, due_at=due_at, args_json=args)


def claim(store: Store, queues: list[str], limit: int, *, now: datetime = T0,
          owner: str = "w1") -> list[int]:
    jobs = store.claim(queues, limit, now=now, owner=owner, lease_expires_at=now + LEASE)
    return [job.id for job in jobs]


def lease_of(store: Store, job_id: int) -> Lease:
    job = store.get_job(job_id)
    assert job is not None
    return job.lease


def test_enqueue_returns_ids_in_order_and_stores_every_field(store: Store) -> None:
    # Given two jobs with arguments
    ids = store.enqueue(
        [
            NewJob("send", "emails", T0, '["a@x", 1]', '{"subject": "h\\u00e9"}'),
            NewJob("send", "emails", T0 + timedelta(microseconds=7), "[]", "{}"),
        ],
        T0,
    )
    # Then the ids ascend and the record round-trips exactly
    assert len(ids) == 2 and ids[0] < ids[1]
    job = store.get_job(ids[0])
    assert job is not None
    assert (job.name, job.queue, job.state, job.attempt) == ("send", "emails",
                                                               JobState.SCHEDULED, 0)
    assert job.args == ("a@x", 1) and job.kwargs == {"subject": "hé"}
    assert job.due_at == T0 and job.due_at.tzinfo is not None
    assert job.created_at == T0
    assert job.last_error is None and job.lease_owner is None
    second = store.get_job(ids[1])
    assert second is not None and second.due_at == T0 + timedelta(microseconds=7)
    assert store.get_job(10**9) is None


def test_enqueue_of_nothing_stores_nothing(store: Store) -> None:
    assert store.enqueue([], T0) == []
    assert store.count_jobs() == {}


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (NewJob("nul\x00name", "q", T0), ValueError),
        (NewJob("job", "nul\x00queue", T0), ValueError),
        (NewJob("n" * 10_000, "q", T0), ValueError),
        (NewJob("job", "q" * 201, T0), ValueError),
        (NewJob("job", "q", T0, '["a\\u0000b"]'), TypeError),
        (NewJob("job", "q", T0, "[]", '{"k": "\\u0000"}'), TypeError),
    ],
    ids=["nul-name", "nul-queue", "long-name", "long-queue", "nul-arg", "nul-kwarg"],
)
def test_every_store_refuses_the_same_unsaveable_jobs_and_stores_none_of_the_batch(
    store: Store, bad: NewJob, error: type[Exception]
) -> None:
    # Given a batch whose last job one store could not save (PostgreSQL refuses NUL)
    # When it is enqueued, Then every store refuses it before writing anything
    with pytest.raises(error):
        store.enqueue([new(), new(), bad], T0)
    assert store.count_jobs() == {}
    # And names at the limit, and the text "\u0000" (not a NUL), are fine everywhere
    (job_id,) = store.enqueue([NewJob("n" * 200, "q" * 200, T0, '["\\\\u0000"]')], T0)
    job = store.get_job(job_id)
    assert job is not None and job.args == ("\\u0000",) and len(job.name) == 200


def test_claim_takes_due_time_order_with_enqueue_order_ties(store: Store) -> None:
    late, tie1, early, tie2 = store.enqueue(
        [new(due_at=T0), new(due_at=T0 - timedelta(seconds=5)),
         new(due_at=T0 - timedelta(seconds=9)), new(due_at=T0 - timedelta(seconds=5))],
        T0,
    )
    assert claim(store, ["q"], 10) == [early, tie1, tie2, late]


def test_multi_queue_claim_follows_the_given_queue_order_not_due_time(store: Store) -> None:
    # Given an older job on "bulk" and a newer one on "critical"
    (bulk,) = store.enqueue([new("bulk", T0 - timedelta(hours=1))], T0)
    (critical,) = store.enqueue([new("critical", T0)], T0)
    # When a Strict claim asks for critical first
    # Then critical's job comes first although bulk's is older
    assert claim(store, ["critical", "bulk"], 10) == [critical, bulk]


def test_claim_fills_from_the_next_queue_only_after_the_first_is_drained(store: Store) -> None:
    a = store.enqueue([new("a") for _ in range(3)], T0)
    b = store.enqueue([new("b") for _ in range(3)], T0)
    assert claim(store, ["a", "b"], 4) == [*a, b[0]]


def test_claim_takes_only_due_jobs(store: Store) -> None:
    (due,) = store.enqueue([new(due_at=T0)], T0)
    (future,) = store.enqueue([new(due_at=T0 + timedelta(seconds=1))], T0)
    assert claim(store, ["q"], 10) == [due]
    assert claim(store, ["q"], 10, now=T0 + timedelta(seconds=1)) == [future]


def test_claim_honours_limit_and_ignores_other_queues(store: Store) -> None:
    ids = store.enqueue([new() for _ in range(5)], T0)
    store.enqueue([new("other")], T0)
    assert claim(store, ["q"], 2) == ids[:2]
    assert claim(store, ["q"], 0) == []
    assert claim(store, ["q"], 10) == ids[2:]
    assert claim(store, ["q"], 10) == []
    assert claim(store, ["nothing-here"], 10) == []


def test_claim_leases_with_owner_attempt_and_expiry(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    (job,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    assert job.id == job_id and job.state is JobState.LEASED
    assert (job.lease_owner, job.attempt, job.lease_expires_at) == ("w1", 1, T0 + LEASE)
    assert store.get_job(job_id) == job
    assert job.lease == Lease(job_id, "w1", 1)


def test_a_leased_job_is_not_claimed_again(store: Store) -> None:
    store.enqueue([new()], T0)
    assert len(claim(store, ["q"], 1, owner="w1")) == 1
    assert claim(store, ["q"], 1, owner="w2") == []


def test_complete_is_fenced_by_owner_and_attempt(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1, owner="w1")
    # When another owner or a stale attempt reports
    assert store.complete([Lease(job_id, "w2", 1)], T0) == 0
    assert store.complete([Lease(job_id, "w1", 2)], T0) == 0
    job = store.get_job(job_id)
    assert job is not None and job.state is JobState.LEASED
    # Then only the true lease completes it, once
    assert store.complete([Lease(job_id, "w1", 1)], T0) == 1
    assert store.complete([Lease(job_id, "w1", 1)], T0) == 0
    job = store.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED and job.lease_owner is None


def test_complete_takes_many_leases_at_once(store: Store) -> None:
    ids = store.enqueue([new() for _ in range(5)], T0)
    claim(store, ["q"], 5)
    leases = [lease_of(store, i) for i in ids]
    assert store.complete([*leases, Lease(ids[0], "intruder", 1)], T0) == 5
    assert store.count_jobs() == {("q", JobState.SUCCEEDED): 5}


# Owners as odd as a Worker Group's name may make them: quotes, backslashes, commas, braces,
# spaces, an empty string and the word NULL (a store may send leases as array literals).
ODD_OWNERS = ['w"1', "w\\1", "a,b", "{x}", " sp ace ", "", "NULL", "ü@host:1:ab"]


def test_leases_of_any_owner_are_renewed_completed_and_released(store: Store) -> None:
    # Given one job claimed by each odd owner
    ids = store.enqueue([new() for _ in ODD_OWNERS * 3], T0)
    leases: list[Lease] = []
    for owner in ODD_OWNERS * 3:
        (job,) = store.claim(["q"], 1, now=T0, owner=owner, lease_expires_at=T0 + LEASE)
        assert job.lease_owner == owner
        leases.append(job.lease)
    # When their owners renew, complete and release them (and an intruder tries too)
    third = len(ODD_OWNERS)
    intruders = [Lease(lease.job_id, lease.owner + "x", 1) for lease in leases]
    renewed = store.heartbeat(leases + intruders, T0, T0 + 2 * LEASE)
    done = store.complete(leases[:third] + intruders[:third], T0)
    back = store.release(leases[third:2 * third] + intruders[third:], T0)
    # Then each lease counts for its own owner only
    assert renewed == set(ids)
    assert (done, back) == (third, third)
    states = [job.state for job in map(store.get_job, ids) if job is not None]
    assert states == ([JobState.SUCCEEDED] * third + [JobState.SCHEDULED] * third
                      + [JobState.LEASED] * third)


def test_retry_schedules_again_at_the_due_time_with_the_error(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    later = T0 + timedelta(seconds=30)
    assert store.retry(Lease(job_id, "w1", 1), T0, later, "ValueError: boom")
    job = store.get_job(job_id)
    assert job is not None
    assert (job.state, job.due_at, job.last_error, job.attempt) == (
        JobState.SCHEDULED, later, "ValueError: boom", 1)
    assert claim(store, ["q"], 1, now=later - timedelta(microseconds=1)) == []
    assert claim(store, ["q"], 1, now=later, owner="w2") == [job_id]
    job = store.get_job(job_id)
    assert job is not None and job.attempt == 2 and job.lease_owner == "w2"
    # A stale attempt's retry changes nothing
    assert not store.retry(Lease(job_id, "w1", 1), later, later, "late")


def test_dead_letter_and_quarantine_end_the_job_with_the_error(store: Store) -> None:
    dead, odd = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    assert store.dead_letter(Lease(dead, "w1", 1), T0, "RuntimeError: no")
    assert store.quarantine(Lease(odd, "w1", 1), T0, "UnknownJob: x")
    assert not store.dead_letter(Lease(dead, "w1", 1), T0, "again")
    dead_job, odd_job = store.get_job(dead), store.get_job(odd)
    assert dead_job is not None and odd_job is not None
    assert (dead_job.state, dead_job.last_error) == (JobState.DEAD_LETTERED, "RuntimeError: no")
    assert (odd_job.state, odd_job.last_error) == (JobState.QUARANTINED, "UnknownJob: x")
    assert claim(store, ["q"], 10) == []


def test_release_hands_the_job_back_at_once_without_counting_the_attempt(store: Store) -> None:
    first, second = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    assert store.release([Lease(first, "w1", 1), Lease(second, "other", 1)], T0) == 1
    job = store.get_job(first)
    assert job is not None
    assert (job.state, job.attempt, job.due_at, job.lease_owner) == (
        JobState.SCHEDULED, 0, T0, None)
    assert claim(store, ["q"], 10, owner="w2") == [first]
    job = store.get_job(first)
    assert job is not None and job.attempt == 1


def test_heartbeat_renews_only_the_owners_live_lease(store: Store) -> None:
    a, b = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 2)
    renewed_until = T0 + 2 * LEASE
    held = store.heartbeat(
        [Lease(a, "w1", 1), Lease(b, "intruder", 1), Lease(b, "w1", 9)],
        T0 + timedelta(seconds=10), renewed_until,
    )
    assert held == {a}
    job_a, job_b = store.get_job(a), store.get_job(b)
    assert job_a is not None and job_b is not None
    assert job_a.lease_expires_at == renewed_until
    assert job_b.lease_expires_at == T0 + LEASE
    # An expired lease is not renewed, even by its owner
    assert store.heartbeat([Lease(b, "w1", 1)], T0 + LEASE, T0 + 3 * LEASE) == set()


def test_expired_leases_are_found_and_expired_exactly_once(store: Store) -> None:
    a, b, c = store.enqueue([new(), new(), new()], T0)
    claim(store, ["q"], 3)
    store.heartbeat([Lease(c, "w1", 1)], T0, T0 + 10 * LEASE)
    later = T0 + LEASE
    assert store.find_expired_leases(T0 + LEASE - timedelta(microseconds=1), 10) == []
    expired = store.find_expired_leases(later, 10)
    assert sorted(job.id for job in expired) == [a, b]
    assert len(store.find_expired_leases(later, 1)) == 1
    # Two sweepers race on the same lease: exactly one applies
    retry_at = later + timedelta(seconds=2)
    assert store.expire_lease(Lease(a, "w1", 1), later, retry_at, "LeaseExpired")
    assert not store.expire_lease(Lease(a, "w1", 1), later, retry_at, "LeaseExpired")
    assert store.expire_lease(Lease(b, "w1", 1), later, None, "LeaseExpired")
    # A live lease is never expired
    assert not store.expire_lease(Lease(c, "w1", 1), later, retry_at, "LeaseExpired")
    job_a, job_b = store.get_job(a), store.get_job(b)
    assert job_a is not None and job_b is not None
    assert (job_a.state, job_a.due_at, job_a.last_error) == (
        JobState.SCHEDULED, retry_at, "LeaseExpired")
    assert job_b.state is JobState.DEAD_LETTERED
    assert claim(store, ["q"], 10, now=retry_at, owner="w2") == [a]
    job_a = store.get_job(a)
    assert job_a is not None and job_a.attempt == 2


def test_an_outcome_after_expiry_but_before_the_sweep_is_still_accepted(store: Store) -> None:
    (job_id,) = store.enqueue([new()], T0)
    claim(store, ["q"], 1)
    assert store.complete([Lease(job_id, "w1", 1)], T0 + 2 * LEASE) == 1


def test_cancel_ends_scheduled_jobs_and_marks_leased_ones(store: Store) -> None:
    a, b = store.enqueue([new(), new()], T0)
    claim(store, ["q"], 1)
    assert store.cancel(a, T0)  # leased: a cancel request, still leased
    leased = store.get_job(a)
    assert leased is not None and leased.state is JobState.LEASED and leased.cancel_requested
    assert store.cancel(b, T0)
    assert not store.cancel(b, T0)
    assert not store.cancel(10**9, T0)
    job = store.get_job(b)
    assert job is not None and job.state is JobState.CANCELLED
    assert claim(store, ["q"], 10) == []


def test_list_and_count_jobs(store: Store) -> None:
    a = store.enqueue([new("a") for _ in range(3)], T0)
    b = store.enqueue([new("b") for _ in range(2)], T0)
    claim(store, ["a"], 1)
    assert [job.id for job in store.list_jobs()] == [*a, *b]
    assert [job.id for job in store.list_jobs(queue="b")] == b
    assert [job.id for job in store.list_jobs(state=JobState.LEASED)] == [a[0]]
    assert [job.id for job in store.list_jobs(queue="a", state=JobState.SCHEDULED, limit=1)] \
        == [a[1]]
    assert store.count_jobs() == {
        ("a", JobState.LEASED): 1,
        ("a", JobState.SCHEDULED): 2,
        ("b", JobState.SCHEDULED): 2,
    }


def test_list_jobs_filters_by_job_name(store: Store) -> None:
    # Given jobs of two names on two Queues (the dashboard's Jobs page filters by name)
    mails = store.enqueue([new("a", name="send-mail"), new("b", name="send-mail")], T0)
    (report,) = store.enqueue([new("a", name="build-report")], T0)
    # Then a name filter keeps only that name's jobs, combined with the other filters
    assert [job.id for job in store.list_jobs(name="send-mail")] == mails
    assert [job.id for job in store.list_jobs(name="send-mail", newest=True)] == mails[::-1]
    assert [job.id for job in store.list_jobs(name="send-mail", queue="b")] == [mails[1]]
    assert [job.id for job in store.list_jobs(name="build-report",
                                              state=JobState.SCHEDULED)] == [report]
    assert [job.id for job in store.list_jobs(name="send-mail", offset=1)] == [mails[1]]
    assert store.list_jobs(name="nobody") == []


def test_unicode_queue_names_and_arguments_round_trip(store: Store) -> None:
    (job_id,) = store.enqueue(
        [NewJob("naïve-job", "файлы", T0, '["日本", {"k": [1, 2.5, null, true]}]', "{}")], T0
    )
    assert claim(store, ["файлы"], 1) == [job_id]
    job = store.get_job(job_id)
    assert job is not None
    assert job.name == "naïve-job" and job.args == ("日本", {"k": [1, 2.5, None, True]})


def test_queue_names_with_array_literal_characters_are_claimed_in_order(store: Store) -> None:
    # Given a job in each Queue whose name holds quotes, backslashes, commas or braces
    queues = ['a"b', "c\\d", "e,f", "{g}", "NULL", 'h\\"']
    ids = store.enqueue([new(queue=queue) for queue in queues], T0)
    # When one claim asks for them in reverse order, then one more claim asks again
    taken = claim(store, queues[::-1], 10)
    # Then each is claimed, in the order asked, and nothing is left
    assert taken == ids[::-1]
    assert claim(store, queues, 10) == []


# -- rows whose stored arguments cannot be decoded ------------------------------------------


def corrupt_arguments(store_url: str, job_id: int, args: str, kwargs: str) -> None:
    """Overwrite a job's stored arguments with raw SQL, as a hand edit or a disk fault
    would. PostgreSQL's json columns refuse text that is not JSON, so there the corruption
    is JSON of the wrong shape; SQLite keeps any text."""
    if store_url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(store_url[len("sqlite:///"):], isolation_level=None)
        try:
            conn.execute("UPDATE rota_jobs SET args = ?, kwargs = ? WHERE id = ?",
                         (args, kwargs, job_id))
        finally:
            conn.close()
    elif store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute("UPDATE rota.jobs SET args = %s::json, kwargs = %s::json "
                         "WHERE id = %s", (args, kwargs, job_id))
    else:
        pytest.skip("the memory store keeps decoded values: it cannot hold a row whose "
                    "arguments cannot be decoded (enqueue refuses bad JSON before storing)")


CORRUPTIONS = [
    ('[1, "unterminated', "{}"),  # not JSON (SQLite only; PostgreSQL refuses to store it)
    ('{"a": 1}', "{}"),  # JSON, but args must be an array
    ("[]", "[1, 2]"),  # JSON, but kwargs must be an object
    ('"text"', "{}"),
]


@pytest.mark.parametrize("corruption", range(len(CORRUPTIONS)))
def test_a_row_whose_arguments_cannot_be_decoded_is_shown_and_quarantined_by_the_claim(
    store: Store, store_url: str, corruption: int
) -> None:
    args, kwargs = CORRUPTIONS[corruption]
    if corruption == 0 and store_url.startswith("postgresql://"):
        # PostgreSQL's json column refuses text that is not JSON; what it can hold that no
        # decoder can take is JSON nested deeper than the decoder goes.
        args = "[" * 3000 + "]" * 3000
    # Given three jobs, the middle one's stored arguments corrupted with raw SQL
    first, bad, last = store.enqueue([new(args="[1]"), new(args="[2]"), new(args="[3]")], T0)
    corrupt_arguments(store_url, bad, args, kwargs)
    # Then reads show the row, with empty arguments and the reason, instead of failing
    record = store.get_job(bad)
    assert record is not None and record.state is JobState.SCHEDULED
    assert (record.args, record.kwargs) == ((), {})
    assert record.arguments_error is not None
    assert record.arguments_error.startswith("CorruptArguments: ")
    assert [job.id for job in store.list_jobs()] == [first, bad, last]
    sound = store.get_job(first)
    assert sound is not None and sound.arguments_error is None and sound.args == (1,)
    # When a claim leases all three
    claimed = store.claim(["q"], 10, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    # Then it returns the two sound jobs; the corrupt one is quarantined with the reason
    assert [(job.id, job.args) for job in claimed] == [(first, (1,)), (last, (3,))]
    record = store.get_job(bad)
    assert record is not None
    assert (record.state, record.attempt) == (JobState.QUARANTINED, 1)
    assert record.last_error == record.arguments_error
    assert store.count_jobs() == {("q", JobState.LEASED): 2, ("q", JobState.QUARANTINED): 1}


def test_an_expired_lease_on_a_row_corrupted_after_its_claim_is_still_swept(
    store: Store, store_url: str
) -> None:
    # Given a leased job whose arguments were corrupted after the claim
    (job_id,) = store.enqueue([new(args="[1]")], T0)
    claim(store, ["q"], 1)
    corrupt_arguments(store_url, job_id, '{"a": 1}', "{}")
    # When its lease expires, the sweeper finds it (no decode error) and expires it
    (expired,) = store.find_expired_leases(T0 + LEASE, 10)
    assert expired.id == job_id and expired.arguments_error is not None
    assert store.expire_lease(expired.lease, T0 + LEASE, None, "LeaseExpired")
    record = store.get_job(job_id)
    assert record is not None and record.state is JobState.DEAD_LETTERED
# -- finished_at ----------------------------------------------------------------------------


def test_finished_at_is_set_by_every_change_into_a_finished_state(store: Store) -> None:
    # Given five jobs, each headed for a different finished state at a different time
    done, dead, odd, swept, cancelled = store.enqueue([new() for _ in range(5)], T0)
    claim(store, ["q"], 4)
    t1, t2, t3, t4, t5 = (T0 + timedelta(seconds=s) for s in (1, 2, 3, 4 * 60, 5 * 60))
    # When each finishes its own way
    assert store.complete([lease_of(store, done)], t1) == 1
    assert store.dead_letter(lease_of(store, dead), t2, "RuntimeError: no")
    assert store.quarantine(lease_of(store, odd), t3, "UnknownJob: x")
    assert store.expire_lease(lease_of(store, swept), t4, None, "LeaseExpired")
    assert store.cancel(cancelled, t5)
    # Then each records the `now` of the call that finished it
    finished = {job_id: store.get_job(job_id) for job_id in (done, dead, odd, swept, cancelled)}
    assert {job_id: (job.state, job.finished_at) for job_id, job in finished.items()
            if job is not None} == {
        done: (JobState.SUCCEEDED, t1),
        dead: (JobState.DEAD_LETTERED, t2),
        odd: (JobState.QUARANTINED, t3),
        swept: (JobState.DEAD_LETTERED, t4),
        cancelled: (JobState.CANCELLED, t5),
    }
    assert all(job.finished_at.tzinfo is not None for job in finished.values()
               if job is not None and job.finished_at is not None)
    # And listings carry it too
    assert {job.id: job.finished_at for job in store.list_jobs()}[done] == t1


def test_finished_at_stays_empty_until_a_job_finishes(store: Store) -> None:
    # Given a job that is enqueued, claimed, retried, claimed, released, claimed, expired
    (job_id,) = store.enqueue([new()], T0)
    assert store.get_job(job_id).finished_at is None  # type: ignore[union-attr]
    (leased,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    assert leased.finished_at is None
    assert store.retry(leased.lease, T0, T0, "ValueError: again")
    claim(store, ["q"], 1)
    assert store.release([lease_of(store, job_id)], T0) == 1
    claim(store, ["q"], 1)
    assert store.heartbeat([lease_of(store, job_id)], T0, T0 + LEASE) == {job_id}
    assert store.expire_lease(lease_of(store, job_id), T0 + LEASE, T0 + LEASE, "LeaseExpired")
    # Then no step that leaves it unfinished records a finish
    job = store.get_job(job_id)
    assert job is not None and job.state is JobState.SCHEDULED and job.finished_at is None
    assert store.find_expired_leases(T0 + 10 * LEASE, 10) == []


# -- purge --------------------------------------------------------------------------------


def finish_all(store: Store, ids: list[int], at: datetime) -> None:
    """Claim and complete exactly `ids` (the only due jobs of Queue "done") at `at`."""
    jobs = store.claim(["done"], len(ids), now=at, owner="w1", lease_expires_at=at + LEASE)
    assert sorted(job.id for job in jobs) == sorted(ids)
    assert store.complete([job.lease for job in jobs], at) == len(ids)


def test_purge_deletes_finished_jobs_older_than_the_cutoff_only(store: Store) -> None:
    # Given jobs that succeeded at T0 and at T0 + 1 h, and jobs still waiting or running
    old = store.enqueue([new("done") for _ in range(3)], T0)
    finish_all(store, old, T0)
    recent = store.enqueue([new("done") for _ in range(2)], T0)
    finish_all(store, recent, T0 + timedelta(hours=1))
    waiting = store.enqueue([new("q", T0 - timedelta(days=30))], T0)
    running = store.enqueue([new("busy", T0 - timedelta(days=30))], T0)
    claim(store, ["busy"], 1)
    # When purging what finished before T0 + 1 h
    deleted = store.purge([JobState.SUCCEEDED], T0 + timedelta(hours=1), 1000)
    # Then exactly the older ones are gone: a job finished at the cutoff itself stays
    assert deleted == 3
    assert [store.get_job(i) for i in old] == [None, None, None]
    remaining = {job.id for job in store.list_jobs()}
    assert remaining == {*recent, *waiting, *running}
    # And a second purge finds nothing more
    assert store.purge([JobState.SUCCEEDED], T0 + timedelta(hours=1), 1000) == 0


def test_purge_deletes_at_most_limit_jobs_per_call(store: Store) -> None:
    ids = store.enqueue([new("done") for _ in range(7)], T0)
    finish_all(store, ids, T0)
    later = T0 + timedelta(days=1)
    assert store.purge([JobState.SUCCEEDED], later, 3) == 3
    assert store.purge([JobState.SUCCEEDED], later, 3) == 3
    assert store.purge([JobState.SUCCEEDED], later, 3) == 1
    assert store.purge([JobState.SUCCEEDED], later, 3) == 0
    assert store.purge([JobState.SUCCEEDED], later, 0) == 0
    assert store.count_jobs() == {}


def test_purge_deletes_only_the_states_it_is_given(store: Store) -> None:
    # Given one job in each finished state, all finished at T0
    done, dead, odd, cancelled = store.enqueue(
        [new("done"), new("fail"), new("fail"), new("spare")], T0)
    finish_all(store, [done], T0)
    claim(store, ["fail"], 2)
    assert store.dead_letter(lease_of(store, dead), T0, "RuntimeError: no")
    assert store.quarantine(lease_of(store, odd), T0, "UnknownJob: x")
    assert store.cancel(cancelled, T0)
    later = T0 + timedelta(seconds=1)
    # When purging the failed states, then the succeeded ones
    assert store.purge([JobState.DEAD_LETTERED, JobState.QUARANTINED], later, 10) == 2
    assert {job.id for job in store.list_jobs()} == {done, cancelled}
    assert store.purge([JobState.CANCELLED], later, 10) == 1
    assert [job.id for job in store.list_jobs()] == [done]
    assert store.purge([JobState.SUCCEEDED, JobState.CANCELLED], later, 10) == 1
    assert store.list_jobs() == []


@pytest.mark.parametrize("state", [JobState.SCHEDULED, JobState.LEASED])
def test_purge_refuses_unfinished_states_and_deletes_nothing(
    store: Store, state: JobState
) -> None:
    store.enqueue([new(due_at=T0 - timedelta(days=9))], T0)
    claim(store, ["q"], 1)
    store.enqueue([new(due_at=T0 - timedelta(days=9))], T0)
    with pytest.raises(ValueError, match=f"only finished jobs, not {state.value}"):
        store.purge([JobState.SUCCEEDED, state], T0 + timedelta(days=9), 10)
    assert sum(store.count_jobs().values()) == 2


def test_a_purged_job_is_gone_for_good_and_its_queue_still_claims(store: Store) -> None:
    # Given a job that succeeded and was purged, and a new job on the same Queue
    (first,) = store.enqueue([new("done")], T0)
    finish_all(store, [first], T0)
    assert store.purge([JobState.SUCCEEDED], T0 + timedelta(days=2), 10) == 1
    (second,) = store.enqueue([new("done")], T0 + timedelta(days=2))
    # Then the purged job is unknown to every operation, and the Queue works as before
    assert store.get_job(first) is None
    assert not store.cancel(first, T0)
    assert store.complete([Lease(first, "w1", 1)], T0) == 0
    assert claim(store, ["done"], 10, now=T0 + timedelta(days=2)) == [second]
    assert second != first
