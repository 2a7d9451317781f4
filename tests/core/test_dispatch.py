"""The pure dispatch core, driven sans-I/O with a fake backlog (no store).

Spec sections "Strict", "Weighted", "Determinism", "Work conservation", "Claim sizing and
Backpressure", and the dispatch rules of docs/dispatch.md.
"""

from __future__ import annotations

import ast
import itertools
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rota.core
from rota import Strict, Weighted
from rota.core.dispatch import ClaimRequest, PassPlan, WeightedDispatcher, for_policy
from rota.core.simulation import simulate
from tests.core.backlog import (
    UNLIMITED,
    Backlog,
    Job,
    drive,
    drive_pass,
    nginx_reference,
)

PATTERN_631 = list("abaabacaba")
PATTERN_511 = list("aabacaa")
NAMES = "abcdef"

weights_strategy = st.lists(st.integers(1, 20), min_size=1, max_size=6)


def weighted(*weights: int) -> Weighted:
    return Weighted([(NAMES[i], w) for i, w in enumerate(weights)])


@pytest.fixture
def make_dispatcher() -> Callable[..., WeightedDispatcher]:
    def factory(*weights: int) -> WeightedDispatcher:
        dispatcher = for_policy(weighted(*weights))
        assert isinstance(dispatcher, WeightedDispatcher)
        return dispatcher

    return factory


def backlogged(count: int, *, idle: frozenset[str] = frozenset()) -> Backlog:
    return Backlog({NAMES[i]: 0 if NAMES[i] in idle else UNLIMITED for i in range(count)})


def queues_of(jobs: list[Job]) -> list[str]:
    return [queue for queue, _ in jobs]


# -- all Queues backlogged: exactly the nginx sequence ------------------------------------


@pytest.mark.parametrize("pool", [1, 3, 7, 10, 64])
def test_631_repeats_the_period_10_pattern_for_any_pool_size(
    make_dispatcher: Callable[..., WeightedDispatcher], pool: int
) -> None:
    # Given 6:3:1 with every Queue backlogged
    dispatcher = make_dispatcher(6, 3, 1)
    # When 100 jobs are served in passes of `pool` slots
    served = drive(dispatcher, backlogged(3), pool, 100)
    # Then the served sequence is a,b,a,a,b,a,c,a,b,a repeating
    assert queues_of(served) == PATTERN_631 * 10


@pytest.mark.parametrize("pool", [1, 3, 7, 10, 64])
def test_511_repeats_its_period_7_pattern(
    make_dispatcher: Callable[..., WeightedDispatcher], pool: int
) -> None:
    served = drive(make_dispatcher(5, 1, 1), backlogged(3), pool, 70)
    assert queues_of(served) == PATTERN_511 * 10


