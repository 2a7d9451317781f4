"""First-day papercuts, each as a new user would meet it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

import rota
from rota.app import store_location
from rota.cli import main
from rota.cli.common import store_now
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from rota.store import StoreConfigError, open_store

ROOT = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in {"ROTA_STORE", "COLUMNS"}}
    return {**env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **extra}


@pytest.fixture
def no_rota_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)


# -- python -m rota -----------------------------------------------------------------------


def test_python_dash_m_rota_runs_the_command() -> None:
    # When the package is run as a module, like `python -m celery`
    done = subprocess.run([sys.executable, "-m", "rota", "simulate", "--weighted", "a=2,b=1",
                           "--pool", "3", "--json"], env=child_env(), capture_output=True,
                          text=True, timeout=60, check=False)
    # Then it is the rota command
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passes"][0]["order"] == ["a", "b", "a"]


# -- ROTA_STORE and the store's location ---------------------------------------------------


def test_app_without_a_url_honours_rota_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given ROTA_STORE, as the CLI reads it
    monkeypatch.setenv("ROTA_STORE", f"sqlite:///{tmp_path / 'from-env.db'}")
    monkeypatch.chdir(tmp_path)
    # When an App is made without a URL
    app = rota.App()
    try:
        # Then it opened that store, not ./rota.db
        assert app.store.url == f"sqlite:///{tmp_path / 'from-env.db'}"
        assert (tmp_path / "from-env.db").exists()
        assert not (tmp_path / "rota.db").exists()
    finally:
        app.close()


def test_app_without_a_url_or_rota_store_uses_rota_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_rota_store: None
) -> None:
    monkeypatch.chdir(tmp_path)
    app = rota.App()
    try:
        assert app.store.url == "sqlite:///rota.db"
        # And its location, as the worker logs it, is the absolute path
        assert store_location(app.store) == f"sqlite:///{tmp_path / 'rota.db'}"
    finally:
        app.close()


def test_store_location_masks_a_postgres_password() -> None:
    pytest.importorskip("psycopg")
    store = open_store("postgresql://u:topsecret@127.0.0.1:1/db")
    try:
        assert store_location(store) == "postgresql://u:***@127.0.0.1:1/db"
    finally:
        store.close()


class Child:
    """A subprocess whose stderr lines are collected as they arrive, so a test can wait
    for a line instead of sleeping."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._arrived: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for text in self.process.stderr:
            self.lines.append(text)
            self._arrived.put(text)

    def wait_for(self, *fragments: str, timeout_s: float = 60) -> list[str]:
        """The first line holding each fragment, in the order given, whatever the order
        in which they arrive."""
        found: dict[str, str] = {}
        while len(found) < len(fragments):
            try:
                text = self._arrived.get(timeout=timeout_s)
            except queue.Empty:
                pytest.fail(f"never saw {fragments!r}; stderr:\n{''.join(self.lines)}")
            for fragment in fragments:
                if fragment in text:
                    found.setdefault(fragment, text)
        return [found[fragment] for fragment in fragments]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(60)
        self._reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        if self.process.stderr is not None:
            self.process.stderr.close()


@pytest.fixture
def worker_project(tmp_path: Path) -> Path:
    """A project directory whose App takes its store from ROTA_STORE and serves Queue q."""
    (tmp_path / "first_day_app.py").write_text(
        "import rota\n"
        "app = rota.App()\n"
        "@app.job('work', queue='q')\n"
        "def work() -> None: ...\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='main', policy=rota.Strict('q')))\n"
    )
    return tmp_path


