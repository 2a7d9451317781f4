"""`rota health`: exit 0 when the store can serve, 1 with the reason, 2 for usage errors;
never creating or migrating a store."""

from __future__ import annotations

import json
import sqlite3
import sys
import uuid
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.core.clock import SystemClock
from rota.core.workers import WorkerGroupInfo, WorkerInfo


def created(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    rota.App(url).close()  # an SQLite App creates its file
    return url


def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> str:
    """A module defining an App on `url` with a group serving a and b; its APP spec."""
    name = f"health_app_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "import rota\n"
        f"app = rota.App({url!r})\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='g', "
        "policy=rota.Strict('a', 'b')))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:app"


def test_a_current_store_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = created(tmp_path)
    assert main(["health", "--store", url]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"ok: {url} answers, schema version ") and err == ""
    assert main(["health", "--store", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_a_missing_file_exits_1_with_the_reason_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    assert main(["health", "--store", f"sqlite:///{missing}"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("rota health: the store cannot be opened")
    assert "does not exist" in err and not missing.exists()


def test_a_schema_behind_exits_1_and_is_not_migrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = created(tmp_path)
    with closing(sqlite3.connect(tmp_path / "rota.db")) as conn:
        conn.execute("PRAGMA user_version = 1")
    assert main(["health", "--store", url, "--json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is False and "rota migrate" in answer["problems"][0]
    with closing(sqlite3.connect(tmp_path / "rota.db")) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1


def test_with_an_app_every_queue_needs_a_live_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an App whose group serves a and b, and no worker
    url = created(tmp_path)
    spec = app_module(tmp_path, monkeypatch, url)
    # Then it is unhealthy, naming the Queues
    assert main(["health", "--app", spec]) == 1
    err = capsys.readouterr().err
    assert "no live worker serves Queue(s) 'a', 'b'" in err
    # When a live worker serves them (registered as a real one registers)
    now = SystemClock().now()
    with closing(rota.App(url)) as writer:
        writer.store.register_worker(WorkerInfo(
            id="h:1:t", host="h", pid=1, version=rota.__version__, started_at=now,
            last_seen=now, dead_at=now + timedelta(minutes=5),
            groups=(WorkerGroupInfo("g", rota.Strict("a", "b"), 2, owner="g@h:1:t"),)), now)
    # Then it is healthy
    assert main(["health", "--app", spec]) == 0
    assert "live workers serve its Queues a, b" in capsys.readouterr().out
    sys.modules[spec.split(":")[0]].app.close()  # the App the command loaded


@pytest.mark.parametrize(("argv", "words"), [
    (["--store", "memory://", "--app", "x:y"], "give --store or --app, not both"),
    ([], "no store given"),
])
def test_usage_errors_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    assert main(["health", *argv]) == 2
    assert words in capsys.readouterr().err


def test_warnings_go_to_stderr_and_fail_only_with_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = created(tmp_path)
    said = ("the write-ahead log x.db-wal is 100 MiB (over 64 MiB): ...",)
    monkeypatch.setattr("rota.app.status.store_warnings", lambda store, limits=None: said)
    assert main(["health", "--store", url]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"ok: {url} answers")
    assert err == f"rota health: warning: {said[0]}\n"
    assert main(["health", "--store", url, "--strict"]) == 1
    assert main(["health", "--store", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["warnings"] == list(said)


def test_a_clean_store_has_no_warnings_even_with_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = created(tmp_path)
    assert main(["health", "--store", url, "--strict"]) == 0
    assert capsys.readouterr().err == ""
