"""First-day papercuts, second round: a wrong PostgreSQL URL fails fast in one
line, an app module that raises on import is one line (the traceback on request), tables
never cut a name or a number under COLUMNS=80, negative values are range errors naming
the value, and Worker Group names are capped like Queue names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rota
from rota.cli import main
from tests.cli.test_papercuts import child_env
from tests.conftest import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]


def rota_run(*argv: str, cwd: Path | None = None, timeout_s: float = 60,
             **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rota.cli", *argv], capture_output=True,
                          text=True, timeout=timeout_s, check=False, cwd=cwd,
                          env=child_env(**env))


def _wrong(part: str) -> str:
    """The test server's URL with one part wrong: its port, its database or its role."""
    base = POSTGRES_URL.rsplit("/", 1)[0]  # postgresql://user@host:port
    user_host, port = base.rsplit(":", 1)
    if part == "port":
        return f"{user_host}:1/test"  # nothing listens on port 1
    if part == "database":
        return f"{base}/rota_no_such_database"
    scheme, rest = user_host.split("://", 1)
    host = rest.split("@", 1)[-1]
    return f"{scheme}://rota_no_such_role@{host}:{port}/test"


@pytest.mark.postgres
@pytest.mark.parametrize("part", ["port", "database", "role"])
@pytest.mark.parametrize("command", [["queues"], ["workers"], ["jobs"], ["pause", "q"]])
def test_a_wrong_postgres_url_fails_at_once_in_one_line(part: str, command: list[str]) -> None:
    # When a command is pointed at a PostgreSQL URL with a wrong port, database or role
    # (a bound far below the pool's 30 s wait: the run is cut off past it)
    done = rota_run(*command, "--store", _wrong(part), timeout_s=15)
    # Then it fails with one line naming the store, and no pool warnings before it
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"rota {command[0]}: PostgreSQL store "), lines[0]


BROKEN_APP = """\
import rota

app = rota.App("memory://")
raise ZeroDivisionError("division by zero in the app's settings")
"""


def test_an_app_module_that_raises_on_import_is_one_line_with_exit_2(tmp_path: Path) -> None:
    # Given an app module that raises as it is imported
    (tmp_path / "brokenapp.py").write_text(BROKEN_APP)
    # When a command loads it
    done = rota_run("queues", "--app", "brokenapp:app", cwd=tmp_path)
    # Then one line names the module and the exception, with a hint for the traceback
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "rota queues: cannot import 'brokenapp' for APP 'brokenapp:app': it raised "
        "ZeroDivisionError: division by zero in the app's settings (the traceback: "
        "rota --debug, or ROTA_DEBUG=1)"]


@pytest.mark.parametrize("ask", [("--debug",), ("ROTA_DEBUG",)])
def test_the_traceback_of_an_app_that_raises_is_shown_on_request(
    tmp_path: Path, ask: tuple[str],
) -> None:
    (tmp_path / "brokenapp.py").write_text(BROKEN_APP)
    flags = ["--debug"] if ask == ("--debug",) else []
    env = {"ROTA_DEBUG": "1"} if ask == ("ROTA_DEBUG",) else {}
    done = rota_run("queues", "--app", "brokenapp:app", *flags, cwd=tmp_path, **env)
    assert done.returncode == 2, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert 'brokenapp.py", line 4' in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith("rota queues: cannot import")


def test_tables_under_columns_80_never_cut_a_name_or_a_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a store with long Queue and job names and a Queue of 2004 jobs
    url = f"sqlite:///{tmp_path / 'wide.db'}"
    app = rota.App(url)
    long_queue = "emails-transactional-high-priority"

    @app.job("reports.build_the_quarterly_summary", queue=long_queue)
    def build() -> None:
        pass

    build.enqueue_many([()] * 2004)
    app.close()
    # When the tables are printed with COLUMNS=80 (as CI systems and test runners set it)
    monkeypatch.setenv("COLUMNS", "80")
    for argv in (["queues"], ["jobs", "--limit", "3"]):
        assert main([*argv, "--store", url]) == 0
        out = capsys.readouterr().out
        # Then no value is cut with an ellipsis: each is printed whole
        assert "…" not in out, (argv, out)
        assert long_queue in out, argv
    assert main(["queues", "--store", url]) == 0
    assert "2004" in capsys.readouterr().out


def test_a_negative_rate_is_a_range_error_naming_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"sqlite:///{tmp_path / 'rate.db'}"
    assert main(["rate", "b", "-5/1m", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "got -5" in err and "from 1 to" in err, err
    assert "required" not in err


def test_a_negative_age_to_purge_is_a_range_error_naming_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"sqlite:///{tmp_path / 'purge.db'}"
    assert main(["purge", "--older-than", "-7d", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err == ("rota purge: --older-than must be a duration of 0 or more; got '-7d' "
                   "(a number and a unit: 30s, 15m, 12h or 7d)\n"), err


def test_worker_group_names_are_capped_as_queue_names_are() -> None:
    from rota.core.queues import MAX_QUEUE_NAME_LENGTH

    long_name = "g" * (MAX_QUEUE_NAME_LENGTH + 1)
    app = rota.App("memory://")
    with pytest.raises(ValueError, match=str(MAX_QUEUE_NAME_LENGTH)):
        app.add_worker_group(rota.WorkerGroupOptions(
            name=long_name, policy=rota.Strict("default")))
    app.close()


SCHEDULED_APP = """\
import rota

app = rota.App("sqlite:///sched.db")


@app.job("ping")
def ping() -> None:
    pass


app.schedule("every-minute", ping, cron="* * * * *")
"""


def test_schedules_before_any_worker_ran_says_so_without_a_url_hint(tmp_path: Path) -> None:
    # Given an App with a schedule whose SQLite store no worker has created yet
    (tmp_path / "schedapp.py").write_text(SCHEDULED_APP)
    # When its schedules are asked for
    done = rota_run("schedules", "--app", "schedapp:app", cwd=tmp_path)
    # Then one line says the store does not exist yet and what creates it, with no hint
    # about the URL's form (the URL is right)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "does not exist yet" in done.stderr
    assert "expected sqlite:///" not in done.stderr
    assert not (tmp_path / "sched.db").exists()
