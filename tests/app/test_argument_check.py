"""Argument check: enqueue binds the arguments to the
handler's signature and raises TypeError, naming the job and what does not fit, before
anything is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import rota

MakeApp = Callable[[], rota.App]


def stored(app: rota.App) -> int:
    return sum(app.store.count_jobs().values())


def test_enqueue_with_arguments_that_do_not_fit_stores_nothing(make_app: MakeApp) -> None:
    # Given a job taking (to, subject, *, urgent=False)
    app = make_app()

    @app.job("send-email")
    def send_email(to: str, subject: str, *, urgent: bool = False) -> None: ...

    # When enqueueing with a missing, an extra and an unknown keyword argument
    with pytest.raises(TypeError, match=r"job 'send-email'.*missing a required argument: "
                                        r"'subject'"):
        send_email.enqueue("a@example.com")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="too many positional arguments"):
        send_email.enqueue("a", "b", "c")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'priority'"):
        send_email.configure(queue="q").enqueue("a", "b", priority=1)  # type: ignore[call-arg]
    # Then nothing was stored, and the message shows the signature
    assert stored(app) == 0
    with pytest.raises(TypeError, match=r"send_email\(to, subject, \*, urgent=False\)"):
        send_email.enqueue()  # type: ignore[call-arg]
    # And arguments that fit are stored
    assert app.get_job(send_email.enqueue("a", subject="b", urgent=True)) is not None


def test_enqueue_async_checks_the_arguments_too(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("async-job")
    async def handler(n: int) -> None: ...

    with pytest.raises(TypeError, match="job 'async-job'"):
        asyncio.run(handler.enqueue_async(1, 2))  # type: ignore[call-arg]
    assert stored(app) == 0


def test_enqueue_many_stores_nothing_when_one_entry_does_not_fit(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("pair")
    def pair(a: int, b: int) -> None: ...

    with pytest.raises(TypeError, match=r"enqueue_many entry 2: job 'pair'.*'b'"):
        pair.enqueue_many([(1, 2), {"args": [1], "kwargs": {"b": 2}}, (3,)])
    assert stored(app) == 0
    assert len(pair.enqueue_many([(1, 2), (3, 4)])) == 2


def test_variadic_handlers_and_unreadable_signatures_accept_anything(
    make_app: MakeApp,
) -> None:
    app = make_app()

    @app.job("anything")
    def anything(*args: object, **kwargs: object) -> None: ...

    # A builtin whose signature Python cannot read is not checked
    opaque = app.job("opaque")(print)
    anything.enqueue(1, 2, x=3)
    opaque.enqueue(1, 2, 3)
    assert stored(app) == 2


def test_required_keyword_only_and_defaults(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("kw")
    def kw(a: int, b: int = 2, *, c: int) -> None: ...

    @app.job("var")
    def var(a: int, *rest: int) -> None: ...

    # Positional arguments alone cannot satisfy a required keyword-only parameter
    with pytest.raises(TypeError, match="missing a required argument: 'c'"):
        kw.enqueue(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing a required argument: 'a'"):
        var.enqueue()  # type: ignore[call-arg]
    kw.enqueue(1, c=3)
    kw.enqueue(1, 2, c=3)
    var.enqueue(1, 2, 3, 4)
    assert stored(app) == 3


def test_a_bound_method_is_checked_without_self(make_app: MakeApp) -> None:
    app = make_app()

    class Mailer:
        def send(self, to: str) -> None: ...

    job = app.job("mailer.send")(Mailer().send)
    job.enqueue("a@example.com")
    with pytest.raises(TypeError, match=r"job 'mailer\.send'"):
        job.enqueue()  # type: ignore[call-arg]
    assert stored(app) == 1
