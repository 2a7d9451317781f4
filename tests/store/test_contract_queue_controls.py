"""The store contract for Queue controls (pause, resume, concurrency limits, queue_infos),
run unchanged against every store. Concurrent claimers: threads on every store, processes
on the durable ones; nothing waits on a timer.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.queue_controls import QueueInfo, QueueSettings
from rota.store import Store, open_store
from tests.store import sqlite_processes
from tests.store.test_contract_concurrency import run_together

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
SPAWN = multiprocessing.get_context("spawn")


def new(queue: str = "q", due_at: datetime = T0) -> NewJob:
    return NewJob(name="job", queue=queue, due_at=due_at)


def claim(store: Store, queues: list[str], limit: int, owner: str = "w1") -> list[int]:
    jobs = store.claim(queues, limit, now=T0, owner=owner, lease_expires_at=T0 + LEASE)
    return [job.id for job in jobs]


def finish(store: Store, ids: list[int], owner: str = "w1") -> None:
    leases = []
    for job_id in ids:
        job = store.get_job(job_id)
        assert job is not None
        leases.append(job.lease)
    assert store.complete(leases, T0) == len(ids)


# -- pause and resume ------------------------------------------------------------------------


def test_a_paused_queue_yields_nothing_and_strict_goes_on_to_the_next(store: Store) -> None:
    # Given due jobs on a and b, and a paused
    a = store.enqueue([new("a"), new("a")], T0)
    b = store.enqueue([new("b"), new("b"), new("b")], T0)
    assert store.pause_queue("a") == QueueSettings("a", paused=True)
    # When claims ask for a alone, then for a then b
    assert claim(store, ["a"], 5) == []
    # Then a gives nothing and the Strict claim goes on to b
    assert claim(store, ["a", "b"], 2) == b[:2]
    # And after resume, a is claimable again, first Queue first
    assert store.resume_queue("a") == QueueSettings("a", paused=False)
    assert claim(store, ["a", "b"], 5) == [*a, b[2]]


def test_pausing_leaves_leased_jobs_to_finish_normally(store: Store) -> None:
    ids = store.enqueue([new("a"), new("a")], T0)
    assert claim(store, ["a"], 1) == ids[:1]
    store.pause_queue("a")
    finish(store, ids[:1])
    job = store.get_job(ids[0])
    assert job is not None and job.state is JobState.SUCCEEDED
    assert claim(store, ["a"], 1) == []


def test_pause_and_resume_are_idempotent_and_keep_the_limit(store: Store) -> None:
    store.set_queue_limit("a", 3)
    store.pause_queue("a")
    assert store.pause_queue("a") == QueueSettings("a", paused=True, limit=3)
    store.resume_queue("a")
    assert store.resume_queue("a") == QueueSettings("a", paused=False, limit=3)


# -- limits --------------------------------------------------------------------------------


def test_a_limit_caps_the_jobs_leased_at_once(store: Store) -> None:
    # Given 6 due jobs on a, with at most 2 leased at once
    ids = store.enqueue([new("a") for _ in range(6)], T0)
    assert store.set_queue_limit("a", 2) == QueueSettings("a", limit=2)
    # When claims ask for more
    first = claim(store, ["a"], 5)
    # Then the first gets 2 and the next nothing, while those 2 are leased
    assert first == ids[:2]
    assert claim(store, ["a"], 5, owner="w2") == []
    # And when one finishes, there is room for exactly one more
    finish(store, first[:1])
    assert claim(store, ["a"], 5, owner="w2") == ids[2:3]


def test_a_limited_queue_in_a_strict_claim_gives_its_room_then_the_next(store: Store) -> None:
    a = store.enqueue([new("a") for _ in range(4)], T0)
    b = store.enqueue([new("b") for _ in range(4)], T0)
    store.set_queue_limit("a", 1)
    assert claim(store, ["a", "b"], 3) == [a[0], *b[:2]]


def test_a_limit_below_the_number_leased_takes_nothing_until_enough_finish(
    store: Store,
) -> None:
    # Given 4 jobs of a leased, then a limit of 2
    ids = store.enqueue([new("a") for _ in range(6)], T0)
    held = claim(store, ["a"], 4)
    store.set_queue_limit("a", 2)
    # When claims ask for more: nothing, until only 1 is left leased
    assert claim(store, ["a"], 5, owner="w2") == []
    finish(store, held[:2])
    assert claim(store, ["a"], 5, owner="w2") == []
    finish(store, held[2:3])
    assert claim(store, ["a"], 5, owner="w2") == ids[4:5]


def test_leases_taken_while_a_queue_had_no_limit_count_when_one_is_set_again(
    store: Store,
) -> None:
    ids = store.enqueue([new("a") for _ in range(6)], T0)
    store.set_queue_limit("a", 1)
    assert claim(store, ["a"], 3) == ids[:1]
    store.set_queue_limit("a", None)
    assert claim(store, ["a"], 2) == ids[1:3]
    store.set_queue_limit("a", 4)
    assert claim(store, ["a"], 3) == ids[3:4]


def test_a_limit_of_zero_takes_nothing_and_none_removes_the_limit(store: Store) -> None:
    ids = store.enqueue([new("a") for _ in range(3)], T0)
    store.set_queue_limit("a", 0)
    assert claim(store, ["a"], 3) == []
    assert store.set_queue_limit("a", None) == QueueSettings("a")
    assert claim(store, ["a"], 3) == ids


def test_expired_and_released_leases_free_room(store: Store) -> None:
    ids = store.enqueue([new("a") for _ in range(3)], T0)
    store.set_queue_limit("a", 1)
    (first,) = store.claim(["a"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    assert store.release([first.lease], T0) == 1
    (second,) = store.claim(["a"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    assert second.id == ids[0]
    later = T0 + LEASE
    assert store.expire_lease(second.lease, later, later, "LeaseExpired")
    # (the expired job went back due at `later`, behind the two due at T0)
    assert [job.id for job in store.claim(["a"], 3, now=later, owner="w2",
                                          lease_expires_at=later + LEASE)] == [ids[1]]


@pytest.mark.parametrize(
    ("limit", "error"),
    [(-1, ValueError), ("5", TypeError), (True, TypeError), (2.0, TypeError)],
)
def test_a_bad_limit_is_refused_and_changes_nothing(
    store: Store, limit: object, error: type[Exception]
) -> None:
    store.set_queue_limit("a", 3)
    with pytest.raises(error, match="limit"):
        store.set_queue_limit("a", limit)  # type: ignore[arg-type]
    assert [(i.name, i.limit) for i in store.queue_infos(T0)] == [("a", 3)]


@pytest.mark.parametrize("name", ["", "has space", "x" * 201, 7])
def test_a_bad_queue_name_is_refused_by_every_control(store: Store, name: object) -> None:
    for control in (store.pause_queue, store.resume_queue,
                    lambda queue: store.set_queue_limit(queue, 1)):
        with pytest.raises((ValueError, TypeError), match="Queue name"):
            control(name)  # type: ignore[operator]
    assert store.queue_infos(T0) == []


# -- queue_infos -----------------------------------------------------------------------------


def test_queue_infos_count_every_state_and_what_is_due(store: Store) -> None:
    # Given jobs on "mail" in several states, a job due later, and settings on "idle",
    # a Queue with no jobs
    early, due, later, done, held = store.enqueue([
        new("mail", T0 - timedelta(minutes=5)), new("mail", T0),
        new("mail", T0 + timedelta(hours=1)), new("mail"), new("mail"),
    ], T0)
    store.cancel(done, T0)
    store.set_queue_limit("mail", 10)
    taken = store.claim(["mail"], 1, now=T0 - timedelta(minutes=5), owner="w",
                        lease_expires_at=T0 + LEASE)
    assert [job.id for job in taken] == [early]
    store.pause_queue("idle")
    store.set_queue_limit("idle", 4)
    # When the Queues are listed
    infos = store.queue_infos(T0)
    # Then every Queue with jobs or settings appears, sorted, with every state counted
    zero = dict.fromkeys(JobState, 0)
    assert infos == [
        QueueInfo("idle", paused=True, limit=4, counts=zero, due=0, oldest_due_at=None),
        QueueInfo("mail", paused=False, limit=10,
                  counts={**zero, JobState.SCHEDULED: 3, JobState.LEASED: 1,
                          JobState.CANCELLED: 1},
                  due=2, oldest_due_at=T0),
    ]
    assert (due, later, held) == (early + 1, early + 2, early + 4)


def test_queue_infos_of_an_empty_store_is_empty_and_reset_settings_vanish(
    store: Store,
) -> None:
    assert store.queue_infos(T0) == []
    store.pause_queue("a")
    store.set_queue_limit("a", 1)
    store.resume_queue("a")
    store.set_queue_limit("a", None)
    assert store.queue_infos(T0) == []


# -- every claimer, everywhere, at once ---------------------------------------------------


def test_settings_made_by_one_store_bind_the_claims_of_another(
    open_stores: Callable[[int], list[Store]],
) -> None:
    admin, worker = open_stores(2)
    ids = admin.enqueue([new("a") for _ in range(3)], T0)
    claim(worker, ["a"], 1)  # warm: any per-connection state would be built now
    admin.pause_queue("a")
    assert claim(worker, ["a"], 3) == []
    admin.resume_queue("a")
    admin.set_queue_limit("a", 2)
    assert claim(worker, ["a"], 3) == ids[1:2]


def test_concurrent_claimers_never_lease_more_than_the_limit(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given 64 due jobs on a Queue limited to 5, and 8 claimers with their own stores
    stores = open_stores(8)
    ids = stores[0].enqueue([new() for _ in range(64)], T0)
    stores[0].set_queue_limit("q", 5)
    rounds = 4
    barrier = threading.Barrier(len(stores))

    def claimer(index: int) -> Callable[[], list[list[int]]]:
        def run() -> list[list[int]]:
            store, owner = stores[index], f"w{index}"
            taken: list[list[int]] = []
            for _ in range(rounds):
                # When they all claim 3 at once, hold what they got until all have claimed,
                # then finish it
                taken.append(claim(store, ["q"], 3, owner))
                barrier.wait()
                if taken[-1]:
                    finish(store, taken[-1], owner)
                barrier.wait()
            return taken

        return run

    results = run_together([claimer(i) for i in range(len(stores))])
    # Then each round leased exactly the limit in total, every job at most once
    per_round = [[job_id for one in results for job_id in one[r]] for r in range(rounds)]
    assert [len(ids_of_round) for ids_of_round in per_round] == [5] * rounds
    everything = [job_id for ids_of_round in per_round for job_id in ids_of_round]
    assert len(set(everything)) == len(everything) == 20
    assert set(everything) == set(ids[:20])


def test_churning_claimers_never_hold_more_than_the_limit(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given 120 due jobs on a Queue limited to 4, and 6 claimers that claim 2 at a time
    # and finish what they hold, without any barrier between them
    stores = open_stores(6)
    ids = stores[0].enqueue([new() for _ in range(120)], T0)
    stores[0].set_queue_limit("q", 4)
    held = [0]
    most = [0]
    leased_seen: list[int] = []
    counting = threading.Lock()

    def claimer(index: int) -> Callable[[], list[int]]:
        def run() -> list[int]:
            store, owner = stores[index], f"w{index}"
            done: list[int] = []
            idle_rounds = 0
            while idle_rounds < 50 and len(done) < 120:
                got = claim(store, ["q"], 2, owner)
                if not got:
                    idle_rounds += 1
                    if store.queue_infos(T0)[0].due == 0:
                        break
                    continue
                idle_rounds = 0
                # Counted after the claim returned and uncounted before the outcome is
                # written, so `held` never exceeds what the store has leased.
                with counting:
                    held[0] += len(got)
                    most[0] = max(most[0], held[0])
                # While holding them, the store itself never shows more than 4 leased
                (info,) = store.queue_infos(T0)
                leased_seen.append(info.counts[JobState.LEASED])
                with counting:
                    held[0] -= len(got)
                finish(store, got, owner)
                done.extend(got)
            return done

        return run

    done = [job_id for one in run_together([claimer(i) for i in range(6)]) for job_id in one]
    # Then no job ran twice, and at no moment were more than 4 held
    assert len(done) == len(set(done))
    assert most[0] <= 4
    assert leased_seen and max(leased_seen) <= 4
    # And whatever is left is still claimable by one claimer alone
    rest = []
    while got := claim(stores[0], ["q"], 4, "last"):
        rest.extend(got)
        finish(stores[0], got, "last")
    assert sorted(done + rest) == ids


def test_processes_claiming_a_limited_queue_lease_exactly_the_limit(
    durable_store_url: str,
) -> None:
    # Given 40 due jobs on a Queue limited to 7, and 4 processes with their own stores
    store = open_store(durable_store_url)
    try:
        store.enqueue([new() for _ in range(40)], T0)
        store.set_queue_limit("q", 7)
        start = SPAWN.Barrier(4)
        results = SPAWN.Queue()
        processes = [
            SPAWN.Process(target=sqlite_processes.claim_until_empty,
                          args=(durable_store_url, f"p{i}", start, results))
            for i in range(4)
        ]
        # When each claims 5 at a time until it gets nothing
        for process in processes:
            process.start()
        taken = [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
            assert process.exitcode == 0
        # Then 7 were leased in all, none twice
        ids = [job_id for _, claimed in taken for job_id in claimed]
        assert len(ids) == len(set(ids)) == 7
        assert store.count_jobs() == {("q", JobState.LEASED): 7, ("q", JobState.SCHEDULED): 33}
    finally:
        store.close()


def test_each_setting_changes_only_itself_and_keeps_the_others(store: Store) -> None:
    from rota.core.rates import parse_rate

    # Given a Queue paused, limited and rated, one setting after the other
    rate = parse_rate("5/1m")
    assert store.pause_queue("q") == QueueSettings("q", paused=True, limit=None)
    assert store.set_queue_limit("q", 3) == QueueSettings("q", paused=True, limit=3)
    store.set_queue_rate("q", rate)

    def settings() -> tuple[bool, int | None, object]:
        # (A Queue with no jobs and every setting at its default may not be listed.)
        infos = [(i.paused, i.limit, i.rate) for i in store.queue_infos(T0) if i.name == "q"]
        return infos[0] if infos else (False, None, None)

    assert settings() == (True, 3, rate)
    # When each is changed again, alone
    assert store.resume_queue("q") == QueueSettings("q", paused=False, limit=3)
    assert settings() == (False, 3, rate)
    assert store.set_queue_limit("q", None) == QueueSettings("q", paused=False, limit=None)
    assert settings() == (False, None, rate)
    store.set_queue_rate("q", None)
    # Then the others were kept each time
    assert settings() == (False, None, None)
    # And a setting of a new Queue starts from the defaults for the others
    store.set_queue_rate("r", rate)
    assert [(i.paused, i.limit) for i in store.queue_infos(T0) if i.name == "r"] == [
        (False, None)]


def test_the_queue_settings_are_written_by_one_upsert_per_dialect() -> None:
    from importlib.resources import files

    for dialect in ("sqlite", "postgres"):
        names = {entry.name for entry in files("rota.store").joinpath("sql", dialect).iterdir()}
        assert "set_queue_settings.sql" in names, dialect
        assert not names & {"set_queue_paused.sql", "set_queue_limit.sql",
                            "set_queue_rate.sql"}, dialect
