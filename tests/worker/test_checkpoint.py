"""The WAL checkpoint duty (rota.worker.checkpoint): on a cadence, surviving any exception,
started by the runtime for an SQLite store only. Waits on events, never on sleeps."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import rota
from rota.store.sqlite import SQLiteStore
from rota.worker import checkpoint
from rota.worker.checkpoint import checkpoint_forever, wal_checkpoint_duty

DEADLINE_S = 10.0


@pytest.fixture(autouse=True)
def fast_cadence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "CHECKPOINT_INTERVAL_S", 0.01)
    monkeypatch.setattr(checkpoint, "MAX_BACKOFF_S", 0.02)


class FlakyCheckpoints:
    """A WAL store whose checkpoints raise what `script` says, call by call, then work."""

    url = "sqlite:///flaky.db"

    def __init__(self, script: list[BaseException | None], calls_wanted: int) -> None:
        self.script = script
        self.calls = 0
        self.calls_wanted = calls_wanted
        self.enough = asyncio.Event()

    def checkpoint_wal(self) -> int:
        self.calls += 1
        if self.calls >= self.calls_wanted:
            self.enough.set()
        failure = self.script[self.calls - 1] if self.calls <= len(self.script) else None
        if failure is not None:
            raise failure
        return 0


async def inline(call: Callable[[], int]) -> int:
    return call()


def test_the_duty_survives_any_exception_and_logs_the_first_of_a_streak_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given checkpoints that fail with a store error, a bug and a sqlite error, then work
    store = FlakyCheckpoints([rota.StoreError("disk I/O error"), RuntimeError("bug"),
                              sqlite3.OperationalError("disk full"), None, KeyError("k")],
                             calls_wanted=7)

    async def scenario() -> None:
        duty = asyncio.create_task(checkpoint_forever(store, inline, store.url))
        await asyncio.wait_for(store.enough.wait(), DEADLINE_S)
        assert not duty.done()  # still going after every failure
        duty.cancel()
        with pytest.raises(asyncio.CancelledError):
            await duty

    with caplog.at_level(logging.DEBUG, logger="rota.worker.checkpoint"):
        asyncio.run(scenario())
    # Then each streak's first failure is an ERROR with its traceback; the rest DEBUG
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and all(r.exc_info for r in errors)
    assert "WAL checkpoint of sqlite:///flaky.db failed" in errors[0].getMessage()
    assert any("works again after 3 failures" in r.getMessage() for r in caplog.records)


def test_the_runtime_checkpoints_an_sqlite_store_while_it_runs(tmp_path: Path) -> None:
    # Given an App on an SQLite file, whose checkpoints we count
    app = rota.App(f"sqlite:///{tmp_path / 'wal.db'}")
    store = app.store
    assert isinstance(store, SQLiteStore)
    counted = asyncio.Event()
    real = store.checkpoint_wal
    calls: list[int] = []

    def counting() -> int:
        calls.append(real())
        if len(calls) >= 3:
            counted.set()
        return calls[-1]

    store.checkpoint_wal = counting  # type: ignore[method-assign]
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))

    async def scenario() -> None:
        async with app.serve():
            await asyncio.wait_for(counted.wait(), DEADLINE_S)

    try:
        # When it serves, Then the duty checkpoints on its cadence
        asyncio.run(scenario())
    finally:
        app.close()
    assert calls[:3] == [0, 0, 0]


def test_no_duty_for_stores_without_a_wal() -> None:
    app = rota.App("memory://")

    assert wal_checkpoint_duty(app.store) is None
    app.close()
