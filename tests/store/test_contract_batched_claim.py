"""The store contract for batched claims (thousands of tenant Queues): per-Queue
limits in one claim, and the probe that tells which Queues have due work. Run unchanged
against every store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.store import Store
from rota.store.base import Claimed

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def new(queue: str, due_at: datetime = T0) -> NewJob:
    return NewJob(name="job", queue=queue, due_at=due_at)


def fill(store: Store, counts: dict[str, int]) -> None:
    store.enqueue([new(queue) for queue, count in counts.items() for _ in range(count)], T0)


def claim(
    store: Store, queues: list[str], limit: int, limits: list[int] | None = None,
    probe: list[str] | None = None,
) -> Claimed:
    result = store.claim(queues, limit, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                         limits=limits, probe=probe or ())
    assert isinstance(result, Claimed)
    return result


def test_per_queue_limits_take_that_many_from_each_queue_in_order(store: Store) -> None:
    # Given three Queues with 5 due jobs each
    fill(store, {"a": 5, "b": 5, "c": 5})
    # When one claim asks 3 of a, 1 of b and 2 of c
    jobs = claim(store, ["a", "b", "c"], 6, [3, 1, 2])
    # Then it leased exactly that, Queue after Queue, each in due order
    assert [job.queue for job in jobs] == ["a", "a", "a", "b", "c", "c"]
    assert all(job.state is JobState.LEASED for job in jobs)
    assert [job.id for job in jobs if job.queue == "a"] == sorted(
        job.id for job in jobs if job.queue == "a")


def test_per_queue_limits_are_capped_by_the_total_limit_and_by_the_due_jobs(
    store: Store,
) -> None:
    # Given a with 1 due job and b, c with 5
    fill(store, {"a": 1, "b": 5, "c": 5})
    # When a claim asks 4 of each, but 6 in all
    jobs = claim(store, ["a", "b", "c"], 6, [4, 4, 4])
    # Then a gives its one job, b its 4, and c the 1 left of the total
    assert [job.queue for job in jobs] == ["a", "b", "b", "b", "b", "c"]


@pytest.mark.parametrize("shorts", [0, 1, 3])
def test_the_last_queue_asked_for_the_whole_total_takes_what_the_others_leave(
    store: Store, shorts: int
) -> None:
    # Given three Queues asked 2 each (of which `shorts` jobs are missing), then a
    # backlogged Queue asked for all of the claim's 7
    fill(store, {"a": 2 - min(shorts, 2), "b": 2 - max(0, shorts - 2), "c": 2, "d": 20})
    # When one claim asks 2, 2, 2 and 7, for 7 in all
    jobs = claim(store, ["a", "b", "c", "d"], 7, [2, 2, 2, 7])
    # Then d gives its share and the slots the others left, and no more than the total
    assert len(jobs) == 7
    assert [job.queue for job in jobs].count("d") == 1 + shorts
    assert [job.queue for job in jobs] == sorted(job.queue for job in jobs)


def test_a_zero_per_queue_limit_takes_nothing_from_that_queue(store: Store) -> None:
    fill(store, {"a": 2, "b": 2})
    assert [job.queue for job in claim(store, ["a", "b"], 4, [0, 2])] == ["b", "b"]


def test_per_queue_limits_obey_queue_controls(store: Store) -> None:
    # Given a paused, b limited to 1 leased job, c free; 3 due jobs each
    fill(store, {"a": 3, "b": 3, "c": 3})
    store.pause_queue("a")
    store.set_queue_limit("b", 1)
    # When one claim asks 3 of each
    jobs = claim(store, ["a", "b", "c"], 9, [3, 3, 3])
    # Then a gave nothing, b its room of 1, c its 3
    assert [job.queue for job in jobs] == ["b", "c", "c", "c"]


def test_one_job_from_each_of_many_queues_is_each_queues_first_due_job(store: Store) -> None:
    # Given tenants with jobs due at different times, one of them not due yet, one empty
    ids = store.enqueue([
        new("t1", T0 - timedelta(minutes=1)), new("t1", T0 - timedelta(minutes=2)),
        new("t2"), new("t2"), new("t3", T0 + timedelta(minutes=1)), new("t5"), new("t5"),
    ], T0)
    # When a claim asks one job of each (a pass over tenants)
    jobs = claim(store, ["t1", "t2", "t3", "t4", "t5"], 5, [1, 1, 1, 1, 1])
    # Then each Queue with due work gave its first due job (ties: enqueue order), Queue
    # after Queue; the one not due and the empty one gave nothing
    assert [(job.queue, job.id) for job in jobs] == [("t1", ids[1]), ("t2", ids[2]),
                                                     ("t5", ids[5])]
    assert all(job.state is JobState.LEASED and job.attempt == 1 for job in jobs)


def test_one_job_from_each_queue_obeys_queue_controls(store: Store) -> None:
    # Given a paused, b limited to 1 with 1 leased, c limited to 2 with 1 leased, d free
    fill(store, {"a": 3, "b": 3, "c": 3, "d": 3})
    claim(store, ["b", "c"], 2, [1, 1])
    store.pause_queue("a")
    store.set_queue_limit("b", 1)
    store.set_queue_limit("c", 2)
    # When a claim asks one job of each
    jobs = claim(store, ["a", "b", "c", "d"], 4, [1, 1, 1, 1])
    # Then a (paused) and b (full) gave nothing and are named; c and d gave one each
    assert [job.queue for job in jobs] == ["c", "d"]
    assert {"a", "b"} <= jobs.controlled and "d" not in jobs.controlled


def test_bad_per_queue_limits_are_refused_before_anything_is_leased(store: Store) -> None:
    fill(store, {"a": 2, "b": 2})
    with pytest.raises(ValueError, match="one count per Queue"):
        claim(store, ["a", "b"], 2, [1])
    with pytest.raises(ValueError, match="each Queue once"):
        claim(store, ["a", "a"], 2, [1, 1])
    with pytest.raises(ValueError, match=">= 0"):
        claim(store, ["a", "b"], 2, [1, -1])
    assert store.count_jobs() == {("a", JobState.SCHEDULED): 2, ("b", JobState.SCHEDULED): 2}


def test_a_probe_names_the_queues_with_due_work_left(store: Store) -> None:
    # Given a with 2 due jobs, b with 1 job due later, c paused with due work, d unknown
    fill(store, {"a": 2, "c": 1})
    store.enqueue([new("b", T0 + timedelta(minutes=5))], T0)
    store.pause_queue("c")
    # When a probe alone asks about all four
    probed = claim(store, [], 0, probe=["a", "b", "c", "d"])
    # Then only a has due work, and nothing was leased
    assert probed == [] and probed.due == {"a"}
    assert store.count_jobs()[("a", JobState.SCHEDULED)] == 2


@pytest.mark.parametrize("others", [0, 400], ids=["few-busy", "more-busy-than-probed"])
def test_a_probe_of_many_queues_names_those_with_due_work(store: Store, others: int) -> None:
    # Given 300 tenant Queues: t000-t009 with due work, t010-t019 with work due later,
    # t020-t029 paused with due work, the rest empty; and `others` Queues not probed
    # with due work, whose names sort before, between and after the tenants'
    tenants = [f"t{i:03d}" for i in range(300)]
    fill(store, {**{name: 1 for name in tenants[:10] + tenants[20:30]},
                 **{f"{prefix}{i:03d}": 1 for i in range(others // 4)
                    for prefix in ("a", "t0", "t9", "z")}})
    store.enqueue([new(name, T0 + timedelta(minutes=5)) for name in tenants[10:20]], T0)
    for name in tenants[20:30]:
        store.pause_queue(name)
    # When a probe alone asks about the 300 tenants
    probed = claim(store, [], 0, probe=tenants)
    # Then only the ten with due work that are not paused are named
    assert probed == [] and probed.due == set(tenants[:10])


def test_a_probe_with_a_claim_answers_after_the_claim(store: Store) -> None:
    # Given a with 2 due jobs and b with 3
    fill(store, {"a": 2, "b": 3})
    # When a claim takes a's 2 and 1 of b, and probes both
    jobs = claim(store, ["a", "b"], 3, [2, 1], probe=["a", "b"])
    # Then the probe sees a emptied by the claim, and b still with due work
    assert len(jobs) == 3 and jobs.due == {"b"}


def test_a_probe_with_a_claim_over_a_limited_queue_answers_after_the_claim(
    store: Store,
) -> None:
    # Given a with a limit of 0 and 2 due jobs, and b with 1 due job
    fill(store, {"a": 2, "b": 1})
    store.set_queue_limit("a", 0)
    # When a claim asks one of each and probes both
    jobs = claim(store, ["a", "b"], 2, [1, 1], probe=["a", "b"])
    # Then it took b's only job, and the probe sees b emptied by the claim (a, at its
    # limit, still has due work)
    assert [job.queue for job in jobs] == ["b"] and jobs.due == {"a"}


def test_a_claim_without_a_probe_answers_no_due_queues(store: Store) -> None:
    fill(store, {"a": 2})
    assert claim(store, ["a"], 1).due == frozenset()


def test_a_claim_names_the_paused_or_limited_queues_it_came_back_short_of(
    store: Store,
) -> None:
    # Given a paused, b limited to 1, c with no settings; 3 due jobs each
    fill(store, {"a": 3, "b": 3, "c": 3})
    store.pause_queue("a")
    store.set_queue_limit("b", 1)
    # When one claim asks 3 of each
    jobs = claim(store, ["a", "b", "c"], 9, [3, 3, 3])
    # Then a and b, short because of their controls, are named; c is not
    assert {"a", "b"} <= jobs.controlled and "c" not in jobs.controlled