def test_worker_logs_the_absolute_store_path_and_warns_of_unserved_queues(
    worker_project: Path,
) -> None:
    # Given due jobs on a Queue the worker serves and on one it does not (a typo)
    db = worker_project / "jobs.db"
    app = rota.App(f"sqlite:///{db}")
    app.job("work", queue="q")(lambda: None)
    app.jobs["work"].enqueue()
    app.jobs["work"].configure(queue="qq").enqueue()
    app.jobs["work"].configure(queue="qq").enqueue()
    app.close()
    # When a worker starts with ROTA_STORE naming it relative to its working directory
    child = Child([sys.executable, "-m", "rota", "-v", "worker", "first_day_app:app"],
                  worker_project, child_env(ROTA_STORE="sqlite:///jobs.db",
                                            PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}"
                                            f"{worker_project}"))
    try:
        started, warning = child.wait_for("worker started", "no live worker serves it")
        # Then it says which file it opened, as an absolute path
        assert f"sqlite:///{db}" in started
        # And it warns about the Queue with due jobs that no live worker serves
        assert "'qq' has 2 due jobs" in warning and "this worker runs main" in warning
        assert child.stop() == 0
    finally:
        child.kill()
    text = "".join(child.lines)
    assert f"running main on sqlite:///{db}" in text
    assert text.count("no live worker serves it") == 1
    assert "'q' has" not in text


def test_an_unserved_queue_warning_is_logged_by_serve(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    # Given due jobs on Queues "a" (served) and "b" (not), and a later job on "c"
    app = rota.App(f"sqlite:///{tmp_path / 'x.db'}")
    app.job("j", queue="a")(lambda: None)
    app.jobs["j"].enqueue()
    app.jobs["j"].configure(queue="b").enqueue()
    app.jobs["j"].configure(queue="c", delay=3600).enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("a")))
    done = asyncio.Event()

    async def scenario() -> None:
        app.on_outcome(lambda event: done.set())
        async with app.serve():
            await done.wait()
            for _ in range(100):  # the warning is logged by a one-shot start duty
                if any("'b'" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.01)

    with caplog.at_level("WARNING", logger="rota"):
        asyncio.run(scenario())
    app.close()
    warnings = [r.getMessage() for r in caplog.records if "serves it" in r.getMessage()]
    # Then only "b" is named: "a" is served, and "c" has nothing due yet
    assert len(warnings) == 1 and "Queue 'b' has 1 due job but" in warnings[0]


def test_a_worker_warns_soon_after_a_job_lands_on_a_queue_nobody_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    from rota.worker.unserved import UnservedDuty

    # Given a serving worker whose start look found nothing unserved
    app = rota.App(f"sqlite:///{tmp_path / 'x.db'}")
    app.job("j", queue="a")(lambda: None)
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("a")))

    async def scenario() -> None:
        async with app.serve() as runtime:
            [duty] = [d for d in runtime._duties if isinstance(d, UnservedDuty)]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while duty.looks < 1 and loop.time() < deadline:
                await asyncio.sleep(0.01)
            assert duty.looks == 1 and not duty.warned
            # When a job is enqueued on "b", which no group serves
            app.jobs["j"].configure(queue="b").enqueue()
            # Then its wake-up hint has the worker look again within seconds, long before
            # the next survey (a minute)
            while not duty.warned and loop.time() < deadline:
                await asyncio.sleep(0.01)
            assert duty.warned == {"b"} and duty.looks >= 2

    with caplog.at_level("WARNING", logger="rota"):
        asyncio.run(scenario())
    app.close()
    warnings = [r.getMessage() for r in caplog.records if "serves it" in r.getMessage()]
    assert len(warnings) == 1 and "Queue 'b' has 1 due job but" in warnings[0]


# -- PostgreSQL URLs -----------------------------------------------------------------------


