"""Queue families in policies, through the public API on every store: a name ending in `*`
serves every Queue whose name starts with what comes before it; a member joins by its
first enqueue, with no policy call and no restart; each member takes part as its own
Queue with the family's weight; explicit entries first win; ties go by entry position,
then member name. The claims equal those of the same policy with its members listed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rota
from rota.store.memory import MemoryStore
from tests.app.conftest import Recorder

MakeApp = Callable[[], rota.App]
MakeRecorder = Callable[[rota.App], Recorder]


def group(policy: rota.DispatchPolicy, pool: int = 1) -> rota.WorkerGroupOptions:
    return rota.WorkerGroupOptions(name="g", policy=policy, pool_size=pool)


def test_a_weighted_family_serves_its_members_as_queues_listed_in_name_order(
        make_app: MakeApp, make_recorder: MakeRecorder) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group(rota.Weighted([("tenant-acme", 2), ("tenant-*", 1)])))
    for queue in ("tenant-c", "tenant-acme", "tenant-b", "internal"):
        recorder.enqueue(queue, 4)
    assert app.run_until_idle() == 12  # "internal" is no member
    # Windows of 4 claims: acme 2, b 1, c 1; ties go to acme (the first entry), then to b
    # before c (name order). Once acme is drained, b and c alternate.
    assert recorder.log == ["tenant-acme", "tenant-b", "tenant-c", "tenant-acme"] * 2 + [
        "tenant-b", "tenant-c"] * 2


def test_a_member_joins_by_its_first_enqueue(make_app: MakeApp,
                                             make_recorder: MakeRecorder) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group(rota.Strict("urgent-*", "bulk"), pool=3))
    recorder.enqueue("bulk", 2)
    assert app.run_until_idle() == 2
    recorder.enqueue("urgent-new", 1)  # a Queue no one listed
    recorder.enqueue("bulk", 1)
    assert app.run_until_idle() == 2
    assert recorder.log[2:] == ["urgent-new", "bulk"]  # the family first, as written


def test_a_member_enqueued_by_another_app_is_found_within_a_poll_interval(
        make_app: MakeApp, make_recorder: MakeRecorder, clock: rota.VirtualClock) -> None:
    """No hint reaches this App (another one enqueued): its survey of the store finds
    the member, at the first pass after one poll interval."""
    worker, producer = make_app(), make_app()
    recorder = make_recorder(worker)
    producing = make_recorder(producer)
    producing.enqueue("tenant-late", 2)
    worker.add_worker_group(group(rota.Weighted([("tenant-*", 1)])))
    assert worker.run_until_idle() == 2  # the first pass surveys
    producing.enqueue("tenant-later", 1)
    assert worker.run_until_idle() == 0  # no hint, and the last survey is recent
    clock.advance(1)
    assert worker.run_until_idle() == 1
    assert recorder.log == ["tenant-late", "tenant-late", "tenant-later"]


def test_an_entry_held_entirely_by_an_earlier_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'tenant-vip-\*' comes after 'tenant-\*'"):
        rota.Weighted([("tenant-*", 1), ("tenant-vip-*", 5)]).validate()
    with pytest.raises(ValueError, match=r"'tenant-acme' comes after 'tenant-\*'"):
        rota.Strict("tenant-*", "tenant-acme").validate()
    with pytest.raises(ValueError, match=r"'a' comes after '\*'"):
        rota.Strict("*", "a").validate()
    # Overrides first are the way: these are valid.
    rota.Weighted([("tenant-acme", 5), ("tenant-vip-*", 3), ("tenant-*", 1)]).validate()


@pytest.mark.parametrize("name", ["a*b", "t*-*", "**", "*a", "x y*"])
def test_a_star_inside_a_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"family|whitespace"):
        rota.Strict(name).validate()


def test_served_queues_lists_explicit_queues_and_the_members_the_store_knows(
        make_app: MakeApp, make_recorder: MakeRecorder) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group(rota.Weighted([("t-b", 5), ("t-vip-*", 3), ("t-*", 1)])))
    assert app.served_queues("g") == [("t-b", 5)]
    for queue in ("t-z", "t-vip-a", "t-a", "u-1"):
        recorder.enqueue(queue)
    assert app.served_queues("g") == [("t-b", 5), ("t-vip-a", 3), ("t-a", 1), ("t-z", 1)]
    app.set_group_policy("g", rota.Strict("u-*", "t-b"))
    assert app.served_queues("g") == [("u-1", None), ("t-b", None)]


def test_a_queue_name_holds_no_star(make_app: MakeApp, make_recorder: MakeRecorder) -> None:
    app = make_app()
    recorder = make_recorder(app)
    with pytest.raises(ValueError, match=r"must not contain '\*'.*'tenant-1'"):
        recorder.enqueue("tenant-*")
    assert app.queues() == []


# -- the claims equal those of the members listed ------------------------------------------

member_names = st.sampled_from(["t-a", "t-b", "t-c", "t-d", "t-vip-a", "t-vip-b", "u-a"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    backlog=st.dictionaries(member_names, st.integers(1, 6), min_size=1, max_size=6),
    family_weight=st.integers(1, 4),
    vip_weight=st.integers(1, 4),
    override=st.integers(1, 6),
    pool=st.integers(1, 4),
    strict=st.booleans(),
)
def test_a_family_claims_as_its_members_listed_in_tie_break_order(
        backlog: dict[str, int], family_weight: int, vip_weight: int, override: int,
        pool: int, strict: bool) -> None:
    entries = [("t-b", override), ("t-vip-*", vip_weight), ("t-*", family_weight)]
    family_entry_of = {"t-b": 0, "t-vip-a": 1, "t-vip-b": 1}
    members = sorted((family_entry_of.get(queue, 2), queue) for queue in backlog
                     if queue.startswith("t-") and queue != "t-b")
    listed = [entries[0]] + [(queue, entries[index][1]) for index, queue in members]
    if strict:
        written: rota.DispatchPolicy = rota.Strict(*(name for name, _ in entries))
        explicit: rota.DispatchPolicy = rota.Strict(*(name for name, _ in listed))
    else:
        written, explicit = rota.Weighted(entries), rota.Weighted(listed)
    assert run_log(written, [backlog], pool) == run_log(explicit, [backlog], pool)


@settings(max_examples=60, deadline=None)
@given(
    waves=st.lists(st.dictionaries(member_names, st.integers(1, 5), min_size=1, max_size=4),
                   min_size=2, max_size=4),
    family_weight=st.integers(1, 3),
    override=st.integers(1, 4),
    pool=st.integers(1, 3),
)
def test_members_joining_later_claim_as_queues_listed_and_idle_until_then(
        waves: list[dict[str, int]], family_weight: int, override: int, pool: int) -> None:
    """Members joining between drives (their first enqueue) take part as Queues listed
    from the start that were idle until then: their own credit, from where an idle Queue
    stands."""
    everyone = sorted({queue for wave in waves for queue in wave if queue.startswith("t-")
                       and queue != "t-b"})
    written = rota.Weighted([("t-b", override), ("t-*", family_weight)])
    explicit = rota.Weighted([("t-b", override)] + [(q, family_weight) for q in everyone])
    assert run_log(written, waves, pool) == run_log(explicit, waves, pool)


def run_log(policy: rota.DispatchPolicy, waves: list[dict[str, int]], pool: int) -> list[str]:
    """What one group with `policy` runs, wave after wave: each wave's jobs enqueued, then
    one `run_until_idle()`."""
    app = rota.App(MemoryStore(), clock=rota.VirtualClock())
    log: list[str] = []

    @app.job("record")
    def record(queue: str) -> None:
        log.append(queue)

    app.add_worker_group(group(policy, pool))
    for wave in waves:
        for queue, count in wave.items():
            record.configure(queue=queue).enqueue_many([(queue,)] * count)
        app.run_until_idle()
    app.close()
    return log
