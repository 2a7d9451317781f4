"""The chaos suite's machinery: real `rota worker` processes, a supervisor that restarts
them, the figures every scenario reports, and a PostgreSQL cluster of the suite's own.

Scenarios wait on lines the workers print (see chaos_app.py) or poll the store for a
condition with a generous deadline; they never sleep to wait for something, and they
assert counts, never times. Times are printed as figures only.

Figures: each scenario calls `chaos_figures(scenario, **figures)`; they are printed at
once (visible with `pytest -s`), written to `chaos-figures.json` under pytest's base temp
directory, and repeated in the terminal summary.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobRecord, JobState
from tests.waiting import wait_until
from tests.worker.child_process import WorkerProcess

CHAOS_APP = "tests.chaos.chaos_app:app"
REQUIRE_POSTGRES = os.environ.get("ROTA_REQUIRE_POSTGRES") == "1"

# -- figures -------------------------------------------------------------------------------

_FIGURES_KEY = pytest.StashKey[list[dict[str, object]]]()
_FIGURES_PATH_KEY = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FIGURES_KEY] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures = terminalreporter.config.stash.get(_FIGURES_KEY, [])
    if not figures:
        return
    terminalreporter.section("chaos figures")
    for entry in figures:
        terminalreporter.write_line(_format_figures(entry))
    path = terminalreporter.config.stash.get(_FIGURES_PATH_KEY, None)
    if path is not None:
        terminalreporter.write_line(f"(also in {path})")


def _format_figures(entry: dict[str, object]) -> str:
    rest = ", ".join(f"{k}={v}" for k, v in entry.items() if k != "scenario")
    return f"chaos {entry['scenario']}: {rest}"


@pytest.fixture
def chaos_figures(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., None]:
    """Record one scenario's figures: printed now, summarised at the end, kept as JSON."""
    path = tmp_path_factory.getbasetemp() / "chaos-figures.json"
    request.config.stash[_FIGURES_PATH_KEY] = path

    def record(scenario: str, **figures: object) -> None:
        entry: dict[str, object] = {"scenario": scenario, **figures}
        print(f"\n{_format_figures(entry)}", flush=True)
        collected = request.config.stash[_FIGURES_KEY]
        collected.append(entry)
        path.write_text(json.dumps(collected, indent=2) + "\n")

    return record


# -- worker processes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One line a worker printed: when it arrived (monotonic), from which process."""

    at: float
    pid: int
    text: str


class ChaosWorker(WorkerProcess):
    """One `rota -v worker tests.chaos.chaos_app:app` child; its stdout lines go to `lines`."""

    def __init__(self, env: dict[str, str], lines: queue.Queue[Line], *extra: str) -> None:
        super().__init__(CHAOS_APP, env,
                         lambda pid, text: lines.put(Line(time.monotonic(), pid, text)),
                         *extra)


class Supervisor:
    """What an operator's process manager does: keep `size` workers running, restarting
    any that exits. `check()` restarts the dead ones; the test calls it in its loop."""

    def __init__(self, env: dict[str, str], size: int, *extra: str) -> None:
        self.env = env
        self.size = size
        self.extra = extra
        self.lines: queue.Queue[Line] = queue.Queue()
        self.workers: list[ChaosWorker] = []
        self.all_workers: list[ChaosWorker] = []
        self.restarts = 0
        for _ in range(size):
            self._start()

    def _start(self) -> ChaosWorker:
        worker = ChaosWorker(self.env, self.lines, *self.extra)
        self.workers.append(worker)
        self.all_workers.append(worker)
        return worker

    def check(self) -> None:
        for worker in list(self.workers):
            if not worker.alive():
                self.workers.remove(worker)
                worker.close()
                self.restarts += 1
                self._start()

    def next_line(self, timeout_s: float) -> Line | None:
        """The next line any worker printed, or None after `timeout_s` without one."""
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def kill(self, worker: ChaosWorker) -> int:
        """SIGKILL `worker`, wait for it to be gone, and start its replacement."""
        worker.signal(signal.SIGKILL)
        code = worker.wait()
        self.workers.remove(worker)
        worker.close()
        self._start()
        return code

    def stop(self) -> list[int]:
        """SIGTERM every worker (graceful) and return their exit codes. Waits for each to
        have started first: a SIGTERM before the signal handlers exist kills the process
        with the default action, which is not what these tests test."""
        for worker in self.workers:
            worker.wait_ready()
        for worker in self.workers:
            worker.signal(signal.SIGTERM)
        codes = [worker.wait() for worker in self.workers]
        self.workers = []
        return codes

    def stderr(self) -> str:
        return "\n".join(f"--- worker {w.pid}\n{w.stderr()[-3000:]}" for w in self.all_workers)

    def close(self) -> None:
        for worker in self.all_workers:
            worker.close()


@pytest.fixture
def supervisors() -> Iterator[Callable[..., Supervisor]]:
    """Factory of Supervisors; every process they started is killed at teardown."""
    started: list[Supervisor] = []

    def start(env: dict[str, str], size: int, *extra: str) -> Supervisor:
        supervisor = Supervisor(env, size, *extra)
        started.append(supervisor)
        return supervisor

    yield start
    for supervisor in started:
        supervisor.close()


def chaos_env(store_url: str, log: Path | None = None, **overrides: str) -> dict[str, str]:
    env = {"ROTA_CHAOS_STORE": store_url}
    if log is not None:
        env["ROTA_CHAOS_LOG"] = str(log)
    env.update(overrides)
    return env


# -- the store, read from the test -------------------------------------------------------


