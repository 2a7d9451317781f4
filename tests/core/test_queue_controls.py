"""Queue controls in the pure core: the limit rule, the room rule, QueueInfo, and what a
paused or limited Queue does to a pass (found empty: slots reflow, credit stands still,
nothing charged; Strict skips it), driven without a store."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota import JobState, Strict, Weighted
from rota.core.dispatch import WeightedDispatcher, for_policy
from rota.core.queue_controls import (
    QueueInfo,
    QueueSettings,
    build_queue_infos,
    room,
    validate_queue_limit,
)
from rota.core.simulation import simulate

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = "abcde"
W631 = Weighted([("a", 6), ("b", 3), ("c", 1)])


# -- the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 0, 1, 10**6])
def test_a_limit_is_an_int_of_zero_or_more_or_none(limit: int | None) -> None:
    assert validate_queue_limit(limit) == limit


@pytest.mark.parametrize(
    ("limit", "error", "words"),
    [(-1, ValueError, "from 0 to 2147483647"), (True, TypeError, r"got True \(bool\)"),
     ("2", TypeError, r"got '2' \(str\)"), (2.0, TypeError, "None for no limit"),
     (2**31, ValueError, r"from 0 to 2147483647.*; got 2147483648$")],
)
def test_a_bad_limit_says_what_a_limit_is(
    limit: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        validate_queue_limit(limit)


@pytest.mark.parametrize(
    ("settings", "leased", "wanted", "expected"),
    [
        (None, 7, 5, 5),                                  # no settings: all it asks for
        (QueueSettings("q"), 7, 5, 5),                    # defaults: the same
        (QueueSettings("q", paused=True), 0, 5, 0),       # paused: nothing
        (QueueSettings("q", paused=True, limit=9), 0, 5, 0),
        (QueueSettings("q", limit=3), 0, 5, 3),           # capped by the limit
        (QueueSettings("q", limit=3), 2, 5, 1),           # less what is leased
        (QueueSettings("q", limit=3), 3, 5, 0),           # full
        (QueueSettings("q", limit=3), 8, 5, 0),           # over (limit lowered): nothing
        (QueueSettings("q", limit=0), 0, 5, 0),
        (QueueSettings("q", limit=10), 0, 4, 4),          # never more than asked
    ],
)
def test_room(
    settings: QueueSettings | None, leased: int, wanted: int, expected: int
) -> None:
    assert room(settings, leased, wanted) == expected


def test_queue_infos_list_queues_with_jobs_or_settings_sorted_with_every_state() -> None:
    infos = build_queue_infos(
        [QueueSettings("zeta", paused=True), QueueSettings("reset"),
         QueueSettings("mail", limit=2)],
        {("mail", JobState.SCHEDULED): 3, ("alpha", JobState.SUCCEEDED): 1,
         ("gone", JobState.LEASED): 0},
        {"mail": (2, T0)},
    )
    zero = dict.fromkeys(JobState, 0)
    assert infos == [
        QueueInfo("alpha", counts={**zero, JobState.SUCCEEDED: 1}),
        QueueInfo("mail", limit=2, counts={**zero, JobState.SCHEDULED: 3}, due=2,
                  oldest_due_at=T0),
        QueueInfo("zeta", paused=True, counts=zero),
    ]


# -- what they do to a pass -------------------------------------------------------------------


def test_weighted_with_a_paused_queue_serves_the_others_by_their_weights() -> None:
    result = simulate(W631, 10, 7, paused=["b"])
    assert Counter(q for one in result.passes for q in one.order) == {"a": 60, "c": 10}
    # Every pass still filled its 10 slots: b's share reflowed to a and c
    assert all(len(one.order) == 10 for one in result.passes)
    # b was asked in the first round of each pass and found empty
    assert all(one.claims[1].queues == ("b",) and one.claims[1].got == 0
               for one in result.passes)


def test_a_limited_queue_takes_at_most_its_limit_per_pass_and_the_rest_reflows() -> None:
    result = simulate(W631, 10, 5, limits={"a": 2})
    first = result.passes[0]
    assert [(c.queues, c.limit, c.got) for c in first.claims[:3]] == [
        (("a",), 6, 2), (("b",), 3, 3), (("c",), 1, 1)]
    assert all(Counter(one.order)["a"] == 2 and len(one.order) == 10
               for one in result.passes)


def test_strict_skips_a_paused_queue_and_takes_a_limited_one_s_room() -> None:
    paused = simulate(Strict("a", "b", "c"), 5, 1, paused=["a"])
    assert paused.passes[0].order == ("b",) * 5
    limited = simulate(Strict("a", "b", "c"), 5, 1, limits={"a": 1, "b": 2})
    assert limited.passes[0].order == ("a", "b", "b", "c", "c")
    assert [c.got for c in limited.passes[0].claims] == [5]


def test_a_paused_queue_s_credit_stands_still_and_it_is_charged_nothing() -> None:
    # Given 6:3:1 where b is paused: its claims find nothing
    dispatcher = for_policy(W631)
    assert isinstance(dispatcher, WeightedDispatcher)
    paused = {"b"}

    def one_pass() -> list[str]:
        plan = dispatcher.begin_pass(10)
        while requests := plan.next_claims():
            for request in requests:
                (queue,) = request.queues
                plan.claimed(request, [] if queue in paused else [queue] * request.limit)
        order = plan.dispatch_order()
        for _ in order:
            plan.serve()
        return order

    # When many passes run while b is paused
    for _ in range(50):
        before = dispatcher.credits[1]
        assert "b" not in one_pass()
        # Then b's credit never moves
        assert dispatcher.credits[1] == before == 0
    # And once resumed, b gets at most weight + 1 turns in the next window of 10
    paused.clear()
    window = one_pass()
    assert window.count("b") <= 4
    assert Counter(q for _ in range(10) for q in one_pass()) == {"a": 60, "b": 30, "c": 10}


limits_strategy = st.one_of(st.none(), st.integers(0, 6))


@settings(max_examples=150)
@given(
    weights=st.lists(st.integers(1, 10), min_size=1, max_size=5),
    pool=st.integers(1, 30),
    data=st.data(),
)
def test_every_pass_fills_what_the_controls_allow_and_never_more(
    weights: list[int], pool: int, data: st.DataObject
) -> None:
    # Given any weights, pool size, paused set and limits, every Queue backlogged
    queues = NAMES[: len(weights)]
    paused = data.draw(st.sets(st.sampled_from(queues)))
    limits = data.draw(st.dictionaries(st.sampled_from(queues), limits_strategy))
    policy = data.draw(st.sampled_from([
        Weighted(list(zip(queues, weights, strict=True))), Strict(list(queues))]))
    # When 12 passes are simulated
    result = simulate(policy, pool, 12, paused=paused, limits=limits)
    # Then each pass takes nothing from paused Queues, at most its limit from each
    # limited one, and fills every slot the controls leave open (work conservation)
    rooms = [0 if q in paused else limits.get(q) for q in queues]
    open_slots = pool if None in rooms else min(pool, sum(r or 0 for r in rooms))
    for one in result.passes:
        served = Counter(one.order)
        assert not set(served) & paused
        for queue, limit in limits.items():
            assert limit is None or served[queue] <= limit
        assert len(one.order) == open_slots
        assert len(one.claims) <= 2 * len(queues)


def test_the_simulator_refuses_controls_on_queues_it_does_not_serve() -> None:
    with pytest.raises(ValueError, match="paused names Queue 'x'"):
        simulate(W631, 10, 1, paused=["x"])
    with pytest.raises(ValueError, match="limit names Queue 'x'"):
        simulate(W631, 10, 1, limits={"x": 1})
    with pytest.raises(ValueError, match="from 0 to 2147483647"):
        simulate(W631, 10, 1, limits={"a": -1})