def test_one_pass_of_ten_dispatches_in_slot_order(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 6:3:1, all backlogged / When one pass of 10 runs
    result = drive_pass(make_dispatcher(6, 3, 1), 10, backlogged(3))
    # Then it claims once per Queue, sized 6/3/1, and dispatches in slot order
    assert [(r.queues, r.limit) for r, _ in result.claims] == [
        (("a",), 6), (("b",), 3), (("c",), 1)]
    assert result.queues == PATTERN_631


@pytest.mark.parametrize("pool", [1, 10, 20, 64])
def test_1000_claims_split_exactly_600_300_100(
    make_dispatcher: Callable[..., WeightedDispatcher], pool: int
) -> None:
    served = drive(make_dispatcher(6, 3, 1), backlogged(3), pool, 1000)
    assert Counter(queues_of(served)) == {"a": 600, "b": 300, "c": 100}


@settings(max_examples=60)
@given(
    weights=st.sampled_from([[6, 3, 1], [5, 1, 1], [1], [2, 2], [3, 7, 1, 4]]) | weights_strategy,
    sizes=st.lists(st.integers(1, 64), min_size=1, max_size=8),
)
def test_concatenated_passes_of_any_sizes_give_the_nginx_sequence(
    weights: list[int], sizes: list[int]
) -> None:
    # Given any weights, all backlogged, and passes of arbitrary sizes
    dispatcher = for_policy(weighted(*weights))
    count = 3 * sum(weights)
    # When jobs are served pass after pass
    served = drive(dispatcher, backlogged(len(weights)), sizes, count)
    # Then the concatenation is exactly nginx SWRR with ties to the lower index
    assert [NAMES.index(q) for q in queues_of(served)] == nginx_reference(weights, count)


@settings(max_examples=60)
@given(
    weights=weights_strategy,
    windows=st.integers(1, 4),
    pool=st.integers(1, 40),
)
def test_counts_are_exact_per_window_and_every_prefix_stays_near_its_share(
    weights: list[int], windows: int, pool: int
) -> None:
    # Given random weights, all backlogged
    dispatcher = for_policy(weighted(*weights))
    total = sum(weights)
    # When k x total-weight slots are served
    served = [NAMES.index(q) for q in queues_of(
        drive(dispatcher, backlogged(len(weights)), pool, windows * total))]
    # Then each Queue's count is exactly k x its weight
    assert Counter(served) == {i: windows * w for i, w in enumerate(weights)}
    # And at every prefix each Queue stays within 2 of its exact share
    counts = [0] * len(weights)
    for slot, winner in enumerate(served, start=1):
        counts[winner] += 1
        for i, weight in enumerate(weights):
            assert abs(counts[i] - slot * weight / total) <= 2


# -- an empty Queue yields its turns ----------------------------------------------------------


@pytest.mark.parametrize("pool", [1, 3, 10, 64])
def test_an_idle_queue_yields_its_turns_to_the_others(
    make_dispatcher: Callable[..., WeightedDispatcher], pool: int
) -> None:
    # Given 6:3:1 where c has no due work
    dispatcher = make_dispatcher(6, 3, 1)
    backlog = backlogged(3, idle=frozenset("c"))
    # When 900 jobs are served
    served = queues_of(drive(dispatcher, backlog, pool, 900))
    # Then no slot was lost to c, and a and b split 2:1 (6:3)
    assert len(served) == 900
    counts = Counter(served)
    assert counts["c"] == 0
    assert abs(counts["a"] - 600) <= 1 and abs(counts["b"] - 300) <= 1


# -- bounded catch-up ---------------------------------------------------------------------------


def catch_up_turns(
    weights: list[int], idle_index: int, idle_jobs: int, pool: int
) -> tuple[int, int]:
    """Idle one Queue while `idle_jobs` are served, then give it work; return its turns in the
    next total-weight window of served jobs, and its weight."""
    dispatcher = for_policy(weighted(*weights))
    idle = NAMES[idle_index]
    backlog = backlogged(len(weights), idle=frozenset(idle))
    served = drive(dispatcher, backlog, pool, idle_jobs)
    assert idle not in queues_of(served)
    backlog.due[idle] = UNLIMITED
    window = drive(dispatcher, backlog, pool, sum(weights))
    return queues_of(window).count(idle), weights[idle_index]


@pytest.mark.parametrize("pool", [1, 7, 10, 64])
@pytest.mark.parametrize("idle_index", [0, 1, 2])
def test_a_long_idle_queue_catches_up_by_at_most_one_turn(pool: int, idle_index: int) -> None:
    # Given 6:3:1 with one Queue idle for 5000 claims
    # When it gets work again
    turns, weight = catch_up_turns([6, 3, 1], idle_index, 5000, pool)
    # Then in the next total-weight window it gets at most one turn more than its weight
    assert turns <= weight + 1


@settings(max_examples=60)
@given(
    weights=st.lists(st.integers(1, 20), min_size=2, max_size=6),
    data=st.data(),
    idle_jobs=st.integers(0, 3000),
    pool=st.integers(1, 64),
)
def test_catch_up_is_bounded_for_any_weights(
    weights: list[int], data: st.DataObject, idle_jobs: int, pool: int
) -> None:
    idle_index = data.draw(st.integers(0, len(weights) - 1))
    turns, weight = catch_up_turns(weights, idle_index, idle_jobs, pool)
    assert turns <= weight + 1


# Found by Hypothesis (and by a grid of 60,144 cases) while the reflow round that could not
# afford one claim per open Queue asked the largest share for all the room: with four or
# more Queues and one found empty in every pass, the other full Queues then took part
# unserved and banked credit pass after pass (a, b at +30, d at -60 for 1:1:4:5), and a
# later short pass let the idle Queue climb past the bound. Every reflow round now keeps
# one claim in reserve for a sweep instead (docs/dispatch.md, "Reflow").
@pytest.mark.parametrize(
    ("weights", "idle_index", "idle_jobs", "pool"),
    [
        ([1, 1, 4, 5], 2, 181, 59),
        ([4, 2, 5, 4], 2, 122, 39),
        ([8, 8, 1, 7], 1, 60, 55),
        ([7, 15, 10, 19], 1, 1602, 57),
        ([11, 17, 10, 7, 1], 1, 1397, 48),
        ([14, 1, 10, 5, 5, 13], 0, 1986, 55),
    ],
)
def test_catch_up_counterexamples_found_by_hypothesis(
    weights: list[int], idle_index: int, idle_jobs: int, pool: int
) -> None:
    turns, weight = catch_up_turns(weights, idle_index, idle_jobs, pool)
    assert turns <= weight + 1


def test_a_reflow_round_asks_every_open_queue_its_share_while_a_claim_stays_in_reserve(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 1:1:4:5 where c has no due work, and passes of 59
    dispatcher = make_dispatcher(1, 1, 4, 5)
    backlog = backlogged(4, idle=frozenset("c"))
    # When the first pass runs
    result = drive_pass(dispatcher, 59, backlog)
    # Then round 0 found c empty, and the reflow round asked a, b and d their shares of
    # c's 22 slots (3 claims, one of the 4 left kept in reserve), not d for all of them
    assert [(r.queues, r.limit, got) for r, got in result.claims] == [
        (("a",), 5, 5), (("b",), 5, 5), (("c",), 22, 0), (("d",), 27, 27),
        (("a",), 4, 4), (("b",), 3, 3), (("d",), 15, 15)]
    # And pass after pass every step is a true nginx step: no credit leaves one weight-sum
    # (with d asked for all the room, a and b banked +3 a pass and d sank without bound)
    for _ in range(50):
        drive_pass(dispatcher, 59, backlog)
        assert max(abs(credit) for credit in dispatcher.credits) < 11


def test_the_last_claim_is_one_sweep_over_the_open_queues_when_one_claim_is_left(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 1:1:4:5, 20 free, and a 3, b 3, c 8, d 3 due jobs
    backlog = Backlog({"a": 3, "b": 3, "c": 8, "d": 3})
    # When one pass runs
    result = drive_pass(make_dispatcher(1, 1, 4, 5), 20, backlog)
    # Then d came back short in round 0 and c in round 1; with 2 of the 8 claims left and
    # a and b both open, the last claim is one sweep over both for the 4 slots still free
    assert [(r.queues, r.limit, got) for r, got in result.claims] == [
        (("a",), 2, 2), (("b",), 2, 2), (("c",), 7, 7), (("d",), 9, 3),
        (("b",), 1, 1), (("c",), 5, 1), (("a", "b"), 4, 1)]
    # And every due job was dispatched once, each under its own Queue
    assert Counter(result.queues) == {"a": 3, "b": 3, "c": 8, "d": 3}


def test_a_pass_that_needs_a_sweep_without_queue_of_says_so(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given the pass above, begun without queue_of
    backlog = Backlog({"a": 3, "b": 3, "c": 8, "d": 3})
    plan = make_dispatcher(1, 1, 4, 5).begin_pass(20)
    # When it comes to its sweep / Then it says what it needs
    with pytest.raises(ValueError, match=r"begin_pass\(free, queue_of=\.\.\.\)"):
        held = 0
        while requests := plan.next_claims():
            for request in requests:
                jobs = backlog.claim(request, 20 - held)
                assert jobs is not None
                held += len(jobs)
                plan.claimed(request, jobs)


# -- reflow -----------------------------------------------------------------------------------


def test_short_claim_reflows_its_slots_to_the_other_queues_in_the_same_pass(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 6:3:1, a pool of 10 free, and Queue a with only 2 due jobs
    backlog = Backlog({"a": 2, "b": UNLIMITED, "c": UNLIMITED})
    # When one pass runs
    result = drive_pass(make_dispatcher(6, 3, 1), 10, backlog)
    # Then a's first claim (6) came back short, a was never claimed again in the pass,
    # and its 4 unfilled slots were claimed from b and c in the same pass
    requests = [(r.queues[0], r.limit, got) for r, got in result.claims]
    assert requests[:3] == [("a", 6, 2), ("b", 3, 3), ("c", 1, 1)]
    assert all(queue != "a" for queue, _, _ in requests[3:])
    assert sum(limit for queue, limit, _ in requests[3:]) == 4
    assert len(result.dispatched) == 10
    assert Counter(result.queues)["a"] == 2


def test_work_conservation_counterexample_found_by_hypothesis(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 1:1:1, 10 free, a empty, b with 4 due jobs and c with plenty
    backlog = Backlog({"a": 0, "b": 4, "c": 100})
    # When one pass runs
    result = drive_pass(make_dispatcher(1, 1, 1), 10, backlog)
    # Then the pass still fills all 10 slots (b's shortfall in the reflow round goes to c)
    assert len(result.dispatched) == 10
    assert len(result.claims) <= 2 * 3


def test_a_pool_of_one_never_stalls_behind_two_empty_queues(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 1:1:1 where a and b are empty and c has due work, and one free Worker
    dispatcher = make_dispatcher(1, 1, 1)
    backlog = Backlog({"a": 0, "b": 0, "c": UNLIMITED})
    # When five passes of one slot run
    served = [drive_pass(dispatcher, 1, backlog).queues for _ in range(5)]
    # Then every pass serves c (the two empty Queues do not use up the pass's claims)
    assert served == [["c"]] * 5


@settings(max_examples=100)
@given(
    weights=weights_strategy,
    data=st.data(),
    sizes=st.lists(st.integers(1, 30), min_size=1, max_size=10),
)
def test_every_pass_of_a_long_run_fills_while_due_work_remains(
    weights: list[int], data: st.DataObject, sizes: list[int]
) -> None:
    # Given random weights and a finite backlog per Queue, some Queues running dry early
    due = data.draw(st.lists(st.integers(0, 60), min_size=len(weights), max_size=len(weights)))
    backlog = Backlog({NAMES[i]: n for i, n in enumerate(due)})
    dispatcher = for_policy(weighted(*weights))
    # When passes of varying sizes run until the backlog is drained (each pass serves at
    # least one job while any is due, so total + 1 passes always suffice)
    for free in itertools.islice(itertools.cycle(sizes), sum(due) + 1):
        remaining = sum(backlog.due.values())
        result = drive_pass(dispatcher, free, backlog)
        # Then each pass serves min(free, due) jobs, with at most 2 claims per Queue
        assert len(result.dispatched) == min(free, remaining)
        assert len(result.claims) <= 2 * len(weights)
        if remaining == 0:
            break
    assert sum(backlog.due.values()) == 0



@settings(max_examples=200)
@given(data=st.data(), free=st.integers(0, 80))
def test_a_pass_fills_free_capacity_with_bounded_claims(data: st.DataObject, free: int) -> None:
    # Given random weights and a random finite-or-unlimited backlog per Queue
    weights = data.draw(weights_strategy)
    due = data.draw(st.lists(
        st.one_of(st.integers(0, 12), st.just(UNLIMITED)),
        min_size=len(weights), max_size=len(weights)))
    backlog = Backlog({NAMES[i]: n for i, n in enumerate(due)})
    dispatcher = for_policy(weighted(*weights))
    # When one pass runs
    result = drive_pass(dispatcher, free, backlog)
    # Then it dispatched min(free, total due) jobs: no free Worker idles beside due work
    assert len(result.dispatched) == min(free, sum(due))
    # And it issued at most 2 claims per served Queue, never more than free in total,
    # and never claimed twice from a Queue found empty
    assert len(result.claims) <= 2 * len(weights)
    assert_within_free_capacity(result.rounds, free)
    found_empty: set[str] = set()
    for request, got in result.claims:
        assert request.queues[0] not in found_empty
        if got is not None and got < request.limit:
            found_empty.add(request.queues[0])
    # And every claimed job is dispatched exactly once
    assert sorted(result.dispatched) == sorted(
        (q, n) for q in backlog.taken for n in range(backlog.taken[q]))


# -- charge on issue ----------------------------------------------------------------------------


def test_credits_move_only_when_jobs_are_served(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given a dispatcher mid-stream
    dispatcher = make_dispatcher(6, 3, 1)
    drive(dispatcher, backlogged(3), 4, 4)
    before = list(dispatcher.credits)
    # When a pass claims and orders its jobs but serves none
    result = drive_pass(dispatcher, 10, backlogged(3), serve=False)
    # Then no credit moved
    assert result.dispatched and dispatcher.credits == before


def fully_claimed_pass(dispatcher: WeightedDispatcher, free: int) -> PassPlan:
    """A pass of `free` slots over a backlog in every Queue, one claim round made."""
    plan = dispatcher.begin_pass(free)
    backlog = backlogged(len(dispatcher.weights))
    room = free
    for request in plan.next_claims():
        jobs = backlog.claim(request, room)
        assert jobs is not None
        room -= len(jobs)
        plan.claimed(request, jobs)
    return plan


def test_each_serve_charges_one_nginx_step(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    dispatcher = make_dispatcher(6, 3, 1)
    plan = fully_claimed_pass(dispatcher, 3)
    assert plan.next_claims() == []
    assert queues_of(plan.dispatch_order()) == ["a", "b", "a"]
    expected = [[-4, 3, 1], [2, -4, 2], [-2, -1, 3]]
    for credits in expected:
        plan.serve()
        assert dispatcher.credits == credits
    with pytest.raises(RuntimeError):
        plan.serve()


def test_a_skipped_job_charges_nothing_and_the_next_serve_charges_its_own_step(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given a 6:3:1 pass dispatching a, b, a
    dispatcher = make_dispatcher(6, 3, 1)
    plan = fully_claimed_pass(dispatcher, 3)
    assert queues_of(plan.dispatch_order()) == ["a", "b", "a"]
    # When the first is served, the second handed back unserved, the third served
    plan.serve()
    plan.skip()
    assert dispatcher.credits == [-4, 3, 1]
    plan.serve()
    # Then the skipped b was charged nothing: only a's two steps moved the credits
    assert dispatcher.credits == [-4 + 6 - 10, 3 + 3, 1 + 1]
    with pytest.raises(RuntimeError):
        plan.skip()


def test_a_failed_first_claim_charges_nothing_and_loses_nothing(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    dispatcher = make_dispatcher(6, 3, 1)
    backlog = Backlog({"a": UNLIMITED, "b": UNLIMITED, "c": UNLIMITED}, fail=lambda n: n == 0)
    result = drive_pass(dispatcher, 10, backlog)
    assert result.dispatched == [] and dispatcher.credits == [0, 0, 0]
    assert len(result.claims) == 1


def test_a_claim_failing_mid_pass_cuts_it_short_and_still_dispatches_what_was_claimed(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given 6:3:1 whose second claim (b's) fails
    dispatcher = make_dispatcher(6, 3, 1)
    backlog = Backlog(
        {"a": UNLIMITED, "b": UNLIMITED, "c": UNLIMITED}, fail=lambda n: n == 1)
    # When one pass of 10 runs
    result = drive_pass(dispatcher, 10, backlog)
    # Then no further claim was issued, a's 6 jobs are all dispatched, b and c charged
    # nothing and c (never reached) keeps its credit: it gained by taking part in a's steps
    assert len(result.claims) == 2
    assert result.queues == ["a"] * 6
    assert sum(dispatcher.credits) == 0
    assert dispatcher.credits[1] > 0 and dispatcher.credits[2] > 0


def test_cut_short_before_claiming_issues_nothing_and_charges_nothing(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    dispatcher = make_dispatcher(6, 3, 1)
    plan = dispatcher.begin_pass(10)
    plan.cut_short()
    assert plan.next_claims() == []
    assert plan.dispatch_order() == []
    assert dispatcher.credits == [0, 0, 0]


def test_cut_short_between_rounds_keeps_the_first_rounds_jobs(
    make_dispatcher: Callable[..., WeightedDispatcher],
) -> None:
    # Given a pass whose first round found a short and wants a reflow round
    dispatcher = make_dispatcher(6, 3, 1)
    backlog = Backlog({"a": 2, "b": UNLIMITED, "c": UNLIMITED})
    plan = dispatcher.begin_pass(10)
    room = 10
    for request in plan.next_claims():
        jobs = backlog.claim(request, room)
        assert jobs is not None
        room -= len(jobs)
        plan.claimed(request, jobs)
    # When the pass is cut short (shutdown) before the reflow round
    plan.cut_short()
    # Then no reflow claim is issued and the 6 claimed jobs are all dispatched
    assert plan.next_claims() == []
    order = plan.dispatch_order()
    assert sorted(order) == sorted([("a", 0), ("a", 1), *(("b", n) for n in range(3)),
                                    ("c", 0)])


@pytest.mark.parametrize("pool", [1, 10, 20])
def test_failing_every_fourth_claim_keeps_the_split_and_loses_nothing(pool: int) -> None:
    # Given 6:3:1, all backlogged, and a store whose every fourth claim fails
    dispatcher = for_policy(weighted(6, 3, 1))
    backlog = Backlog(
        {"a": UNLIMITED, "b": UNLIMITED, "c": UNLIMITED}, fail=lambda n: n % 4 == 3)
    # When 5000 jobs are served
    served = drive(dispatcher, backlog, pool, 5000)
    # Then nothing claimed was lost or served twice
    assert sorted(served) == sorted(
        (q, n) for q in backlog.taken for n in range(backlog.taken[q]))
    assert any(got is None for _, got in backlog.claims)
    # And the split matches 6:3:1 within 1%
    counts = Counter(queues_of(served))
    for queue, share in (("a", 0.6), ("b", 0.3), ("c", 0.1)):
        assert abs(counts[queue] / len(served) - share) <= 0.01


# -- Strict -------------------------------------------------------------------------------------


def test_strict_issues_one_claim_over_the_ordered_queues_sized_to_free() -> None:
    dispatcher = for_policy(Strict("critical", "normal", "bulk"))
    backlog = Backlog({"critical": 2, "normal": 3, "bulk": UNLIMITED})
    result = drive_pass(dispatcher, 7, backlog)
    assert [(r.queues, r.limit) for r, _ in result.claims] == [
        (("critical", "normal", "bulk"), 7)]
    assert result.queues == ["critical"] * 2 + ["normal"] * 3 + ["bulk"] * 2


def test_strict_starves_the_tail_while_the_head_has_work() -> None:
    dispatcher = for_policy(Strict("head", "tail"))
    backlog = Backlog({"head": UNLIMITED, "tail": UNLIMITED})
    served = drive(dispatcher, backlog, 5, 500)
    assert set(queues_of(served)) == {"head"}


def test_strict_failed_claim_dispatches_nothing_and_claims_nothing_more() -> None:
    dispatcher = for_policy(Strict("a", "b"))
    result = drive_pass(dispatcher, 5, Backlog({"a": 9}, fail=lambda n: True))
    assert len(result.claims) == 1 and result.dispatched == []


# -- Backpressure and claim sizing ---------------------------------------------------------------


@pytest.mark.parametrize("policy", [Strict("a", "b"), weighted(6, 3, 1)], ids=repr)
def test_no_free_capacity_means_no_claim_at_all(policy: Strict | Weighted) -> None:
    dispatcher = for_policy(policy)
    plan = dispatcher.begin_pass(0)
    assert plan.next_claims() == []
    assert plan.dispatch_order() == []
    assert plan.claims_issued == 0


def assert_within_free_capacity(rounds: list[tuple[int, list[ClaimRequest]]], free: int) -> None:
    """Jobs already held plus everything a round asks for never exceed the free slots."""
    for held, requests in rounds:
        assert held + sum(request.limit for request in requests) <= free


@settings(max_examples=100)
@given(
    strict=st.booleans(), weights=weights_strategy, free=st.integers(0, 100),
    due=st.lists(st.integers(0, 50), min_size=6, max_size=6),
)
def test_claims_never_exceed_free_capacity(
    strict: bool, weights: list[int], free: int, due: list[int]
) -> None:
    names = [NAMES[i] for i in range(len(weights))]
    policy = Strict(names) if strict else weighted(*weights)
    backlog = Backlog(dict(zip(names, due, strict=False)))
    result = drive_pass(for_policy(policy), free, backlog)
    assert_within_free_capacity(result.rounds, free)
    assert len(result.dispatched) <= free


def test_a_store_returning_more_than_asked_is_refused() -> None:
    plan = for_policy(weighted(1, 1)).begin_pass(1)
    (request,) = plan.next_claims()
    with pytest.raises(ValueError, match="claim contract"):
        plan.claimed(request, [("a", 0), ("a", 1)])


def test_for_policy_validates_the_policy() -> None:
    with pytest.raises(ValueError, match=r"^Weighted dispatch needs at least one queue, all"):
        for_policy(Weighted([("a", 0)]))
    with pytest.raises(ValueError, match=r"^Strict dispatch needs at least one queue\.$"):
        for_policy(Strict())


# -- determinism ---------------------------------------------------------------------------------


def scenario() -> tuple[list[tuple[ClaimRequest, int | None]], list[Job]]:
    dispatcher = for_policy(weighted(7, 4, 2, 1))
    counter = itertools.count()
    backlog = Backlog({"a": 40, "b": UNLIMITED, "c": 3, "d": UNLIMITED},
                      fail=lambda n: next(counter) % 5 == 4)
    served = drive(dispatcher, backlog, [9, 1, 13, 4], 600)
    return backlog.claims, served


def test_the_same_inputs_give_the_same_schedule_every_run() -> None:
    first, second = scenario(), scenario()
    assert first == second
    assert len(first[1]) == 600


CORE = Path(rota.core.__file__).parent
FORBIDDEN = {
    "random", "secrets", "asyncio", "socket", "os", "io", "subprocess", "threading",
    "selectors", "sqlite3", "psycopg", "time", "uuid", "pathlib", "logging",
}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", sorted(CORE.rglob("*.py")), ids=lambda p: p.name)
def test_core_modules_import_no_randomness_io_or_asyncio(module: Path) -> None:
    imported = imports_of(module)
    assert {name.split(".")[0] for name in imported} & FORBIDDEN == set()
    # And the core depends only on itself (the one-way arrows)
    rota_imports = {name for name in imported if name.split(".")[0] == "rota"}
    assert all(name.startswith("rota.core") for name in rota_imports), rota_imports


# -- termination: a bounded number of round trips per pass, whatever the inputs ----------------


@settings(max_examples=150)
@given(
    weights=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    data=st.data(),
    pool=st.integers(1, 40),
)
def test_a_group_that_remembers_empty_queues_makes_a_bounded_number_of_round_trips(
    weights: list[int], data: st.DataObject, pool: int
) -> None:
    # Given a Weighted group that remembers empty Queues (as every Worker Group does), a
    # finite backlog per Queue, some Queues paused and some limited
    names = [NAMES[i] if i < len(NAMES) else f"q{i}" for i in range(len(weights))]
    policy = Weighted(list(zip(names, weights, strict=True)))
    backlog = dict(zip(names, data.draw(st.lists(
        st.integers(0, 50), min_size=len(names), max_size=len(names))), strict=True))
    paused = data.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
    limits = data.draw(st.dictionaries(st.sampled_from(names), st.integers(0, 3), max_size=2))
    # When the simulator (the group's own planner, driven as the worker drives it) runs
    # more passes than there are jobs
    result = simulate(policy, pool, sum(backlog.values()) + 3, backlog, paused=paused,
                      limits=limits)
    # Then every pass made at most one probe alone and 2 x (served Queues) claims, and
    # claimed no more than its free Workers
    for one in result.passes:
        probes = [trip for trip in one.round_trips if not trip.claims]
        assert len(probes) <= 1
        assert len(one.claims) <= 2 * len(names)
        assert len(one.order) <= pool
    # And every job of a Queue that is not paused and may lease was served
    served = result.served()
    for queue in names:
        if queue not in paused and limits.get(queue, 1) > 0:
            assert served[queue] == backlog[queue]