@pytest.fixture
def producer(durable_store_url: str) -> Iterator[rota.App]:
    """An App on the scenario's store that enqueues and inspects; it runs nothing."""
    app = rota.App(durable_store_url)
    app.job("work")(lambda n: None)
    app.job("hold")(lambda n, seconds: None)
    app.job("poison")(lambda: None)
    yield app
    app.close()


def state_counts(app: rota.App) -> dict[JobState, int]:
    totals = dict.fromkeys(JobState, 0)
    for (_queue, state), count in app.store.count_jobs().items():
        totals[state] += count
    return totals


def all_jobs(app: rota.App) -> list[JobRecord]:
    return app.store.list_jobs(limit=1_000_000)


def executions(log: Path) -> dict[int, int]:
    """How many times each `work(n)` ran to completion, from the side record."""
    runs: dict[int, int] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            n = int(line.split()[0])
            runs[n] = runs.get(n, 0) + 1
    return runs


@dataclass(frozen=True)
class Run:
    """One run of a `hold` job, from the spans side record (chaos_app.py): where and when
    it started, and when and how it ended (`end` None: still running, or its process
    died). Times are `time.time()` in the worker processes: one host, one clock."""

    job_id: int
    attempt: int
    pid: int
    n: int
    start: float
    end: float | None = None
    how: str | None = None  # "done" (ran its whole time), "stopped" (told to stop), None

    def overlaps(self, other: Run) -> bool:
        """Whether the two runs were running at the same moment."""
        inf = float("inf")
        return (self.start < (other.end if other.end is not None else inf)
                and other.start < (self.end if self.end is not None else inf))


def hold_runs(spans: Path) -> list[Run]:
    """Every `hold` run in the spans side record, in the order they started."""
    started: dict[str, Run] = {}
    if spans.exists():
        for line in spans.read_text().splitlines():
            words = line.split()
            if words[0] == "start":
                job_id, attempt, pid, at, n = words[2:7]
                started[words[1]] = Run(int(job_id), int(attempt), int(pid), int(n), float(at))
            elif words[0] == "end" and words[1] in started:
                run = started[words[1]]
                started[words[1]] = Run(run.job_id, run.attempt, run.pid, run.n, run.start,
                                        float(words[2]), words[3])
    return sorted(started.values(), key=lambda run: run.start)


def overlapping_runs(runs: list[Run]) -> list[tuple[Run, Run]]:
    """Pairs of runs of the same job that were running at the same moment."""
    by_job: dict[int, list[Run]] = {}
    for run in runs:
        by_job.setdefault(run.job_id, []).append(run)
    return [(a, b) for same in by_job.values() for i, a in enumerate(same)
            for b in same[i + 1:] if a.overlaps(b)]


# -- a PostgreSQL cluster of the suite's own --------------------------------------------


@dataclass
class OwnCluster:
    """A PostgreSQL cluster created for the chaos suite (never the shared one on 5432)."""

    version: str
    name: str
    port: int
    events: list[str] = field(default_factory=list)

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, action: str, *options: str) -> None:
        _run_pg(["pg_ctlcluster", "--skip-systemctl-redirect", *options, self.version,
                 self.name, action])
        self.events.append(action)

    def ready(self) -> bool:
        try:
            import psycopg

            with psycopg.connect(self.admin_url, connect_timeout=2, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return True
        except Exception:
            return False


def _run_pg(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}): "
                           f"{result.stderr.strip() or result.stdout.strip()}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _unavailable(reason: str) -> None:
    if REQUIRE_POSTGRES:
        pytest.fail(f"{reason} (ROTA_REQUIRE_POSTGRES=1, so this is a failure)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def own_pg_cluster() -> Iterator[OwnCluster]:
    """Create a cluster on a free port (`pg_createcluster`), start it, yield it, drop it.

    The scenarios stop and restart it at will; no other PostgreSQL user is touched."""
    missing = [tool for tool in ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
               if shutil.which(tool) is None]
    if missing:
        _unavailable(f"{', '.join(missing)} not found: the PostgreSQL outage scenarios need "
                     "the postgresql-common tools (apt install postgresql-common)")
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not versions:
        _unavailable("no PostgreSQL server version under /etc/postgresql")
    cluster = OwnCluster(versions[-1], f"rota_chaos_{uuid.uuid4().hex[:8]}", _free_port())
    try:
        _run_pg(["pg_createcluster", "-p", str(cluster.port), cluster.version, cluster.name,
                 "--", "--auth=trust"])
    except (RuntimeError, OSError) as error:
        _unavailable(f"cannot create a PostgreSQL cluster of our own: {error}")
    try:
        cluster.ctl("start")
        assert wait_until(cluster.ready, 60), f"cluster {cluster.name} never accepted connections"
        yield cluster
    finally:
        subprocess.run(["pg_dropcluster", "--stop", cluster.version, cluster.name],
                       capture_output=True, timeout=120)


# -- raw SQL, behind the store's back ----------------------------------------------------


def raw_sql(store_url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[
        object, ...]]:
    """Run one statement on the store's database directly, as a damaged disk, a careless
    migration or an operator with a SQL shell would. `{jobs}` names the jobs table and
    `%s` marks a parameter, on both dialects."""
    if store_url.startswith("sqlite:///"):
        import sqlite3

        path = store_url.removeprefix("sqlite:///").split("?")[0]
        conn = sqlite3.connect(path)
        try:
            with conn:
                cursor = conn.execute(statement.format(jobs="rota_jobs").replace("%s", "?"),
                                      params)
                return [tuple(row) for row in cursor.fetchall()]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as pg:
        cursor = pg.execute(statement.format(jobs="rota.jobs").encode(), params)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`rota ARGV...` in this process: (exit code, stdout, stderr). argparse's own usage
    errors exit through SystemExit; anything else escaping `main` is a crash the test sees
    as an exception (the traceback a user would get)."""
    from rota.cli import main

    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
