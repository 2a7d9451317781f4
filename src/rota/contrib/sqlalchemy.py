"""SQLAlchemy 2 integration: enqueue jobs inside a `Session`'s or `Connection`'s current
transaction (docs/integrations.md, "SQLAlchemy").

    from rota.contrib.sqlalchemy import dbapi_connection

    with Session(engine) as session:
        session.add(Order(id=42))
        charge.configure(connection=dbapi_connection(session)).enqueue(42)
        session.commit()             # the order and its job, or neither

The one public name is `dbapi_connection`: it hands transactional enqueue
(`configure(connection=...)`) the database driver's connection under SQLAlchemy's current
transaction, so everything `configure` offers (queue, delay, key, `enqueue_many`) works
unchanged. The engine must use the driver the store writes on: `postgresql+psycopg://`
(psycopg 3) for a PostgreSQL store, `sqlite:///` (the standard library's sqlite3) on the
store's own file for a SQLite store.

Needs the optional extra: `pip install 'rota[sqlalchemy]'`. Imports rota's public API
only; nothing in rota imports this module.
"""

from __future__ import annotations

try:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session
except ModuleNotFoundError as error:  # pragma: no cover - exercised without the extra
    raise ModuleNotFoundError(
        "rota.contrib.sqlalchemy needs SQLAlchemy 2: pip install 'rota[sqlalchemy]'",
        name=error.name,
    ) from error

__all__ = ["dbapi_connection"]


def dbapi_connection(bind: Session | Connection) -> object:
    """The driver connection (a `psycopg.Connection` or a `sqlite3.Connection`) under
    `bind`'s current transaction, for `job.configure(connection=...)`.

    A `Session` or `Connection` with no transaction yet begins one, as SQLAlchemy 2 does
    on first use ("autobegin"), so that your `commit()` or `rollback()` decides the jobs'
    fate like that of your rows. rota never commits or rolls back.

    Args:
        bind: a `sqlalchemy.orm.Session` or a `sqlalchemy.engine.Connection` (sync).

    Returns:
        The DBAPI connection, to pass as `connection=`.

    Raises:
        TypeError: for anything else (an `AsyncSession` or `AsyncConnection` included:
            transactional enqueue is synchronous).
    """
    if isinstance(bind, Session):
        connection = bind.connection()  # begins the session's transaction if needed
    elif isinstance(bind, Connection):
        connection = bind
        if not connection.in_transaction():
            connection.begin()  # what SQLAlchemy's autobegin does on first execute
    else:
        raise TypeError(
            "dbapi_connection takes a sqlalchemy.orm.Session or a sqlalchemy.engine."
            f"Connection (sync); got {type(bind).__module__}.{type(bind).__qualname__}"
        )
    driver = connection.connection.driver_connection
    if driver is None:  # pragma: no cover - a pooled connection that was invalidated
        raise TypeError("the SQLAlchemy connection has no live driver connection")
    return driver
