"""rota on PostgreSQL and on SQLite: bulk enqueue with `job.enqueue_many`, one worker
process `rota worker benchmarks.workers.rota_app:app` (one Worker Group, pool_size 20).

By default the rota of this checkout, in this process. Given another tree's `src`
(`python -m benchmarks ab`), the schema, the enqueue and the worker are that tree's: the
enqueue runs in a child process (`benchmarks.workers.rota_child fill`), and every process
has the tree's `src` first on PYTHONPATH. `unavailable()` says what a rota lacks (a store
module, the real-time runtime) so that the suites skip it instead of failing.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import cleanup, pg
from benchmarks.targets import WorkerSpec, paced
from benchmarks.venv import ROOT
from benchmarks.workers.rota_app import make_app

POOL_SIZE = 20
APP = "benchmarks.workers.rota_app:app"


def rota_missing(store_module: str, needs_worker: bool = True) -> str | None:
    """What rota lacks here for that store (and a real-time worker), or None."""
    try:
        importlib.import_module(store_module)
    except ImportError as error:
        return f"this rota has no {store_module} ({error.name} is missing)"
    import rota

    if needs_worker and not hasattr(rota.App, "run"):
        return "this rota has no real-time runtime (App.run / rota worker)"
    return None


# Unfinished = scheduled + leased, each counted through its partial index (a GROUP BY over
# every row, as count_jobs does, would cost a full scan per poll while the worker drains).
UNFINISHED_POSTGRES = (
    "SELECT (SELECT count(*) FROM rota.jobs WHERE state = 'scheduled')"
    " + (SELECT count(*) FROM rota.jobs WHERE state = 'leased')"
)
UNFINISHED_SQLITE = (
    "SELECT (SELECT count(*) FROM rota_jobs WHERE state = 'scheduled')"
    " + (SELECT count(*) FROM rota_jobs WHERE state = 'leased')"
)


class SQLiteCounter:
    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)

    def __call__(self) -> int:
        return int(self._conn.execute(UNFINISHED_SQLITE).fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def rota_command() -> str:
    return str(Path(sys.executable).with_name("rota"))


def tree_env(src: Path) -> dict[str, str]:
    """The environment of a process that runs the rota of `src` with this checkout's
    benchmarks (compiling every run, so that no tree has its bytecode cached and another
    not)."""
    return {"PYTHONPATH": f"{src}{os.pathsep}{ROOT}", "PYTHONDONTWRITEBYTECODE": "1"}


def run_child(src: Path, *args: str) -> dict[str, object]:
    """`python -m benchmarks.workers.rota_child ARGS` under the rota of `src`: the JSON
    object on its last line."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.workers.rota_child", *args],
                          cwd=ROOT, env={**os.environ, **tree_env(src)}, check=True,
                          capture_output=True, text=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class RotaTarget:
    concurrency_note = f"WorkerGroupOptions(pool_size={POOL_SIZE}), Strict, async handlers"

    def __init__(self, kind: str, src: Path | None = None,
                 tenants: tuple[int, int] | None = None,
                 database: str = "rota_bench") -> None:
        """`src`: another tree's rota; `tenants` (Queues, backlogged): one Weighted group
        over that many tenant Queues, the jobs round-robin over the backlogged ones."""
        if kind not in {"postgres", "sqlite"}:
            raise ValueError(f"kind is postgres or sqlite; got {kind!r}")
        self.kind = kind
        self.name = f"rota[{kind}]"
        self.src = src
        self.tenants = tenants
        self.database = database
        self.url = ""
        self._scratch: Path | None = None
        self._app: object | None = None
        self._counter: SQLiteCounter | pg.Counter | None = None

    def unavailable(self, needs_worker: bool = True) -> str | None:
        return rota_missing(f"rota.store.{self.kind}", needs_worker)

    def _open(self):  # type: ignore[no-untyped-def]  # rota.App; rota may be absent
        if self._app is None:
            self._app = make_app(self.url, "strict", POOL_SIZE)
        return self._app

    def prepare(self) -> None:
        if self.kind == "postgres":
            self.url = pg.fresh_database(self.database)
        else:
            self._scratch = Path(tempfile.mkdtemp(prefix="rota-bench-sqlite-"))
            scratch = self._scratch
            cleanup.on_exit(f"remove {scratch}", lambda: shutil.rmtree(scratch, True))
            self.url = f"sqlite:///{scratch / 'bench.db'}"
        if self.src is None:
            self._open().store.count_jobs()  # applies the schema migrations

    def discard(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None
        if self._app is not None:
            self._app.close()  # type: ignore[attr-defined]
            self._app = None
        if self.kind == "postgres":
            pg.drop_database(self.database)
        elif self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            cleanup.done(f"remove {self._scratch}")
            self._scratch = None

    def enqueue_noops(self, count: int, chunk: int) -> float:
        if self.src is not None or self.tenants is not None:
            queues, backlogged = self.tenants or (0, 0)
            filled = run_child(self.src or ROOT / "src", "fill", self.url, str(count),
                               str(chunk), str(queues), str(backlogged))
            return float(filled["seconds"])  # type: ignore[arg-type]
        noop = self._open().jobs["noop"]
        start = time.perf_counter()
        for offset in range(0, count, chunk):
            noop.enqueue_many([()] * min(chunk, count - offset))
        return time.perf_counter() - start

    def settle(self) -> None:
        if self.kind == "postgres":
            pg.analyze(self.url)

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        probe = self._open().jobs["probe"]
        paced(count, interval_s, lambda _i: probe.enqueue(time.time(), record))

    def worker(self, latency_file: Path | None) -> WorkerSpec:
        env = {"ROTA_BENCH_STORE": self.url, "ROTA_BENCH_POOL": str(POOL_SIZE)}
        if latency_file:
            env["BENCH_LATENCY_FILE"] = str(latency_file)
        if self.tenants is not None:
            env["ROTA_BENCH_POLICY"] = f"tenants:{self.tenants[0]}"
        if self.src is not None:
            env.update(tree_env(self.src))
        return WorkerSpec([rota_command(), "worker", APP], env)

    def unfinished(self) -> int:
        if self._counter is None:
            if self.kind == "postgres":
                self._counter = pg.Counter(self.url, UNFINISHED_POSTGRES)
            else:
                self._counter = SQLiteCounter(Path(self.url.removeprefix("sqlite:///")))
        return self._counter()
