"""`rota simulate` shows exactly what a Worker Group does: the same round trips (claims
with their per-Queue counts, probes and their answers) and the same dispatch order as
`run_until_idle()` on a real store, for any policy, pool, backlog and Queue controls; and
with rate limits, on a VirtualClock, the same as a group whose jobs each take the
simulator's `pass_every` and which, idle, sleeps until its next token."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rota
from rota.core.jobs import JobRecord
from rota.core.simulation import SimulatedClaim, SimulatedRoundTrip, simulate
from rota.store import open_store
from rota.store.base import Claimed, Store
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url

Trip = tuple[tuple[SimulatedClaim, ...], tuple[str, ...], tuple[str, ...]]


class TripRecorder:
    """Delegates to a real store; records each `claim` call as the simulator shows a round
    trip: its claims (one per Queue of a batched call, else one over its Queues), with
    the jobs each got, the Queues it probed and those of them it said are due."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.trips: list[Trip] = []
        self.claimed_at: datetime | None = None  # the `now` of the last claim

    def claim(self, queues: Sequence[str], limit: int, *, limits: Sequence[int] | None = None,
              probe: Sequence[str] = (), **rest: Any) -> list[JobRecord]:
        self.claimed_at = rest["now"]
        answer = self.inner.claim(queues, limit, limits=limits, probe=probe, **rest)
        assert isinstance(answer, Claimed)
        got = [job.queue for job in answer]
        asked = (list(zip(((queue,) for queue in queues), limits, strict=True))
                 if limits is not None else [(tuple(queues), limit)] if limit else [])
        claims = tuple(SimulatedClaim(names, count, sum(got.count(q) for q in names))
                       for names, count in asked)
        self.trips.append((claims, tuple(probe), tuple(q for q in probe if q in answer.due)))
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def as_tuple(trip: SimulatedRoundTrip) -> Trip:
    return (trip.claims, trip.probe, trip.due)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 6))
    names = [f"q{i}" for i in range(count)]
    strict = draw(st.booleans())
    weights = draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
    policy = rota.Strict(names) if strict else rota.Weighted(list(zip(names, weights,
                                                                      strict=True)))
    return {
        "policy": policy,
        "pool": draw(st.integers(1, 12)),
        "backlog": dict(zip(names, draw(st.lists(st.integers(0, 30), min_size=count,
                                                  max_size=count)), strict=True)),
        "paused": draw(st.lists(st.sampled_from(names), max_size=1, unique=True)),
        "limits": dict(draw(st.lists(st.tuples(st.sampled_from(names), st.integers(0, 3)),
                                     max_size=2, unique_by=lambda pair: pair[0]))),
    }


