"""The `postgresql://` store: the contract on PostgreSQL, for many worker machines.

`PostgresStore` is put together from one module per concern: `connection` (the URL, the
pool, migrations, errors), `schema` (SQL files, parameters built as text), `claims`,
`jobs` (enqueues, requeues, purges, registry writes), `listener` (LISTEN/NOTIFY hints),
`retry` (a transaction rolled back for a deadlock or a serialisation failure runs again),
`storage` (what holds back vacuum, for the health checks).
The rest is shared with SQLite: rota.store.sql_base. No statement of the queue reads the server's
clock. Only a `postgresql://` store imports this package (psycopg is an extra).
"""

from __future__ import annotations

from rota.store.postgres.claims import PostgresClaims
from rota.store.postgres.connection import DEFAULT_SCHEMA, EXPECTED_FORM, parse_url
from rota.store.postgres.jobs import PostgresJobs
from rota.store.postgres.listener import PostgresListening
from rota.store.postgres.schema import SCHEMA_VERSION, migrations, render_sql
from rota.store.postgres.storage import PostgresStorage

__all__ = [
    "DEFAULT_SCHEMA",
    "EXPECTED_FORM",
    "SCHEMA_VERSION",
    "PostgresStore",
    "migrations",
    "parse_url",
    "render_sql",
]


class PostgresStore(PostgresClaims, PostgresJobs, PostgresListening, PostgresStorage):
    """The `Store` contract on PostgreSQL (also a `WakeupSource`, `Migratable` and
    `StorageReporting`).

    Thread-safe: each call borrows its own pooled connection. Migrations run on first use
    (or explicitly with `migrate()`); no connection is made until then.

    Args:
        conninfo: a libpq connection string or `postgresql://` URL (no rota options).
        schema: the PostgreSQL schema holding rota's tables (created if missing).
        pool_min_size: connections the pool keeps open.
        pool_max_size: most connections the pool opens (one per concurrent call).
        url: the URL to show in messages (password masked); defaults to `conninfo`.

    Raises:
        StoreConfigError: if `schema` or a pool size is not valid.
    """
