"""After `rota policy`, every command shows the policy in force: `rota queues` says who
serves each Queue now, `rota workers` the stored policy, `rota health --app` checks its
Queues. On the durable stores (the commands open the store themselves)."""

from __future__ import annotations

import json
import uuid
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.cli.common import store_now
from rota.core.jobs import NewJob
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from rota.store import open_store


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def story(url: str) -> None:
    """A live worker runs "io" (Strict sendgrid > reports in its code); jobs are due on
    "urgent" and "sendgrid"."""
    with closing(open_store(url)) as store:
        now = store_now(store)
        store.register_worker(WorkerInfo(
            id="h:1:tok", host="h", pid=1, version=rota.__version__, started_at=now,
            last_seen=now, dead_at=now + timedelta(minutes=5),
            groups=(WorkerGroupInfo("io", rota.Strict("sendgrid", "reports"), 4,
                                    owner="io@h:1:tok"),)), now)
        store.enqueue([NewJob("send", "urgent", now), NewJob("send", "urgent", now),
                       NewJob("send", "sendgrid", now)], now)


def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> str:
    name = f"io_app_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "import rota\n"
        f"app = rota.App({url!r})\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='io', "
        "policy=rota.Strict('sendgrid', 'reports')))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:app"


def queues(url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    assert main(["queues", "--store", url, "--json"]) == 0
    return {row["name"]: row for row in json.loads(capsys.readouterr().out)}


def test_every_command_shows_the_stored_policy(
    durable_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = durable_store_url
    story(url)
    spec = app_module(tmp_path, monkeypatch, url)
    # Before: "urgent" is unserved, marked in the table and its JSON
    rows = queues(url, capsys)
    assert (rows["urgent"]["served_by"], rows["urgent"]["unserved"]) == ([], True)
    assert (rows["sendgrid"]["served_by"], rows["sendgrid"]["unserved"]) == (["io"], False)
    assert main(["queues", "--store", url]) == 0
    assert "1 Queue with due jobs is served by no live worker" in capsys.readouterr().out
    # When the policy of "io" is set to serve "urgent" first
    assert main(["policy", "io", "--strict", "urgent,sendgrid,reports", "--store", url]) == 0
    capsys.readouterr()
    # Then `rota queues` says "io" serves it (weightless: Strict), nothing is unserved
    rows = queues(url, capsys)
    assert (rows["urgent"]["served_by"], rows["urgent"]["unserved"]) == (["io"], False)
    assert rows["urgent"]["weights"] == {"io": None}
    assert main(["queues", "--store", url]) == 0
    out = capsys.readouterr().out
    assert "nobody" not in out and "served by no live worker" not in out
    # And `rota workers` shows the stored policy, with its version
    assert main(["workers", "--store", url]) == 0
    assert "Strict urgent > sendgrid > reports (stored v1)" in capsys.readouterr().out
    assert main(["workers", "--store", url, "--json"]) == 0
    [worker] = json.loads(capsys.readouterr().out)
    assert worker["groups"][0]["queues"] == ["urgent", "sendgrid", "reports"]
    # And `rota health --app` checks "urgent" too, served
    assert main(["health", "--app", spec, "--json"]) == 0
    health = json.loads(capsys.readouterr().out)
    assert health["queues"] == ["urgent", "sendgrid", "reports"] and health["unserved"] == []
    # When a weighted policy drops "urgent" again
    assert main(["policy", "io", "--weighted", "sendgrid=3,reports=1", "--store", url]) == 0
    capsys.readouterr()
    # Then it is unserved again, and the weights are the stored ones
    rows = queues(url, capsys)
    assert rows["urgent"]["unserved"] is True and rows["sendgrid"]["weights"] == {"io": 3}
