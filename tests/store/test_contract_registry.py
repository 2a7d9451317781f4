"""The store contract for the worker registry (worker rows, the per-minute served history,
the groups table), run unchanged against every store."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import rota
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
DEAD_AFTER = timedelta(seconds=180)


def fair_group(in_flight: int = 0) -> WorkerGroupInfo:
    return WorkerGroupInfo(
        name="fair", policy=rota.Weighted([("a", 6), ("b", 3), ("c", 1)]), pool_size=4,
        in_flight=in_flight, owner="fair@host:1:abc",
    )


def priority_group() -> WorkerGroupInfo:
    return WorkerGroupInfo(name="priority", policy=rota.Strict("critical", "bulk"), pool_size=2,
                           owner="priority@host:1:def")


def worker(worker_id: str = "host:1:tok", started_at: datetime = T0) -> WorkerInfo:
    return WorkerInfo(
        id=worker_id, host="host", pid=1, version="0.1.0", started_at=started_at,
        last_seen=started_at, dead_at=started_at + DEAD_AFTER,
        groups=(fair_group(), priority_group()),
    )


def served(group: str, queue: str, outcome: str, count: int) -> ServedCount:
    return ServedCount(group=group, queue=queue, outcome=outcome, count=count)


def test_a_registered_worker_is_listed_with_its_groups_and_policies(store: Store) -> None:
    # Given a worker registered at T0
    store.register_worker(worker(), T0)
    # When the registry is read a little later
    [listed] = store.list_workers(T0 + timedelta(seconds=1))
    # Then it is there, alive, with every field as registered
    assert (listed.id, listed.host, listed.pid, listed.version) == ("host:1:tok", "host", 1,
                                                                   "0.1.0")
    assert (listed.started_at, listed.last_seen, listed.dead_at) == (T0, T0, T0 + DEAD_AFTER)
    assert listed.alive
    assert listed.groups == (fair_group(), priority_group())
    assert listed.groups[0].kind == "weighted" and listed.groups[1].kind == "strict"
    assert listed.groups[0].weights == (("a", 6), ("b", 3), ("c", 1))
    assert listed.served == ()


def test_a_refresh_updates_liveness_in_flight_and_totals(store: Store) -> None:
    store.register_worker(worker(), T0)
    later = T0 + timedelta(seconds=20)
    totals = [served("fair", "a", "succeeded", 6), served("fair", "b", "retried", 1)]
    assert store.refresh_worker("host:1:tok", later, dead_at=later + DEAD_AFTER,
                                in_flight={"fair": 3}, served=totals, new=totals)
    [listed] = store.list_workers(later)
    assert listed.last_seen == later and listed.dead_at == later + DEAD_AFTER
    assert [g.in_flight for g in listed.groups] == [3, 0] and listed.in_flight == 3
    assert list(listed.served) == totals


def test_a_worker_past_its_dead_at_is_listed_as_dead(store: Store) -> None:
    store.register_worker(worker(), T0)
    assert store.list_workers(T0 + DEAD_AFTER - timedelta(microseconds=1))[0].alive
    assert not store.list_workers(T0 + DEAD_AFTER)[0].alive


def test_refreshing_an_unknown_worker_reports_it_and_writes_nothing(store: Store) -> None:
    new = [served("fair", "a", "succeeded", 2)]
    assert not store.refresh_worker("nobody", T0, dead_at=T0 + DEAD_AFTER, in_flight={},
                                    served=new, new=new)
    assert store.list_workers(T0) == []
    assert store.served_counts(T0 - timedelta(hours=1)) == []


def test_unregister_removes_only_that_worker(store: Store) -> None:
    store.register_worker(worker("w1"), T0)
    store.register_worker(worker("w2", T0 + timedelta(seconds=1)), T0 + timedelta(seconds=1))
    assert store.unregister_worker("w1")
    assert not store.unregister_worker("w1")
    assert [w.id for w in store.list_workers(T0)] == ["w2"]


def test_workers_are_listed_by_start_time(store: Store) -> None:
    store.register_worker(worker("z", T0), T0)
    store.register_worker(worker("a", T0 + timedelta(seconds=5)), T0 + timedelta(seconds=5))
    assert [w.id for w in store.list_workers(T0)] == ["z", "a"]


def test_remove_dead_workers_removes_rows_dead_before_the_cutoff(store: Store) -> None:
    store.register_worker(worker("old"), T0)
    fresh = T0 + timedelta(hours=1)
    store.register_worker(worker("fresh", fresh), fresh)
    assert store.remove_dead_workers(T0 + DEAD_AFTER) == 0  # dead_at == cutoff: kept
    assert store.remove_dead_workers(T0 + DEAD_AFTER + timedelta(seconds=1)) == 1
    assert [w.id for w in store.list_workers(fresh)] == ["fresh"]


def test_registering_again_replaces_the_row(store: Store) -> None:
    store.register_worker(worker(), T0)
    again = T0 + timedelta(minutes=10)
    store.register_worker(worker(started_at=again), again)
    [listed] = store.list_workers(again)
    assert listed.started_at == again and listed.last_seen == again


def test_new_served_counts_are_summed_into_the_minute_of_the_refresh(store: Store) -> None:
    # Given one worker refreshed twice in one minute and once in the next,
    # and a second worker refreshed in the first minute
    store.register_worker(worker("w1"), T0)
    store.register_worker(worker("w2"), T0)
    minute = T0.replace(second=0)

    def refresh(worker_id: str, at: datetime, *new: ServedCount) -> None:
        assert store.refresh_worker(worker_id, at, dead_at=at + DEAD_AFTER, in_flight={},
                                    served=list(new), new=list(new))

    refresh("w1", T0, served("fair", "a", "succeeded", 6), served("fair", "b", "succeeded", 3))
    refresh("w1", T0 + timedelta(seconds=20), served("fair", "a", "succeeded", 4))
    refresh("w2", T0 + timedelta(seconds=25), served("fair", "a", "succeeded", 1),
            served("fair", "a", "retried", 2))
    refresh("w1", T0 + timedelta(seconds=40), served("fair", "c", "dead_lettered", 1))
    # Then the history holds per minute the sums of every worker, in key order
    assert store.served_counts(T0) == [
        ServedCount("fair", "a", "retried", 2, minute),
        ServedCount("fair", "a", "succeeded", 11, minute),
        ServedCount("fair", "b", "succeeded", 3, minute),
        ServedCount("fair", "c", "dead_lettered", 1, minute + timedelta(minutes=1)),
    ]
    # And `since` selects whole minutes from its own minute on
    assert store.served_counts(minute + timedelta(minutes=1, seconds=59)) == [
        ServedCount("fair", "c", "dead_lettered", 1, minute + timedelta(minutes=1)),
    ]


def test_duplicate_keys_in_one_refresh_are_summed(store: Store) -> None:
    store.register_worker(worker(), T0)
    new = [served("fair", "a", "succeeded", 2), served("fair", "a", "succeeded", 3)]
    assert store.refresh_worker("host:1:tok", T0, dead_at=T0 + DEAD_AFTER, in_flight={},
                                served=[], new=new)
    assert [c.count for c in store.served_counts(T0)] == [5]


def test_prune_served_deletes_minutes_before_the_cutoff(store: Store) -> None:
    store.register_worker(worker(), T0)
    for minutes in range(3):
        at = T0 + timedelta(minutes=minutes)
        store.refresh_worker("host:1:tok", at, dead_at=at + DEAD_AFTER, in_flight={},
                             served=[], new=[served("fair", "a", "succeeded", 1)])
    assert store.prune_served(T0.replace(second=0) + timedelta(minutes=2)) == 2
    assert [c.minute for c in store.served_counts(T0)] == [
        T0.replace(second=0) + timedelta(minutes=2)]


def test_the_groups_table_keeps_the_last_registered_policy_after_the_worker_left(
    store: Store,
) -> None:
    store.register_worker(worker(), T0)
    changed = WorkerInfo(
        id="other", host="h2", pid=2, version="0.1.0", started_at=T0, last_seen=T0,
        dead_at=T0 + DEAD_AFTER,
        groups=(WorkerGroupInfo(name="fair", policy=rota.Weighted([("a", 1), ("b", 1)]),
                                pool_size=8),),
    )
    later = T0 + timedelta(seconds=5)
    store.register_worker(changed, later)
    store.unregister_worker("host:1:tok")
    store.unregister_worker("other")
    assert store.worker_groups() == [
        WorkerGroupInfo(name="fair", policy=rota.Weighted([("a", 1), ("b", 1)]), pool_size=8,
                        seen_at=later),
        WorkerGroupInfo(name="priority", policy=rota.Strict("critical", "bulk"), pool_size=2,
                        seen_at=T0),
    ]


def test_hostile_names_round_trip(store: Store) -> None:
    name = "grp-\u00e9\u2603-\"quoted\"-[/]-{braces}"
    group = WorkerGroupInfo(name=name, policy=rota.Weighted([("q'; DROP TABLE x;--", 2)]),
                            pool_size=1)
    info = WorkerInfo(id="h:1:t", host="h\u00f6st", pid=7, version="0.1.0", started_at=T0,
                      last_seen=T0, dead_at=T0 + DEAD_AFTER, groups=(group,))
    store.register_worker(info, T0)
    new = [served(name, "q'; DROP TABLE x;--", "succeeded", 1)]
    store.refresh_worker("h:1:t", T0, dead_at=T0 + DEAD_AFTER, in_flight={name: 1},
                         served=new, new=new)
    [listed] = store.list_workers(T0)
    assert listed.groups[0].name == name and listed.groups[0].in_flight == 1
    assert listed.host == "h\u00f6st" and listed.served[0].queue == "q'; DROP TABLE x;--"
    assert store.worker_groups()[0].policy == group.policy
    assert store.served_counts(T0)[0].group == name


def test_a_claim_returns_the_trace_context_stored_at_enqueue(store: Store) -> None:
    # Given one batch with a job enqueued inside a span and one outside, and a plain batch
    from rota.core.jobs import NewJob

    carrier = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'
    traced = store.enqueue([NewJob("job", "q", T0, trace_context=carrier),
                            NewJob("job", "q", T0)], T0)
    plain = store.enqueue([NewJob("job", "q", T0)], T0)
    # When they are claimed
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + DEAD_AFTER)
    # Then each carries what was stored with it
    assert [(job.id, job.trace_context) for job in claimed] == [
        (traced[0], carrier), (traced[1], None), (plain[0], None)]


def test_a_keyed_enqueue_keeps_the_trace_context_too(store: Store) -> None:
    from rota.core.jobs import NewJob

    carrier = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'
    ids = store.enqueue([NewJob("job", "q", T0, key="k1", trace_context=carrier),
                         NewJob("job", "q", T0, key="k2")], T0)
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + DEAD_AFTER)
    assert [(job.id, job.trace_context) for job in claimed] == [
        (ids[0], carrier), (ids[1], None)]


def test_a_workers_clock_offset_is_stored_and_refreshed(store: Store) -> None:
    # Given a worker whose machine ran 2 minutes ahead of the store's clock at registration
    store.register_worker(replace(worker(), clock_offset=timedelta(seconds=120.25)), T0)
    [listed] = store.list_workers(T0)
    assert listed.clock_offset == timedelta(seconds=120.25)
    # When a refresh measures it 10 minutes behind
    later = T0 + timedelta(seconds=20)
    assert store.refresh_worker("host:1:tok", later, dead_at=later + DEAD_AFTER,
                                in_flight={}, served=[],
                                clock_offset=timedelta(minutes=-10, microseconds=-500))
    # Then the registry says so
    [listed] = store.list_workers(later)
    assert listed.clock_offset == timedelta(minutes=-10, microseconds=-500)
    # And a worker registered without one has none
    store.register_worker(worker("host:2:tok"), T0)
    assert store.list_workers(later)[1].clock_offset == timedelta(0)
