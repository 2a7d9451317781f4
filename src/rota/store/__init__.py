"""Stores: the contract (`Store`) and `open_store(url)`, which picks the adapter by scheme.

Schemes: `memory://`, `sqlite:///path.db` (the embedded default), `postgresql://...`.
Adapters are imported lazily so that, say, psycopg is needed only for PostgreSQL.
"""

from __future__ import annotations

from rota.store.base import SchemaTooNew, Store, StoreConfigError, StoreError
from rota.store.clock import StoreClock, store_clock_for
from rota.store.serving_view import policies_in_force, stored_policies
from rota.store.urls import mask_url
from rota.store.workflow_view import Related, related, relative_json

EXPECTED_FORMS = (
    "expected memory://, sqlite:///relative/path.db, sqlite:////absolute/path.db or "
    "postgresql://user:password@host:5432/database"
)


# What `pip install 'rota[postgres]'` brings; a missing one means the extra is missing.
POSTGRES_MODULES = frozenset({"psycopg", "psycopg_pool", "psycopg_binary", "psycopg_c"})


def open_store(url: str, *, read_only: bool = False) -> Store:
    """Open the store that `url` names.

    Args:
        read_only: for commands that only read. An SQLite file is then opened read-only:
            never created, migrated or written, so a file of mode 0444 or in a read-only
            directory can be read; a missing file is a `StoreConfigError`. A PostgreSQL
            database is then never migrated: its first call raises `StoreError` if the
            schema is behind this rota's (or missing). The memory store opens as usual.

    Raises:
        StoreConfigError: if the URL is malformed or names an unknown scheme; the message
            names the URL (password masked) and the expected forms. Also for a
            `postgresql://` URL when the `postgres` extra is not installed (the message
            says `pip install 'rota[postgres]'`).
    """
    if not isinstance(url, str):
        raise TypeError(f"a store URL must be a str; got {url!r}. {EXPECTED_FORMS}")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "memory":
        if url.split("://", 1)[1].strip("/"):
            raise StoreConfigError(f"store URL {mask_url(url)!r}: memory:// takes no path")
        from rota.store.memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite":
        from rota.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url, read_only=read_only)
    if scheme in {"postgresql", "postgres"}:
        try:
            from rota.store.postgres import PostgresStore
        except ModuleNotFoundError as error:
            if error.name not in POSTGRES_MODULES:
                raise
            raise StoreConfigError(
                f"store URL {mask_url(url)!r} needs the PostgreSQL extra, which is not "
                f"installed (no module {error.name!r}): pip install 'rota[postgres]'"
            ) from None
        return PostgresStore.from_url(url, read_only=read_only)
    raise StoreConfigError(f"store URL {mask_url(url)!r} is not one rota knows; {EXPECTED_FORMS}")


__all__ = [
    "Related",
    "SchemaTooNew",
    "Store",
    "StoreClock",
    "StoreConfigError",
    "StoreError",
    "mask_url",
    "open_store",
    "policies_in_force",
    "related",
    "relative_json",
    "store_clock_for",
    "stored_policies",
]
