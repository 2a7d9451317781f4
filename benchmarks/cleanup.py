"""Clean-up that runs however the harness ends: normal exit, failure, Ctrl-C or SIGTERM.

Worker subprocesses run in their own process group and are registered here, and so are
the databases the harness created. `run_all()` stops the groups (SIGTERM, then SIGKILL)
and drops the databases, newest first. It is idempotent.
"""

from __future__ import annotations

import atexit
import signal
import sys
from collections.abc import Callable
from types import FrameType

_actions: dict[str, Callable[[], None]] = {}


def on_exit(key: str, action: Callable[[], None]) -> None:
    """Register `action` under `key` (a later registration with the same key replaces it)."""
    _actions[key] = action


def done(key: str) -> None:
    """Forget `key`: its resource was already released the normal way."""
    _actions.pop(key, None)


def run_all() -> None:
    while _actions:
        key = next(reversed(_actions))
        action = _actions.pop(key)
        try:
            action()
        except Exception as error:  # clean-up must go on with the next resource
            print(f"benchmarks: clean-up {key!r} failed: {error}", file=sys.stderr)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    print(f"\nbenchmarks: signal {signum}, cleaning up", file=sys.stderr, flush=True)
    run_all()
    sys.exit(128 + signum)


def install() -> None:
    atexit.register(run_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
