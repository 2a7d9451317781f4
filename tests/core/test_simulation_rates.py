"""The simulator's virtual time and rate limits: a rated Queue is claimed within its
bucket over the simulated time, and its turns go to the others (work-conserving)."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rota.core.policy import Strict, Weighted
from rota.core.rates import QueueRate
from rota.core.simulation import simulate

SECOND = timedelta(seconds=1)


def rate(jobs: int, seconds: int, burst: int | None = None) -> QueueRate:
    return QueueRate(jobs, timedelta(seconds=seconds), jobs if burst is None else burst)


def test_a_rated_queue_gets_its_burst_then_its_rate_and_the_other_takes_its_turns() -> None:
    # Given a=1, b=1 over a pool of 2, a rated 1 per 4 s (burst 1), a pass every second
    result = simulate(Weighted([("a", 1), ("b", 1)]), 2, 12, rates={"a": rate(1, 4)})
    # Then the passes run a second apart, a is claimed at 0 s, 4 s and 8 s only, and b
    # fills every slot a could not take
    assert [one.at for one in result.passes] == [SECOND * i for i in range(12)]
    assert [i for i, one in enumerate(result.passes) if "a" in one.order] == [0, 4, 8]
    assert all(len(one.order) == 2 for one in result.passes)
    assert result.served() == {"a": 3, "b": 21}
    # And a is out of tokens in every other pass
    assert result.starved_at("a") == [SECOND * i for i in range(12) if i % 4]
    assert result.rates == {"a": rate(1, 4)}


def test_an_idle_group_waits_for_the_next_token() -> None:
    # Given a alone, rated 2 per 10 s, with 5 jobs, passes 3 s apart while they dispatch
    result = simulate(Strict("a"), 10, 8, {"a": 5}, rates={"a": rate(2, 10)},
                      pass_every=3 * SECOND)
    # Then the first pass takes the burst, the next (at 3 s) finds no token, so the idle
    # group's next pass is when one comes (5 s), and so on until a is drained; then time
    # stands still (nothing waits for a token)
    assert [(one.at.total_seconds(), len(one.order)) for one in result.passes] == [
        (0, 2), (3, 0), (5, 1), (8, 0), (10, 1), (13, 0), (15, 1), (18, 0)]
    assert result.served() == {"a": 5}


def test_without_rates_time_changes_nothing() -> None:
    policy = Weighted([("a", 6), ("b", 3), ("c", 1)])
    plain = simulate(policy, 7, 8, {"a": 20, "b": 9, "c": 0}, limits={"a": 3})
    slow = simulate(policy, 7, 8, {"a": 20, "b": 9, "c": 0}, limits={"a": 3},
                    pass_every=timedelta(hours=1))
    assert [(one.round_trips, one.order) for one in plain.passes] == [
        (one.round_trips, one.order) for one in slow.passes]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 5))
    names = [f"q{i}" for i in range(count)]
    weights = draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
    policy = (Strict(names) if draw(st.booleans())
              else Weighted(list(zip(names, weights, strict=True))))
    rated = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    return {
        "policy": policy,
        "pool": draw(st.integers(1, 12)),
        "passes": draw(st.integers(1, 40)),
        "backlog": {name: count for name, count in zip(
            names, draw(st.lists(st.one_of(st.none(), st.integers(0, 40)),
                                 min_size=count, max_size=count)), strict=True)
            if count is not None},
        "paused": draw(st.lists(st.sampled_from(names), max_size=1, unique=True)),
        "limits": dict(draw(st.lists(st.tuples(st.sampled_from(names), st.integers(0, 4)),
                                     max_size=2, unique_by=lambda pair: pair[0]))),
        "rates": {name: draw(st.builds(
            lambda jobs, seconds, extra: rate(jobs, seconds, jobs + extra),
            st.integers(1, 5), st.integers(1, 30), st.integers(0, 5))) for name in rated},
        "pass_every": timedelta(milliseconds=draw(st.sampled_from([0, 250, 1000, 7000]))),
    }


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_rated_queues_stay_within_their_buckets_and_the_others_take_their_turns(
    scenario: dict[str, Any],
) -> None:
    result = simulate(scenario["policy"], scenario["pool"], scenario["passes"],
                      scenario["backlog"], paused=scenario["paused"],
                      limits=scenario["limits"], rates=scenario["rates"],
                      pass_every=scenario["pass_every"])
    # Then over every span [t0, t1] of pass times, a rated Queue was claimed at most
    # burst + jobs * (t1 - t0) / per times (exact, in microseconds)
    us = timedelta(microseconds=1)
    for queue, limit in scenario["rates"].items():
        claims = [(one.at // us, one.order.count(queue)) for one in result.passes]
        for start, _ in claims:
            for end, _ in claims:
                if end >= start:
                    count = sum(n for at, n in claims if start <= at <= end)
                    assert count * (limit.per // us) <= (
                        limit.burst * (limit.per // us) + limit.jobs * (end - start))
    # And time never runs backwards
    assert all(a.at <= b.at for a, b in itertools.pairwise(result.passes))
    # And a pass leaves a slot free only when no Queue could fill it: each Queue with
    # due jobs left is paused, at its limit in the pass, or out of tokens in it
    left = dict(scenario["backlog"])
    for one in result.passes:
        got = Counter(one.order)
        for queue in left:
            left[queue] -= got[queue]
        if len(one.order) == scenario["pool"]:
            continue
        for queue in scenario["policy"].queues:
            if left.get(queue, 1) == 0:
                continue
            limit = scenario["limits"].get(queue)
            assert (queue in scenario["paused"]
                    or (limit is not None and got[queue] >= limit)
                    or queue in one.starved), (queue, one)
