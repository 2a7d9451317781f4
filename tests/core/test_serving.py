"""rota.core.serving: who serves a Queue now, from the registry's rows and the stored
policies (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rota import Strict, Weighted
from rota.core.group_policies import StoredPolicy
from rota.core.queue_controls import QueueInfo
from rota.core.serving import (
    entry_for,
    live_policies,
    policies_of,
    serving_groups,
    unserved_with_due_jobs,
)
from rota.core.workers import WorkerGroupInfo, WorkerInfo

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def worker(worker_id: str, *groups: tuple[str, object], alive: bool = True,
           started: int = 0) -> WorkerInfo:
    at = T0 + timedelta(seconds=started)
    return WorkerInfo(id=worker_id, host="h", pid=1, version="x", started_at=at,
                      last_seen=at, dead_at=at + timedelta(minutes=1), alive=alive,
                      groups=tuple(WorkerGroupInfo(name, policy, 1)  # type: ignore[arg-type]
                                   for name, policy in groups))


def row(group: str, kind: str, queues: tuple[str, ...], weights: tuple[int, ...] | None,
        version: int = 1) -> StoredPolicy:
    return StoredPolicy(group, kind, queues, weights, version, T0)


def test_a_queue_matches_one_entry_with_its_weight_or_none_under_strict() -> None:
    assert entry_for(Weighted([("a", 6), ("b", 1)]), "b") == ("b", 1)
    assert entry_for(Weighted([("a", 6)]), "c") is None
    assert entry_for(Strict("a", "b"), "b") == ("b", None)
    assert entry_for(Strict("a"), "ab") is None


def test_serving_groups_answers_per_group_the_weight() -> None:
    policies = {"fair": Weighted([("a", 6), ("b", 1)]), "fast": Strict("b"),
                "other": Strict("c")}
    assert serving_groups("b", policies) == {"fair": 1, "fast": None}
    assert serving_groups("z", policies) == {}


def test_live_policies_take_the_stored_row_over_the_code_and_ignore_the_dead() -> None:
    workers = [
        worker("h:1", ("io", Strict("sendgrid")), ("bulk", Strict("x"))),
        worker("h:2", ("gone", Strict("y")), alive=False),
        # A later-started worker of io with another code (a deploy): its code wins
        worker("h:3", ("io", Strict("sendgrid", "reports")), started=5),
    ]
    stored = {
        "bulk": row("bulk", "weighted", ("x", "urgent"), (1, 2), version=4),
        "gone": row("gone", "strict", ("z",), None),
    }
    found = live_policies(workers, stored)
    assert list(found) == ["bulk", "io"]
    assert found["bulk"].policy == Weighted([("x", 1), ("urgent", 2)])
    assert found["bulk"].stored is stored["bulk"]
    assert found["io"].policy == Strict("sendgrid", "reports") and found["io"].stored is None
    assert serving_groups("urgent", policies_of(found)) == {"bulk": 2}


def test_a_stored_row_no_worker_can_use_leaves_the_code_in_force() -> None:
    found = live_policies([worker("h:1", ("io", Strict("a")))],
                          {"io": row("io", "fancy", ("b",), None)})
    assert found["io"].policy == Strict("a") and found["io"].stored is None
    assert found["io"].unusable is not None and "cannot be used" in found["io"].unusable


def test_unserved_queues_are_those_with_due_jobs_no_group_serves() -> None:
    infos = [QueueInfo("a", due=2), QueueInfo("b", due=0), QueueInfo("c", due=1, paused=True),
             QueueInfo("d", due=5)]
    unserved = unserved_with_due_jobs(infos, {"g": Strict("d")})
    assert [info.name for info in unserved] == ["a", "c"]


def test_a_familys_entry_is_never_an_unserved_queue() -> None:
    # Given a family with settings whose entry sums its members' due jobs, and a policy
    # that names one member only
    infos = [QueueInfo("t-*", due=3, paused=True, members=2), QueueInfo("t-1", due=1),
             QueueInfo("t-2", due=2)]
    # Then the unserved Queue is the member nobody serves, never the family's entry
    unserved = unserved_with_due_jobs(infos, {"g": Strict("t-1")})
    assert [info.name for info in unserved] == ["t-2"]
