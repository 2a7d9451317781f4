"""Dispatch through the App on every store kind: the spec's promises end to end."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable

import pytest

import rota
from rota import JobState, Strict, Weighted, WorkerGroupOptions
from rota.store.base import StoreError
from tests.app.conftest import Recorder, RecordingStore

MakeApp = Callable[[], rota.App]
MakeRecorder = Callable[[rota.App], Recorder]
MakeRecordingApp = Callable[..., tuple[rota.App, RecordingStore]]

W631 = Weighted([("a", 6), ("b", 3), ("c", 1)])
PATTERN_631 = list("abaabacaba")


def group(name: str, policy: rota.DispatchPolicy, **options: object) -> WorkerGroupOptions:
    return WorkerGroupOptions(name=name, policy=policy, **options)  # type: ignore[arg-type]


def weighted_app(
    app: rota.App, recorder: Recorder, backlog: dict[str, int], **options: object
) -> None:
    app.add_worker_group(group("fair", W631, **options))
    for queue, count in backlog.items():
        recorder.enqueue(queue, count)


@pytest.mark.parametrize(
    "options", [{"pool_size": 1}, {"pool_size": 3}, {"pool_size": 7}, {"pool_size": 10},
                {"pool_size": 64}, {"pool_size": 20, "max_claim_batch": 4}],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_631_sequence_for_any_pool_size(
    make_app: MakeApp, make_recorder: MakeRecorder, options: dict[str, object]
) -> None:
    # Given 6:3:1 with every Queue backlogged for the first 100 executions
    app = make_app()
    recorder = make_recorder(app)
    weighted_app(app, recorder, {"a": 70, "b": 40, "c": 20}, **options)
    # When run until idle
    assert app.run_until_idle() == 130
    # Then the first 100 executions repeat a,b,a,a,b,a,c,a,b,a
    assert recorder.log[:100] == PATTERN_631 * 10


def test_1000_executions_split_600_300_100(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    app = make_app()
    recorder = make_recorder(app)
    weighted_app(app, recorder, {"a": 650, "b": 350, "c": 150}, pool_size=20)
    app.run_until_idle()
    assert Counter(recorder.log[:1000]) == {"a": 600, "b": 300, "c": 100}


def test_one_claim_per_queue_per_pass_sized_by_the_weights(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1, pool 10, all backlogged (30 passes' worth)
    app, store = make_recording_app()
    recorder = make_recorder(app)
    weighted_app(app, recorder, {"a": 60, "b": 30, "c": 10}, pool_size=10)
    # When run until idle
    app.run_until_idle()
    # Then each full pass cost exactly one claim per Queue: a 6, b 3, c 1
    assert store.claims[:30] == [(("a",), 6, 6), (("b",), 3, 3), (("c",), 1, 1)] * 10
    assert recorder.log == PATTERN_631 * 10


def test_a_short_queue_reflows_within_the_pass(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1, pool 10, and a with only 2 due jobs
    app, store = make_recording_app()
    recorder = make_recorder(app)
    weighted_app(app, recorder, {"a": 2, "b": 50, "c": 50}, pool_size=10)
    # When run until idle
    app.run_until_idle()
    # Then the first pass claimed a's 2, found a empty, and filled its 4 other slots
    # from b and c in the same pass
    first_pass = store.claims[:5]
    assert first_pass[:3] == [(("a",), 6, 2), (("b",), 3, 3), (("c",), 1, 1)]
    assert {claim[0] for claim in first_pass[3:]} == {("b",), ("c",)}
    assert sum(claim[1] for claim in first_pass[3:]) == 4
    assert Counter(recorder.log[:10]) == {"a": 2, "b": 6, "c": 2}


def test_a_pool_of_one_never_stalls_behind_two_empty_queues(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given 1:1:1, one Worker, a and b empty, c with work (regression: the pass used to
    # ask a and b, find both empty, stop claiming, and run_until_idle returned 0)
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Weighted([("a", 1), ("b", 1), ("c", 1)]), pool_size=1))
    recorder.enqueue("c", 5)
    # When run until idle / Then all of c's jobs ran
    assert app.run_until_idle() == 5


def test_strict_starves_the_tail_while_the_head_has_work(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given Strict(head, tail) where head keeps receiving work while it runs
    app, store = make_recording_app()
    recorder = make_recorder(app)
    refills = iter(range(30))

    @app.job("head-work", queue="head")
    def head_work() -> None:
        recorder.log.append("head")
        if next(refills, None) is not None:
            head_work.enqueue()

    app.add_worker_group(group("g", Strict("head", "tail"), pool_size=3))
    recorder.enqueue("tail", 5)
    head_work.enqueue_many([()] * 3)
    # When run until idle
    app.run_until_idle()
    # Then the tail ran only once head had nothing due, and each pass was one claim
    first_tail = recorder.log.index("tail")
    assert set(recorder.log[:first_tail]) == {"head"} and first_tail == 33
    assert recorder.log[first_tail:] == ["tail"] * 5
    assert all(queues == ("head", "tail") for queues, _, _ in store.claims)
    assert all(limit <= 3 for _, limit, _ in store.claims)


def test_weighted_idle_queue_catch_up_is_bounded(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1 where c sat idle while 2700 jobs of a and b ran
    app = make_app()
    recorder = make_recorder(app)
    weighted_app(app, recorder, {"a": 1800, "b": 900}, pool_size=10)
    app.run_until_idle()
    assert set(recorder.log) == {"a", "b"}
    served_before = len(recorder.log)
    # When c gets work again alongside a and b
    for queue in "abc":
        recorder.enqueue(queue, 50)
    app.run_until_idle()
    # Then in the next total-weight window c gets at most one turn more than its weight
    window = recorder.log[served_before : served_before + 10]
    assert window.count("c") <= 2


def test_a_sweep_fills_the_pass_from_two_open_queues_in_one_claim(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 1:1:4:5, pool 20, and a 5, b 5, c 8, d 3 due jobs
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("fair", Weighted([("a", 1), ("b", 1), ("c", 4), ("d", 5)]),
                               pool_size=20))
    for queue, count in {"a": 5, "b": 5, "c": 8, "d": 3}.items():
        recorder.enqueue(queue, count)
    # When run until idle
    app.run_until_idle()
    # Then d and c ran dry in the first two rounds; with 2 of the pass's 8 claims left and
    # a and b both still open, its last claim was one sweep over both for the 4 slots
    # still free, and the next pass took b's last job
    assert store.claims == [
        (("a",), 2, 2), (("b",), 2, 2), (("c",), 7, 7), (("d",), 9, 3),
        (("b",), 1, 1), (("c",), 5, 1), (("a", "b"), 4, 4), (("b",), 20, 1)]
    # And every job ran once
    assert Counter(recorder.log) == {"a": 5, "b": 5, "c": 8, "d": 3}


def test_a_queue_its_claim_drained_is_not_asked_again_in_the_pass(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 3:1:2:4, pool 20, and a 8, b 3, c 0, d 8 due jobs (19)
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("fair", Weighted([("a", 3), ("b", 1), ("c", 2), ("d", 4)]),
                               pool_size=20))
    for queue, count in {"a": 8, "b": 3, "d": 8}.items():
        recorder.enqueue(queue, count)
    # When run until idle
    app.run_until_idle()
    # Then the first pass took all 19: round 0 found c empty and, by the claim's own
    # probe, d drained (it gave all 8 it was asked), so the reflow round asked only a and
    # b for the slots c left, and no claim asked d or c again
    assert store.claims == [
        (("a",), 6, 6), (("b",), 2, 2), (("c",), 4, 0), (("d",), 8, 8), (("a",), 3, 2),
        (("b",), 1, 1)]
    assert Counter(recorder.log) == {"a": 8, "b": 3, "d": 8}


def test_a_store_failing_every_fourth_claim_loses_nothing_and_keeps_the_split(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1 over a store whose every fourth claim raises StoreError
    app, store = make_recording_app(fail=lambda n: n % 4 == 3)
    recorder = make_recorder(app)
    backlog = {"a": 700, "b": 400, "c": 200}
    weighted_app(app, recorder, backlog, pool_size=10)
    # When driven until no job is left scheduled (each failed claim propagates out of
    # run_until_idle after its pass handed back what it had claimed)
    for _ in range(200):
        with contextlib.suppress(StoreError):
            app.run_until_idle()
        if not any(state is JobState.SCHEDULED for _, state in app.store.count_jobs()):
            break
    # Then every job ran exactly once and succeeded
    assert any(got is None for _, _, got in store.claims)
    assert Counter(recorder.log) == backlog
    assert app.store.count_jobs() == {
        (queue, JobState.SUCCEEDED): count for queue, count in backlog.items()}
    # And the first 1000 executions match 6:3:1 within 1%
    counts = Counter(recorder.log[:1000])
    for queue, share in (("a", 600), ("b", 300), ("c", 100)):
        assert abs(counts[queue] - share) <= 10


def test_strict_and_weighted_groups_side_by_side_on_disjoint_queues(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given a Strict group on hi/lo and a Weighted 2:1 group on x/y
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("strict", Strict("hi", "lo"), pool_size=2))
    app.add_worker_group(group("weighted", Weighted([("x", 2), ("y", 1)]), pool_size=3))
    for queue in ("lo", "hi", "y", "x"):
        recorder.enqueue(queue, 6)
    # When run until idle
    assert app.run_until_idle() == 24
    # Then each group claimed only its own Queues, rounds alternate strict then weighted,
    # Strict finished hi before lo, and Weighted served x,y,x per its weights
    strict_queues = {"hi", "lo"}
    assert all(set(queues) <= strict_queues or not set(queues) & strict_queues
               for queues, _, _ in store.claims)
    strict_log = [q for q in recorder.log if q in strict_queues]
    weighted_log = [q for q in recorder.log if q not in strict_queues]
    assert strict_log == ["hi"] * 6 + ["lo"] * 6
    assert weighted_log[:6] == ["x", "y", "x"] * 2
    assert recorder.log[:5] == ["hi", "hi", "x", "y", "x"]
