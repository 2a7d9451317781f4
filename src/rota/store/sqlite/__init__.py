"""The `sqlite:///path.db` store: the embedded default, for one host and many processes.

`SQLiteStore` is put together from one module per concern: `connection` (the URL, the
file, migrations, transactions), `schema` (SQL files, times as INTEGER microseconds, job
counts), `claims`, `jobs` (enqueues, requeues, purges, registry writes), `wake` (hints
between processes). The rest is shared with PostgreSQL: rota.store.sql_base.
"""

from __future__ import annotations

from rota.store.sqlite.claims import SQLiteClaims
from rota.store.sqlite.connection import DEFAULT_BUSY_TIMEOUT_S, EXPECTED_FORM, MINIMUM_SQLITE
from rota.store.sqlite.jobs import SQLiteJobs
from rota.store.sqlite.schema import schema_version_known

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S",
    "EXPECTED_FORM",
    "MINIMUM_SQLITE",
    "SQLiteStore",
    "schema_version_known",
]


class SQLiteStore(SQLiteClaims, SQLiteJobs):
    """The `Store` contract on one SQLite file, shared safely by threads and processes
    (also a `WakeupSource`, `Migratable`, `WalCheckpointing` and `StorageReporting`).

    Args:
        path: the database file; created (with its directory's -wal and -shm neighbours)
            if missing. Its directory must exist.
        busy_timeout_s: how long a write waits for another connection's write lock
            before giving up with `StoreError`. Default 5 s.
        url: the URL to name in messages; default `sqlite:///<path>`.
        read_only: open the file read-only, for commands that only read: never creates,
            migrates or writes it (not even its -wal/-shm neighbours when the directory
            is read-only), so it works on a file of mode 0444 or in a read-only
            directory. Writes raise `StoreError`.

    Raises:
        StoreConfigError: the path cannot be a database file (directory missing, or a
            directory itself; with `read_only`, a file that does not exist), or
            `busy_timeout_s` is not a non-negative number.
        StoreError: SQLite is older than 3.35, the file cannot be opened or is not a
            database, or it stayed locked longer than the busy timeout while migrating;
            with `read_only`, its schema is not this rota's (run `rota migrate`).
        SchemaTooNew: the file was migrated by a newer rota.
    """
