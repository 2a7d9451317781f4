"""rota on PostgreSQL and on SQLite: bulk enqueue with `job.enqueue_many`, one worker
process `rota worker benchmarks.workers.rota_app:app` (one Worker Group, pool_size 20).

rota's stores and real-time runtime are being built on other branches; until they are on
this branch, `unavailable()` says what is missing and the suites skip rota.
"""

from __future__ import annotations

import importlib
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import cleanup, pg
from benchmarks.targets.base import WorkerSpec, paced
from benchmarks.workers.rota_app import make_app

POOL_SIZE = 20


def rota_missing(store_module: str, needs_worker: bool = True) -> str | None:
    """What rota lacks here for that store (and a real-time worker), or None."""
    try:
        importlib.import_module(store_module)
    except ImportError as error:
        return f"{store_module} is not on this branch yet ({error.name})"
    import rota

    if needs_worker and not hasattr(rota.App, "run"):
        return "rota's real-time runtime (App.run / rota worker) is not on this branch yet"
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


class _SQLiteCounter:
    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)

    def __call__(self) -> int:
        return int(self._conn.execute(UNFINISHED_SQLITE).fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def rota_command() -> str:
    return str(Path(sys.executable).with_name("rota"))


class RotaTarget:
    concurrency_note = f"WorkerGroupOptions(pool_size={POOL_SIZE}), Strict, async handlers"

    def __init__(self, kind: str) -> None:
        if kind not in {"postgres", "sqlite"}:
            raise ValueError(f"kind is postgres or sqlite; got {kind!r}")
        self.kind = kind
        self.name = f"rota[{kind}]"
        self.url = ""
        self._scratch: Path | None = None
        self._app: object | None = None
        self._counter: _SQLiteCounter | pg.Counter | None = None

    def unavailable(self, needs_worker: bool = True) -> str | None:
        return rota_missing(f"rota.store.{self.kind}", needs_worker)

    def _open(self):  # type: ignore[no-untyped-def]  # rota.App; rota may be absent
        if self._app is None:
            self._app = make_app(self.url, "strict", POOL_SIZE)
        return self._app

    def prepare(self) -> None:
        if self.kind == "postgres":
            self.url = pg.fresh_database("rota_bench")
        else:
            self._scratch = Path(tempfile.mkdtemp(prefix="rota-bench-sqlite-"))
            scratch = self._scratch
            cleanup.on_exit(f"remove {scratch}", lambda: shutil.rmtree(scratch, True))
            self.url = f"sqlite:///{scratch / 'bench.db'}"
        self._open().store.count_jobs()  # applies the schema migrations

    def discard(self) -> None:
        if self._counter is not None:
            self._counter.close()
            self._counter = None
        if self._app is not None:
            self._app.close()  # type: ignore[attr-defined]
            self._app = None
        if self.kind == "postgres":
            pg.drop_database("rota_bench")
        elif self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            cleanup.done(f"remove {self._scratch}")
            self._scratch = None

    def enqueue_noops(self, count: int, chunk: int) -> float:
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
        return WorkerSpec([rota_command(), "worker", "benchmarks.workers.rota_app:app"], env)

    def unfinished(self) -> int:
        if self._counter is None:
            if self.kind == "postgres":
                self._counter = pg.Counter(self.url, UNFINISHED_POSTGRES)
            else:
                self._counter = _SQLiteCounter(Path(self.url.removeprefix("sqlite:///")))
        return self._counter()
