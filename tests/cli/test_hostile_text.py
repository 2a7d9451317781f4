"""User text shown by the `rota` command is shown exactly: never parsed as rich markup.

A Queue name, job name or error text holding `[...]` crashed `rota queues`/`rota jobs`
with a MarkupError (`[/]`), or lost its `[bold]` to styling.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rota.cli import main
from rota.cli.display import shown
from rota.core.jobs import NewJob
from rota.store import open_store

# Valid Queue names (no whitespace or control characters) that rich would take as markup.
HOSTILE_NAMES = ("[bold]x[/]", "a[b", "[/]", ":smile:", "\\[red]y")
HOSTILE_ERROR = "ValueError: [red]boom[/] and [/] with \x1b[2J and \\"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tables wrap long cells at the terminal width; give them room so names stay whole.
    monkeypatch.setenv("COLUMNS", "250")


def fill_with_hostile_jobs(url: str) -> None:
    now = datetime.now(UTC)
    store = open_store(url)
    try:
        ids = store.enqueue([NewJob(name, name, now) for name in HOSTILE_NAMES], now)
        claimed = store.claim([HOSTILE_NAMES[0]], 1, now=now, owner="w",
                              lease_expires_at=now + timedelta(minutes=1))
        assert [job.id for job in claimed] == ids[:1]
        assert store.dead_letter(claimed[0].lease, now, HOSTILE_ERROR)
    finally:
        store.close()


def test_queues_and_jobs_show_names_and_errors_exactly(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given jobs whose names and Queues look like markup, one with a markup-like error
    fill_with_hostile_jobs(durable_store_url)
    # When listing them as tables
    assert main(["queues", "--store", durable_store_url]) == 0
    queues_out = capsys.readouterr().out
    assert main(["jobs", "--store", durable_store_url]) == 0
    jobs_out = capsys.readouterr().out
    # Then every name is shown as it is (no MarkupError, nothing swallowed)
    for name in HOSTILE_NAMES:
        assert name in queues_out
        assert jobs_out.count(name) >= 2  # as job name and as Queue
    # And the error text too, its escape character shown rather than sent to the terminal
    assert "ValueError: [red]boom[/] and [/] with \\x1b[2J and \\" in jobs_out
    assert "\x1b" not in jobs_out
    # And the JSON forms carry the exact text
    assert main(["jobs", "--store", durable_store_url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [job["name"] for job in listed] == list(HOSTILE_NAMES)
    assert listed[0]["last_error"] == HOSTILE_ERROR


def test_enqueue_and_cancel_take_hostile_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    for name in HOSTILE_NAMES:
        # When enqueueing a markup-like job name on a markup-like Queue
        assert main(["enqueue", name, "--queue", name, "--store", url]) == 0
        job_id = capsys.readouterr().out.strip()
        # Then it is stored exactly, and cancelling it reports its id
        assert main(["cancel", job_id, "--store", url]) == 0
        assert capsys.readouterr().out == f"{job_id} cancelled\n"
    assert main(["jobs", "--store", url, "--state", "cancelled", "--json"]) == 0
    assert [(j["name"], j["queue"]) for j in json.loads(capsys.readouterr().out)] == [
        (name, name) for name in HOSTILE_NAMES]
    # And a bad Queue name is reported with the name as given, in one line
    assert main(["enqueue", "x", "--queue", "[bold]a b", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "'[bold]a b'" in err and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--strict", "--weighted"])
def test_simulate_shows_queue_names_exactly(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    queues = ["[bold]x[/]", "a[b", "[/]"]
    spec = ",".join(queues if flag == "--strict" else [f"{q}=1" for q in queues])
    assert main(["simulate", flag, spec, "--pool", "3", "--passes", "1"]) == 0
    out = capsys.readouterr().out
    for queue in queues:
        assert out.count(queue) >= 3  # heading, claims/order, served table


def test_demo_shows_a_markup_like_path_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a --db path that looks like markup
    db = tmp_path / "[bold]d[red].db"
    # When the demo runs on it, Then it names the file exactly
    assert main(["demo", "--db", str(db), "--seconds", "0.2"]) == 0
    out = capsys.readouterr().out
    assert f"sqlite:///{db}" in out.replace("\n", "")


def test_control_characters_are_shown_as_escapes() -> None:
    assert shown("a\x00b\x1b[0m\x7f") == "a\\x00b\\x1b[0m\\x7f"
    assert shown("multi\nline\ttab é 😀") == "multi\nline\ttab é 😀"
    assert shown(42) == "42"
