"""`rota schedules`: name, rule, time zone, last fire, next fire (--json too), from an
App joined with its store, or from a store alone, opened read-only."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.core.schedules import ScheduleRegistration
from rota.store import open_store
from rota.store.base import ScheduleStore

MODULE = """\
import rota
app = rota.App({url!r})

@app.job("report", queue="reports")
def report(kind: str) -> None: ...

app.schedule({nightly!r}, report, cron="0 3 * * *", timezone="Europe/Berlin",
             args=("daily",))
app.schedule("tick", "report", every=60, args=("tick",))
"""


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               request: pytest.FixtureRequest) -> Iterator[tuple[str, str, rota.App]]:
    """Writes an App module with schedules "nightly" and "tick" on an SQLite file; yields
    (APP spec, store URL, the App). A module name per test: imports are cached."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    name = "schedules_app_" + re.sub(r"\W", "_", request.node.name)
    nightly = getattr(request, "param", "nightly")
    (tmp_path / f"{name}.py").write_text(MODULE.format(url=url, nightly=nightly))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield f"{name}:app", url, importlib.import_module(name).app
    module = sys.modules.pop(name, None)
    if module is not None:
        module.app.close()


def out_json(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert isinstance(result, list), captured.err
    return result


def test_schedules_of_an_app_before_and_after_a_worker_ran(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _, app = app_module
    # Given an App whose schedules no worker has run yet
    assert main(["schedules", "--app", spec, "--json"]) == 0
    before = {line["name"]: line for line in out_json(capsys)}
    assert {name: line["status"] for name, line in before.items()} == {
        "nightly": "not registered yet", "tick": "not registered yet"}
    assert before["nightly"]["rule"] == "0 3 * * *"
    assert before["nightly"]["timezone"] == "Europe/Berlin"
    assert before["tick"]["rule"] == "every 60s" and before["tick"]["queue"] == "reports"
    assert before["tick"]["next_fire_at"] is not None
    # When a worker registered them an hour ago and fired "tick" once, and the store
    # also holds a schedule the code no longer defines
    store = app.store
    assert isinstance(store, ScheduleStore)
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    store.register_schedules([s.registration() for s in app.schedules.values()], an_hour_ago)
    store.register_schedules([ScheduleRegistration(
        "old-report", "d0", "@weekly", "UTC", "report", "reports")], an_hour_ago)
    tick = app.schedules["tick"]
    fired_for = an_hour_ago.replace(second=0, microsecond=0) + timedelta(minutes=2)
    assert store.fire_schedule("tick", tick.definition, tick.new_job(fired_for),
                               fired_for).fired
    # Then the command shows each with its status, last fire and next fire
    assert main(["schedules", "--app", spec, "--json"]) == 0
    after = {line["name"]: line for line in out_json(capsys)}
    assert {name: line["status"] for name, line in after.items()} == {
        "nightly": "active", "old-report": "not in this App", "tick": "active"}
    assert after["tick"]["last_fire_at"] == fired_for.isoformat()
    assert after["old-report"]["next_fire_at"] is None
    nxt = after["nightly"]["next_fire_at"]
    assert isinstance(nxt, str) and datetime.fromisoformat(nxt) > an_hour_ago
    # and the table names them all
    assert main(["schedules", "--app", spec]) == 0
    table = capsys.readouterr().out
    for text in ("nightly", "0 3 * * *", "Europe/Berlin", "every 60s", "old-report",
                 "not in this App", fired_for.strftime("%Y-%m-%d %H:%M:%S UTC")):
        assert text in table


def test_schedules_of_a_store_alone(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    _, url, app = app_module
    store = app.store
    assert isinstance(store, ScheduleStore)
    store.register_schedules([s.registration() for s in app.schedules.values()],
                             datetime.now(UTC))
    assert main(["schedules", "--store", url, "--json"]) == 0
    lines = out_json(capsys)
    assert [(line["name"], line["status"]) for line in lines] == [
        ("nightly", "in code"), ("tick", "in code")]
    assert all(line["next_fire_at"] is not None for line in lines)


def test_another_apps_definition_is_shown_as_such(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _, app = app_module
    store = app.store
    assert isinstance(store, ScheduleStore)
    store.register_schedules([ScheduleRegistration(
        "tick", "another", "every 120s", "UTC", "report", "reports")], datetime.now(UTC))
    assert main(["schedules", "--app", spec, "--json"]) == 0
    tick = {line["name"]: line for line in out_json(capsys)}["tick"]
    assert (tick["status"], tick["rule"]) == ("another App's definition", "every 120s")


@pytest.mark.parametrize("app_module", ["[/]nightly[bold] :smile:"], indirect=True)
def test_hostile_schedule_names_are_shown_exactly(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _, _ = app_module
    assert main(["schedules", "--app", spec]) == 0
    out = capsys.readouterr().out
    assert "[/]nightly[bold] :smile:" in out


def test_the_store_is_opened_read_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    assert main(["schedules", "--store", f"sqlite:///{missing}"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not missing.exists()
    # and an empty store says so
    store = open_store(f"sqlite:///{tmp_path / 'empty.db'}")
    store.close()
    assert main(["schedules", "--store", f"sqlite:///{tmp_path / 'empty.db'}"]) == 0
    assert capsys.readouterr().out == "no schedules\n"
    assert rota.App  # the public API stays importable beside the CLI
