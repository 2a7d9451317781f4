"""Stop signals for a blocking worker (`App.run`), on every platform.

`loop.add_signal_handler` is the right tool where it exists (Unix event loops): the
handler runs on the loop, between callbacks. Windows event loops have none (they raise
`NotImplementedError`), so there the handler is installed with `signal.signal` and hands
the signal over to the loop with `call_soon_threadsafe`: Python runs signal handlers on the
main thread between bytecodes, so that call is the only safe way into the loop. Windows
delivers SIGINT (Ctrl-C) and, for `signal.signal`, SIGTERM only when raised in-process;
SIGBREAK (Ctrl-Break) is added where it exists.

Imports only the standard library.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

logger = logging.getLogger("rota")


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a worker here: SIGINT and SIGTERM, and SIGBREAK on Windows."""
    extra = getattr(signal, "SIGBREAK", None)
    return (signal.SIGINT, signal.SIGTERM, *(() if extra is None else (extra,)))


def install_stop_handlers(
    loop: asyncio.AbstractEventLoop,
    signals: tuple[signal.Signals, ...],
    on_signal: Callable[[signal.Signals], None],
) -> Callable[[], None]:
    """Call `on_signal(signum)` on `loop` for each of `signals`; return the function that
    removes the handlers again (restoring the previous `signal.signal` handlers where the
    fallback was used). Call from the main thread, with `loop` running on it."""
    on_loop: list[signal.Signals] = []
    previous: dict[signal.Signals, Any] = {}
    for signum in signals:
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except NotImplementedError:
            previous[signum] = signal.signal(signum, _handing_over(loop, on_signal))
        else:
            on_loop.append(signum)
    if previous:
        logger.debug("this event loop has no add_signal_handler; %s handled with "
                     "signal.signal", ", ".join(s.name for s in previous))

    def remove() -> None:
        for signum in on_loop:
            loop.remove_signal_handler(signum)
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return remove


def _handing_over(
    loop: asyncio.AbstractEventLoop, on_signal: Callable[[signal.Signals], None]
) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(on_signal, signal.Signals(signum))

    return handler
