"""Switching a running Weighted group to another policy (docs/dispatch.md, "Live
policies"): the pure part, `rota.core.dispatch.switch`, driven sans-I/O.

Queues in both policies keep their credits (and stay out if the group held them for
empty); a Queue new to the policy catches up by at most one turn over its weight in the
next weight-sum window; a switch to the same policy changes no claim at all.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota import Strict, Weighted
from rota.core.dispatch import PassPlan, StrictDispatcher, WeightedDispatcher, for_policy, switch
from tests.core.backlog import UNLIMITED, Backlog, Job

PATTERN_631 = list("abaabacaba")
OLD = "abcdef"
NEW = "uvwxyz"

weights_strategy = st.lists(st.integers(1, 20), min_size=1, max_size=6)


def weighted(names: str, weights: list[int]) -> Weighted:
    return Weighted(list(zip(names, weights, strict=False)))


def dispatcher_for(policy: Weighted) -> WeightedDispatcher:
    dispatcher = for_policy(policy, remember_empty=True)
    assert isinstance(dispatcher, WeightedDispatcher)
    return dispatcher


def switched(dispatcher: WeightedDispatcher, policy: Weighted) -> WeightedDispatcher:
    result = switch(dispatcher, policy, remember_empty=True)
    assert isinstance(result, WeightedDispatcher)
    return result


def group_pass(dispatcher: WeightedDispatcher, free: int, backlog: Backlog) -> list[str]:
    """One pass as a Worker Group drives it (each round one round trip, whose probe says
    which Queues have due work); a failed claim cuts the pass short. The served Queues."""
    dispatcher.take_hints()
    plan: PassPlan[Job] = dispatcher.begin_pass(free, queue_of=lambda job: job[0])
    while requests := plan.next_claims():
        trip = plan.round_trip(requests)
        if requests[0].probe:
            plan.record_round(requests, [], due={q for q in trip.probe if backlog.due[q] > 0})
            continue
        jobs: list[Job] = []
        for request in requests:
            got = backlog.claim(request, trip.limit - len(jobs))
            if got is None:
                plan.claim_failed(request)
                break
            jobs.extend(got)
        else:
            plan.record_round(requests, jobs, due=None)
            continue
        break
    order = plan.dispatch_order()
    for _ in order:
        plan.serve()
    return [queue for queue, _ in order]


def serve(dispatcher: WeightedDispatcher, backlog: Backlog, pool: int, jobs: int) -> list[str]:
    """Passes of `pool` (the last one smaller) until `jobs` jobs are served."""
    served: list[str] = []
    while len(served) < jobs:
        got = group_pass(dispatcher, min(pool, jobs - len(served)), backlog)
        if not got and not dispatcher.probe_pending:
            break
        served.extend(got)
    return served


@st.composite
def running_group(draw: st.DrawFn) -> tuple[WeightedDispatcher, Backlog]:
    """A Weighted group some passes into its life, some Queues idle (so held for empty,
    their credits standing still) and a pass possibly cut short by a failed claim."""
    weights = draw(weights_strategy, label="old weights")
    names = OLD[:len(weights)]
    dispatcher = dispatcher_for(weighted(names, weights))
    due = {name: draw(st.sampled_from([0, 3, UNLIMITED]), label=f"due {name}")
           for name in names}
    failing = draw(st.integers(-1, 40), label="failing claim")
    backlog = Backlog(due, fail=lambda n: n == failing)
    for free in draw(st.lists(st.integers(1, 30), max_size=12), label="passes"):
        group_pass(dispatcher, free, backlog)
    return dispatcher, backlog


@st.composite
def new_policy(draw: st.DrawFn, old: WeightedDispatcher) -> Weighted:
    """Some of the old Queues (reweighted or not) and some new ones, in any order."""
    kept = draw(st.lists(st.sampled_from(old.queues), unique=True), label="kept")
    added = list(NEW[:draw(st.integers(0 if kept else 1, 3), label="added")])
    order = draw(st.permutations(kept + added), label="order")
    old_weight = dict(zip(old.queues, old.weights, strict=True))
    pairs = [(name, old_weight[name] if name in old_weight and draw(st.booleans())
              else draw(st.integers(1, 20), label=f"weight {name}")) for name in order]
    return Weighted(pairs)


@settings(max_examples=300, deadline=None)
@given(group=running_group(), data=st.data())
def test_queues_in_both_policies_keep_their_credits(
    group: tuple[WeightedDispatcher, Backlog], data: st.DataObject,
) -> None:
    # Given a group some passes into its life
    old, _ = group
    policy = data.draw(new_policy(old), label="new policy")
    old.finish_pass()
    before = dict(zip(old.queues, old.credits, strict=True))
    held_out = {old.queues[index] for index in old.state.out}
    # When its policy is switched
    new = switched(old, policy)
    # Then each kept Queue has its credit (clamped to the new weight-sum range), is held
    # for empty if it was, and each new Queue starts at 0, taking part
    bound = sum(weight for _, weight in policy.weights)
    for index, queue in enumerate(new.queues):
        credit = new.state.credit(index)
        if queue in before:
            assert credit == max(-bound, min(bound, before[queue]))
            assert (index in new.state.out) == (queue in held_out)
        else:
            assert credit == 0
            assert index not in new.state.out


def new_queues_window(old: WeightedDispatcher, policy: Weighted, pool: int,
                      windows: int = 1) -> list[str]:
    """Switch `old` to `policy`, give every Queue work, serve `windows` weight-sum
    windows."""
    new = switched(old, policy)
    backlog = Backlog(dict.fromkeys(policy.queues, UNLIMITED))
    for queue in policy.queues:
        new.note_work(queue)  # the enqueue's wake-up hint: Queues held for empty look
    window = windows * sum(weight for _, weight in policy.weights)
    served = serve(new, backlog, pool, window)
    assert len(served) == window
    return served


@settings(max_examples=300, deadline=None)
@given(group=running_group(), data=st.data(), pool=st.integers(1, 64))
def test_a_queue_new_to_the_policy_catches_up_by_at_most_one_turn(
    group: tuple[WeightedDispatcher, Backlog], data: st.DataObject, pool: int,
) -> None:
    # Given a running group switched to a policy with new Queues
    policy = data.draw(new_policy(group[0]), label="new policy")
    # When every Queue of the new policy has work
    served = new_queues_window(group[0], policy, pool)
    # Then in the next weight-sum window each new Queue gets at most one turn over its
    # weight
    for queue, weight in policy.weights:
        if queue in NEW:
            assert served.count(queue) <= weight + 1, (queue, served)


@pytest.mark.parametrize("pool", [1, 7, 64])
def test_a_kept_credit_deep_below_the_new_range_is_clamped(pool: int) -> None:
    # Given a:100, b:1 after 51 jobs: b has just won, its credit far below zero
    old = dispatcher_for(weighted("ab", [100, 1]))
    serve(old, Backlog(dict.fromkeys("ab", UNLIMITED)), 1, 51)
    old.finish_pass()
    assert old.credits == [50, -50]
    # When a is dropped and a new Queue u of weight 1 joins b
    served = new_queues_window(old, Weighted([("b", 1), ("u", 1)]), pool, windows=10)
    # Then u does not win a long run of turns: b's credit was clamped to -2, so over ten
    # windows u gets at most one turn more than its share
    assert served.count("u") <= 11


@settings(max_examples=200, deadline=None)
@given(before=st.integers(0, 40), pool=st.integers(1, 23), switches=st.integers(1, 3))
def test_631_stays_exact_after_a_switch_to_the_same_policy(
    before: int, pool: int, switches: int,
) -> None:
    # Given 6:3:1, every Queue backlogged, `before` jobs served
    policy = weighted("abc", [6, 3, 1])
    dispatcher = dispatcher_for(policy)
    backlog = Backlog(dict.fromkeys("abc", UNLIMITED))
    served = serve(dispatcher, backlog, pool, before)
    # When the policy is set again (to an equal value), once or more, and serving goes on
    for _ in range(switches):
        dispatcher = switched(dispatcher, weighted("abc", [6, 3, 1]))
    served += serve(dispatcher, backlog, pool, 100 - before)
    # Then the whole sequence is the unswitched one: a,b,a,a,b,a,c,a,b,a repeating
    assert served == PATTERN_631 * 10


def test_a_switch_after_a_pass_keeps_that_passs_charges() -> None:
    # Given 6:3:1 after one pass of 4 (a,b,a,a served)
    dispatcher = dispatcher_for(weighted("abc", [6, 3, 1]))
    backlog = Backlog(dict.fromkeys("abc", UNLIMITED))
    assert group_pass(dispatcher, 4, backlog) == list("abaa")
    # When the group switches to the same Queues with d added at the end
    new = switched(dispatcher, Weighted([("a", 6), ("b", 3), ("c", 1), ("d", 10)]))
    # Then a, b and c keep the credits the pass left them (4 steps: a +24-30, b +12-10,
    # c +4), d starts at 0
    assert new.credits == [-6, 2, 4, 0]


def test_an_invalid_policy_is_refused_with_the_start_up_error() -> None:
    dispatcher = dispatcher_for(weighted("ab", [1, 1]))
    with pytest.raises(ValueError, match=r"^Weighted dispatch needs at least one queue, "
                                         r"all weights >= 1\.$"):
        switch(dispatcher, Weighted([("a", 0)]))
    with pytest.raises(ValueError, match=r"^Strict dispatch needs at least one queue\.$"):
        switch(dispatcher, Strict())
    with pytest.raises(ValueError, match="named twice"):
        switch(dispatcher, Weighted([("a", 1), ("a", 2)]))


def test_switches_between_strict_and_weighted_start_weighted_credits_at_zero() -> None:
    weighted_group = dispatcher_for(weighted("ab", [2, 1]))
    serve(weighted_group, Backlog(dict.fromkeys("ab", UNLIMITED)), 1, 1)
    strict = switch(weighted_group, Strict("b", "a"))
    assert isinstance(strict, StrictDispatcher)
    back = switch(strict, weighted("ab", [2, 1]))
    assert isinstance(back, WeightedDispatcher)
    assert back.credits == [0, 0]
