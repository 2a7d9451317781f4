"""The PostgreSQL store's report on its own storage (`StorageReporting`): what holds back
vacuum of rota's tables, and their dead rows, in one read of the statistics views
(sql/postgres/storage_health.sql). It reads none of rota's tables, so it needs no current
schema and never migrates one.

Imports the core's storage health, the connection module and psycopg's rows.
"""

from __future__ import annotations

from rota.core.storage_health import HorizonHolder, StorageHealth, TableRows
from rota.store.postgres.connection import PostgresConnection
from rota.store.sql_base import Row


def _holder(row: Row) -> HorizonHolder:
    kind, name, age_s, age_xids, application, state, started_at, query, database = row[:9]
    return HorizonHolder(
        kind=kind, name=name, age_s=None if age_s is None else max(float(age_s), 0.0),
        age_xids=None if age_xids is None else int(age_xids), application=application,
        state=state, started_at=started_at, query=query, database=database)


class PostgresStorage(PostgresConnection):
    """`storage_health`; `PostgresStore` documents the class."""

    def storage_health(self) -> StorageHealth:
        """What holds back the xmin horizon (oldest first; this call's own connection
        left out) and the live and dead rows of every table in the store's schema."""
        with self._cursor("read the storage health", schema=False) as cursor:
            cursor.execute(self._query("storage_health"), {"schema": self._schema})
            rows = cursor.fetchall()
        holders = sorted((_holder(row) for row in rows if row[0] != "table"),
                         key=lambda h: (-(h.age_s or 0.0), -(h.age_xids or 0)))
        tables = tuple(TableRows(row[1], int(row[9] or 0), int(row[10] or 0))
                       for row in rows if row[0] == "table")
        return StorageHealth(holders=tuple(holders),
                             tables=tuple(sorted(tables, key=lambda t: t.table)),
                             has_horizon=True)
