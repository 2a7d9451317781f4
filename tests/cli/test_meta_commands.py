"""`rota jobs --meta`, `rota cancel` with filters, `rota requeue --meta`, on the durable
stores, with their bad input (one line, exit 2, no traceback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from rota.cli import main
from rota.core.jobs import JobState, NewJob
from rota.core.meta import encode_meta
from rota.store import Store, open_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(durable_store_url: str) -> Iterator[Store]:
    opened = open_store(durable_store_url)
    opened.count_jobs()  # the first use creates the schema
    yield opened
    opened.close()


def exit_code(argv: list[str]) -> object:
    try:
        return main(argv)
    except SystemExit as stopped:
        return stopped.code


def enqueue(store: Store, meta: dict[str, object], queue: str = "q") -> int:
    job_id, = store.enqueue([NewJob("send", queue, T0, meta_json=encode_meta(meta))], T0)
    return job_id


def test_jobs_meta_lists_the_matching_jobs_and_shows_their_meta(
        store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    acme = enqueue(store, {"tenant": "acme", "order": 42})
    text = enqueue(store, {"tenant": "acme", "order": "42"})
    enqueue(store, {"tenant": "zeta", "order": 42})
    url = store.url
    assert exit_code(["jobs", "--store", url, "--json", "--meta", "tenant=acme"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [job["id"] for job in listed] == [acme, text]
    assert listed[0]["meta"] == {"tenant": "acme", "order": 42}
    # A VALUE that is JSON is read as JSON: 42 the number, '"42"' the text
    assert exit_code(["jobs", "--store", url, "--json", "--meta", "tenant=acme",
                      "--meta", "order=42"]) == 0
    assert [job["id"] for job in json.loads(capsys.readouterr().out)] == [acme]
    assert exit_code(["jobs", "--store", url, "--json", "--meta", 'order="42"']) == 0
    assert [job["id"] for job in json.loads(capsys.readouterr().out)] == [text]


@pytest.mark.parametrize(("argv", "message"), [
    (["jobs", "--meta", "tenant"], "a meta filter is KEY=VALUE"),
    (["jobs", "--meta", "t=a", "--offset", "5"], "--offset does not combine with --meta"),
    (["cancel"], "give job ids, or filters"),
    (["cancel", "3", "--queue", "q"], "not both"),
])
def test_bad_filters_are_one_line_usage_errors(
        store: Store, capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str) -> None:
    assert exit_code([*argv, "--store", store.url]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cancel_by_queue_and_state_then_requeue_by_meta(
        store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    mine = [enqueue(store, {"tenant": "acme"}, "emails") for _ in range(3)]
    other = enqueue(store, {"tenant": "zeta"}, "reports")
    url = store.url
    assert exit_code(["cancel", "--store", url, "--queue", "emails",
                      "--state", "scheduled"]) == 0
    assert capsys.readouterr().out == "cancelled 3 jobs (running ones on request)\n"
    assert {store.get_job(i).state for i in mine} == {JobState.CANCELLED}  # type: ignore[union-attr]
    assert store.get_job(other).state is JobState.SCHEDULED  # type: ignore[union-attr]
    assert exit_code(["requeue", "--store", url, "--json", "--meta", "tenant=acme"]) == 0
    assert json.loads(capsys.readouterr().out) == {"requeued": 3}
    assert exit_code(["cancel", "--store", url, "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"cancelled": 4}
