"""Queue controls through the App on every store kind: pause, resume, limits, queues(),
and what they do to dispatch under run_until_idle() on a VirtualClock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import JobState, Strict, Weighted, WorkerGroupOptions
from tests.app.conftest import Recorder, RecordingStore
from tests.conftest import START

MakeApp = Callable[[], rota.App]
MakeRecorder = Callable[[rota.App], Recorder]
MakeRecordingApp = Callable[..., tuple[rota.App, RecordingStore]]

W631 = Weighted([("a", 6), ("b", 3), ("c", 1)])


def group(name: str, policy: rota.DispatchPolicy, **options: object) -> WorkerGroupOptions:
    return WorkerGroupOptions(name=name, policy=policy, **options)  # type: ignore[arg-type]


# -- the API ---------------------------------------------------------------------------------


def test_queues_shows_settings_counts_and_what_is_due(
    make_app: MakeApp, make_recorder: MakeRecorder, clock: rota.VirtualClock
) -> None:
    # Given jobs on "mail" (two due, one due later) and settings on "sms", which has none
    app = make_app()
    recorder = make_recorder(app)
    recorder.enqueue("mail", 2)
    clock.advance(30)
    recorder.job.configure(queue="mail", delay=60).enqueue("mail")
    app.pause_queue("sms")
    app.set_queue_limit("sms", 3)
    app.set_queue_limit("mail", 5)
    # When the Queues are listed
    mail, sms = app.queues()
    # Then every state is counted, and the oldest due job is the one enqueued first
    assert isinstance(mail, rota.QueueInfo)
    assert (mail.name, mail.paused, mail.limit, mail.due) == ("mail", False, 5, 2)
    assert mail.counts == {**dict.fromkeys(JobState, 0), JobState.SCHEDULED: 3}
    assert mail.oldest_due_at == START
    assert (sms.name, sms.paused, sms.limit, sms.due, sms.oldest_due_at) == (
        "sms", True, 3, 0, None)
    assert set(sms.counts) == set(JobState) and not any(sms.counts.values())
    # And once the later job is due too, it counts as due
    clock.advance(timedelta(minutes=1))
    assert app.queues()[0].due == 3


@pytest.mark.parametrize(
    ("limit", "error", "words"),
    [(-1, ValueError, "from 0 to 2147483647"), ("3", TypeError, "from 0 to 2147483647"),
     (True, TypeError, "whole number"), (1.5, TypeError, "None for no limit"),
     # Past PostgreSQL's integer column (and SQLite's 64 bits): the same error everywhere
     (2**31, ValueError, "from 0 to 2147483647.*; got 2147483648$"),
     (2**63 - 1, ValueError, "from 0 to 2147483647"),
     (10**20, ValueError, "from 0 to 2147483647")],
)
def test_a_bad_limit_names_the_fix_and_changes_nothing(
    make_app: MakeApp, limit: object, error: type[Exception], words: str
) -> None:
    app = make_app()
    with pytest.raises(error, match=words):
        app.set_queue_limit("a", limit)  # type: ignore[arg-type]
    assert app.queues() == []


def test_the_largest_limit_is_stored_on_every_store(make_app: MakeApp) -> None:
    # Given the top of the documented range
    app = make_app()
    # When it is set, Then every store keeps it exactly
    app.set_queue_limit("a", 2**31 - 1)
    assert [(info.name, info.limit) for info in app.queues()] == [("a", 2**31 - 1)]


def test_pool_size_and_claim_cap_have_the_same_range() -> None:
    with pytest.raises(ValueError, match="pool_size must be a whole number from 1 to 2147483647"):
        group("g", Strict("a"), pool_size=2**31)
    with pytest.raises(ValueError, match="max_claim_batch must be a whole number from 1 to"):
        group("g", Strict("a"), max_claim_batch=0)
    assert group("g", Strict("a"), pool_size=2**31 - 1).pool_size == 2**31 - 1


@pytest.mark.parametrize("control", ["pause_queue", "resume_queue", "set_queue_limit"])
def test_a_bad_queue_name_is_refused_like_enqueue_refuses_it(
    make_app: MakeApp, control: str
) -> None:
    app = make_app()
    arguments: tuple[object, ...] = ("two words",) + ((1,) if control == "set_queue_limit"
                                                      else ())
    with pytest.raises(ValueError, match="whitespace"):
        getattr(app, control)(*arguments)
    assert app.queues() == []


def test_settings_bind_another_app_on_the_same_store_at_its_next_claim(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given a worker App and an operator App on one store
    worker, operator = make_app(), make_app()
    recorder = make_recorder(worker)
    worker.add_worker_group(group("g", Strict("a"), pool_size=4))
    recorder.enqueue("a", 3)
    # When the operator pauses the Queue, nothing runs; when it resumes, all of it does
    operator.pause_queue("a")
    assert worker.run_until_idle() == 0
    operator.resume_queue("a")
    assert worker.run_until_idle() == 3


# -- dispatch: pause -----------------------------------------------------------------------


def test_weighted_with_a_paused_queue_shares_its_slots_between_the_others(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1, pool 10, every Queue backlogged, and b paused
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("fair", W631, pool_size=10))
    for queue, count in {"a": 120, "b": 60, "c": 20}.items():
        recorder.enqueue(queue, count)
    app.pause_queue("b")
    # When run until idle
    app.run_until_idle()
    # Then a and c shared every slot 6:1, and b's claims found it empty (nothing charged)
    assert Counter(recorder.log[:70]) == {"a": 60, "c": 10}
    assert "b" not in recorder.log
    assert all(got == 0 for queues, _, got in store.claims if queues == ("b",))
    assert app.queues()[1].counts[JobState.SCHEDULED] == 60


def test_a_resumed_queue_catches_up_by_at_most_one_turn_more_than_its_weight(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1, pool 10, b paused while a and c run, and a job that
    # resumes b once 350 of them have run
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("fair", W631, pool_size=10))

    @app.job("resume-b", queue="c")
    def resume_b() -> None:
        recorder.log.append("c")
        if len(recorder.log) >= 350:
            app.resume_queue("b")

    recorder.enqueue("a", 600)
    recorder.enqueue("b", 60)
    resume_b.enqueue_many([()] * 100)
    app.pause_queue("b")
    # When run until idle
    app.run_until_idle()
    # Then b ran only after the resume, and in any total-weight window from its first turn
    # it got at most weight + 1 = 4 turns: the pause banked it no credit
    first_b = recorder.log.index("b")
    assert first_b >= 350
    window = recorder.log[first_b : first_b + 10]
    assert window.count("b") <= 4
    # And afterwards the split is 6:3:1 again
    assert Counter(recorder.log[first_b + 10 : first_b + 110]) == {"a": 60, "b": 30, "c": 10}


def test_strict_skips_a_paused_queue_to_the_next(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Strict("head", "tail"), pool_size=3))
    recorder.enqueue("head", 4)
    recorder.enqueue("tail", 4)
    app.pause_queue("head")
    assert app.run_until_idle() == 4
    assert recorder.log == ["tail"] * 4
    app.resume_queue("head")
    assert app.run_until_idle() == 4
    assert recorder.log == ["tail"] * 4 + ["head"] * 4


def test_a_queue_paused_by_a_running_job_is_obeyed_at_the_next_claim(
    make_app: MakeApp,
) -> None:
    # Given a Strict group with pool 2 and a job that pauses its own Queue
    app = make_app()
    ran: list[int] = []

    @app.job("pauser", queue="a")
    def pauser(n: int) -> None:
        ran.append(n)
        app.pause_queue("a")

    app.add_worker_group(group("g", Strict("a"), pool_size=2))
    pauser.enqueue_many([(n,) for n in range(6)])
    # When run until idle
    app.run_until_idle()
    # Then the pass that was already claimed ran to its end, and no further claim took any
    assert ran == [0, 1]
    assert app.queues()[0].counts[JobState.SCHEDULED] == 4


# -- dispatch: limits ------------------------------------------------------------------------


def test_a_limited_queue_is_found_empty_and_its_slots_reflow(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    # Given 6:3:1, pool 10, all backlogged, and a limited to 2 jobs leased at once
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("fair", W631, pool_size=10))
    for queue, count in {"a": 40, "b": 40, "c": 40}.items():
        recorder.enqueue(queue, count)
    app.set_queue_limit("a", 2)
    # When run until idle
    app.run_until_idle()
    # Then the first pass asked a for 6, got 2, and filled the other 4 slots from b and c
    assert store.claims[:3] == [(("a",), 6, 2), (("b",), 3, 3), (("c",), 1, 1)]
    assert Counter(recorder.log[:10])["a"] == 2
    # And no claim ever took more than 2 of a
    assert max(got or 0 for queues, _, got in store.claims if queues == ("a",)) == 2
    assert Counter(recorder.log) == {"a": 40, "b": 40, "c": 40}


def test_strict_takes_a_limited_queues_room_then_the_next(
    make_recording_app: MakeRecordingApp, make_recorder: MakeRecorder
) -> None:
    app, store = make_recording_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Strict("head", "tail"), pool_size=5))
    recorder.enqueue("head", 4)
    recorder.enqueue("tail", 6)
    app.set_queue_limit("head", 1)
    app.run_until_idle()
    assert recorder.log[:5] == ["head"] + ["tail"] * 4
    assert store.claims[0] == (("head", "tail"), 5, 5)


def test_a_limit_of_zero_holds_a_queue_until_it_is_lifted(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Weighted([("a", 1), ("b", 1)]), pool_size=4))
    recorder.enqueue("a", 3)
    recorder.enqueue("b", 3)
    app.set_queue_limit("a", 0)
    assert app.run_until_idle() == 3
    assert recorder.log == ["b"] * 3
    app.set_queue_limit("a", None)
    assert app.run_until_idle() == 3
    assert app.queues()[0].limit is None


# -- settings on a family ----------------------------------------------------------------------


def test_a_paused_family_holds_its_members_and_its_resume_runs_them(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given a Weighted family policy and jobs on two tenants and an internal Queue
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("tenants", Weighted([("tenant-*", 1), ("internal", 1)])))
    app.pause_queue("tenant-*")
    recorder.enqueue("tenant-a", 2)
    recorder.enqueue("tenant-b", 1)
    recorder.enqueue("internal", 1)
    # When the workers run, only the internal Queue is served
    assert app.run_until_idle() == 1
    assert recorder.log == ["internal"]
    # And app.queues() shows the members paused by their family, and the family's entry
    infos = {info.name: info for info in app.queues()}
    assert (infos["tenant-a"].paused, infos["tenant-a"].family) == (True, "tenant-*")
    family = infos["tenant-*"]
    assert (family.paused, family.members, family.due, family.family) == (True, 2, 3, None)
    assert infos["internal"].members is None
    # Then resuming the family serves its members
    app.resume_queue("tenant-*")
    assert app.run_until_idle() == 3
    assert Counter(recorder.log) == {"internal": 1, "tenant-a": 2, "tenant-b": 1}


def test_a_family_limit_binds_each_member_on_its_own(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    app = make_app()
    recorder = make_recorder(app)
    app.set_queue_limit("tenant-*", 0)  # 0 takes nothing, from each member
    app.set_queue_limit("tenant-vip", 5)  # its own limit wins
    app.add_worker_group(group("tenants", Weighted([("tenant-*", 1)])))
    recorder.enqueue("tenant-a", 2)
    recorder.enqueue("tenant-vip", 2)
    assert app.run_until_idle() == 2
    assert recorder.log == ["tenant-vip", "tenant-vip"]
    infos = {info.name: info for info in app.queues()}
    assert (infos["tenant-a"].limit, infos["tenant-vip"].limit) == (0, 5)
    assert infos["tenant-vip"].family is None


@pytest.mark.parametrize("name", ["a*b", "t*-*", "**"])
def test_a_bad_family_is_refused_by_every_setter(make_app: MakeApp, name: str) -> None:
    app = make_app()
    for call in (lambda: app.pause_queue(name), lambda: app.resume_queue(name),
                 lambda: app.set_queue_limit(name, 1),
                 lambda: app.set_queue_rate(name, 1, per=60)):
        with pytest.raises(ValueError, match="'tenant-\\*'"):
            call()
    assert app.queues() == []
