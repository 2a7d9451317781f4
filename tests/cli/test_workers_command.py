"""`rota workers`: the registry as a table or JSON, read-only, names shown exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.core.jobs import NewJob
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
from rota.store import open_store

HOSTILE = "[bold]grp[/]"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def fill(url: str) -> None:
    now = datetime.now(UTC)
    store = open_store(url)
    try:
        for worker_id, dead_at in (("h:1:alive", now + timedelta(minutes=3)),
                                   ("h:2:dead", now - timedelta(seconds=1))):
            store.register_worker(WorkerInfo(
                id=worker_id, host="h", pid=int(worker_id.split(":")[1]), version="0.1.0",
                started_at=now, last_seen=now, dead_at=dead_at,
                groups=(WorkerGroupInfo(name=HOSTILE, policy=rota.Weighted([("[/]", 2)]),
                                        pool_size=4, in_flight=1),),
                served=(ServedCount(HOSTILE, "[/]", "succeeded", 7),),
            ), now)
    finally:
        store.close()


def test_workers_lists_alive_and_dead_with_names_exactly(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(durable_store_url)
    assert main(["workers", "--store", durable_store_url]) == 0
    out = capsys.readouterr().out
    assert "h:1:alive" in out and "h:2:dead" in out and "DEAD" in out and "alive" in out
    assert HOSTILE in out and "Weighted [/]=2" in out and "1/4" in out
    assert main(["workers", "--store", durable_store_url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(w["id"], w["alive"]) for w in listed] == [("h:1:alive", True),
                                                       ("h:2:dead", False)]
    assert listed[0]["groups"][0] == {
        "name": HOSTILE, "policy": "weighted", "queues": ["[/]"], "weights": [2],
        "pool_size": 4, "in_flight": 1, "owner": "", "seen_at": None}
    assert listed[0]["served"][0]["count"] == 7


def test_a_dead_workers_jobs_are_not_shown_in_use_and_each_clock_offset_is(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a live and a dead worker that both last reported 1 of 4 in flight, the live
    # one on a machine 2 minutes ahead of the store's clock
    fill(durable_store_url)
    store = open_store(durable_store_url)
    now = datetime.now(UTC)
    assert store.refresh_worker("h:1:alive", now, dead_at=now + timedelta(minutes=3),
                                in_flight={HOSTILE: 1}, served=[],
                                clock_offset=timedelta(seconds=120))
    store.close()
    # When the registry is listed
    assert main(["workers", "--store", durable_store_url]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "h:" in line]
    # Then the live one shows 1/4 in flight and its offset; the dead one nothing in use
    [alive] = [row for row in rows if "h:1:alive" in row]
    [dead] = [row for row in rows if "h:2:dead" in row]
    assert "1/4" in alive and "+120.0 s" in alive
    assert "-/4" in dead and "1/4" not in dead and "+0.0 s" in dead
    assert main(["workers", "--store", durable_store_url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [w["clock_offset_s"] for w in listed] == [120.0, 0.0]


def test_workers_opens_sqlite_read_only_and_says_when_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rota.db"
    open_store(f"sqlite:///{path}").close()
    path.chmod(0o444)
    before = path.read_bytes()
    assert main(["workers", "--store", f"sqlite:///{path}"]) == 0
    assert "no workers registered" in capsys.readouterr().out
    assert path.read_bytes() == before
    assert main(["workers", "--store", f"sqlite:///{tmp_path / 'missing.db'}"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_workers_jobs_lists_what_each_live_worker_runs_now(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a live and a dead worker, each with a group whose owner id leases a job, and
    # a job leased by an owner no worker registered
    now = datetime.now(UTC)
    store = open_store(durable_store_url)
    try:
        for worker_id, dead_at in (("h:1:alive", now + timedelta(minutes=3)),
                                   ("h:2:dead", now - timedelta(seconds=1))):
            store.register_worker(WorkerInfo(
                id=worker_id, host="h", pid=int(worker_id.split(":")[1]), version="0.1.0",
                started_at=now, last_seen=now, dead_at=dead_at,
                groups=(WorkerGroupInfo(name=HOSTILE, policy=rota.Strict("[/]"), pool_size=4,
                                        in_flight=1, owner=f"{HOSTILE}@{worker_id}"),),
            ), now)
        started = now - timedelta(seconds=90)
        store.enqueue([NewJob(name="[red]send[/]", queue="[/]", due_at=started)] * 3, started)
        for owner in (f"{HOSTILE}@h:1:alive", f"{HOSTILE}@h:2:dead", "stranger"):
            store.claim(["[/]"], 1, now=started, owner=owner,
                        lease_expires_at=now + timedelta(minutes=5))
    finally:
        store.close()
    # When the registry is listed with its jobs
    assert main(["workers", "--store", durable_store_url, "--jobs"]) == 0
    out = capsys.readouterr().out
    # Then the live worker's job is listed with its name, Queue and how long it has run;
    # the dead worker's and the stranger's are not
    rows = [line for line in out.splitlines() if "[red]send[/]" in line]
    assert len(rows) == 1 and "h:1:alive" in rows[0] and "9" in rows[0]
    assert "Jobs in flight" in out
    assert main(["workers", "--store", durable_store_url, "--jobs", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    [job] = listed[0]["jobs"]
    assert (job["id"], job["name"], job["queue"], job["attempt"], job["group"]) == (
        1, "[red]send[/]", "[/]", 1, HOSTILE)
    assert 89 <= job["running_for_s"] < 3600 and listed[1]["jobs"] == []
    # And without --jobs the JSON has no jobs key (unchanged)
    assert main(["workers", "--store", durable_store_url, "--json"]) == 0
    assert "jobs" not in json.loads(capsys.readouterr().out)[0]
