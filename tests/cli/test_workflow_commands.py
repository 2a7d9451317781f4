"""Workflows in the `rota` command, on every store: `rota job` shows a job's parents and
children (a fan-in's capped, a waiting job's count of parents not finished), `rota cancel`
of a waiting job and of a parent, and the waiting state in `rota jobs` and `rota queues`.

The command reaches the test's App through `--app`: a module in `sys.modules` holds it, so
memory:// (one store object per process) is seen by the command too."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest

import rota
from rota.cli import main

MakeApp = Callable[[], rota.App]


@dataclass
class Flow:
    """A chain extract -> transform -> load (extract succeeded, transform scheduled, load
    waiting), and a fan-in of 25 fetches into merge (22 succeeded, 3 due later)."""

    app: rota.App
    spec: str
    extract: int
    transform: int
    load: int
    fetches: list[int]
    later: list[int]
    merge: int


@pytest.fixture
def flow(make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> Flow:
    app = make_app()
    module = types.ModuleType("workflow_cli_app")
    module.app = app  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)

    @app.job("step", queue="etl")
    def step(name: str) -> None: ...

    @app.job("fetch", queue="crawl")
    def fetch(page: int) -> int:
        return page

    @app.job("merge", queue="crawl")
    def merge() -> None: ...

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("crawl")))
    extract = step.enqueue("extract")
    transform = step.configure(after=[extract]).enqueue("transform")
    load = step.configure(after=[transform]).enqueue("load")
    # The group serves crawl only: extract is finished by hand, transform stays scheduled
    (claimed,) = app.store.claim(["etl"], 1, now=app.clock.now(), owner="test",
                                 lease_expires_at=app.clock.now() + timedelta(minutes=1))
    assert app.store.complete([claimed.lease], app.clock.now(), ["null"]) == 1
    fetches = [fetch.enqueue(page) for page in range(22)]
    later = [fetch.configure(delay=3600).enqueue(page) for page in range(22, 25)]
    # Given in the order enqueued, the three not due yet among them
    parents = fetches[:10] + later + fetches[10:]
    merged = merge.configure(after=parents, after_outcome="finished").enqueue()
    assert app.run_until_idle() == 22
    return Flow(app, f"{module.__name__}:app", extract, transform, load, parents, later,
                merged)


def shown_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main([*argv, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert isinstance(shown, dict)
    return shown


def table_rows(text: str) -> list[tuple[str, str]]:
    """The (field, value) cells of `rota job`'s table, one pair a line (a value of several
    lines gives several pairs, the field empty after the first)."""
    return [(cells[1].strip(), cells[2].strip()) for line in text.splitlines()
            if len(cells := line.split("│")) == 4]


def test_job_shows_a_fan_in_capped_with_the_parents_it_waits_for_first(
        flow: Flow, capsys: pytest.CaptureFixture[str]) -> None:
    # When the fan-in child is shown as JSON
    shown = shown_json(capsys, "job", str(flow.merge), "--app", flow.spec)
    # Then it waits for the 3 parents not due yet, listed first, then the others in order
    assert (shown["state"], shown["parents_total"], shown["waiting_for"]) == ("waiting", 25, 3)
    parents = shown["parents"]
    assert isinstance(parents, list) and len(parents) == 20
    assert parents[:4] == [
        *({"id": i, "name": "fetch", "state": "scheduled"} for i in flow.later),
        {"id": flow.fetches[0], "name": "fetch", "state": "succeeded"}]
    assert [one["id"] for one in parents] == (
        flow.later + [i for i in flow.fetches if i not in flow.later])[:20]
    assert (shown["children"], shown["children_total"]) == ([], 0)
    assert list(shown)[-1] == "last_traceback"  # still last
    # And the table says so in a few lines, the rest counted
    assert main(["job", str(flow.merge), "--app", flow.spec]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert ("waiting for", "3 of 25 parents, not finished yet") in rows
    assert ("after outcome", "finished: runs once every parent finished") in rows
    assert shown["after_outcome"] == "finished"
    start = rows.index(("parents", "25 parents:"))
    listed = rows[start + 1:start + 22]
    assert listed[0] == ("", f"{flow.later[0]}  scheduled  fetch")
    assert listed[3][1].split() == [str(flow.fetches[0]), "succeeded", "fetch"]
    assert listed[-1] == ("", "... and 5 more")
    assert ("children", "") in rows
    # And --related N shows N of each (0: only the counts)
    few = shown_json(capsys, "job", str(flow.merge), "--related", "0", "--app", flow.spec)
    assert (few["parents"], few["parents_total"], few["waiting_for"]) == ([], 25, 3)
    assert main(["job", str(flow.merge), "--related", "0", "--app", flow.spec]) == 0
    assert ("parents", "25 parents") in table_rows(capsys.readouterr().out)


def test_job_shows_a_chain_link_with_its_parent_and_child(
        flow: Flow, capsys: pytest.CaptureFixture[str]) -> None:
    # A link in the middle: its parent succeeded, it is scheduled, its child waits
    shown = shown_json(capsys, "job", str(flow.transform), "--app", flow.spec)
    assert shown["state"] == "scheduled" and shown["waiting_for"] is None
    assert shown["parents"] == [{"id": flow.extract, "name": "step", "state": "succeeded"}]
    assert shown["children"] == [{"id": flow.load, "name": "step", "state": "waiting"}]
    assert (shown["parents_total"], shown["children_total"]) == (1, 1)
    # The waiting end of the chain waits for one parent
    assert main(["job", str(flow.load), "--app", flow.spec]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert ("waiting for", "1 of 1 parent, not finished yet") in rows
    # And what it waits for: every parent to succeed (the default after_outcome)
    assert ("after outcome", "succeeded: runs once every parent succeeded") in rows
    assert shown_json(capsys, "job", str(flow.load), "--app",
                      flow.spec)["after_outcome"] == "succeeded"
    # A job without parents has none
    assert "after_outcome" not in shown_json(capsys, "job", str(flow.extract), "--app",
                                             flow.spec)
    start = rows.index(("parents", "1 parent:"))
    assert rows[start + 1][1].split() == [str(flow.transform), "scheduled", "step"]
    assert ("children", "") in rows
    # A job outside any workflow has none of either, and no count
    assert main(["enqueue", "step", "alone", "--app", flow.spec]) == 0
    plain = capsys.readouterr().out.strip()
    shown = shown_json(capsys, "job", plain, "--app", flow.spec)
    assert (shown["parents"], shown["children"], shown["waiting_for"]) == ([], [], None)
    # And an unknown id is still one line, exit 1
    assert main(["job", "424242", "--app", flow.spec]) == 1
    assert capsys.readouterr().err == f"rota job: no job 424242 in {flow.app.store.url}\n"


def test_cancel_a_waiting_job_and_a_parent_with_a_waiting_child(
        flow: Flow, capsys: pytest.CaptureFixture[str]) -> None:
    # When the waiting fan-in child is cancelled
    assert main(["cancel", str(flow.merge), "--app", flow.spec]) == 0
    assert capsys.readouterr().out == (
        f"{flow.merge} cancelled (it was waiting for its parents)\n")
    record = flow.app.get_job(flow.merge)
    assert record is not None and record.state is rota.JobState.CANCELLED
    # And when the scheduled link is cancelled, its waiting child ends with it
    assert main(["cancel", str(flow.transform), "--app", flow.spec]) == 0
    assert capsys.readouterr().out == (
        f"{flow.transform} cancelled, and with it 1 waiting child that was to run only "
        "after it succeeded\n")
    child = flow.app.get_job(flow.load)
    assert child is not None and child.state is rota.JobState.CANCELLED
    assert child.last_error is not None and f"parent job {flow.transform}" in child.last_error


def test_waiting_in_jobs_and_queues(flow: Flow, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "--state", "waiting", "--app", flow.spec, "--json"]) == 0
    assert [job["id"] for job in json.loads(capsys.readouterr().out)] == [flow.load,
                                                                          flow.merge]
    assert main(["queues", "--app", flow.spec, "--json"]) == 0
    counts = {q["name"]: q["counts"] for q in json.loads(capsys.readouterr().out)}
    assert (counts["crawl"]["waiting"], counts["etl"]["waiting"]) == (1, 1)
    assert main(["queues", "--app", flow.spec]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "┃" in line)
    columns = [cell.strip() for cell in header.split("┃")]
    assert columns.index("waiting") + 1 == columns.index("scheduled")
