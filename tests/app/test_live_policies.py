"""Policies changed while workers run (docs/dispatch.md, "Live policies"), through the
App on every store kind, under run_until_idle() on a VirtualClock."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import Strict, Weighted, WorkerGroupOptions
from rota.core.group_policies import StoredPolicy
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from tests.app.conftest import Recorder

MakeApp = Callable[[], rota.App]
MakeRecorder = Callable[[rota.App], Recorder]

W631 = Weighted([("a", 6), ("b", 3), ("c", 1)])
PATTERN_631 = list("abaabacaba")
WEIGHTED_INVALID = r"^Weighted dispatch needs at least one queue, all weights >= 1\.$"


def worker(make_app: MakeApp, make_recorder: MakeRecorder, policy: rota.DispatchPolicy,
           pool_size: int = 10) -> tuple[rota.App, Recorder]:
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=policy,
                                            pool_size=pool_size))
    return app, make_recorder(app)


# -- the API ---------------------------------------------------------------------------------


def test_the_policy_in_force_is_the_stored_one_else_the_codes(make_app: MakeApp) -> None:
    # Given an App whose group has Strict(a, b) in the code
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=Strict("a", "b")))
    assert app.group_policy("tenants") == Strict("a", "b")
    # When a policy is stored, then cleared
    app.set_group_policy("tenants", Weighted([("a", 5), ("b", 1)]))
    stored = app.group_policy("tenants")
    app.set_group_policy("tenants", None)
    # Then the stored one is in force until the clear, then the code's again
    assert stored == Weighted([("a", 5), ("b", 1)])
    assert app.group_policy("tenants") == Strict("a", "b")


def test_an_app_without_the_group_sets_it_and_reads_it(make_app: MakeApp) -> None:
    # Given an App that does not define "tenants" (as the CLI is), whose workers have not
    # started yet
    admin = make_app()
    with pytest.raises(ValueError, match="no policy is stored for Worker Group 'tenants'"):
        admin.group_policy("tenants")
    # When it stores a policy for the group, forced
    admin.set_group_policy("tenants", Strict("x"), force=True)
    # Then it reads it back, and so does another App on the store
    assert admin.group_policy("tenants") == Strict("x")
    assert make_app().group_policy("tenants") == Strict("x")


@pytest.mark.parametrize(("policy", "error", "match"), [
    (Weighted([]), ValueError, WEIGHTED_INVALID),
    (Weighted([("a", 1), ("b", 0)]), ValueError, WEIGHTED_INVALID),
    (Strict(), ValueError, r"^Strict dispatch needs at least one queue\.$"),
    (Strict("a", "a"), ValueError, "'a' is named twice"),
    ([("a", 1)], TypeError, "must be a DispatchPolicy"),
])
def test_an_invalid_policy_gets_the_error_of_a_group_start_and_is_not_stored(
    make_app: MakeApp, policy: object, error: type[Exception], match: str,
) -> None:
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=Strict("a")))
    with pytest.raises(error, match=match) as raised:
        app.set_group_policy("tenants", policy)  # type: ignore[arg-type]
    if "dispatch needs" in match:
        assert "Worker Group 'tenants'" in str(raised.value.__cause__)
    assert app.group_policy("tenants") == Strict("a")


def register(app: rota.App, group: str) -> None:
    """A worker row running `group`, as `rota worker` registers it."""
    now = app.clock.now()
    app.store.register_worker(WorkerInfo(
        id="host:1:tok", host="host", pid=1, version=rota.__version__, started_at=now,
        last_seen=now, dead_at=now + timedelta(minutes=5),
        groups=(WorkerGroupInfo(name=group, policy=Strict("a"), pool_size=2,
                                owner=f"{group}@host:1:tok"),)), now)


def test_a_group_nobody_defines_or_runs_is_refused_naming_the_known_ones(
    make_app: MakeApp,
) -> None:
    # Given an App defining "tenants" and a worker registered running "io"
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=Strict("a")))
    register(app, "io")
    # When a policy is set for a mistyped group
    with pytest.raises(ValueError) as raised:
        app.set_group_policy("tenats", Weighted([("a", 1)]))
    # Then it is refused, naming the known groups and the way past it, and nothing is
    # stored
    assert "Worker Group 'tenats' is not known here" in str(raised.value)
    assert "known groups: 'io', 'tenants'" in str(raised.value)
    assert "force=True" in str(raised.value)
    assert app.store.group_policy("tenats") is None
    with pytest.raises(ValueError, match="is not known here"):
        app.set_group_policy("tenats", None)
    assert app.store.group_policy_versions() == {}


def test_a_registered_group_and_a_forced_one_are_known(make_app: MakeApp) -> None:
    # Given an App that defines no group, and a worker registered running "io"
    app = make_app()
    register(app, "io")
    # When policies are set for "io", and for "later" with force
    app.set_group_policy("io", Strict("b", "a"))
    app.set_group_policy("later", Weighted([("a", 2)]), force=True)
    # Then both are stored, and "later", having a stored policy, is changed and cleared
    # without force again
    assert app.group_policy("io") == Strict("b", "a")
    app.set_group_policy("later", Weighted([("a", 3)]))
    assert app.group_policy("later") == Weighted([("a", 3)])
    app.set_group_policy("later", None)
    assert app.store.group_policy("later") is None


@pytest.mark.parametrize("weight", [2**31, 10**26], ids=repr)
def test_a_weight_above_the_range_is_refused_and_not_stored(
    make_app: MakeApp, weight: int,
) -> None:
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=Strict("a")))
    with pytest.raises(ValueError, match="from 1 to 2147483647; got"):
        app.set_group_policy("tenants", Weighted([("a", 1), ("b", weight)]))
    assert app.store.group_policy("tenants") is None
    app.set_group_policy("tenants", Weighted([("a", 1), ("b", 2**31 - 1)]))
    assert app.group_policy("tenants") == Weighted([("a", 1), ("b", 2**31 - 1)])


def test_a_bad_group_name_is_refused(make_app: MakeApp) -> None:
    with pytest.raises(ValueError, match="Worker Group name"):
        make_app().set_group_policy("two words", Strict("a"))


# -- what the workers do ---------------------------------------------------------------------


def test_a_group_switches_between_drives_and_runs_the_new_policy(
    make_app: MakeApp, make_recorder: MakeRecorder,
) -> None:
    # Given a Strict(a, b) group that has run
    app, recorder = worker(make_app, make_recorder, Strict("a", "b"), pool_size=4)
    recorder.enqueue("a", 2)
    recorder.enqueue("b", 2)
    app.run_until_idle()
    assert recorder.log == ["a", "a", "b", "b"]
    # When another App on the store sets Strict(b, a) (forced: run_until_idle registers no
    # worker, so that App does not know the group)
    make_app().set_group_policy("tenants", Strict("b", "a"), force=True)
    recorder.log.clear()
    recorder.enqueue("a", 2)
    recorder.enqueue("b", 2)
    app.run_until_idle()
    # Then the group serves b first, with no restart
    assert recorder.log == ["b", "b", "a", "a"]


def test_631_stays_exact_across_switches_that_keep_its_queues(make_app: MakeApp) -> None:
    # Given 6:3:1 in passes of 4, two periods' jobs on each Queue, and a job that sets
    # the same policy again after the 4th job served, and adds an empty Queue after the
    # 13th
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=W631, pool_size=4))
    log: list[str] = []

    @app.job("record")
    def record(queue: str) -> None:
        log.append(queue)
        if len(log) == 4:  # an equal policy: nothing changes
            app.set_group_policy("tenants", Weighted([("a", 6), ("b", 3), ("c", 1)]))
        if len(log) == 13:  # a new Queue without jobs: the others keep their credits
            app.set_group_policy("tenants", Weighted([("a", 6), ("b", 3), ("c", 1),
                                                      ("d", 5)]))

    for queue, count in (("a", 12), ("b", 6), ("c", 2)):
        record.configure(queue=queue).enqueue_many([(queue,)] * count)
    # When it runs
    app.run_until_idle()
    # Then the served sequence is the unswitched one: a,b,a,a,b,a,c,a,b,a twice
    assert log == PATTERN_631 * 2


def test_a_pass_already_running_finishes_under_the_old_policy(
    make_app: MakeApp, make_recorder: MakeRecorder,
) -> None:
    # Given Strict(a, b), pool 3, and a's first job sets Strict(b, a)
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="tenants", policy=Strict("a", "b"),
                                            pool_size=3))
    log: list[str] = []

    @app.job("record")
    def record(queue: str, switch: bool = False) -> None:
        log.append(queue)
        if switch:
            app.set_group_policy("tenants", Strict("b", "a"))

    record.configure(queue="a").enqueue("a", True)
    record.configure(queue="a").enqueue_many([("a",)] * 4)
    record.configure(queue="b").enqueue_many([("b",)] * 4)
    # When it runs
    app.run_until_idle()
    # Then the pass that switched ends with a's jobs, the next ones take b's first
    assert log == ["a", "a", "a", "b", "b", "b", "b", "a", "a"]


def test_a_new_queue_joins_and_a_dropped_queues_jobs_wait(
    make_app: MakeApp, make_recorder: MakeRecorder,
) -> None:
    # Given Weighted a:1, b:1 with jobs on a, b and c
    app, recorder = worker(make_app, make_recorder, Weighted([("a", 1), ("b", 1)]))
    for queue in "abc":
        recorder.enqueue(queue, 2)
    app.set_group_policy("tenants", Weighted([("a", 1), ("c", 1)]))
    # When it runs
    app.run_until_idle()
    # Then c is served and b, dropped, is not
    assert sorted(recorder.log) == ["a", "a", "c", "c"]
    assert {q.name: q.due for q in app.queues()}["b"] == 2


def test_a_stored_policy_a_worker_cannot_use_is_not_run(
    make_app: MakeApp, make_recorder: MakeRecorder, caplog: pytest.LogCaptureFixture,
    clock: rota.VirtualClock,
) -> None:
    # Given a group running Strict(a, b), offered a stored row of a kind it does not know
    # (as a newer rota might write)
    app, recorder = worker(make_app, make_recorder, Strict("a", "b"), pool_size=4)
    app.run_until_idle()
    runner = app._groups.runners["tenants"]
    runner.offer_policy(7, StoredPolicy("tenants", "lottery", ("b", "a"), None, 7,
                                        clock.now()))
    recorder.enqueue("a", 1)
    recorder.enqueue("b", 1)
    # When it runs
    with caplog.at_level(logging.ERROR, logger="rota"):
        app.run_until_idle()
    # Then it keeps its policy and says why
    assert recorder.log == ["a", "b"]
    assert runner.policy == Strict("a", "b")
    assert "group tenants: keeps its policy" in caplog.text
    assert "'lottery'" in caplog.text
