"""Bounded catch-up (docs/dispatch.md, "Bounded catch-up"): a Queue that had no due work,
however long, gets at most one turn more than its weight in the next weight-sum window of
served jobs once it has work again, and every credit stays within one weight-sum of zero.

Checked on the real planner over random weights, idle lengths and pools, returning after
any number of passes and after a pass of any size (a partial pass), in both of its modes:
- a dispatcher that forgets empty Queues at each pass, driven by tests/core/backlog.py;
- a Worker Group's dispatcher, which remembers them (its claims probing their own Queues)
  and learns of the returning Queue's work by a wake-up hint, as an enqueue gives it.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rota import Weighted
from rota.core.dispatch import WeightedDispatcher, for_policy
from tests.core.backlog import UNLIMITED, Backlog, Job, drive, drive_pass

NAMES = "abcdef"


def queue_of(job: Job) -> str:
    return job[0]


def group_pass(dispatcher: WeightedDispatcher, free: int, backlog: Backlog) -> list[str]:
    """One pass as a Worker Group drives it: each round in one round trip, which tells
    the plan which of the Queues it probed still have due work."""
    dispatcher.take_hints()
    plan = dispatcher.begin_pass(free, queue_of=queue_of)
    while requests := plan.next_claims():
        trip = plan.round_trip(requests)
        jobs = [] if requests[0].probe else backlog.claim_round(requests, trip.limit)
        plan.record_round(requests, jobs,
                          due={queue for queue in trip.probe if backlog.due[queue] > 0})
    order = plan.dispatch_order()
    for _ in order:
        plan.serve()
    return [queue for queue, _ in order]


def serve(dispatcher: WeightedDispatcher, backlog: Backlog, pool: int, jobs: int,
          remember: bool) -> list[str]:
    """Passes of `pool` (the last one smaller) until `jobs` jobs are served."""
    if not remember:
        return [queue for queue, _ in drive(dispatcher, backlog, pool, jobs)]
    served: list[str] = []
    while len(served) < jobs:
        got = group_pass(dispatcher, min(pool, jobs - len(served)), backlog)
        if not got and not dispatcher.probe_pending:
            break
        served.extend(got)
    return served


def catch_up(weights: list[int], idle: int, pool: int, idle_passes: int, partial: int,
             remember: bool) -> tuple[int, int]:
    """Idle Queue `idle` for `idle_passes` passes of `pool` and a pass of `partial` (0:
    none) while the others are backlogged, then give it work: its turns over its weight in
    the next weight-sum window, and the largest |credit| when it returned."""
    dispatcher = for_policy(
        Weighted(list(zip(NAMES, weights, strict=False))), remember_empty=remember)
    assert isinstance(dispatcher, WeightedDispatcher)
    name = NAMES[idle]
    backlog = Backlog({queue: 0 if queue == name else UNLIMITED
                       for queue in NAMES[:len(weights)]})
    for free in [pool] * idle_passes + ([partial] if partial else []):
        if remember:
            group_pass(dispatcher, free, backlog)
        else:
            drive_pass(dispatcher, free, backlog)
    spread = max(abs(credit) for credit in dispatcher.credits)
    backlog.due[name] = UNLIMITED
    dispatcher.note_work(name)  # the enqueue's wake-up hint (a no-op when forgetting)
    window = serve(dispatcher, backlog, pool, sum(weights), remember)
    assert len(window) == sum(weights)
    return window.count(name) - weights[idle], spread


@settings(max_examples=400, deadline=None)
@given(
    weights=st.lists(st.integers(1, 20), min_size=2, max_size=6),
    data=st.data(),
    pool=st.integers(1, 64),
    idle_passes=st.integers(0, 30),
    partial=st.integers(0, 63),
    remember=st.booleans(),
)
def test_a_returning_queue_gets_at_most_one_turn_more_than_its_weight(
    weights: list[int], data: st.DataObject, pool: int, idle_passes: int, partial: int,
    remember: bool,
) -> None:
    # Given one Queue idle for some passes (and maybe a partial pass), the others busy
    idle = data.draw(st.integers(0, len(weights) - 1), label="idle")
    # When it gets work again
    excess, spread = catch_up(weights, idle, pool, idle_passes, partial, remember)
    # Then in the next weight-sum window it gets at most one turn over its weight, and
    # it came back to credits within one weight-sum of zero
    assert excess <= 1
    assert spread <= sum(weights)


def test_every_small_case_catches_up_by_at_most_one_turn() -> None:
    # Given every weight vector 1..3 of three Queues, every idle Queue, a few pools and
    # idle lengths, in both of the planner's modes
    over = [
        case for case in itertools.product(
            itertools.product(range(1, 4), repeat=3), range(3), (1, 7, 13, 64),
            (1, 5, 40), (0, 5), (False, True))
        if catch_up(list(case[0]), *case[1:])[0] > 1
    ]
    # Then none goes over the bound
    assert over == []


# -- wake-up hints: the Queue a hint names is asked at the next pass, without a probe ----------


def hinted_pass(dispatcher: WeightedDispatcher, free: int, backlog: Backlog
                ) -> tuple[list[str], list[tuple[str, ...]]]:
    """`group_pass`, also returning each round trip's kind and Queues ("probe" first)."""
    trips: list[tuple[str, ...]] = []
    dispatcher.take_hints()
    plan = dispatcher.begin_pass(free, queue_of=queue_of)
    while requests := plan.next_claims():
        trip = plan.round_trip(requests)
        trips.append(("probe", *trip.probe) if requests[0].probe else tuple(trip.queues))
        jobs = [] if requests[0].probe else backlog.claim_round(requests, trip.limit)
        plan.record_round(requests, jobs,
                          due={queue for queue in trip.probe if backlog.due[queue] > 0})
    order = plan.dispatch_order()
    for _ in order:
        plan.serve()
    return [queue for queue, _ in order], trips


