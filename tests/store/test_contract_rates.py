"""The store contract for Queue rate limits (set_queue_rate, the token bucket taken from
inside the claim), run unchanged against every store. Time is virtual: every claim gives
its own `now`, so the bound is checked exactly; concurrent claimers are threads on every
store and processes on the durable ones.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.rates import QueueRate
from rota.store import Store, open_store
from rota.store.base import Claimed
from tests.store import sqlite_processes
from tests.store.test_contract_concurrency import run_together

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
assert T0 == sqlite_processes.T0
LEASE = timedelta(seconds=60)
SPAWN = multiprocessing.get_context("spawn")
SECOND = timedelta(seconds=1)


def new(queue: str = "q") -> NewJob:
    return NewJob(name="job", queue=queue, due_at=T0)


def claim(store: Store, queues: list[str], limit: int, at: datetime = T0, owner: str = "w1",
          **extra: object) -> Claimed:
    claimed = store.claim(queues, limit, now=at, owner=owner, lease_expires_at=at + LEASE,
                          **extra)  # type: ignore[arg-type]
    assert isinstance(claimed, Claimed)
    return claimed


def rate(jobs: int, seconds: float, burst: int | None = None) -> QueueRate:
    return QueueRate(jobs, timedelta(seconds=seconds), jobs if burst is None else burst)


def assert_within_rate(claims: list[tuple[int, int]], limit: QueueRate) -> None:
    """Over every window [t0, t1] of claim times (microseconds), the jobs claimed at times
    inside it are at most burst + jobs * (t1 - t0) / per, in exact integers."""
    times = sorted({offset for offset, _ in claims})
    per = limit.per // timedelta(microseconds=1)
    for start in times:
        for end in times[times.index(start):]:
            count = sum(got for offset, got in claims if start <= offset <= end)
            assert count * per <= limit.burst * per + limit.jobs * (end - start), (
                f"{count} jobs claimed between +{start} us and +{end} us")


def test_a_new_rate_starts_full_and_each_job_takes_a_token(store: Store) -> None:
    # Given 20 due jobs on a Queue rated 4 per 10 s with a burst of 6
    store.enqueue([new() for _ in range(20)], T0)
    assert store.set_queue_rate("q", rate(4, 10, 6)) == rate(4, 10, 6)
    # When claims ask for more than the bucket holds
    first = claim(store, ["q"], 10)
    # Then the full bucket gives its burst, and the Queue is controlled, its next token due
    # when one refills (2.5 s)
    assert len(first) == 6
    assert "q" in first.controlled
    assert first.next_token_at == T0 + timedelta(seconds=2.5)
    # And nothing more comes before that instant, one token at it
    assert claim(store, ["q"], 10, T0 + timedelta(seconds=2.4)) == []
    assert len(claim(store, ["q"], 10, T0 + timedelta(seconds=2.5))) == 1
    # And after a quiet spell the bucket holds no more than its burst
    assert len(claim(store, ["q"], 10, T0 + timedelta(hours=1))) == 6


def test_an_out_of_tokens_queue_is_controlled_and_strict_goes_on(store: Store) -> None:
    # Given due jobs on a (rated 2 per minute) and b
    store.enqueue([new("a") for _ in range(5)], T0)
    b = store.enqueue([new("b") for _ in range(5)], T0)
    store.set_queue_rate("a", rate(2, 60))
    assert len(claim(store, ["a"], 2)) == 2
    # When a Strict claim asks a then b
    claimed = claim(store, ["a", "b"], 3, probe=["a", "b"])
    # Then a gives nothing, b fills the claim, a is named controlled, still has due work
    # (a probe counts it), and its next token comes in 30 s
    assert [job.id for job in claimed] == b[:3]
    assert "a" in claimed.controlled
    assert "a" in claimed.due
    assert claimed.next_token_at == T0 + timedelta(seconds=30)


def test_the_rate_combines_with_the_concurrency_limit(store: Store) -> None:
    # Given a Queue limited to 2 leased at once and rated 5 per minute
    store.enqueue([new() for _ in range(10)], T0)
    store.set_queue_limit("q", 2)
    store.set_queue_rate("q", rate(5, 60))
    # When a claim asks 4: the limit binds, and only the 2 taken cost tokens
    first = claim(store, ["q"], 4)
    assert len(first) == 2
    assert store.complete([job.lease for job in first], T0) == 2
    # Then 3 tokens are left: the limit binds first (2), then the bucket (1)
    second = claim(store, ["q"], 4)
    assert len(second) == 2
    store.complete([job.lease for job in second], T0)
    assert len(claim(store, ["q"], 4)) == 1


def test_batched_claims_take_within_each_queues_tokens(store: Store) -> None:
    # Given three rated tenant Queues and one without a rate
    for queue in ("t1", "t2", "t3", "free"):
        store.enqueue([new(queue) for _ in range(4)], T0)
    store.set_queue_rate("t1", rate(1, 60))
    store.set_queue_rate("t2", rate(2, 60))
    store.set_queue_rate("t3", rate(1, 60))
    # When a planner's rounds ask one job of each, twice, then two of each
    ones = claim(store, ["t1", "t2", "t3", "free"], 4, limits=[1, 1, 1, 1])
    again = claim(store, ["t1", "t2", "t3", "free"], 4, limits=[1, 1, 1, 1])
    twos = claim(store, ["t1", "t2", "t3", "free"], 8, limits=[2, 2, 2, 2])
    # Then each Queue gave no more than its tokens, the free one all it was asked
    queues = [sorted(job.queue for job in answer) for answer in (ones, again, twos)]
    assert queues == [["free", "t1", "t2", "t3"], ["free", "t2"], ["free", "free"]]
    assert {"t1", "t3"} <= again.controlled
    assert twos.next_token_at == T0 + timedelta(seconds=30)


def test_none_removes_the_rate_and_queue_infos_show_the_burst_in_force(store: Store) -> None:
    # Given a rate set without a burst on a Queue with no jobs, and one with a burst
    assert store.set_queue_rate("empty", rate(10, 60)) == rate(10, 60, 10)
    store.set_queue_rate("q", rate(3, 1, 9))
    store.enqueue([new() for _ in range(12)], T0)
    # Then queue_infos list both with their rate, the burst in force
    infos = {info.name: info for info in store.queue_infos(T0)}
    assert infos["empty"].rate == rate(10, 60, 10)
    assert infos["q"].rate == rate(3, 1, 9)
    assert len(claim(store, ["q"], 12)) == 9
    # When the rates are removed
    assert store.set_queue_rate("q", None) is None
    assert store.set_queue_rate("empty", None) is None
    # Then q is claimed without tokens, and a Queue with nothing else vanishes
    assert len(claim(store, ["q"], 12)) == 3
    assert [info.name for info in store.queue_infos(T0)] == ["q"]
    assert store.queue_infos(T0)[0].rate is None


def test_setting_a_rate_again_refills_the_bucket(store: Store) -> None:
    store.enqueue([new() for _ in range(10)], T0)
    store.set_queue_rate("q", rate(2, 60))
    assert len(claim(store, ["q"], 5)) == 2
    store.set_queue_rate("q", rate(3, 60))
    assert len(claim(store, ["q"], 5)) == 3


@pytest.mark.parametrize(("bad", "error", "words"), [
    (QueueRate(0, SECOND, 1), ValueError, "jobs must be a whole number from 1"),
    (QueueRate(1, timedelta(0), 1), ValueError, "must be positive"),
    (QueueRate(1, SECOND, 0), ValueError, "burst must be a whole number from 1"),
    (QueueRate(2**31, SECOND, 1), ValueError, "from 1 to 2147483647"),
    ((10, 60), TypeError, "must be a rota.QueueRate or None"),
])
def test_a_bad_rate_is_refused_and_changes_nothing(
    store: Store, bad: object, error: type[Exception], words: str,
) -> None:
    store.enqueue([new() for _ in range(3)], T0)
    with pytest.raises(error, match=words):
        store.set_queue_rate("q", bad)  # type: ignore[arg-type]
    assert store.queue_infos(T0)[0].rate is None
    assert len(claim(store, ["q"], 3)) == 3


def test_a_rate_set_by_one_store_binds_the_claims_of_another(
    open_stores: Callable[[int], list[Store]],
) -> None:
    admin, worker = open_stores(2)
    admin.enqueue([new() for _ in range(5)], T0)
    admin.set_queue_rate("q", rate(1, 60))
    assert len(claim(worker, ["q"], 5)) == 1
    assert claim(admin, ["q"], 5) == []


def test_concurrent_claimers_never_exceed_burst_plus_rate_over_any_window(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given plenty of due jobs on a Queue rated 5 per 10 s with a burst of 8, and 6
    # claimers with their own stores, each at its own virtual times (which interleave and
    # need not be in order across claimers)
    stores = open_stores(6)
    stores[0].enqueue([new() for _ in range(400)], T0)
    limit = rate(5, 10, 8)
    stores[0].set_queue_rate("q", limit)
    barrier = threading.Barrier(len(stores))

    def claimer(index: int) -> Callable[[], list[tuple[int, int]]]:
        def run() -> list[tuple[int, int]]:
            store, owner = stores[index], f"w{index}"
            got: list[tuple[int, int]] = []
            barrier.wait()
            for step in range(30):
                # When each claims 3 at once, every 0.7 s of its own time, and finishes them
                offset = step * 700_000 + index * 130_000
                at = T0 + timedelta(microseconds=offset)
                jobs = claim(store, ["q"], 3, at, owner)
                if jobs:
                    store.complete([job.lease for job in jobs], at)
                got.append((offset, len(jobs)))
            return got

        return run

    claims = [one for result in run_together([claimer(i) for i in range(6)])
              for one in result]
    # Then no window got more than burst + rate * T, and the rate was used, not starved
    assert_within_rate(claims, limit)
    assert sum(got for _, got in claims) >= limit.burst + 5


def test_processes_claiming_a_rated_queue_stay_within_the_rate(
    durable_store_url: str,
) -> None:
    # Given plenty of due jobs on a Queue rated 4 per 5 s with a burst of 6, and 4
    # processes with their own stores, each claiming at its own virtual times
    limit = rate(4, 5, 6)
    store = open_store(durable_store_url)
    try:
        store.enqueue([new() for _ in range(300)], T0)
        store.set_queue_rate("q", limit)
        start = SPAWN.Barrier(4)
        results = SPAWN.Queue()
        processes = [
            SPAWN.Process(target=sqlite_processes.claim_at_times, args=(
                durable_store_url, f"p{i}",
                [step * 450_000 + i * 110_000 for step in range(25)], start, results))
            for i in range(4)
        ]
        for process in processes:
            process.start()
        taken = [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
            assert process.exitcode == 0
        # Then over every window the claims stayed within burst + rate * T, and the store
        # counts what they took as succeeded
        claims = [one for _, got in taken for one in got]
        assert_within_rate(claims, limit)
        total = sum(got for _, got in claims)
        assert total >= limit.burst
        assert store.count_jobs()[("q", JobState.SUCCEEDED)] == total
    finally:
        store.close()


def test_queue_infos_carry_each_buckets_tokens_and_next_token_at_now(store: Store) -> None:
    # Given a Queue rated 4 per 10 s with a burst of 6, a rated Queue never taken from,
    # and a Queue without a rate
    store.enqueue([new() for _ in range(10)] + [new("free")], T0)
    store.set_queue_rate("q", rate(4, 10, 6))
    store.set_queue_rate("idle", rate(1, 60))

    def bucket(at: datetime) -> dict[str, tuple[int | None, datetime | None]]:
        return {info.name: (info.tokens, info.next_token_at) for info in store.queue_infos(at)}

    # Then a full bucket holds its burst, a token now; a Queue without a rate has none
    assert bucket(T0) == {"q": (6, T0), "idle": (1, T0), "free": (None, None)}
    # When a claim takes 5 of q's 6 tokens, then the last one
    assert len(claim(store, ["q"], 5)) == 5
    assert bucket(T0)["q"] == (1, T0)
    assert len(claim(store, ["q"], 5)) == 1
    # Then q's bucket is empty at T0, its next token due in 2.5 s; the reads take nothing
    assert bucket(T0)["q"] == (0, T0 + timedelta(seconds=2.5))
    assert bucket(T0 + timedelta(seconds=2.4))["q"] == (0, T0 + timedelta(seconds=2.5))
    assert bucket(T0 + timedelta(seconds=5))["q"] == (2, T0 + timedelta(seconds=5))
    assert bucket(T0 + timedelta(hours=1))["q"] == (6, T0 + timedelta(hours=1))
    assert len(claim(store, ["q"], 5, T0 + timedelta(seconds=5))) == 2