@st.composite
def rated_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario with one or two rated Queues, and the virtual time a pass with jobs
    takes."""
    scenario = draw(scenarios())
    names = list(scenario["policy"].queues)
    rated = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    scenario["rates"] = {name: rota.QueueRate(jobs, timedelta(seconds=seconds), jobs + extra)
                         for name in rated
                         for jobs, seconds, extra in [draw(st.tuples(
                             st.integers(1, 4), st.integers(1, 20), st.integers(0, 4)))]}
    scenario["pass_every"] = timedelta(seconds=draw(st.sampled_from([0, 1, 7])))
    return scenario


_counter = itertools.count()
START = datetime(2026, 1, 1, tzinfo=UTC)
# The simulator re-probes no Queue for the poll interval: the run's is longer than any
# scenario's virtual time.
NO_RECHECK = timedelta(days=30)


def run(scenario: dict[str, Any], url: str) -> tuple[list[Trip], list[str]]:
    """The scenario under run_until_idle() on a fresh store at `url`. With rates, each
    pass's jobs take `pass_every` of virtual time (the first one run moves the clock on),
    and when the group is idle the clock moves on to the first token of a rated Queue
    that has due jobs and could be claimed, and the group runs again."""
    clock = rota.VirtualClock(START)
    store = TripRecorder(open_store(url))
    app = rota.App(store, clock=clock)  # type: ignore[arg-type]
    order: list[str] = []
    rates: dict[str, rota.QueueRate] = scenario.get("rates", {})
    step: timedelta = scenario.get("pass_every", timedelta(0))

    def work(queue: str) -> None:
        order.append(queue)
        if clock.now() == store.claimed_at:  # the pass's first job
            clock.advance(step)

    try:
        job = app.job("work")(work)
        for queue, jobs in scenario["backlog"].items():
            job.configure(queue=queue).enqueue_many([(queue,)] * jobs)
        for queue in scenario["paused"]:
            app.pause_queue(queue)
        for queue, limit in scenario["limits"].items():
            app.set_queue_limit(queue, limit)
        for queue, rate in rates.items():
            app.set_queue_rate(queue, rate.jobs, per=rate.per, burst=rate.burst)
        app.add_worker_group(rota.WorkerGroupOptions(
            name="g", policy=scenario["policy"], pool_size=scenario["pool"],
            poll_interval=NO_RECHECK if rates else 1))
        app.run_until_idle()
        for _ in range(1_000):
            if not rates:
                break
            waits = [info.next_token_at for info in app.queues()
                     if info.rate is not None and info.tokens == 0 and info.due
                     and not info.paused and info.limit != 0]
            if not waits:
                break
            clock.set(min(w for w in waits if w is not None))
            app.run_until_idle()
        else:
            raise AssertionError("the rated Queues never drained")
    finally:
        app.close()
    return store.trips, order


def assert_simulation_is_the_run(scenario: dict[str, Any], url: str) -> None:
    # Given a scenario run under run_until_idle() on a real store
    trips, order = run(scenario, url)
    # When the simulator runs it for more passes than the drive took
    simulated = simulate(scenario["policy"], scenario["pool"], len(trips) + 2,
                         scenario["backlog"], paused=scenario["paused"],
                         limits=scenario["limits"], rates=scenario.get("rates"),
                         pass_every=scenario.get("pass_every", timedelta(0)), start=START)
    simulated_trips = [as_tuple(trip) for one in simulated.passes for trip in one.round_trips]
    # Then it shows the very round trips the store received, in order, and after them only
    # round trips that claim nothing; and the same dispatch order
    assert simulated_trips[:len(trips)] == trips
    assert all(claim.got == 0 for claims, _, _ in simulated_trips[len(trips):]
               for claim in claims)
    assert [queue for one in simulated.passes for queue in one.order] == order


# The preview that showed a claim of b after b's own probe said it was drained.
ISSUE_EXAMPLE = {"policy": rota.Weighted([("a", 6), ("b", 3), ("c", 1)]), "pool": 7,
                 "backlog": {"a": 20, "b": 9, "c": 0}, "paused": [], "limits": {}}


@settings(max_examples=60, deadline=None)
@given(scenarios())
@example(ISSUE_EXAMPLE)
def test_the_simulation_is_the_run_on_the_memory_store(scenario: dict[str, Any]) -> None:
    assert_simulation_is_the_run(scenario, "memory://")


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
@example(scenario=ISSUE_EXAMPLE)
def test_the_simulation_is_the_run_on_sqlite(scenario: dict[str, Any], tmp_path: Path) -> None:
    assert_simulation_is_the_run(scenario, f"sqlite:///{tmp_path / f'{next(_counter)}.db'}")


@pytest.mark.postgres
@settings(max_examples=8, deadline=None)
@given(scenario=scenarios())
@example(scenario=ISSUE_EXAMPLE)
def test_the_simulation_is_the_run_on_postgres(scenario: dict[str, Any]) -> None:
    for url in fresh_postgres_url(POSTGRES_URL, "simulate_is_the_run"):
        assert_simulation_is_the_run(scenario, url)


@settings(max_examples=40, deadline=None)
@given(rated_scenarios())
def test_the_simulation_of_rated_queues_is_the_run_on_the_memory_store(
    scenario: dict[str, Any],
) -> None:
    assert_simulation_is_the_run(scenario, "memory://")


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=rated_scenarios())
def test_the_simulation_of_rated_queues_is_the_run_on_sqlite(
    scenario: dict[str, Any], tmp_path: Path,
) -> None:
    assert_simulation_is_the_run(scenario, f"sqlite:///{tmp_path / f'{next(_counter)}.db'}")


@pytest.mark.postgres
@settings(max_examples=6, deadline=None)
@given(scenario=rated_scenarios())
def test_the_simulation_of_rated_queues_is_the_run_on_postgres(
    scenario: dict[str, Any],
) -> None:
    for url in fresh_postgres_url(POSTGRES_URL, "simulate_is_the_run"):
        assert_simulation_is_the_run(scenario, url)


def test_a_thousand_tenants_simulated_are_the_run(tmp_path: Path) -> None:
    # Given 1,000 tenant Queues of weights 1-5, 50 of them with 3 jobs, pool 20 (the
    # group surveys its Queues in its first pass)
    names = [f"t{i}" for i in range(1_000)]
    scenario = {"policy": rota.Weighted([(name, 1 + i % 5) for i, name in enumerate(names)]),
                "pool": 20, "backlog": {name: 3 if i % 20 == 0 else 0
                                        for i, name in enumerate(names)},
                "paused": [], "limits": {}}
    # Then the preview and the run agree, round trip for round trip
    assert_simulation_is_the_run(scenario, f"sqlite:///{tmp_path / 'tenants.db'}")


@pytest.mark.parametrize("pool", [3, 7])
def test_the_simulated_issue_example_never_claims_a_queue_its_probe_found_drained(
    pool: int,
) -> None:
    # Given 6:3:1 over a 20, b 9, c 0 due jobs
    result = simulate(ISSUE_EXAMPLE["policy"], pool, 10, ISSUE_EXAMPLE["backlog"])
    # Then once a claim's probe says b has no due job left, no later claim asks b
    drained_at = None
    for number, trip in enumerate(t for one in result.passes for t in one.round_trips):
        if drained_at is not None:
            assert all("b" not in claim.queues for claim in trip.claims)
        if "b" in trip.probe and "b" not in trip.due and trip.claims:
            drained_at = drained_at if drained_at is not None else number
    assert drained_at is not None
