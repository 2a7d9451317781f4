"""Schedules managed at run time (`app.set_schedule`, `remove_schedule`, `pause_schedule`,
`resume_schedule`, `list_schedules`) under `run_until_idle()` with a VirtualClock, on every
store: a stored schedule fires once per instant, also in an App without it in its code;
changes take effect at the next run; a pause skips instants; bad input stores nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

import rota
from rota.core.jobs import JobState
from rota.store.base import ScheduleStore
from tests.conftest import START

MakeApp = Callable[[], rota.App]


def reporting_app(make_app: MakeApp, log: list[tuple[str, datetime]]) -> rota.App:
    """An App with a job `report(kind)` that logs (kind, its job's due_at)."""
    app = make_app()

    @app.job("report", queue="reports")
    def report(kind: str) -> None:
        job = app.get_job(rota.current_job().id)
        assert job is not None
        log.append((kind, job.due_at))

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("reports", "other")))
    return app


def stored_rows(app: rota.App) -> list[str]:
    store = app.store
    assert isinstance(store, ScheduleStore)
    return [row.name for row in store.list_schedules()]


def test_a_stored_schedule_fires_once_per_instant(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a schedule stored at run time, every minute
    log: list[tuple[str, datetime]] = []
    app = reporting_app(make_app, log)
    app.set_schedule("tick", "report", every=60, args=("tick",))
    # When the clock passes two instants, running at each and once more
    assert app.run_until_idle() == 0
    for _ in range(2):
        clock.advance(60)
        assert app.run_until_idle() == 1
        assert app.run_until_idle() == 0
    # Then one job ran per instant, due at it
    assert log == [("tick", START + timedelta(minutes=1)), ("tick", START + timedelta(minutes=2))]
    assert app.schedules == {}  # the code's schedules: none


def test_list_schedules_shows_code_and_stored_ones_by_name(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a schedule in code and a stored one in another time zone
    app = reporting_app(make_app, [])
    app.schedule("b-code", "report", every=3600, args=("code",))
    app.set_schedule("a-stored", "report", cron="0 3 * * *", timezone="Europe/Berlin",
                     args=("stored",), queue="other")
    # When the code one has fired once
    app.run_until_idle()  # registers it
    clock.advance(3600)
    app.run_until_idle()
    # Then both are listed, by name, with their next and last fires
    stored, code = app.list_schedules()
    assert stored == rota.ScheduleInfo(
        name="a-stored", job="report", rule="0 3 * * *", queue="other", stored=True,
        paused=False, next_fire_at=datetime.fromisoformat("2026-01-01T02:00:00+00:00"),
        last_fire_at=None, timezone="Europe/Berlin")
    assert (code.name, code.job, code.rule, code.queue, code.stored, code.paused) == (
        "b-code", "report", "every 3600s", "reports", False, False)
    assert code.last_fire_at == START + timedelta(hours=1)
    assert code.next_fire_at == START + timedelta(hours=2)


def test_an_app_without_it_in_its_code_fires_a_stored_schedule(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given one App that stores a schedule, and two workers' Apps that define the job
    # but not the schedule (two drives on one store)
    admin = reporting_app(make_app, [])
    logs: list[list[tuple[str, datetime]]] = [[], []]
    workers = [reporting_app(make_app, log) for log in logs]
    admin.set_schedule("tick", "report", every=1, args=("t",))
    # When both workers run at each of 30 instants, in turn
    for _ in range(30):
        clock.advance(1)
        for worker in workers:
            worker.run_until_idle()
    # Then each instant fired exactly once across them
    due = sorted(at for log in logs for _, at in log)
    assert due == [START + timedelta(seconds=s) for s in range(1, 31)]
    assert admin.store.count_jobs() == {("reports", JobState.SUCCEEDED): 30}


def test_a_worker_whose_app_lacks_the_job_skips_it_and_says_so_once(
    make_app: MakeApp, clock: rota.VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a stored schedule of job "report", and an App that does not define it
    admin = reporting_app(make_app, [])
    admin.set_schedule("tick", "report", every=60, args=("t",))
    other = make_app()

    @other.job("else")
    def something_else() -> None: ...

    other.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    # When the other App runs past two instants
    with caplog.at_level(logging.WARNING, logger="rota"):
        for _ in range(2):
            clock.advance(60)
            other.run_until_idle()
    # Then it fired nothing and logged the reason once
    assert admin.store.count_jobs() == {}
    said = [r.getMessage() for r in caplog.records if "stored schedule 'tick'" in r.getMessage()]
    assert len(said) == 1 and "'report' is not defined in this worker's App" in said[0]
    # and an App that defines the job fires it at the next instant
    clock.advance(60)
    assert admin.run_until_idle() == 1


def test_setting_it_again_changes_it_at_the_next_run(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    log: list[tuple[str, datetime]] = []
    app = reporting_app(make_app, log)
    app.set_schedule("tick", "report", every=60, args=("v1",))
    clock.advance(60)
    app.run_until_idle()
    # When it is replaced with other arguments and another interval
    app.set_schedule("tick", "report", every=120, args=("v2",))
    clock.advance(60)  # 00:02, an instant of both
    app.run_until_idle()
    clock.advance(60)  # 00:03, not an instant of the new rule
    app.run_until_idle()
    # Then the new definition fires from then on
    assert log == [("v1", START + timedelta(minutes=1)), ("v2", START + timedelta(minutes=2))]
    assert [info.rule for info in app.list_schedules()] == ["every 120s"]


def test_a_removed_schedule_stops_firing(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    log: list[tuple[str, datetime]] = []
    app = reporting_app(make_app, log)
    app.set_schedule("tick", "report", every=60, args=("t",))
    app.remove_schedule("tick")
    clock.advance(120)
    assert app.run_until_idle() == 0
    assert app.list_schedules() == [] and stored_rows(app) == []


def test_removing_an_unknown_or_code_schedule_is_refused(make_app: MakeApp) -> None:
    app = reporting_app(make_app, [])
    app.schedule("code", "report", every=60, args=("c",))
    with pytest.raises(KeyError, match="no stored schedule named 'missing'"):
        app.remove_schedule("missing")
    with pytest.raises(ValueError, match="defined in this App's code"):
        app.remove_schedule("code")


def test_pause_skips_instants_and_resume_fires_from_the_next(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a stored schedule and one in code, every minute, never run yet
    log: list[tuple[str, datetime]] = []
    app = reporting_app(make_app, log)
    app.schedule("code", "report", every=60, args=("code",))
    app.set_schedule("stored", "report", every=60, args=("stored",))
    # When both are paused (the code one before any worker registered it)
    app.pause_schedule("code")
    app.pause_schedule("stored")
    assert [(i.name, i.paused, i.next_fire_at) for i in app.list_schedules()] == [
        ("code", True, None), ("stored", True, None)]
    # Then their instants pass without a fire
    clock.advance(150)
    assert app.run_until_idle() == 0
    # When they are resumed at 00:02:30
    app.resume_schedule("code")
    app.resume_schedule("stored")
    assert [i.next_fire_at for i in app.list_schedules()] == [START + timedelta(minutes=3)] * 2
    assert app.run_until_idle() == 0  # 00:02 passed while paused: skipped
    clock.advance(30)
    # Then both fire at the next instant
    assert app.run_until_idle() == 2
    assert sorted(log) == [("code", START + timedelta(minutes=3)),
                           ("stored", START + timedelta(minutes=3))]


def test_pausing_an_unknown_schedule_is_refused(make_app: MakeApp) -> None:
    app = reporting_app(make_app, [])
    for act in (app.pause_schedule, app.resume_schedule):
        with pytest.raises(KeyError, match="no schedule named 'missing'"):
            act("missing")
    assert stored_rows(app) == []


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"cron": "61 * * * *"}, ValueError, "bad cron text"),
    ({"job_name": "nope"}, ValueError, "no job named 'nope'"),
    ({"timezone": "Mars/Olympus"}, ValueError, "unknown time zone 'Mars/Olympus'"),
    ({"args": (object(),)}, TypeError, "JSON"),
    ({"args": ("a", "b")}, TypeError, "do not fit job 'report'"),
    ({"kwargs": {"colour": "red"}}, TypeError, "do not fit job 'report'"),
    ({"name": "code"}, ValueError, r"defined in code.*choose another name"),
    ({"cron": None, "every": None}, ValueError, "exactly one rule"),
    ({"queue": "bad queue"}, ValueError, "queue"),
])
def test_bad_input_is_refused_and_stores_nothing(
    make_app: MakeApp, change: dict[str, object], error: type[Exception], message: str
) -> None:
    app = reporting_app(make_app, [])
    app.schedule("code", "report", every=60, args=("c",))
    given: dict[str, object] = {"name": "tick", "job_name": "report", "cron": "0 * * * *",
                                "args": ("t",), **change}
    name, job_name = given.pop("name"), given.pop("job_name")
    with pytest.raises(error, match=message):
        app.set_schedule(name, job_name, **given)  # type: ignore[arg-type]
    assert stored_rows(app) == []
