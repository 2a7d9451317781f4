"""What an App is built from, checked: its store and its limits.

The store comes from the `App(store)` argument (a URL or a `Store`), else from the
`ROTA_STORE` environment variable (which the `rota` command reads too), else it is
`sqlite:///rota.db`, a file in the working directory: an App made with no argument
then finds the same jobs as the command line. `store_location` is the one way to name
a store in a log line (an SQLite file by its absolute path, passwords masked), because
"which file did this worker open" is the first question when it seems to see no jobs.
Imports the core and the store package.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from rota.core.retention import Retention
from rota.store import Store, mask_url, open_store

DEFAULT_STORE_URL = "sqlite:///rota.db"
DEFAULT_RETENTION = Retention()
STORE_ENV = "ROTA_STORE"  # the store URL when App() is given none (the CLI reads it too)


class _FromEnvironment(enum.Enum):
    """The type of `App`'s default store argument: a token of its own, so that None
    stays a TypeError (an App needs a store)."""

    TOKEN = "$ROTA_STORE, else sqlite:///rota.db"

    def __repr__(self) -> str:
        return "<$ROTA_STORE, else sqlite:///rota.db>"


FROM_ENVIRONMENT: Final = _FromEnvironment.TOKEN


def default_store_url() -> str:
    """`$ROTA_STORE` if set (and not blank), else `sqlite:///rota.db`."""
    return os.environ.get(STORE_ENV, "").strip() or DEFAULT_STORE_URL


def store_location(store: Store) -> str:
    """Where `store` keeps its jobs, for a start-up log line: an SQLite store's absolute
    file path (`sqlite:////abs/path.db`), otherwise its URL; passwords masked."""
    path = getattr(store, "path", None)
    if isinstance(path, str) and store.url.lower().startswith("sqlite:"):
        return f"sqlite:///{os.path.abspath(path)}"
    return mask_url(store.url)


def checked_store(store: object) -> str | Store:
    """The App's store argument checked (the default token resolved), not opened yet."""
    if isinstance(store, _FromEnvironment):
        store = default_store_url()
    if not isinstance(store, str | Store):
        raise TypeError(
            f"App takes a store URL (e.g. 'sqlite:///rota.db') or a Store; got {store!r}"
        )
    return store


# Set by `stores_opened_read_only` around the import of an App's module.
_READ_ONLY: ContextVar[bool] = ContextVar("rota_stores_opened_read_only", default=False)


@contextmanager
def stores_opened_read_only() -> Iterator[None]:
    """Within this block, every App made with a store URL opens it read-only
    (`open_store(url, read_only=True)`): an SQLite file is never created, migrated or
    written, and a missing one is a `StoreConfigError` naming it. The `rota` command's
    read commands import the user's App module inside it, so an App that opens
    `$ROTA_STORE` or a path of its own cannot create a store while being read."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


def opened(store: str | Store) -> Store:
    """The store a checked argument names, opened if it is a URL (read-only inside
    `stores_opened_read_only`)."""
    return open_store(store, read_only=_READ_ONLY.get()) if isinstance(store, str) else store


def checked_max_payload_bytes(max_payload_bytes: object) -> int:
    if (isinstance(max_payload_bytes, bool) or not isinstance(max_payload_bytes, int)
            or max_payload_bytes < 1):
        raise ValueError(
            f"max_payload_bytes must be a whole number of bytes >= 1; got "
            f"{max_payload_bytes!r}"
        )
    return max_payload_bytes


def checked_retention(retention: object) -> Retention | None:
    if retention is not None and not isinstance(retention, Retention):
        raise TypeError(
            f"retention must be a rota.Retention (or None to keep every job); got "
            f"{retention!r}"
        )
    return retention
