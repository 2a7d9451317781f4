"""`rota job`, `rota jobs --newest/--offset`, `rota requeue` and `rota cancel` of running
jobs, on the durable stores, with their bad input (one line, exit code, no traceback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from rota.cli import main
from rota.core.jobs import CANCELLED_ON_REQUEST, JobState, NewJob
from rota.core.progress import Progress
from rota.store import Store, open_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(durable_store_url: str) -> Iterator[Store]:
    """A store a worker would have created (read commands never create one)."""
    opened = open_store(durable_store_url)
    opened.count_jobs()  # the first use creates the schema
    yield opened
    opened.close()


def exit_code(argv: list[str]) -> object:
    """main's exit code, or argparse's (it exits with 2 on a usage error)."""
    try:
        return main(argv)
    except SystemExit as stopped:
        return stopped.code


def out_json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def dead_lettered(store: Store, queue: str = "q", count: int = 1) -> list[int]:
    """Jobs on `queue` that failed for good."""
    ids = store.enqueue([NewJob("send", queue, T0, '["a@x"]') for _ in range(count)], T0)
    leased = store.claim([queue], count, now=T0, owner="w",
                         lease_expires_at=T0 + timedelta(minutes=1))
    for job in leased:
        assert store.dead_letter(job.lease, T0, "ConnectionError: provider down")
    return ids


# -- rota job ----------------------------------------------------------------------------


def test_job_shows_every_field(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a job that succeeded with a result
    (job_id,) = store.enqueue([NewJob("sum", "maths", T0, "[2, 3]", '{"round": true}')], T0)
    (job,) = store.claim(["maths"], 1, now=T0 + timedelta(seconds=5), owner="w",
                         lease_expires_at=T0 + timedelta(minutes=1))
    finished = T0 + timedelta(seconds=6.5)
    assert store.complete([job.lease], finished, ['{"sum": 5}']) == 1
    # When it is shown as JSON
    assert main(["job", str(job_id), "--store", store.url, "--json"]) == 0
    shown = out_json(capsys)
    # Then every field is there, with how long its attempt ran
    assert shown == {
        "id": job_id, "name": "sum", "queue": "maths", "state": "succeeded", "attempt": 1,
        "due_at": T0.isoformat(), "args": [2, 3], "kwargs": {"round": True},
        "last_error": None, "created_at": T0.isoformat(),
        "started_at": (T0 + timedelta(seconds=5)).isoformat(),
        "finished_at": finished.isoformat(), "duration_s": 1.5, "result": {"sum": 5},
        "cancel_requested": False, "lease_owner": None, "lease_expires_at": None,
        "worker": "w", "progress": None, "errors": [], "parents_total": 0,
        "waiting_for": None, "parents": [], "children_total": 0, "children": [],
        "last_traceback": None,
    }
    # And the table shows them too
    assert main(["job", str(job_id), "--store", store.url]) == 0
    table = capsys.readouterr().out
    assert "started_at" in table and '{"sum": 5}' in table and "succeeded" in table
    rows = {cells[1].strip(): cells[2].strip() for line in table.splitlines()
            if len(cells := line.split("│")) == 4}
    assert rows["finished_at"] == finished.isoformat() and rows["duration"] == "1.5 s"


def test_job_shows_snoozes_and_the_expiry_of_a_job_that_has_them(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job with an expiry that snoozed once
    expires = T0 + timedelta(hours=1)
    (job_id,) = store.enqueue([NewJob("poll", "q", T0, expires_at=expires)], T0)
    (job,) = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + timedelta(minutes=1))
    assert store.snooze(job.lease, T0, T0 + timedelta(minutes=5))
    # When it is shown, Then both are there (a job without them shows neither)
    assert main(["job", str(job_id), "--store", store.url, "--json"]) == 0
    shown = out_json(capsys)
    assert (shown["snoozes"], shown["expires_at"]) == (1, expires.isoformat())
    assert main(["jobs", "--store", store.url, "--json"]) == 0
    (listed,) = out_json(capsys)
    assert (listed["snoozes"], listed["expires_at"]) == (1, expires.isoformat())


def test_job_shows_the_traceback_of_the_last_failed_attempt(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job dead-lettered with its error's traceback, and one still running
    traceback = ('Traceback (most recent call last):\n  File "mail.py", line 12, in send\n'
                 '    raise ConnectionError("provider down")\n'
                 'ConnectionError: provider down\n')
    failed, running = store.enqueue([NewJob("send", "q", T0), NewJob("send", "q", T0)], T0)
    leased = store.claim(["q"], 2, now=T0, owner="w", lease_expires_at=T0 + timedelta(minutes=1))
    (lease,) = [job.lease for job in leased if job.id == failed]
    assert store.dead_letter(lease, T0 + timedelta(seconds=2), "ConnectionError: provider down",
                             traceback=traceback)
    # When it is shown
    assert main(["job", str(failed), "--store", store.url, "--json"]) == 0
    shown = out_json(capsys)
    assert main(["job", str(failed), "--store", store.url]) == 0
    table = capsys.readouterr().out
    # Then JSON and table carry the whole traceback, line by line, and the attempt's time
    assert isinstance(shown, dict) and shown["last_traceback"] == traceback
    assert shown["duration_s"] == 2.0
    lines = table.splitlines()
    start = next(n for n, line in enumerate(lines) if "last_traceback" in line)
    shown_lines = [line.split("│")[2].strip() for line in lines[start:] if line.count("│") == 3]
    assert shown_lines[:4] == [line.strip() for line in traceback.splitlines()]
    # And a job still running has no duration and no traceback yet
    assert main(["job", str(running), "--store", store.url, "--json"]) == 0
    still = out_json(capsys)
    assert isinstance(still, dict)
    assert (still["duration_s"], still["last_traceback"], still["finished_at"]) == (
        None, None, None)


def test_job_and_jobs_show_progress_every_failed_attempt_and_the_worker(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job retried once on one worker, then running on another, reporting progress
    (job_id,) = store.enqueue([NewJob("export", "q", T0)], T0)
    store.claim(["q"], 1, now=T0, owner="g@host-a:1:aaaa0000",
                lease_expires_at=T0 + timedelta(minutes=1))
    lease = store.get_job(job_id).lease  # type: ignore[union-attr]
    assert store.retry(lease, T0 + timedelta(seconds=1), T0, "TimeoutError: slow",
                       traceback="Traceback: slow\n")
    store.claim(["q"], 1, now=T0 + timedelta(seconds=2), owner="g@host-b:2:bbbb0000",
                lease_expires_at=T0 + timedelta(minutes=1))
    lease = store.get_job(job_id).lease  # type: ignore[union-attr]
    assert store.set_progress(lease, Progress(40, 160, "rows", T0 + timedelta(seconds=3)))
    # When it is shown
    shown = out_json(capsys) if main(["job", str(job_id), "--store", store.url,
                                      "--json"]) == 0 else None
    assert isinstance(shown, dict)
    # Then JSON has the progress, the failed attempt and the worker running it now
    assert shown["progress"] == {"done": 40, "total": 160, "message": "rows",
                                 "at": (T0 + timedelta(seconds=3)).isoformat()}
    assert shown["errors"] == [{"attempt": 1, "at": (T0 + timedelta(seconds=1)).isoformat(),
                                "error": "TimeoutError: slow", "worker": "host-a:1:aaaa0000",
                                "traceback": "Traceback: slow\n"}]
    assert shown["worker"] == "host-b:2:bbbb0000"
    # And so does the table, one failed attempt a line
    assert main(["job", str(job_id), "--store", store.url]) == 0
    rows = {cells[1].strip(): cells[2].strip() for line in capsys.readouterr().out.splitlines()
            if len(cells := line.split("│")) == 4}
    assert rows["progress"] == "40/160 (25%) rows"
    assert rows["failed attempts"].split() == [
        "#1", (T0 + timedelta(seconds=1)).isoformat(), "host-a:1:aaaa0000", "TimeoutError:",
        "slow"]
    assert rows["worker"] == "host-b:2:bbbb0000"
    # And `rota jobs` grows a progress column
    assert main(["jobs", "--store", store.url]) == 0
    listing = capsys.readouterr().out
    assert "progress" in listing and "40/160 (25%) rows" in listing


def test_job_of_an_unknown_id_is_one_line_and_exit_1(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["job", "424242", "--store", store.url]) == 1
    assert one_line_error(capsys).startswith("rota job: no job 424242 in ")
    assert exit_code(["job", "x", "--store", store.url]) == 2  # not an id: usage error
    assert "job ids are whole numbers from 1 to" in capsys.readouterr().err


# -- rota jobs: newest first and paging -----------------------------------------------


def test_jobs_newest_first_and_paged(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    ids = store.enqueue([NewJob("n", "q", T0) for _ in range(5)], T0)

    def listed(*extra: str) -> list[int]:
        assert main(["jobs", "--store", store.url, "--json", *extra]) == 0
        return [job["id"] for job in out_json(capsys)]  # type: ignore[attr-defined]

    assert listed("--newest") == ids[::-1]
    assert listed("--newest", "--limit", "2") == [ids[4], ids[3]]
    assert listed("--newest", "--limit", "2", "--offset", "2") == [ids[2], ids[1]]
    assert listed("--limit", "2", "--offset", "4") == [ids[4]]
    assert exit_code(["jobs", "--store", store.url, "--offset", "-1"]) == 2
    assert "argument --offset: expected a whole number from 0 to" in capsys.readouterr().err


# -- rota requeue ----------------------------------------------------------------------


def test_requeue_by_id(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = dead_lettered(store, count=2)
    assert main(["requeue", str(first), str(second), "--store", store.url]) == 0
    assert capsys.readouterr().out == f"{first} requeued\n{second} requeued\n"
    job = store.get_job(first)
    assert job is not None and (job.state, job.attempt) == (JobState.SCHEDULED, 0)


def test_requeue_of_a_job_in_the_wrong_state_or_unknown_is_exit_1(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    (dead,) = dead_lettered(store)
    (scheduled,) = store.enqueue([NewJob("n", "q", T0)], T0)
    assert main(["requeue", str(dead), str(scheduled), "999999", "--store", store.url]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{dead} requeued\n"
    assert captured.err == (
        "rota requeue: not requeued (only cancelled, dead_lettered, quarantined jobs can "
        f"be): job {scheduled}: it is scheduled; job 999999: no such job\n")
    # --json reports both lists, and still exits 1
    assert main(["requeue", str(scheduled), "--store", store.url, "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "requeued": [], "not_requeued": [{"id": scheduled, "reason": "it is scheduled"}]}
    assert captured.err.count("\n") == 1


def test_requeue_every_job_in_a_state_of_one_queue_or_all(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    emails = dead_lettered(store, "emails", 3)
    reports = dead_lettered(store, "reports", 2)
    assert main(["requeue", "--queue", "emails", "--state", "dead_lettered",
                 "--store", store.url]) == 0
    assert capsys.readouterr().out == "requeued 3 dead_lettered jobs of Queue 'emails'\n"
    assert {store.get_job(i).state for i in emails} == {JobState.SCHEDULED}  # type: ignore[union-attr]
    assert main(["requeue", "--state", "dead_lettered", "--store", store.url, "--json"]) == 0
    assert out_json(capsys) == {"requeued": 2, "state": "dead_lettered", "queue": None}
    assert {store.get_job(i).state for i in reports} == {JobState.SCHEDULED}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["requeue"], "give job ids, or --state"),
        (["requeue", "1", "--state", "cancelled"], "not both"),
        (["requeue", "--queue", "emails"], "give job ids, or --state"),
        (["requeue", "--state", "succeeded"], "invalid choice: 'succeeded'"),
        (["requeue", "--state", "cancelled", "--queue", "has space"], "whitespace"),
    ],
)
def test_requeue_usage_errors_exit_2(
    store: Store, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code([*argv, "--store", store.url]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# -- rota cancel of a running job -------------------------------------------------------


def test_cancel_of_a_running_job_requests_it(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    running, waiting = store.enqueue([NewJob("n", "q", T0), NewJob("n", "q", T0)], T0)
    (job,) = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + timedelta(hours=1))
    assert main(["cancel", str(running), str(waiting), "--store", store.url, "--json"]) == 0
    assert out_json(capsys) == {
        "cancelled": [waiting], "cancel_requested": [running], "not_cancelled": []}
    assert main(["cancel", str(running), "--store", store.url]) == 0
    assert "cancel requested" in capsys.readouterr().out
    # The worker's next heartbeat tells it, and it ends the job
    renewal = store.heartbeat([job.lease], T0, T0 + timedelta(hours=1))
    assert renewal.cancel_requested == {running}
    assert store.cancel_leased(job.lease, T0, CANCELLED_ON_REQUEST)
    assert main(["cancel", str(running), "--store", store.url]) == 1
    assert "it already finished (cancelled)" in one_line_error(capsys)
