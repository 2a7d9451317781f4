"""The store-call deadline a caller sets on its thread (rota.store.deadlines)."""

from __future__ import annotations

import threading
import time

from rota.store import StoreError
from rota.store.deadlines import StoreTimeout, call_deadline, deadline_at


def test_no_deadline_outside_a_block() -> None:
    assert deadline_at() is None


def test_a_block_sets_the_deadline_and_restores_the_outer_one() -> None:
    # Given a deadline of 10 s with one of 1 s inside it
    with call_deadline(10):
        outer = deadline_at()
        assert outer is not None and outer - time.monotonic() <= 10
        with call_deadline(1):
            inner = deadline_at()
            # Then the inner block has the earlier deadline
            assert inner is not None and inner < outer
        # And leaving it restores the outer one
        assert deadline_at() == outer
        # And a later inner deadline never extends the outer one
        with call_deadline(100):
            assert deadline_at() == outer
        with call_deadline(None):
            assert deadline_at() == outer
    assert deadline_at() is None


def test_the_deadline_belongs_to_the_thread_that_set_it() -> None:
    seen: list[float | None] = []
    with call_deadline(5):
        thread = threading.Thread(target=lambda: seen.append(deadline_at()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_a_timeout_is_a_store_error() -> None:
    assert issubclass(StoreTimeout, StoreError)