def test_a_hinted_queue_is_claimed_from_at_the_next_pass_without_a_probe() -> None:
    # Given a Worker Group's dispatcher that found Queue b empty and no longer asks it
    dispatcher = for_policy(Weighted([("a", 1), ("b", 1)]), remember_empty=True)
    assert isinstance(dispatcher, WeightedDispatcher)
    backlog = Backlog({"a": UNLIMITED, "b": 0})
    hinted_pass(dispatcher, 4, backlog)
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert served == ["a"] * 4 and trips == [("a",)]
    # When a job is enqueued into b and its wake-up hint arrives
    backlog.due["b"] = 1
    dispatcher.note_work("b")
    assert dispatcher.probe_pending  # a drive runs the pass before it calls the group idle
    # Then the next pass asks b in its one round trip, with no probe before it, and a
    # (the one Queue the last pass left open) last, for the slots b leaves
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert trips == [("b", "a")]
    assert sorted(served) == ["a", "a", "a", "b"]
    assert not dispatcher.probe_pending


def test_a_hinted_queue_without_due_work_is_found_empty_again() -> None:
    # Given b held for empty, and a hint for it whose job is due only later
    dispatcher = for_policy(Weighted([("a", 1), ("b", 1)]), remember_empty=True)
    assert isinstance(dispatcher, WeightedDispatcher)
    backlog = Backlog({"a": UNLIMITED, "b": 0})
    hinted_pass(dispatcher, 4, backlog)
    dispatcher.note_work("b")
    # When the next pass asks b, its claim comes back empty: a takes the slots in the
    # same round trip
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert served == ["a"] * 4 and trips == [("b", "a")]
    # Then b is held for empty again: the pass after asks a alone
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert trips == [("a",)]


def test_a_hint_that_arrives_while_a_pass_drains_its_queue_still_brings_it_back() -> None:
    # Given a pass that asks b for its one job, and a claim whose probe, read before a
    # second job of b was committed, says the claim drained b
    dispatcher = for_policy(Weighted([("a", 1), ("b", 1)]), remember_empty=True)
    assert isinstance(dispatcher, WeightedDispatcher)
    backlog = Backlog({"a": UNLIMITED, "b": 1})
    dispatcher.take_hints()
    plan = dispatcher.begin_pass(4, queue_of=queue_of)
    while requests := plan.next_claims():
        trip = plan.round_trip(requests)
        jobs = backlog.claim_round(requests, trip.limit)
        due = {queue for queue in trip.probe if backlog.due[queue] > 0}
        if backlog.due["b"] == 0 and "b" in trip.probe:
            # When b's second job is committed now, and its hint arrives mid-pass
            backlog.due["b"] = 1
            dispatcher.note_work("b")
        plan.record_round(requests, jobs, due=due)
    for _ in plan.dispatch_order():
        plan.serve()
    # Then the next pass asks b again, though this one found it drained
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert "b" in trips[0] and "b" in served


def test_a_hint_noted_after_the_pass_took_its_hints_waits_for_the_next_pass() -> None:
    # Given b held for empty, and a pass that has taken its hints (and then read its time)
    dispatcher = for_policy(Weighted([("a", 1), ("b", 1)]), remember_empty=True)
    assert isinstance(dispatcher, WeightedDispatcher)
    backlog = Backlog({"a": UNLIMITED, "b": 0})
    hinted_pass(dispatcher, 4, backlog)
    dispatcher.take_hints()
    # When b's job and its hint come now, before the pass begins (its job may be due
    # after the time the pass read)
    backlog.due["b"] = 1
    dispatcher.note_work("b")
    plan = dispatcher.begin_pass(4, queue_of=queue_of)
    requests = plan.next_claims()
    # Then this pass does not ask b, and is not told b is empty either
    assert [request.queues for request in requests] == [("a",)]
    plan.record_round(requests, backlog.claim(requests[0]) or [], due={"a"})
    for _ in plan.dispatch_order():
        plan.serve()
    # And the next pass asks it (before a, the one Queue left open)
    served, trips = hinted_pass(dispatcher, 4, backlog)
    assert trips[0] == ("b", "a") and "b" in served
