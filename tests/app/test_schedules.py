"""`app.schedule` under `run_until_idle()` with a VirtualClock, on every store: fires at
the instant, once; once after a long gap; never before registration; two Apps on one store
fire each instant once; changed and removed schedules; bad input stores nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota.core.jobs import JobState
from rota.store.base import ScheduleStore
from tests.conftest import START

MakeApp = Callable[[], rota.App]


def scheduled_app(make_app: MakeApp, log: list[tuple[str, datetime]]) -> rota.App:
    """An App with a job `report(kind)` that logs (kind, its job's due_at)."""
    app = make_app()

    @app.job("report", queue="reports")
    def report(kind: str) -> None:
        job = app.get_job(rota.current_job().id)
        assert job is not None
        log.append((kind, job.due_at))

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("reports")))
    return app


def rows(app: rota.App) -> dict[str, object]:
    store = app.store
    assert isinstance(store, ScheduleStore)
    return {row.name: row for row in store.list_schedules()}


def test_fires_at_the_instant_once(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    # Given a schedule every minute, registered at the start (00:00:00)
    log: list[tuple[str, datetime]] = []
    app = scheduled_app(make_app, log)
    app.schedule("tick", "report", every=60, args=("tick",))
    assert app.run_until_idle() == 0  # registers; 00:00 is not after the registration
    # When the clock reaches 00:00:59, then 00:01:00 exactly
    clock.advance(59)
    assert app.run_until_idle() == 0
    clock.advance(1)
    assert app.run_until_idle() == 1
    # Then it fired once, for 00:01:00, and not again at the same time
    assert app.run_until_idle() == 0
    clock.advance(30)
    assert app.run_until_idle() == 0
    assert log == [("tick", START + timedelta(minutes=1))]


def test_the_job_is_due_at_the_instant_even_when_fired_late(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a nightly report at 03:00 Berlin time (02:00Z in winter)
    log: list[tuple[str, datetime]] = []
    app = scheduled_app(make_app, log)
    schedule = app.schedule("nightly", "report", cron="0 3 * * *", timezone="Europe/Berlin",
                            args=("daily",))
    app.run_until_idle()
    # When the worker only looks at 02:00:17Z
    clock.set(START + timedelta(hours=2, seconds=17))
    assert app.run_until_idle() == 1
    # Then the job ran as "the 03:00 report"
    assert log == [("daily", START + timedelta(hours=2))]
    assert schedule.queue == "reports" and schedule.job_name == "report"


def test_after_a_long_gap_only_the_most_recent_instant_fires(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a schedule every 5 minutes that last fired at 00:05
    log: list[tuple[str, datetime]] = []
    app = scheduled_app(make_app, log)
    app.schedule("ping", "report", every=timedelta(minutes=5), args=("ping",))
    app.run_until_idle()
    clock.advance(timedelta(minutes=5))
    assert app.run_until_idle() == 1
    # When no worker runs for three days and a bit
    clock.advance(timedelta(days=3, minutes=7))
    # Then one job fires, for the most recent instant, not 865
    assert app.run_until_idle() == 1
    assert log[-1] == ("ping", START + timedelta(days=3, minutes=10))
    assert len(log) == 2


def test_never_fires_for_instants_before_registration(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given an hourly cron schedule first run (registered) at 10:30
    log: list[tuple[str, datetime]] = []
    clock.set(START + timedelta(hours=10, minutes=30))
    app = scheduled_app(make_app, log)
    app.schedule("hourly", "report", cron="@hourly", args=("h",))
    # When workers run at 10:30 and 10:59
    assert app.run_until_idle() == 0
    clock.advance(timedelta(minutes=29))
    assert app.run_until_idle() == 0
    # Then nothing fired for 10:00 (or earlier); 11:00 is the first fire
    clock.advance(timedelta(minutes=1))
    assert app.run_until_idle() == 1
    assert log == [("h", START + timedelta(hours=11))]


def test_two_apps_on_one_store_fire_each_instant_once(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given two Apps (two workers) with the same schedule on one store
    logs: list[list[tuple[str, datetime]]] = [[], []]
    apps = [scheduled_app(make_app, log) for log in logs]
    for app in apps:
        app.schedule("tick", "report", every=1, args=("t",))
        app.run_until_idle()
    # When both run at each of 50 instants, in turn
    for _ in range(50):
        clock.advance(1)
        for app in apps:
            app.run_until_idle()
    # Then 50 jobs exist, one per instant, each ran once
    due = sorted(at for log in logs for _, at in log)
    assert due == [START + timedelta(seconds=s) for s in range(1, 51)]
    counts = apps[0].store.count_jobs()
    assert counts == {("reports", JobState.SUCCEEDED): 50}


def test_a_schedule_fires_into_the_queue_given(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()
    app.job("noop", queue="a")(lambda: None)
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("b")))
    app.schedule("s", "noop", every=60, queue="b")
    app.run_until_idle()
    clock.advance(60)
    assert app.run_until_idle() == 1
    assert app.store.count_jobs() == {("b", JobState.SUCCEEDED): 1}


def test_a_changed_definition_is_taken_over_by_the_last_app_to_register(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given an old App firing "nightly" with args ("v1",)
    log: list[tuple[str, datetime]] = []
    old = scheduled_app(make_app, log)
    old.schedule("nightly", "report", cron="0 3 * * *", args=("v1",))
    old.run_until_idle()
    clock.set(START + timedelta(hours=3))
    old.run_until_idle()
    # When a new App (the next deploy) registers it with other arguments, the old still up
    new = scheduled_app(make_app, log)
    new.schedule("nightly", "report", cron="0 3 * * *", args=("v2",))
    new.run_until_idle()
    clock.set(START + timedelta(days=1, hours=3))
    old.run_until_idle()  # the old App looks first: it does not fire any more
    new.run_until_idle()
    # Then the next instant fired once, with the new arguments
    assert log == [("v1", START + timedelta(hours=3)), ("v2", START + timedelta(days=1, hours=3))]
    row = rows(new)["nightly"]
    assert row.registered_at == START  # type: ignore[attr-defined]


def test_a_schedule_removed_from_the_code_stops_firing(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a schedule that fired once
    log: list[tuple[str, datetime]] = []
    old = scheduled_app(make_app, log)
    old.schedule("tick", "report", every=60, args=("t",))
    old.run_until_idle()
    clock.advance(60)
    old.run_until_idle()
    # When the next deploy's App no longer defines it
    new = scheduled_app(make_app, log)
    clock.advance(600)
    new.run_until_idle()
    # Then nothing more fires; the row stays, with its last fire
    assert len(log) == 1
    row = rows(new)["tick"]
    assert row.last_fire_at == START + timedelta(minutes=1)  # type: ignore[attr-defined]


def test_no_schedule_no_store_calls(make_app: MakeApp) -> None:
    app = make_app()
    app.job("noop")(lambda: None)
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    app.run_until_idle()
    assert rows(app) == {}


# -- bad input: a ValueError (or TypeError) naming what is wrong, nothing stored ------------


@pytest.mark.parametrize(("options", "message"), [
    ({"cron": "61 * * * *"}, "bad cron text '61 \\* \\* \\* \\*': Bad minute"),
    ({"cron": "0 3 * *"}, "4 fields, not 5"),
    ({"cron": "0 3 * * *", "timezone": "Europe/Atlantis"}, "unknown time zone 'Europe/Atlantis'"),
    ({"cron": "0 3 * * *", "every": 60}, "exactly one rule"),
    ({}, "exactly one rule"),
    ({"every": 0.1}, "at least 1 second"),
    ({"every": 60, "timezone": "Europe/Berlin"}, "does not apply to every="),
    ({"every": 60, "queue": "bad queue"}, "Queue name"),
])
def test_bad_schedules_are_value_errors_and_store_nothing(
    make_app: MakeApp, options: dict[str, object], message: str
) -> None:
    app = make_app()
    app.job("noop")(lambda: None)
    with pytest.raises(ValueError, match=message):
        app.schedule("s", "noop", **options)  # type: ignore[arg-type]
    assert app.schedules == {}
    assert rows(app) == {}


def test_a_name_used_twice_is_a_value_error(make_app: MakeApp) -> None:
    app = make_app()
    app.job("noop")(lambda: None)
    app.schedule("s", "noop", every=60)
    with pytest.raises(ValueError, match="schedule named 's' already exists"):
        app.schedule("s", "noop", cron="@daily")
    assert app.schedules["s"].rule.text == "every 60s"


def test_the_job_must_be_this_apps(make_app: MakeApp) -> None:
    app, other = make_app(), make_app()
    foreign = other.job("foreign")(lambda: None)
    with pytest.raises(ValueError, match="no job named 'missing'"):
        app.schedule("s", "missing", every=60)
    with pytest.raises(ValueError, match="belongs to another App"):
        app.schedule("s", foreign, every=60)
    with pytest.raises(TypeError, match=r"takes a job defined with @app\.job"):
        app.schedule("s", print, every=60)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="schedule name must be non-empty"):
        app.schedule("", "missing", every=60)


def test_arguments_are_checked_when_scheduling(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("greet")
    def greet(name: str) -> None: ...

    with pytest.raises(TypeError, match="positional argument 0 is not JSON-serialisable"):
        app.schedule("s", greet, every=60, args=(object(),))
    with pytest.raises(TypeError, match="do not fit job 'greet'"):
        app.schedule("s", greet, every=60, args=("a", "b"))
    with pytest.raises(TypeError, match="do not fit job 'greet'"):
        app.schedule("s", greet, every=60, kwargs={"nom": "a"})
    with pytest.raises(TypeError, match="args must be a tuple or list"):
        app.schedule("s", greet, every=60, args="abc")
    assert app.schedules == {}
    app.schedule("s", greet, every=60, kwargs={"name": "a"})


def test_a_store_without_schedules_fails_loudly(clock: rota.VirtualClock) -> None:
    from rota.store.memory import MemoryStore

    class Bare:  # the Store protocol only, without the schedules part
        def __init__(self) -> None:
            self.inner = MemoryStore()

        def __getattr__(self, name: str) -> object:
            if name in {"register_schedules", "fire_schedule", "list_schedules"}:
                raise AttributeError(name)
            return getattr(self.inner, name)

    app = rota.App(Bare(), clock=clock)  # type: ignore[arg-type]
    app.job("noop")(lambda: None)
    with pytest.raises(TypeError, match="does not keep schedules"):
        app.schedule("s", "noop", every=60)


def test_dst_fires_under_run_until_idle(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    # Given 02:30 Berlin daily, around the autumn night when 02:30 happens twice
    log: list[tuple[str, datetime]] = []
    clock.set(datetime(2026, 10, 24, 12, tzinfo=UTC))
    app = scheduled_app(make_app, log)
    app.schedule("night", "report", cron="30 2 * * *", timezone="Europe/Berlin", args=("n",))
    app.run_until_idle()
    # When a worker looks every ten minutes through that night
    for _ in range(6 * 16):
        clock.advance(timedelta(minutes=10))
        app.run_until_idle()
    # Then it fired once that night, at the first 02:30 (00:30Z)
    assert log == [("n", datetime(2026, 10, 25, 0, 30, tzinfo=UTC))]


def test_a_schedule_added_between_runs_is_registered_then(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given an App that already ran with one schedule
    log: list[tuple[str, datetime]] = []
    app = scheduled_app(make_app, log)
    app.schedule("a", "report", every=60, args=("a",))
    app.run_until_idle()
    # When a second one is added at 00:00:30 and the clock reaches 00:01
    clock.advance(30)
    app.schedule("b", "report", every=60, args=("b",))
    app.run_until_idle()
    clock.advance(30)
    # Then both fire for 00:01 (the second was registered at 00:00:30)
    assert app.run_until_idle() == 2
    assert sorted(log) == [("a", START + timedelta(minutes=1)),
                           ("b", START + timedelta(minutes=1))]
