"""'When will it run?': the pure estimate (rota.core.estimate)."""

from __future__ import annotations

import pytest

from rota.core.estimate import MAX_REPLAYED_JOBS, StartEstimate, combine, estimate_start
from rota.core.policy import Strict, Weighted

FAIR = Weighted([("a", 6), ("b", 3), ("c", 1)])


def test_weighted_replay_counts_the_jobs_its_policy_puts_first() -> None:
    # Given a 6:3:1 group with long backlogs everywhere, and c's next job (position 0)
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=10,
                              backlog={"a": 100, "b": 100, "c": 100}, queue="c",
                              position=0, rate_per_s=10.0)
    # Then the replay dispatches a,b,a,a,b,a before c (the 7th slot): 6 jobs ahead
    assert estimate.ahead == 6
    assert estimate.seconds == pytest.approx(0.6)
    assert "Weighted 6:3:1" in estimate.basis and "0 due job(s) ahead" in estimate.basis


def test_weighted_position_deep_in_the_queue_scales_with_its_share() -> None:
    # Given c's 10th due job: c gets 1 slot in 10, so about 90 jobs (its own 9 too) go first
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=10,
                              backlog={"a": 1000, "b": 1000, "c": 1000}, queue="c",
                              position=9, rate_per_s=100.0)
    assert estimate.ahead is not None and 95 <= estimate.ahead <= 100
    assert estimate.seconds == pytest.approx(estimate.ahead / 100.0)


def test_empty_queues_take_no_slots_so_the_job_runs_sooner() -> None:
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=10,
                              backlog={"a": 0, "b": 0, "c": 5}, queue="c", position=5,
                              rate_per_s=1.0)
    assert estimate.ahead == 5


def test_strict_puts_the_earlier_queues_backlog_first() -> None:
    estimate = estimate_start(group="prio", policy=Strict("critical", "bulk"), pool_size=4,
                              backlog={"critical": 30, "bulk": 7}, queue="bulk", position=7,
                              rate_per_s=2.0)
    assert estimate.ahead == 37 and estimate.seconds == pytest.approx(18.5)
    assert "Strict order" in estimate.basis


def test_paused_queue_or_limit_zero_has_no_estimate() -> None:
    paused = estimate_start(group="fair", policy=FAIR, pool_size=10, backlog={"c": 3},
                            queue="c", position=3, rate_per_s=5.0, paused=["c"])
    assert paused.seconds is None and "paused" in paused.basis
    zero = estimate_start(group="fair", policy=FAIR, pool_size=10, backlog={"c": 3},
                          queue="c", position=3, rate_per_s=5.0, limits={"c": 0})
    assert zero.seconds is None and "limit 0" in zero.basis


def test_a_limit_spreads_the_queue_over_more_passes() -> None:
    # Given a pool of 10 and b limited to 1 per pass: b's 3rd job waits two passes
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=10,
                              backlog={"a": 100, "b": 100, "c": 100}, queue="b",
                              position=2, rate_per_s=10.0, limits={"b": 1})
    assert estimate.ahead is not None and estimate.ahead >= 20


def test_no_rate_means_no_seconds_but_the_replay_is_shown() -> None:
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=10, backlog={"a": 4},
                              queue="a", position=0, rate_per_s=None)
    assert estimate.seconds is None and estimate.ahead == 0
    assert "no served history" in estimate.basis


def test_huge_backlogs_are_replayed_scaled() -> None:
    big = 50 * MAX_REPLAYED_JOBS
    estimate = estimate_start(group="fair", policy=FAIR, pool_size=20,
                              backlog={"a": big, "b": big, "c": big}, queue="c",
                              position=big // 10, rate_per_s=1000.0)
    assert estimate.ahead is not None
    # c has 1 slot in 10: its own 100,000 jobs ahead and 9 others for each
    assert estimate.ahead == pytest.approx(big, rel=0.02)
    assert "scaled" in estimate.basis


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="does not serve"):
        estimate_start(group="g", policy=FAIR, pool_size=1, backlog={}, queue="x",
                       position=0, rate_per_s=1.0)
    with pytest.raises(ValueError, match="position"):
        estimate_start(group="g", policy=FAIR, pool_size=1, backlog={}, queue="a",
                       position=-1, rate_per_s=1.0)


def test_combine_adds_rates_of_parallel_groups() -> None:
    def one(seconds: float | None) -> StartEstimate:
        return StartEstimate("g", "q", 0, 0, 1.0, seconds, "")

    assert combine([one(10.0), one(10.0)]) == pytest.approx(5.0)
    assert combine([one(None), one(4.0)]) == pytest.approx(4.0)
    assert combine([one(None)]) is None
    assert combine([one(0.0), one(3.0)]) == 0.0


@pytest.mark.parametrize(("kwargs", "why"), [
    ({"paused": ["c"]}, "paused"),
    ({"limits": {"c": 0}}, "limit 0"),
    ({"rate_per_s": None}, "history"),
    # A rate read over the parts of minutes a group has served (its first minute, say)
    # is far too low: 45,030 s for a job a few seconds away. No number until it has a
    # fully busy minute on record.
    ({"settled": False}, "history"),
    ({}, None),
])
def test_an_estimate_says_why_it_has_no_number(kwargs: dict[str, object],
                                               why: str | None) -> None:
    arguments: dict[str, object] = {
        "group": "fair", "policy": FAIR, "pool_size": 10,
        "backlog": {"a": 100, "b": 100, "c": 100}, "queue": "c", "position": 0,
        "rate_per_s": 10.0, **kwargs}
    estimate = estimate_start(**arguments)  # type: ignore[arg-type]
    assert estimate.why == why
    assert (estimate.seconds is None) == (why is not None)
