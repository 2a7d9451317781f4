"""The worker registry's pure parts: the fairness view, policy round trips, minute buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota.core.workers import (
    GroupFairness,
    QueueShare,
    ServedCount,
    WorkerGroupInfo,
    WorkerInfo,
    dead_after,
    fairness,
    minute_of,
    policy_from_parts,
    policy_parts,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
FAIR = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


def count(queue: str, n: int, outcome: str = "succeeded", group: str = "fair",
          minute: datetime = T0) -> ServedCount:
    return ServedCount(group=group, queue=queue, outcome=outcome, count=n, minute=minute)


def test_served_shares_are_set_against_the_weights() -> None:
    # Given a stopped worker's group in the groups table and its history
    groups = [WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4, seen_at=T0)]
    served = [count("a", 50), count("a", 10, "retried"), count("b", 30), count("c", 10)]
    # When the view is built
    [view] = fairness(groups, [], served, T0)
    # Then each Queue has its target share and its served share, in the policy's order
    assert view == GroupFairness(
        group="fair", policy=FAIR, pool_size=4, workers=0, in_flight=0, served=100, since=T0,
        queues=(
            QueueShare("a", 6, 0.6, 60, 0.6, {"succeeded": 50, "retried": 10}),
            QueueShare("b", 3, 0.3, 30, 0.3, {"succeeded": 30}),
            QueueShare("c", 1, 0.1, 10, 0.1, {"succeeded": 10}),
        ),
    )


def test_rows_before_the_window_are_ignored_and_nothing_served_has_no_share() -> None:
    groups = [WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4)]
    [view] = fairness(groups, [], [count("a", 5, minute=T0 - timedelta(minutes=1))], T0)
    assert view.served == 0
    assert [q.served_share for q in view.queues] == [None, None, None]


def test_strict_groups_have_no_target_share_and_live_workers_count() -> None:
    strict = rota.Strict("critical", "bulk")
    live = WorkerInfo(
        id="h:1:t", host="h", pid=1, version="0", started_at=T0, last_seen=T0,
        dead_at=T0 + timedelta(minutes=3),
        groups=(WorkerGroupInfo(name="priority", policy=strict, pool_size=2, in_flight=2),),
    )
    dead = WorkerInfo(
        id="h:2:t", host="h", pid=2, version="0", started_at=T0, last_seen=T0, dead_at=T0,
        groups=(WorkerGroupInfo(name="priority", policy=strict, pool_size=2, in_flight=1),),
        alive=False,
    )
    [view] = fairness([], [live, dead], [count("bulk", 3, group="priority")], T0)
    assert (view.workers, view.in_flight, view.pool_size) == (1, 2, 2)
    assert [(q.queue, q.weight, q.target_share, q.served_share) for q in view.queues] == [
        ("critical", None, None, 0.0), ("bulk", None, None, 1.0)]


def test_a_queue_served_outside_the_current_policy_comes_last_and_unknown_groups_show() -> None:
    groups = [WorkerGroupInfo(name="fair", policy=FAIR, pool_size=4)]
    views = fairness(groups, [], [count("old", 2), count("x", 1, group="gone")], T0)
    assert [q.queue for q in views[0].queues] == ["a", "b", "c", "old"]
    assert views[0].queues[-1].weight is None
    assert views[1].group == "gone" and views[1].policy is None


@pytest.mark.parametrize("policy", [FAIR, rota.Strict("x", "y")])
def test_policies_round_trip_through_their_parts(policy: rota.DispatchPolicy) -> None:
    assert policy_from_parts(*policy_parts(policy)) == policy


def test_unreadable_policy_parts_are_refused() -> None:
    with pytest.raises(ValueError, match="unreadable"):
        policy_from_parts("weighted", ["a"], None)


def test_minute_buckets_and_the_dead_after_rule() -> None:
    assert minute_of(T0 + timedelta(seconds=59, microseconds=5)) == T0
    # Two refreshes missed in a row, and half an interval's grace: 50 s at the default 20 s.
    assert dead_after(timedelta(seconds=20)) == timedelta(seconds=50)
    assert dead_after(timedelta(seconds=1)) == timedelta(seconds=2.5)
