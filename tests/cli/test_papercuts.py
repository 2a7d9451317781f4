"""Small things a new user meets on the first day with the `rota` command: one clear
message per mistake, honest output, nothing created by a command that only reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.core.jobs import NewJob
from rota.store import open_store
from tests.conftest import START

ROOT = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in {"ROTA_STORE", "COLUMNS"}}
    return {**env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **extra}


def rota_piped(*argv: str, cwd: Path | None = None,
               **env: str) -> subprocess.CompletedProcess[str]:
    """`rota argv...` in a subprocess whose stdout and stderr are pipes (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "rota.cli", *argv], capture_output=True,
                          text=True, timeout=60, check=False, cwd=cwd,
                          env=child_env(**env))


@pytest.fixture
def no_rota_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)


# -- one range for every numeric setting --------------------------------------------------


@pytest.mark.parametrize("limit", ["99999999999999999999", "9223372036854775807",
                                   "2147483648", "-1"])
def test_an_out_of_range_limit_is_a_usage_error_on_every_durable_store(
    durable_store_url: str, limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # When a limit past PostgreSQL's integer (or SQLite's 64 bits) is set from the shell
    code = main(["limit", "images", limit, "--store", durable_store_url])
    # Then it is one usage line naming the range, and nothing is stored
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.err == (
        "rota limit: a Queue's limit must be a whole number from 0 to 2147483647, or None "
        f"for no limit (0 takes nothing); got {int(limit)}\n")
    store = open_store(durable_store_url)
    try:
        assert store.queue_infos(START) == []
    finally:
        store.close()


def test_the_top_of_the_range_is_stored_from_the_shell(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["limit", "images", "2147483647", "--store", durable_store_url,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["limit"] == 2**31 - 1


# -- integer options: one message for every bad value -------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["jobs", "--store", "memory://", "--limit", "-1"], "--limit: expected a whole "
         "number from 1 to 9223372036854775807; got '-1'"),
        (["jobs", "--store", "memory://", "--limit", "0"], "--limit: expected a whole "
         "number from 1 to 9223372036854775807; got '0'"),
        (["jobs", "--store", "memory://", "--limit", "ten"], "--limit: expected a whole "
         "number from 1 to 9223372036854775807; got 'ten'"),
        (["jobs", "--store", "memory://", "--offset", "-1"], "--offset: expected a whole "
         "number from 0 to 9223372036854775807; got '-1'"),
        (["simulate", "--weighted", "a=1", "--pool", "0"], "--pool: expected a whole "
         "number from 1 to 10000; got '0'"),
        (["simulate", "--weighted", "a=1", "--pool", "100000000"], "--pool: expected a "
         "whole number from 1 to 10000; got '100000000'"),
        (["simulate", "--weighted", "a=1", "--passes", "-2"], "--passes: expected a whole "
         "number from 0 to 100000; got '-2'"),
        (["worker", "x:app", "--metrics-port", "70000"], "--metrics-port: expected a "
         "whole number from 0 to 65535; got '70000'"),
    ],
)
def test_every_bad_integer_option_gets_the_same_message(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


# -- counts in the singular and the plural -------------------------------------------------


def test_counted_says_one_in_the_singular() -> None:
    from rota.core.plurals import counted

    assert [counted(n, "job") for n in (0, 1, 2)] == ["0 jobs", "1 job", "2 jobs"]
    assert counted(1, "pass", "passes") == "1 pass"
    assert counted(3, "pass", "passes") == "3 passes"


def test_one_pass_and_one_job_are_singular_in_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a simulation of one pass, and a store holding one job
    assert main(["simulate", "--weighted", "a=1", "--passes", "1"]) == 0
    simulated = capsys.readouterr().out
    url = f"sqlite:///{tmp_path / 'one.db'}"
    store = open_store(url)
    store.enqueue([NewJob("report", "q", START)], START)
    store.close()
    assert main(["jobs", "--store", url]) == 0
    listed = capsys.readouterr().out
    # Then each count reads in the singular
    assert "1 pass" in simulated and "1 passes" not in simulated
    assert "1 job" in listed and "1 job(s)" not in listed


# -- settings before jobs -------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["pause", "nonexistent-queue"], ["resume", "nonexistent-queue"],
                                  ["limit", "nonexistent-queue", "3"]])
