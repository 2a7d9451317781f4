"""rota for Django: the App from settings, `manage.py rota_worker`, enqueue inside
`transaction.atomic()`, and `run_until_idle` from Django's `TestCase`.

Settings (all optional but `APP` for the worker command)::

    INSTALLED_APPS = [..., "rota.contrib.django"]
    ROTA = {
        "APP": "myproj.jobs:app",   # the rota.App (module:attribute) `rota_worker` runs
        "STORE": None,              # a store URL; None: the Django database below
        "DATABASE": "default",      # the Django database that holds the jobs
    }

With `STORE` unset the jobs live in the Django database itself (SQLite file or
PostgreSQL database, rota's tables in their own `rota` schema on PostgreSQL), which is what
lets `in_transaction(job).enqueue(...)` write a job in the same transaction as your
models. docs/django.md has the whole story.

Imports Django and rota's public API; requires the `django` extra.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

try:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.db import connections
except ModuleNotFoundError as error:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "rota.contrib.django needs Django: pip install 'rota[django]'"
    ) from error

import rota
from rota.app.definition import ConfiguredJob, JobDefinition

__all__ = [
    "get_app",
    "in_transaction",
    "make_app",
    "rota_settings",
    "run_until_idle",
    "store_url",
    "transaction_connection",
]

DEFAULTS: dict[str, Any] = {"APP": None, "STORE": None, "DATABASE": "default"}


def rota_settings() -> dict[str, Any]:
    """`settings.ROTA` merged over the defaults.

    Raises:
        ImproperlyConfigured: ROTA is not a dict, or has a key rota does not know.
    """
    given = getattr(settings, "ROTA", {})
    if not isinstance(given, dict):
        raise ImproperlyConfigured(f"settings.ROTA must be a dict; got {given!r}")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ImproperlyConfigured(
            f"settings.ROTA has unknown key(s) {unknown}; it takes {sorted(DEFAULTS)}")
    return {**DEFAULTS, **given}


def store_url() -> str:
    """The store URL of the settings: `ROTA["STORE"]`, else the URL of the Django
    database `ROTA["DATABASE"]` (SQLite: its file, as an absolute path; PostgreSQL: host,
    port, name, user and password of its settings).

    Raises:
        ImproperlyConfigured: the database is neither SQLite nor PostgreSQL, or is an
            in-memory SQLite database (no other connection could see its jobs).
    """
    options = rota_settings()
    if options["STORE"]:
        return str(options["STORE"])
    alias = options["DATABASE"]
    if alias not in settings.DATABASES:
        raise ImproperlyConfigured(
            f"settings.ROTA['DATABASE'] is {alias!r}, which is not in settings.DATABASES")
    database = settings.DATABASES[alias]
    engine = database.get("ENGINE", "")
    name = str(database.get("NAME") or "")
    if engine == "django.db.backends.sqlite3":
        if not name or name == ":memory:" or name.startswith("file:"):
            raise ImproperlyConfigured(
                f"database {alias!r} is an in-memory SQLite database; rota needs a file "
                "(or set settings.ROTA['STORE'] to a store URL, e.g. 'memory://' in tests)")
        return f"sqlite:///{os.path.abspath(name)}"
    if engine in {"django.db.backends.postgresql", "django.contrib.gis.db.backends.postgis"}:
        user = quote(str(database.get("USER") or ""), safe="")
        password = quote(str(database.get("PASSWORD") or ""), safe="")
        credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = str(database.get("HOST") or "localhost")
        host = f"[{host}]" if ":" in host else host
        port = f":{database['PORT']}" if database.get("PORT") else ""
        return f"postgresql://{credentials}{host}{port}/{quote(name, safe='')}"
    raise ImproperlyConfigured(
        f"database {alias!r} uses {engine!r}; rota stores jobs in SQLite or PostgreSQL: "
        "point settings.ROTA['DATABASE'] at one, or set settings.ROTA['STORE'] to a URL")


def make_app(**options: Any) -> rota.App:
    """A `rota.App` on the settings' store (`store_url()`); `options` go to `rota.App`
    (`clock=`, `retention=`, ...). Call it in your jobs module::

        app = make_app()

        @app.job("confirm-order", queue="orders")
        def confirm_order(order_id: int) -> None: ...
    """
    return rota.App(store_url(), **options)


def get_app() -> rota.App:
    """The App named by `settings.ROTA["APP"]` (`module:attribute`), imported.

    Raises:
        ImproperlyConfigured: APP is not set, cannot be imported, or is not a rota.App.
    """
    spec = rota_settings()["APP"]
    if not spec:
        raise ImproperlyConfigured(
            "settings.ROTA['APP'] is not set; set it to the module:attribute of your "
            "rota.App, e.g. ROTA = {'APP': 'myproj.jobs:app'}")
    from importlib import import_module

    module_name, _, attribute = str(spec).partition(":")
    if not module_name or not attribute:
        raise ImproperlyConfigured(
            f"settings.ROTA['APP'] must be module:attribute; got {spec!r}")
    try:
        target: object = import_module(module_name)
    except ImportError as error:
        raise ImproperlyConfigured(
            f"settings.ROTA['APP'] {spec!r}: cannot import {module_name!r}: {error}"
        ) from error
    for part in attribute.split("."):
        target = getattr(target, part, None)
    if not isinstance(target, rota.App):
        raise ImproperlyConfigured(
            f"settings.ROTA['APP'] {spec!r} is a {type(target).__name__}, not a rota.App")
    return target


def transaction_connection(using: str | None = None) -> Any:
    """The DBAPI connection under Django's connection `using` (default
    `ROTA["DATABASE"]`), connected if it was not yet: a `sqlite3.Connection` or a
    `psycopg.Connection`, the kind `job.configure(connection=...)` takes."""
    wrapper = connections[using or rota_settings()["DATABASE"]]
    wrapper.ensure_connection()
    return wrapper.connection


def in_transaction(
    job: JobDefinition[Any, Any], *, using: str | None = None, **configure: Any
) -> ConfiguredJob[Any, Any]:
    """`job` configured to enqueue on Django's own connection, inside its current
    transaction (`transaction.atomic()`): the job exists if and only if that transaction
    commits. `configure` takes `job.configure`'s other options (queue=, delay=, due=).

    On a `memory://` store (tests) there is no database connection to share: the job is
    enqueued at once, as `job.configure(**configure)` would.

        with transaction.atomic():
            order = Order.objects.create(total=99)
            in_transaction(confirm_order).enqueue(order.id)
    """
    if job.app.store.url.startswith("memory:"):
        return job.configure(**configure)
    return job.configure(connection=transaction_connection(using), **configure)


@contextmanager
def _sync_calls_allowed() -> Iterator[None]:
    """Let sync handlers use the ORM while `run_until_idle` runs them inline.

    `run_until_idle` calls sync handlers one after another on the calling thread from
    inside its event loop, so Django's "async unsafe" guard would refuse their queries
    (SynchronousOnlyOperation). Nothing runs concurrently there, and staying on this
    thread is the point: the handlers see the test's transaction and data."""
    key = "DJANGO_ALLOW_ASYNC_UNSAFE"
    previous = os.environ.get(key)
    os.environ[key] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = previous


def run_until_idle(app: rota.App | None = None, max_executions: int | None = None) -> int:
    """`app.run_until_idle(max_executions)` (default: `get_app()`) usable from Django's
    `TestCase`:
    handlers run on the test's thread, on the test's own database connections (so inside
    its transaction, seeing its data), and may use the ORM.

    Plain `app.run_until_idle()` runs sync handlers inline inside an event loop, where
    Django would refuse their queries and, if allowed, give them new connections that
    cannot see the test's uncommitted rows. This drive hands Django's connections of the
    calling thread to the loop's task first.

    Returns:
        The number of job executions.

    Raises:
        RuntimeError: if called from a running event loop, or past `max_executions`.
    """
    target = app if app is not None else get_app()
    # Inside a running loop Django keys its connections by context, not by thread:
    # give the drive's task the connections of this thread.
    shared = {alias: connections[alias] for alias in connections}

    async def drive() -> int:
        for alias, wrapper in shared.items():
            connections[alias] = wrapper
        return await target.run_until_idle_async(max_executions)

    with _sync_calls_allowed():
        return asyncio.run(drive())
