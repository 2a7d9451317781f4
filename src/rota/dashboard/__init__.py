"""rota's web dashboard: an ASGI application (Starlette), served by `rota dashboard` or
mounted in your own server. Needs the extra: `pip install 'rota[dashboard]'`.

    from rota.dashboard import create_app
    dashboard = create_app("sqlite:///rota.db", token="s3cret")   # any ASGI server

Nothing in `rota` imports this package: `import rota` works without the extra.
"""

from __future__ import annotations

import importlib.util
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from rota.app import App
    from rota.core.clock import Clock
    from rota.store import Store

__all__ = ["EXTRA_MISSING", "create_app", "missing_modules"]

REQUIRED_MODULES = ("starlette", "uvicorn", "prometheus_client", "jinja2")
EXTRA_MISSING = "the dashboard needs its extra: pip install 'rota[dashboard]'"


def missing_modules() -> list[str]:
    """The modules of the `dashboard` extra that are not installed."""
    return [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]


def create_app(
    source: str | Store | App,
    *,
    token: str | None = None,
    clock: Clock | None = None,
    window: timedelta = timedelta(minutes=60),
) -> Starlette:
    """The dashboard as an ASGI application.

    Args:
        source: a store URL (reads use a read-only connection where the store has one;
            the first action opens a writable one), a `rota.Store`, or a `rota.App` (its
            store and clock, and its Worker Groups shown even before any worker ran).
        token: when set, every action (POST under /api/) needs it: the header
            `Authorization: Bearer TOKEN`, or the cookie the /login page sets. Reads
            need nothing (bind to 127.0.0.1, or put your own authentication in front).
        clock: where "now" comes from (tests: `rota.VirtualClock`); default: the App's
            clock, else the system clock.
        window: how far back the Worker Groups view counts served jobs (default 60 min).

    Returns:
        A Starlette application. Its lifespan closes the stores it opened; when mounted
        somewhere that does not run sub-application lifespans, call
        `app.state.rota_dashboard.source.close()` at shutdown.

    Raises:
        ModuleNotFoundError: without the `dashboard` extra (the message says what to install).
        rota.StoreConfigError, rota.StoreError: if the store cannot be opened.
    """
    missing = missing_modules()
    if missing:
        raise ModuleNotFoundError(f"{EXTRA_MISSING} (missing: {', '.join(missing)})")
    from rota.dashboard.server import build

    return build(source, token=token, clock=clock, window=window)
