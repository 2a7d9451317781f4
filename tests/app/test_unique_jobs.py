"""Unique jobs through the App: configure(key=...)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import rota
from rota import JobState

MakeApp = Callable[[], rota.App]


def test_configure_key_answers_the_live_job_until_it_finishes(make_app: MakeApp) -> None:
    app = make_app()
    ran: list[int] = []

    @app.job("charge", queue="q")
    def charge(order: int) -> None:
        ran.append(order)

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    # Given a job enqueued with key order-42
    first = charge.configure(key="order-42").enqueue(42)
    # When enqueued again (other arguments, another Queue even) while it is scheduled
    again = charge.configure(key="order-42", queue="other").enqueue(43)
    # Then nothing is stored: the live job's id is answered
    assert again == first and sum(app.store.count_jobs().values()) == 1
    # After it ran, the key is free again
    assert app.run_until_idle() == 1 and ran == [42]
    later = charge.configure(key="order-42").enqueue(44)
    assert later != first
    job = app.get_job(later)
    assert job is not None and job.state is JobState.SCHEDULED


def test_enqueue_many_with_keys(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("charge")
    def charge(order: int) -> None: ...

    # configure(key=) applies to every entry: one job, its id answered for each
    same = charge.configure(key="batch").enqueue_many([(1,), (2,)])
    assert same[0] == same[1]
    # A key per entry in the mapping form overrides it; entries sharing one make one job
    ids = charge.enqueue_many([{"args": [1], "key": "o1"}, (2,), {"args": [3], "key": "o1"},
                               {"args": [4], "key": "o2"}])
    assert ids[0] == ids[2] and len({ids[0], ids[1], ids[3], same[0]}) == 4
    with pytest.raises(ValueError, match="enqueue_many entry 1: a job key"):
        charge.enqueue_many([(1,), {"args": [2], "key": ""}])


@pytest.mark.parametrize("key", ["", "k" * 201, "tab\there", 7])
def test_bad_keys_fail_at_configure(make_app: MakeApp, key: object) -> None:
    app = make_app()
    job = app.job("j")(lambda: None)
    with pytest.raises(ValueError, match="job key"):
        job.configure(key=key)  # type: ignore[arg-type]
