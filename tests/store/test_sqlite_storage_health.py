"""The SQLite store's report on its storage: the -wal file's size, which a reader holding
a transaction open keeps from being checkpointed; warned about past a (parameterised)
limit, and folded back once the reader ends."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from rota.app.status import check_health
from rota.core.jobs import NewJob
from rota.core.storage_health import StorageLimits, storage_warnings
from rota.store import StoreClock
from rota.store.sqlite import SQLiteStore

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LIMIT = StorageLimits(wal_bytes=2 * 2**20)


def grow(store: SQLiteStore, past: int) -> None:
    """Enqueue until the -wal file is bigger than `past` bytes."""
    while (store.storage_health().wal_bytes or 0) <= past:
        store.enqueue([NewJob("job", "q", NOW, args_json=f'["{"x" * 2000}"]')
                       for _ in range(50)], NOW)


def test_a_wal_a_reader_pins_past_the_limit_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "rota.db"
    store = SQLiteStore(path)
    try:
        health = store.storage_health()
        assert health.wal_file == f"{path}-wal" and not health.has_horizon
        assert storage_warnings(health, LIMIT) == ()
        with closing(sqlite3.connect(path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM rota_jobs").fetchone()
            grow(store, LIMIT.wal_bytes)
            assert store.checkpoint_wal() > 0  # the reader keeps it from folding back
            [warning] = storage_warnings(store.storage_health(), LIMIT)
            assert f"write-ahead log {path}-wal is" in warning and "(over 2 MiB)" in warning
            answer = check_health(store, StoreClock(store), limits=LIMIT)
            assert answer.ok and answer.warnings == (warning,)
            reader.execute("COMMIT")
        # The reader gone, a checkpoint folds all back and the next write truncates the
        # file to journal_size_limit (4 MiB), under the default limit of 64 MiB.
        assert store.checkpoint_wal() == 0
        store.enqueue([NewJob("job", "q", NOW)], NOW)
        assert (store.storage_health().wal_bytes or 0) <= 4 * 2**20
    finally:
        store.close()