def _without_psycopg(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a child where psycopg cannot be imported (the extra not installed)."""
    return subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['psycopg'] = None\n" + code],
        env=child_env(), capture_output=True, text=True, timeout=60, check=False,
    )


def test_a_postgres_url_without_the_extra_says_what_to_install() -> None:
    # Given no psycopg, When an App is made on a PostgreSQL URL
    done = _without_psycopg(
        "import rota\n"
        "try:\n"
        "    rota.App('postgresql://u:topsecret@db.example/jobs')\n"
        "except rota.StoreConfigError as error:\n"
        "    print(error)\n"
    )
    # Then the error says how to get it, with the password masked, and no traceback
    assert done.returncode == 0, done.stderr
    assert "pip install 'rota[postgres]'" in done.stdout
    assert "topsecret" not in done.stdout and "u:***@" in done.stdout
    # And `import rota` and SQLite stay usable without it
    done = _without_psycopg("import rota, tempfile, os\n"
                            "d = tempfile.mkdtemp()\n"
                            "rota.App(f'sqlite:///{d}/x.db').close()\n")
    assert done.returncode == 0, done.stderr


def test_the_cli_without_the_postgres_extra_is_a_usage_error() -> None:
    done = _without_psycopg(
        "from rota.cli import main\n"
        "sys.exit(main(['queues', '--store', 'postgresql://u:pw@127.0.0.1:1/db']))\n"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip install 'rota[postgres]'" in done.stderr


def test_an_unknown_postgres_url_parameter_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("psycopg")
    # When a URL carries a parameter neither rota nor libpq knows
    code = main(["queues", "--store", "postgresql://u:hunter2@127.0.0.1:1/db?foo=bar"])
    err = capsys.readouterr().err
    # Then it is a usage error (exit 2) naming it, before any connection is tried
    assert code == 2, err
    assert '"foo"' in err and "hunter2" not in err and "schema, pool_min_size" in err
    # And App() refuses it at once
    with pytest.raises(StoreConfigError, match="foo"):
        rota.App("postgresql://u@127.0.0.1:1/db?foo=bar")
    # While libpq's own parameters still pass through
    open_store("postgresql://u@127.0.0.1:1/db?sslmode=disable&schema=s").close()


@pytest.mark.parametrize("command", ["worker", "queues"])
def test_an_app_module_whose_url_is_refused_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    pytest.importorskip("psycopg")
    # Given an App module whose store URL carries an unknown parameter
    (tmp_path / "bad_param_app.py").write_text(
        "import rota\n"
        "app = rota.App('postgresql://u:hunter2@127.0.0.1:1/db?foo=bar')\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='g', policy=rota.Strict('q')))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # When a command loads it, Then one line and exit 2, as for --store, no traceback
    argv = [command, "bad_param_app:app"] if command == "worker" else [
        command, "--app", "bad_param_app:app"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and '"foo"' in err and "hunter2" not in err


def test_a_store_error_names_its_cause_in_the_message() -> None:
    psycopg = pytest.importorskip("psycopg")
    from rota.store import StoreError
    from rota.store.postgres import PostgresStore

    store = PostgresStore.from_url("postgresql://u@127.0.0.1:1/db")
    try:
        with pytest.raises(StoreError) as raised:
            store._fail("claim", psycopg.errors.UndefinedTable(
                'relation "rota.jobs" does not exist\nLINE 1: SELECT'))
    finally:
        store.close()
    message = str(raised.value)
    # Then the one line the CLI prints says what went wrong, and points at nothing else
    assert "see the cause below" not in message
    assert 'UndefinedTable: relation "rota.jobs" does not exist LINE 1: SELECT' in message


# -- rota enqueue -- ARGS --------------------------------------------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path, no_rota_store: None) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.mark.parametrize("options_first", [False, True])
def test_arguments_after_double_dash_are_job_arguments(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], options_first: bool
) -> None:
    # When a job argument looks like an option (-v) after `--`
    options = ["--store", sqlite_url, "--queue", "greetings", "--json"]
    argv = (["enqueue", *options, "greet", "--", "-v", "hi", "--kwargs"] if options_first
            else ["enqueue", "greet", *options, "--", "-v", "hi", "--kwargs"])
    assert main(argv) == 0
    job_id = json.loads(capsys.readouterr().out)["id"]
    # Then it is kept as a job argument, not taken as rota's -v
    store = open_store(sqlite_url)
    try:
        job = store.get_job(job_id)
        assert job is not None and job.args == ("-v", "hi", "--kwargs")
    finally:
        store.close()


def test_double_dash_on_a_command_without_arguments_is_a_usage_error(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["queues", "--store", sqlite_url, "--", "x"])
    assert raised.value.code == 2
    assert "unrecognized arguments after '--': x" in capsys.readouterr().err


# -- output in full when not a terminal ----------------------------------------------------


def test_piped_output_is_never_cut_at_80_columns(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job with a long name and a long Queue name
    name, queue_name = "reports.build_the_quarterly_" + "x" * 120, "q" + "u" * 150
    assert main(["enqueue", name, "--queue", queue_name, "--store", sqlite_url]) == 0
    job_id = capsys.readouterr().out.strip()
    # When the store commands print to a pipe (capsys is not a terminal)
    for argv in (["jobs"], ["queues"], ["job", job_id]):
        assert main([*argv, "--store", sqlite_url]) == 0
        out = capsys.readouterr().out
        # Then every value is printed in full, on one line, without an ellipsis
        assert "…" not in out, argv
        assert queue_name in out, argv
        if argv[0] != "queues":
            assert name in out, argv


def test_simulate_prints_a_long_order_in_full(capsys: pytest.CaptureFixture[str],
                                              no_rota_store: None) -> None:
    assert main(["simulate", "--weighted", "alpha=6,beta=3,gamma=1", "--pool", "60",
                 "--passes", "1"]) == 0
    out = capsys.readouterr().out
    order_line = next(text for text in out.splitlines() if "order" in text)
    assert order_line.count("alpha") == 36 and "…" not in out


# -- rota queues --app: Queues nobody serves -----------------------------------------------


def test_queues_with_an_app_marks_the_queues_nobody_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    no_rota_store: None,
) -> None:
    # Given an App whose groups serve "mail" and "sms", live workers running them, and
    # due jobs on "mail" and "mial"
    (tmp_path / "served_app.py").write_text(
        "import rota\n"
        f"app = rota.App('sqlite:///{tmp_path / 'served.db'}')\n"
        "@app.job('send', queue='mail')\n"
        "def send() -> None: ...\n"
        "app.add_worker_group(rota.WorkerGroupOptions(name='fast', policy=rota.Strict('mail')))\n"
        "app.add_worker_group(rota.WorkerGroupOptions(\n"
        "    name='fair', policy=rota.Weighted([('mail', 1), ('sms', 1)])))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for queue_name in ("mail", "mial"):
        assert main(["enqueue", "send", "--queue", queue_name, "--app", "served_app:app"]) == 0
    capsys.readouterr()
    url = f"sqlite:///{tmp_path / 'served.db'}"
    # When nobody runs a worker yet, every Queue with due jobs is unserved
    assert main(["queues", "--app", "served_app:app", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["mail"]["served_by"] == [] and rows["mail"]["unserved"] is True
    # When live workers run the groups
    with closing(open_store(url)) as store:
        now = store_now(store)
        for index, (group, policy) in enumerate((
                ("fast", rota.Strict("mail")),
                ("fair", rota.Weighted([("mail", 1), ("sms", 1)])))):
            store.register_worker(WorkerInfo(
                id=f"h:{index}:t", host="h", pid=index, version=rota.__version__,
                started_at=now, last_seen=now, dead_at=now + timedelta(minutes=5),
                groups=(WorkerGroupInfo(group, policy, 2, owner=f"{group}@h:{index}:t"),)),
                now)
    assert main(["queues", "--app", "served_app:app", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    # Then each Queue names the groups serving it (with their weights), and the typo none
    assert {name: row["served_by"] for name, row in rows.items()} == {
        "mail": ["fair", "fast"], "mial": []}
    assert rows["mail"]["weights"] == {"fair": 1, "fast": None}
    assert (rows["mail"]["unserved"], rows["mial"]["unserved"]) == (False, True)
    assert main(["queues", "--app", "served_app:app"]) == 0
    out = capsys.readouterr().out
    assert "served by" in out and "nobody" in out and "fair, fast" in out
    assert "1 Queue with due jobs is served by no live worker" in out
    # And the same without an App: who serves what comes from the store
    assert main(["queues", "--store", url, "--json"]) == 0
    assert [row["served_by"] for row in json.loads(capsys.readouterr().out)] == [
        ["fair", "fast"], []]
