"""`rota schedule list|add|pause|resume|remove`: schedules managed at run time from the
command line; bad input is one line naming the fix, and stores nothing."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.store.base import ScheduleStore

MODULE = """\
import rota
app = rota.App({url!r})

@app.job("report", queue="reports")
def report(kind: str, fmt: str = "pdf") -> None: ...

app.schedule("nightly", report, cron="0 3 * * *", args=("daily",))
"""


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               request: pytest.FixtureRequest) -> Iterator[tuple[str, str, rota.App]]:
    """An App module with a job "report" and a schedule "nightly" in code, on an SQLite
    file; yields (APP spec, store URL, the App)."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    name = "schedule_app_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{name}.py").write_text(MODULE.format(url=url))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield f"{name}:app", url, importlib.import_module(name).app
    module = sys.modules.pop(name, None)
    if module is not None:
        module.app.close()


def listed(capsys: pytest.CaptureFixture[str], *where: str) -> dict[str, dict[str, object]]:
    capsys.readouterr()
    assert main(["schedule", "list", *where, "--json"]) == 0
    return {line["name"]: line for line in json.loads(capsys.readouterr().out)}


def stored_names(app: rota.App) -> list[str]:
    store = app.store
    assert isinstance(store, ScheduleStore)
    return [row.name for row in store.list_schedules() if row.stored]


def test_add_list_pause_resume_remove(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, url, app = app_module
    # When a schedule is added with a cron rule, a time zone, a Queue and arguments
    assert main(["schedule", "add", "acme", "report", "--cron", "0 4 * * *", "--timezone",
                 "Europe/Berlin", "--queue", "other", "--args", '["acme"]', "--kwargs",
                 '{"fmt": "csv"}', "--app", spec]) == 0
    assert "stored schedule 'acme'" in capsys.readouterr().out
    # and one with an interval (--json: the schedule stored)
    assert main(["schedule", "add", "sync", "report", "--every", "5m", "--args", '["s"]',
                 "--app", spec, "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert (added["name"], added["rule"], added["stored"], added["paused"]) == (
        "sync", "every 300s", True, False)
    # Then the App lists them as stored, beside the code's
    infos = {info.name: info for info in app.list_schedules()}
    assert (infos["acme"].rule, infos["acme"].timezone, infos["acme"].queue,
            infos["acme"].stored) == ("0 4 * * *", "Europe/Berlin", "other", True)
    assert infos["sync"].rule == "every 300s" and not infos["nightly"].stored
    # and so does the command, with --app or --store
    for where in (["--app", spec], ["--store", url]):
        lines = listed(capsys, *where)
        assert (lines["acme"]["status"], lines["acme"]["stored"]) == ("stored", True)
    # When it is paused, then resumed, with --store alone
    assert main(["schedule", "pause", "acme", "--store", url]) == 0
    assert listed(capsys, "--store", url)["acme"]["status"] == "paused"
    assert main(["schedule", "resume", "acme", "--store", url]) == 0
    assert listed(capsys, "--store", url)["acme"]["paused"] is False
    # and the code's schedule is paused with --app (no worker registered it yet)
    assert main(["schedule", "pause", "nightly", "--app", spec]) == 0
    assert listed(capsys, "--app", spec)["nightly"]["status"] == "paused"
    # When one is removed
    capsys.readouterr()
    assert main(["schedule", "remove", "sync", "--app", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "sync", "removed": True}
    assert stored_names(app) == ["acme"]
    # `rota schedules` is the same listing
    capsys.readouterr()
    assert main(["schedules", "--app", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == list(listed(capsys, "--app", spec).values())


@pytest.mark.parametrize(("argv", "message"), [
    (["nope", "--every", "60"], "no job named 'nope'"),
    (["report", "--cron", "61 * * * *"], "bad cron text"),
    (["report", "--cron", "0 3 * * *", "--timezone", "Mars/Base"], "unknown time zone"),
    (["report", "--every", "5 minutes"], "--every: '5 minutes' is not a duration"),
    (["report", "--every", "60", "--args", "[oops"], "--args must be JSON"),
    (["report", "--every", "60", "--args", '{"a": 1}'], "--args must be a JSON array"),
    (["report", "--every", "60", "--args", '["a", "b", "c"]'], "do not fit job 'report'"),
    (["report", "--every", "60", "--kwargs", '{"colour": 1}', "--args", '["a"]'],
     "do not fit job 'report'"),
])
def test_bad_input_is_one_line_and_stores_nothing(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str],
    argv: list[str], message: str,
) -> None:
    spec, _, app = app_module
    code = main(["schedule", "add", "tick", *argv, "--app", spec])
    assert code in (1, 2)
    assert message in capsys.readouterr().err
    assert stored_names(app) == []


def test_a_name_of_the_code_or_no_app_is_refused(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, url, app = app_module
    assert main(["schedule", "add", "nightly", "report", "--every", "60", "--args", '["x"]',
                 "--app", spec]) == 1
    assert "choose another name" in capsys.readouterr().err
    assert main(["schedule", "add", "x", "report", "--every", "60", "--store", url]) == 2
    assert "needs --app" in capsys.readouterr().err
    assert stored_names(app) == []


def test_unknown_names_are_refused(
    app_module: tuple[str, str, rota.App], capsys: pytest.CaptureFixture[str]
) -> None:
    spec, url, _ = app_module
    for action in ("pause", "resume"):
        for where in (["--app", spec], ["--store", url]):
            assert main(["schedule", action, "missing", *where]) == 1
            assert "no schedule named 'missing'" in capsys.readouterr().err
    assert main(["schedule", "remove", "missing", "--store", url]) == 1
    assert "no stored schedule named 'missing'" in capsys.readouterr().err
    assert main(["schedule", "remove", "nightly", "--app", spec]) == 1
    assert "defined in this App's code" in capsys.readouterr().err
