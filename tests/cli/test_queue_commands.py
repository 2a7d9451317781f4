"""`rota pause`, `rota resume`, `rota limit` and `rota queues`, on the durable stores
(the settings must outlive the command's process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from rota.cli import main
from rota.core.jobs import NewJob
from rota.store import open_store


@pytest.fixture
def no_rota_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    yield


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_pause_resume_and_limit_print_the_settings_and_bind_claims(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "--store", durable_store_url
    # Given a Queue with no jobs yet: settings can precede jobs
    assert run_json(capsys, "pause", "sendgrid", *store) == {
        "queue": "sendgrid", "paused": True, "limit": None}
    assert run_json(capsys, "limit", "sendgrid", "5", *store) == {
        "queue": "sendgrid", "paused": True, "limit": 5}
    # When jobs arrive, a claim takes none while paused, and at most 5 once resumed
    opened = open_store(durable_store_url)
    try:
        now = datetime.now(UTC)
        opened.enqueue([NewJob("send", "sendgrid", now) for _ in range(8)], now)
        lease = now + timedelta(minutes=1)
        assert opened.claim(["sendgrid"], 8, now=now, owner="w", lease_expires_at=lease) == []
        assert run_json(capsys, "resume", "sendgrid", *store) == {
            "queue": "sendgrid", "paused": False, "limit": 5}
        taken = opened.claim(["sendgrid"], 8, now=now, owner="w", lease_expires_at=lease)
        assert len(taken) == 5
    finally:
        opened.close()
    # And `rota limit Q none` lifts the limit; the text form says what is now in force
    assert main(["limit", "sendgrid", "none", *store]) == 0
    assert capsys.readouterr().out == "Queue 'sendgrid': not paused, no limit\n"
    assert main(["pause", "sendgrid", *store]) == 0
    assert capsys.readouterr().out == "Queue 'sendgrid': paused, no limit\n"


def test_queues_shows_paused_limit_counts_and_queues_with_only_settings(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "--store", durable_store_url
    # Given jobs on "mail", and settings on "sms", which has none
    assert main(["enqueue", "send", "--queue", "mail", *store]) == 0
    assert main(["enqueue", "send", "--queue", "mail", "--delay", "3600", *store]) == 0
    assert main(["limit", "mail", "3", *store]) == 0
    assert main(["pause", "sms", *store]) == 0
    capsys.readouterr()
    # When the Queues are listed as JSON
    mail, sms = run_json(capsys, "queues", *store)  # type: ignore[misc]
    # Then each shows its settings, every state, and what is due now
    assert (mail["name"], mail["paused"], mail["limit"], mail["due"]) == ("mail", False, 3, 1)
    assert mail["counts"] == {"waiting": 0, "scheduled": 2, "leased": 0, "succeeded": 0,
                              "dead_lettered": 0, "quarantined": 0, "cancelled": 0}
    assert mail["oldest_due_at"] is not None
    assert (sms["name"], sms["paused"], sms["limit"], sms["due"], sms["oldest_due_at"]) == (
        "sms", True, None, 0, None)
    # And the table has the paused and limit columns and both Queues
    assert main(["queues", *store]) == 0
    table = capsys.readouterr().out
    assert "paused" in table and "limit" in table
    assert "mail" in table and "sms" in table


def test_queues_of_an_empty_store_says_so(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a store that exists (a read command never creates one) but holds nothing
    created = open_store(durable_store_url)
    created.count_jobs()  # the first use creates the schema
    created.close()
    assert run_json(capsys, "queues", "--store", durable_store_url) == []
    assert main(["queues", "--store", durable_store_url]) == 0
    assert "no Queues" in capsys.readouterr().out


@pytest.mark.usefixtures("no_rota_store")
@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["limit", "q", "-1"], 2, "a Queue's limit must be a whole number from 0 to 2147483647"),
        (["limit", "q", "five"], 2, "N must be a whole number from 0 to 2147483647, or 'none'"),
        (["limit", "q", "1" * 5000], 2, "N must be a whole number from 0 to 2147483647"),
        (["limit", "q", "2.5"], 2, "got '2.5'"),
        (["pause", "has space"], 2, "whitespace"),
        (["resume", ""], 2, "non-empty"),
        (["limit", "x" * 201, "1"], 2, "at most 200 characters"),
        (["pause", "q"], 2, "no store given"),
        (["pause", "q", "--store", "postgresql://u:hunter2@127.0.0.1:1/x"], 1, "u:***@"),
        (["queues", "--store", "mysql://x", "--json"], 2, "is not one rota knows"),
    ],
)
def test_bad_input_is_one_line_with_the_right_exit_code(
    argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str],
    tmp_path: object,
) -> None:
    if "--store" not in argv and argv[:2] != ["pause", "q"]:
        argv = [*argv, "--store", "memory://"]
    assert main(argv) == code
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert "hunter2" not in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""


def test_bad_input_changes_nothing(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "--store", durable_store_url
    assert main(["limit", "q", "4", *store]) == 0
    assert main(["limit", "q", "-4", *store]) == 2
    assert main(["limit", "q", "lots", *store]) == 2
    capsys.readouterr()
    (info,) = run_json(capsys, "queues", *store)  # type: ignore[misc]
    assert info["limit"] == 4


def test_rate_sets_and_removes_a_rate_that_binds_claims_and_queues_shows_it(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "--store", durable_store_url
    # Given a rate in rota's duration syntax, with a burst
    assert run_json(capsys, "rate", "sendgrid", "6/30s", "--burst", "3", *store) == {
        "queue": "sendgrid", "rate": {"jobs": 6, "per_s": 30.0, "burst": 3}}
    # Then a claim takes at most the burst, and `rota queues` shows the rate
    opened = open_store(durable_store_url)
    try:
        now = datetime.now(UTC)
        opened.enqueue([NewJob("send", "sendgrid", now) for _ in range(8)], now)
        lease = now + timedelta(minutes=1)
        assert len(opened.claim(["sendgrid"], 8, now=now, owner="w",
                                lease_expires_at=lease)) == 3
    finally:
        opened.close()
    (row,) = run_json(capsys, "queues", *store)  # type: ignore[misc]
    assert row["rate"] == {"jobs": 6, "per_s": 30.0, "burst": 3}
    # (its bucket at the store's time of the read: whole tokens, and when the next comes)
    assert isinstance(row["tokens"], int) and 0 <= row["tokens"] <= 3
    assert datetime.fromisoformat(row["next_token_at"]) > now
    assert main(["queues", *store]) == 0
    assert "6/30s (burst 3)" in capsys.readouterr().out
    # And a bare number is seconds; 'none' removes the rate
    assert main(["rate", "sendgrid", "10/60", *store]) == 0
    assert capsys.readouterr().out == "Queue 'sendgrid': rate 10/1m, burst 10 (bucket full)\n"
    assert run_json(capsys, "rate", "sendgrid", "none", *store) == {
        "queue": "sendgrid", "rate": None}


@pytest.mark.parametrize(("argv", "words"), [
    (["10/x"], "is not a rate; expected N/PERIOD"),
    (["10"], "is not a rate"),
    (["0/1m"], "from 1 to 2147483647"),
    (["10/1m", "--burst", "0"], "burst must be a whole number from 1"),
    (["10/1m", "--burst", "many"], "--burst must be a whole number"),
    (["none", "--burst", "3"], "--burst goes with a rate"),
])
def test_a_bad_rate_is_a_usage_error_naming_the_form(
    tmp_path: object, capsys: pytest.CaptureFixture[str], argv: list[str], words: str,
) -> None:
    assert main(["rate", "q", *argv, "--store", "memory://"]) == 2
    assert words in capsys.readouterr().err


def test_settings_on_a_family_show_in_force_on_its_members(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "--store", durable_store_url
    assert run_json(capsys, "limit", "tenant-*", "2", *store) == {
        "queue": "tenant-*", "paused": False, "limit": 2}
    opened = open_store(durable_store_url)
    try:
        now = datetime.now(UTC)
        opened.enqueue([NewJob("send", queue, now) for queue in ("tenant-a", "tenant-b")
                        for _ in range(3)], now)
        lease = now + timedelta(minutes=1)
        taken = opened.claim(["tenant-a", "tenant-b"], 6, now=now, owner="w",
                             lease_expires_at=lease)
        assert sorted(job.queue for job in taken) == ["tenant-a"] * 2 + ["tenant-b"] * 2
    finally:
        opened.close()
    rows = {row["name"]: row for row in run_json(capsys, "queues", *store)}  # type: ignore[union-attr]
    assert (rows["tenant-*"]["members"], rows["tenant-*"]["limit"]) == (2, 2)
    assert rows["tenant-*"]["counts"]["leased"] == 4
    assert not rows["tenant-*"]["unserved"]
    assert (rows["tenant-a"]["limit"], rows["tenant-a"]["family"]) == (2, "tenant-*")
    assert main(["queues", *store]) == 0
    assert "tenant-* (2 Queues)" in capsys.readouterr().out
    # A bad family is a usage error naming the fix
    assert main(["pause", "t*-*", *store]) == 2
    assert "'tenant-*'" in capsys.readouterr().err
