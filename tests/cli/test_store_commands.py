"""`rota enqueue`, `rota queues`, `rota jobs` and `rota migrate`, on every store kind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota.cli import main
from rota.core.jobs import JobState
from rota.store import open_store


@pytest.fixture
def no_rota_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    yield


def out_json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def scheduled_per_queue(listed: object) -> dict[str, int]:
    """`rota queues --json` reduced to the scheduled count of each Queue listed."""
    assert isinstance(listed, list)
    return {info["name"]: info["counts"]["scheduled"] for info in listed}


def test_enqueue_then_queues_and_jobs_show_the_job(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job enqueued from the shell with JSON and plain-string arguments
    assert main(["enqueue", "send-email", "42", "hello", "--queue", "emails",
                 "--kwargs", '{"cc": ["x@y"]}', "--store", durable_store_url]) == 0
    job_id = int(capsys.readouterr().out)
    # Then the store holds it, arguments decoded
    store = open_store(durable_store_url)
    try:
        job = store.get_job(job_id)
    finally:
        store.close()
    assert job is not None
    assert (job.name, job.queue, job.args, job.kwargs) == (
        "send-email", "emails", (42, "hello"), {"cc": ["x@y"]})
    # And `rota queues` counts it, `rota jobs` lists it
    assert main(["queues", "--store", durable_store_url, "--json"]) == 0
    assert scheduled_per_queue(out_json(capsys)) == {"emails": 1}
    assert main(["jobs", "--store", durable_store_url, "--state", "scheduled", "--json"]) == 0
    (listed,) = out_json(capsys)  # type: ignore[misc]
    assert listed["id"] == job_id and listed["state"] == JobState.SCHEDULED.value
    assert main(["jobs", "--store", durable_store_url, "--queue", "other", "--json"]) == 0
    assert out_json(capsys) == []
    # And the tables render
    assert main(["queues", "--store", durable_store_url]) == 0
    assert "emails" in capsys.readouterr().out
    assert main(["jobs", "--store", durable_store_url]) == 0
    assert "send-email" in capsys.readouterr().out


def test_enqueue_json_prints_the_job_it_stored(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # When a job is enqueued with --json
    assert main(["enqueue", "report", "7", "--queue", "nightly", "--delay", "60",
                 "--store", durable_store_url, "--json"]) == 0
    printed = out_json(capsys)
    # Then it prints the stored job's id, name, Queue and due time
    assert isinstance(printed, dict)
    store = open_store(durable_store_url)
    try:
        job = store.get_job(printed["id"])
    finally:
        store.close()
    assert job is not None
    assert (printed["name"], printed["queue"], printed["due_at"]) == (
        job.name, job.queue, job.due_at.isoformat()) == ("report", "nightly",
                                                          job.due_at.isoformat())


def test_rota_store_environment_variable_is_the_default(
    durable_store_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ROTA_STORE", durable_store_url)
    assert main(["enqueue", "noop", "--queue", "default"]) == 0
    capsys.readouterr()
    assert main(["queues", "--json"]) == 0
    assert scheduled_per_queue(out_json(capsys)) == {"default": 1}


def test_migrate_applies_once_then_reports_the_version(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The store migrates when opened; migrate reports what it applied, then nothing more
    assert main(["migrate", "--store", durable_store_url, "--json"]) == 0
    first = out_json(capsys)
    assert isinstance(first, dict) and first["schema_version"] >= 1
    assert main(["migrate", "--store", durable_store_url, "--json"]) == 0
    second = out_json(capsys)
    assert isinstance(second, dict)
    assert second["applied"] == [] and second["schema_version"] == first["schema_version"]


@pytest.mark.usefixtures("no_rota_store")
@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["queues"], 2, "no store given"),
        (["jobs", "--store", "mysql://x"], 2, "is not one rota knows"),
        (["migrate", "--store", "memory://"], 2, "nothing to migrate"),
        (["enqueue", "x", "--store", "memory://", "--queue", "has space"], 2,
         "whitespace"),
        (["enqueue", "x", "--store", "memory://", "--kwargs", "[1]"], 2,
         "must be a JSON object"),
        (["queues", "--store", "postgresql://u:hunter2@127.0.0.1:1/x"], 1, "u:***@"),
        (["worker", "nomodule_here:app"], 2, "cannot import"),
        # Extreme values: one line, exit 2, never an OverflowError or RecursionError
        (["enqueue", "x", "--store", "memory://", "--delay", "1e12"], 2,
         "puts the due time past the year 9999"),
        (["enqueue", "x", "--store", "memory://", "--delay", "1e300"], 2, "is too long"),
        (["enqueue", "x", "--store", "memory://", "--delay", "inf"], 2, "finite"),
        (["enqueue", "x", "--store", "memory://", "--delay", "nan"], 2, "finite"),
        (["enqueue", "x", "[" * 1000 + "]" * 1000, "--store", "memory://"], 2,
         "nested more than 100 levels"),
        (["enqueue", "x", "--store", "memory://", "--kwargs",
          '{"a": ' + "[" * 1000 + "]" * 1000 + "}"], 2, "nested more than 100 levels"),
        (["enqueue", "x", "[" * 150 + "]" * 150, "--store", "memory://"], 2,
         "positional argument 0 is nested more than 100 levels"),
        (["enqueue", "n" * 10_000, "--store", "memory://"], 2, "at most 200 characters"),
        (["enqueue", "a\x00b", "--store", "memory://"], 2, "control characters"),
        (["enqueue", "x", "a\x00b", "--store", "memory://"], 2, "holds a NUL"),
    ],
)
def test_bad_input_is_one_line_with_the_right_exit_code(
    argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv[0] == "enqueue" and "--queue" not in argv:
        argv = [*argv, "--queue", "q"]  # without --app a Queue is required
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "hunter2" not in err
    assert err.count("\n") == 1


def test_enqueue_with_app_checks_the_job_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an App module with one registered job
    db = tmp_path / "app.db"
    (tmp_path / "cli_app_module.py").write_text(
        "import rota\n"
        f"app = rota.App('sqlite:///{db}')\n"
        "@app.job('greet', queue='hello')\n"
        "def greet(name: str) -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # When enqueueing a known and an unknown name through --app
    assert main(["enqueue", "greet", "world", "--app", "cli_app_module:app"]) == 0
    capsys.readouterr()
    assert main(["enqueue", "nope", "--app", "cli_app_module:app"]) == 2
    assert "registers no job named 'nope' (known: greet)" in capsys.readouterr().err
    # Then the known one went to its own Queue
    assert main(["queues", "--app", "cli_app_module:app", "--json"]) == 0
    assert scheduled_per_queue(out_json(capsys)) == {"hello": 1}


def test_worker_with_an_unreachable_store_exits_1_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an App whose PostgreSQL store nobody listens for
    (tmp_path / "unreachable_app.py").write_text(
        "import rota\n"
        "app = rota.App('postgresql://u:topsecret@127.0.0.1:1/db')\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='g', policy=rota.Strict('q')))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # When a worker starts, Then it fails in one line naming the masked URL
    assert main(["worker", "unreachable_app:app"]) == 1
    err = capsys.readouterr().err
    assert "u:***@127.0.0.1:1" in err and "topsecret" not in err
    assert "rota worker: running" not in err and err.count("\n") == 1


def test_worker_with_an_invalid_policy_exits_1_before_saying_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad_policy_app.py").write_text(
        "import rota\n"
        f"app = rota.App('sqlite:///{tmp_path / 'x.db'}')\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='g', "
        "policy=rota.Weighted([('a', 0)])))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["worker", "bad_policy_app:app"]) == 1
    first, *notes = capsys.readouterr().err.splitlines()
    # Then the first line is the exact message of the specification
    assert first == "rota worker: Weighted dispatch needs at least one queue, all weights >= 1."
    # And the line under it names the Queue and weight at fault, and the group
    assert notes == ["Queue 'a' has weight 0 (weights must be whole numbers >= 1), in Worker "
                     "Group 'g': DispatchPolicy.Weighted([('a', 0)])"]


def test_cancel_by_id(durable_store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["enqueue", "x", "--queue", "default", "--store", durable_store_url]) == 0
    job_id = capsys.readouterr().out.strip()
    assert main(["cancel", job_id, "--store", durable_store_url]) == 0
    assert capsys.readouterr().out == f"{job_id} cancelled\n"
    assert main(["cancel", job_id, "999999", "--store", durable_store_url]) == 1
    assert capsys.readouterr().err == (
        f"rota cancel: not cancelled, left alone: job {job_id}: it already finished "
        "(cancelled); job 999999: no such job\n")
