"""`rota purge`: deletes old finished jobs from the shell; bad input is one line, exit 2."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from rota.cli import main
from rota.cli.purge import parse_duration
from rota.core.jobs import JobState, NewJob
from rota.store import open_store

LEASE = timedelta(minutes=1)


def seed(url: str) -> dict[str, list[int]]:
    """Jobs that finished 10 days ago (succeeded, dead_lettered), 1 hour ago (succeeded),
    and one still scheduled from long ago; their ids by kind."""
    store = open_store(url)
    try:
        now = datetime.now(UTC)
        ids: dict[str, list[int]] = {}
        for kind, at in (("old", now - timedelta(days=10)), ("recent", now - timedelta(hours=1))):
            created = store.enqueue([NewJob("job", kind, at) for _ in range(3)], at)
            jobs = store.claim([kind], 3, now=at, owner="w", lease_expires_at=at + LEASE)
            store.complete([job.lease for job in jobs[:2]], at)
            store.dead_letter(jobs[2].lease, at, "RuntimeError: no")
            ids[kind] = created
        ids["waiting"] = store.enqueue([NewJob("job", "later", now + timedelta(days=1))],
                                       now - timedelta(days=30))
        return ids
    finally:
        store.close()


def remaining(url: str) -> dict[tuple[str, JobState], int]:
    store = open_store(url)
    try:
        return store.count_jobs()
    finally:
        store.close()


def test_purge_deletes_finished_jobs_older_than_the_duration(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given finished jobs 10 days and 1 hour old, and a scheduled one
    seed(durable_store_url)
    # When purging the succeeded ones older than 7 days, as JSON
    assert main(["purge", "--older-than", "7d", "--state", "succeeded",
                 "--store", durable_store_url, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # Then the two old successes are gone, nothing else
    assert result["deleted"] == 2 and result["states"] == ["succeeded"]
    assert result["older_than_s"] == 7 * 86400.0
    assert remaining(durable_store_url) == {
        ("old", JobState.DEAD_LETTERED): 1,
        ("recent", JobState.SUCCEEDED): 2, ("recent", JobState.DEAD_LETTERED): 1,
        ("later", JobState.SCHEDULED): 1,
    }
    # And without --state every finished state older than 30 minutes goes, in plain text
    assert main(["purge", "--older-than", "30m", "--store", durable_store_url]) == 0
    assert capsys.readouterr().out.startswith("deleted 4 finished jobs (succeeded, "
                                              "cancelled, dead_lettered, quarantined)")
    assert remaining(durable_store_url) == {("later", JobState.SCHEDULED): 1}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--older-than", "7x"], "'7x' is not a duration; expected a number and a unit"),
        (["--older-than=-3d"], "--older-than must be a duration of 0 or more; got '-3d'"),
        (["--older-than", ""], "'' is not a duration"),
        ([], "--older-than is required"),
        (["--older-than", "1d", "--state", "scheduled"], "only finished jobs, not scheduled"),
        (["--older-than", "1d", "--state", "done"], "unknown job state 'done'"),
        (["--older-than", "99999999999d"], "too long a duration"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_and_deletes_nothing(
    durable_store_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    seed(durable_store_url)
    before = remaining(durable_store_url)
    assert main(["purge", *argv, "--store", durable_store_url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rota purge: ") and message in err, err
    assert remaining(durable_store_url) == before


def test_no_store_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    assert main(["purge", "--older-than", "1d"]) == 2
    assert "no store given" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [("30s", timedelta(seconds=30)), ("15m", timedelta(minutes=15)),
     ("12h", timedelta(hours=12)), ("7d", timedelta(days=7)), ("1.5h", timedelta(minutes=90)),
     (" 2D ", timedelta(days=2)), ("0s", timedelta(0))],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected
