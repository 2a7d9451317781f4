"""Extreme values through the public API: clear errors, raised before anything is stored,
the same on every store kind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

import rota

MakeApp = Callable[[], rota.App]


def stored(app: rota.App) -> int:
    return sum(app.store.count_jobs().values())


@pytest.mark.parametrize(
    ("delay", "message"),
    [
        (1e15, "too long"),             # more days than a timedelta holds
        (10**30, "too long"),
        (-1e300, "too long"),
        (float("inf"), "finite"),
        (float("nan"), "finite"),
        (timedelta.max, "past the year 9999"),
        (1e12, "past the year 9999"),  # a timedelta, but now + delay is no datetime
    ],
)
def test_an_extreme_delay_is_a_value_error_and_stores_nothing(
    make_app: MakeApp, delay: float | timedelta, message: str
) -> None:
    app = make_app()

    @app.job("j")
    def j() -> None: ...

    with pytest.raises(ValueError, match=message):
        j.configure(delay=delay).enqueue()
    with pytest.raises(ValueError, match=message):
        j.configure(delay=delay).enqueue_many([(), ()])
    assert stored(app) == 0


def test_due_times_at_the_ends_of_the_range_are_stored_or_refused_clearly(
    make_app: MakeApp,
) -> None:
    app = make_app()

    @app.job("j")
    def j() -> None: ...

    # A due time that is out of range once in UTC: ValueError at configure
    with pytest.raises(ValueError, match="outside the datetimes UTC can hold"):
        j.configure(due=datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))))
    with pytest.raises(ValueError, match="outside the datetimes UTC can hold"):
        j.configure(due=datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))))
    # The last and first UTC microseconds round-trip on every store
    for due in (datetime.max.replace(tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC)):
        job = app.get_job(j.configure(due=due).enqueue())
        assert job is not None and job.due_at == due


def nested(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_deeply_nested_arguments_are_a_type_error_naming_them(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("j")
    def j(*args: object, **kwargs: object) -> None: ...

    with pytest.raises(TypeError, match="keyword argument 'tree' is nested more than 100"):
        j.enqueue(tree=nested(1_000))
    with pytest.raises(TypeError, match="entry 1: positional argument 0 is nested more"):
        j.enqueue_many([(1,), (nested(1_000),)])
    assert stored(app) == 0


def test_nul_characters_are_refused_on_every_store_before_storing(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("j")
    def j(*args: object, **kwargs: object) -> None: ...

    with pytest.raises(TypeError, match="positional argument 0 holds a NUL"):
        j.enqueue("a\x00b")
    with pytest.raises(TypeError, match="keyword argument 'd' holds a NUL"):
        j.enqueue(d={"k": ["\x00"]})
    with pytest.raises(ValueError, match="control characters"):
        j.configure(queue="q\x00")
    with pytest.raises(ValueError, match="control characters"):
        app.job("nul\x00name")(lambda: None)
    with pytest.raises(ValueError, match="at most 200 characters; got 10000"):
        app.job("n" * 10_000)(lambda: None)
    assert stored(app) == 0
    # A 200-character name works the same everywhere
    long_name = app.job("n" * 200)(lambda: None)
    job = app.get_job(long_name.enqueue())
    assert job is not None and job.name == "n" * 200