def test_a_setting_on_a_queue_without_jobs_says_so(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    # When a Queue with no jobs is paused, resumed or limited
    assert main([*argv, "--store", url]) == 0
    # Then it succeeds and says the Queue has no jobs yet
    assert ("no jobs in Queue 'nonexistent-queue' yet; the setting applies when they come"
            in capsys.readouterr().out)


def test_a_setting_on_a_queue_with_jobs_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    store.enqueue([NewJob("report", "reports", START)], START)
    store.close()
    assert main(["pause", "reports", "--store", url]) == 0
    assert capsys.readouterr().out == "Queue 'reports': paused, no limit\n"


# -- rota --version, and APP given as a file ------------------------------------------------


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"rota {rota.__version__}\n"


@pytest.mark.parametrize(("spec", "hint"), [
    ("myapp.py:app", "write myapp:app"),
    ("./shop/jobs.py:app", "write shop.jobs:app"),
    ("shop/jobs:app", "write shop.jobs:app"),
])
def test_a_file_path_as_app_gets_the_module_name_to_use(tmp_path: Path, spec: str,
                                                        hint: str) -> None:
    # Given the file exists, as a new user would have it
    (tmp_path / "myapp.py").write_text("import rota\napp = rota.App('memory://')\n")
    # When the worker is given its path instead of its module name
    done = rota_piped("worker", spec, cwd=tmp_path)
    # Then one usage line says which module name to write
    assert done.returncode == 2, done.stderr
    assert hint in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


# -- off a terminal every column is printed whole ------------------------------------------


def test_piped_workers_table_shows_every_column_whole(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo

    # Given a worker with a long host name and groups wider than 80 columns together
    url = f"sqlite:///{tmp_path / 'w.db'}"
    now = datetime.now(UTC)
    worker_id = "build-host-with-a-long-name.example.internal:4242:0123abcd"
    store = open_store(url)
    try:
        store.register_worker(WorkerInfo(
            id=worker_id, host="build-host-with-a-long-name.example.internal", pid=4242,
            version="0.1.0", started_at=now, last_seen=now, dead_at=now + timedelta(minutes=3),
            groups=(WorkerGroupInfo(name="tenants-fair-share",
                                    policy=rota.Weighted([("tenant-alpha", 6),
                                                          ("tenant-beta", 3)]),
                                    pool_size=20, in_flight=3),),
            served=(ServedCount("tenants-fair-share", "tenant-alpha", "succeeded", 7),),
        ), now)
    finally:
        store.close()
    # When `rota workers` writes to a pipe (no COLUMNS set)
    done = rota_piped("workers", "--store", url)
    # Then no value is cut or wrapped: the id (with its pid) and the policy are whole
    assert done.returncode == 0, done.stderr
    rows = [row for row in done.stdout.splitlines() if worker_id in row]
    assert len(rows) == 1, done.stdout
    assert "tenant-alpha=6" in rows[0] and "3/20" in rows[0] and "…" not in done.stdout


# -- read commands never create a store, however it is named -------------------------------

READ_COMMANDS = [["queues"], ["jobs"], ["job", "1"], ["workers"], ["schedules"],
                 ["schedule", "list"]]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda argv: argv[0])
@pytest.mark.parametrize("named_by", ["ROTA_STORE", "the App's own URL"])
def test_read_commands_with_an_app_create_no_store(
    tmp_path: Path, command: list[str], named_by: str
) -> None:
    # Given an App module whose store URL has a typo: from ROTA_STORE, or its own
    url = f"sqlite:///{tmp_path / 'tpyo.db'}"
    own = "" if named_by == "ROTA_STORE" else repr(url)
    (tmp_path / "readapp.py").write_text(f"import rota\napp = rota.App({own})\n")
    env = {"ROTA_STORE": url} if named_by == "ROTA_STORE" else {}
    # When a read command loads it
    done = rota_piped(*command, "--app", "readapp:app", cwd=tmp_path, **env)
    # Then it names the missing file as a usage error, and creates nothing
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "does not exist yet; read-only commands never create a store" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()
                  if path.name != "__pycache__") == ["readapp.py"]


def test_read_commands_read_the_apps_existing_store(tmp_path: Path) -> None:
    # Given an App module whose store exists and holds a job
    url = f"sqlite:///{tmp_path / 'real.db'}"
    store = open_store(url)
    store.enqueue([NewJob("report", "reports", START)], START)
    store.close()
    (tmp_path / "readapp.py").write_text(f"import rota\napp = rota.App({url!r})\n")
    # When `rota queues --app` reads it, Then it sees the job
    done = rota_piped("queues", "--app", "readapp:app", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [q["name"] for q in json.loads(done.stdout)] == ["reports"]


def test_a_write_command_with_an_app_still_creates_its_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    (tmp_path / "readapp.py").write_text(f"import rota\napp = rota.App({url!r})\n")
    done = rota_piped("pause", "reports", "--app", "readapp:app", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new.db").exists()


# -- rota enqueue: checked with --app, a Queue required without ----------------------------


def test_enqueue_without_app_requires_a_queue_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    open_store(url).close()
    # When a job is enqueued by name alone, with no App to know its Queue
    assert main(["enqueue", "no-such-job", "1", "--store", url]) == 2
    # Then it is a usage error saying how to fix it, and nothing is stored
    err = capsys.readouterr().err
    assert err.startswith("rota enqueue: --queue is required without --app")
    assert "--app module:attribute" in err and err.count("\n") == 1
    store = open_store(url)
    try:
        assert store.count_jobs() == {}
    finally:
        store.close()


def test_enqueue_without_app_says_the_name_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["enqueue", "resize", "7", "--queue", "images", "--store", url]) == 0
    captured = capsys.readouterr()
    # Then stdout is the id alone (for scripts), and stderr says nothing checked the name
    assert captured.out.strip().isdigit()
    assert ("job name 'resize' not checked against any handler (no --app)"
            in captured.err)


def test_enqueue_with_app_uses_the_jobs_own_queue_and_refuses_unknown_names(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    (tmp_path / "jobsapp.py").write_text(
        f"import rota\napp = rota.App({url!r})\n"
        "@app.job('resize', queue='images')\ndef resize(size: int) -> None: ...\n")
    # When a registered job is enqueued with --app and no --queue
    done = rota_piped("enqueue", "resize", "7", "--app", "jobsapp:app", "--json",
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Then it goes to the job's own Queue, with no warning
    assert json.loads(done.stdout)["queue"] == "images" and done.stderr == ""
    # And an unknown name is refused, naming the known ones
    unknown = rota_piped("enqueue", "no-such-job", "1", "--app", "jobsapp:app",
                         cwd=tmp_path)
    assert unknown.returncode == 2
    assert "registers no job named 'no-such-job' (known: resize)" in unknown.stderr
