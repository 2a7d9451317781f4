"""The job API through an App on every store kind: @app.job, enqueue, configure, get_job,
and bad input that never half-writes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota import JobState

MakeApp = Callable[[], rota.App]


def stored(app: rota.App) -> int:
    return sum(app.store.count_jobs().values())


def test_job_decorator_registers_name_queue_and_retry(make_app: MakeApp) -> None:
    app = make_app()
    retry = rota.RetryPolicy(max_attempts=2)

    @app.job("send-email", queue="emails", retry=retry)
    def send_email(to: str, subject: str) -> str:
        return f"{to}:{subject}"

    assert isinstance(send_email, rota.JobDefinition)
    assert (send_email.name, send_email.queue, send_email.retry) == (
        "send-email", "emails", retry)
    assert app.jobs == {"send-email": send_email}
    # Calling the definition calls the handler directly
    assert send_email("a@example.com", subject="hi") == "a@example.com:hi"
    assert stored(app) == 0


def test_default_name_is_module_qualname_and_default_queue_is_default(
    make_app: MakeApp,
) -> None:
    app = make_app()

    @app.job
    def bare() -> None: ...

    @app.job()
    def called() -> None: ...

    assert bare.name == f"{__name__}.{bare.__wrapped__.__qualname__}"
    assert bare.name.endswith("test_default_name_is_module_qualname_and_default_queue_is_"
                              "default.<locals>.bare")
    assert called.name.endswith(".<locals>.called")
    assert bare.queue == called.queue == "default"


def test_a_job_name_registered_twice_is_refused(make_app: MakeApp) -> None:
    app = make_app()
    app.job("x")(lambda: None)
    with pytest.raises(ValueError, match="'x'"):
        app.job("x")(lambda: None)


def test_enqueue_returns_an_id_and_stores_the_job(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a registered job
    app = make_app()

    @app.job("greet", queue="emails")
    def greet(name: str, *, loud: bool = False) -> None: ...

    # When it is enqueued
    job_id = greet.enqueue("ada", loud=True)
    # Then the id names a scheduled job, due now, on the definition's Queue
    assert isinstance(job_id, int)
    record = app.get_job(job_id)
    assert isinstance(record, rota.JobRecord)
    assert (record.id, record.name, record.queue, record.state, record.attempt) == (
        job_id, "greet", "emails", JobState.SCHEDULED, 0)
    assert record.args == ("ada",) and record.kwargs == {"loud": True}
    assert record.due_at == clock.now() and record.last_error is None


def test_get_job_of_an_unknown_id_is_none(make_app: MakeApp) -> None:
    assert make_app().get_job(987654) is None


@pytest.mark.parametrize("job_id", [0, -5, 2**63, 10**20])
def test_an_id_no_store_can_hold_is_an_unknown_job_on_every_store(
    make_app: MakeApp, job_id: int
) -> None:
    # SQLite raised OverflowError for ids beyond 64 bits (found by the chaos suite)
    app = make_app()
    assert app.get_job(job_id) is None
    assert app.cancel(job_id) is False
    assert app.requeue(job_id) is False


def test_configure_overrides_queue_and_due_time(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()

    @app.job("work", queue="emails")
    def work() -> None: ...

    due = datetime(2030, 5, 1, 9, 30, tzinfo=UTC)
    bulk = app.get_job(work.configure(queue="bulk").enqueue())
    delayed = app.get_job(work.configure(delay=30).enqueue())
    delayed_td = app.get_job(work.configure(delay=timedelta(minutes=2)).enqueue())
    at = app.get_job(work.configure(due=due).enqueue())
    assert bulk is not None and delayed is not None and delayed_td is not None and at is not None
    assert bulk.queue == "bulk" and bulk.due_at == clock.now()
    assert delayed.queue == "emails" and delayed.due_at == clock.now() + timedelta(seconds=30)
    assert delayed_td.due_at == clock.now() + timedelta(minutes=2)
    assert at.due_at == due
    # configure() never changes the definition itself
    assert work.queue == "emails"


def test_enqueue_async(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("async-enqueued", queue="q")
    async def handler(n: int) -> None: ...

    job_id = asyncio.run(handler.configure(delay=5).enqueue_async(7))
    record = app.get_job(job_id)
    assert record is not None and record.args == (7,) and record.queue == "q"


def test_enqueue_many_returns_ids_in_order(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("many")
    def many(n: int, *, tag: str = "") -> None: ...

    ids = many.enqueue_many([(1,), (2,), {"args": [3], "kwargs": {"tag": "x"}}])
    assert len(ids) == 3 and len(set(ids)) == 3
    records = [app.get_job(i) for i in ids]
    assert [r.args for r in records if r] == [(1,), (2,), (3,)]
    assert records[2] is not None and records[2].kwargs == {"tag": "x"}
    assert many.enqueue_many([]) == []


def test_there_is_no_priority_anywhere(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(TypeError, match="priority"):
        app.job("p", priority=1)

    @app.job("no-priority")
    def job() -> None: ...

    with pytest.raises(TypeError, match="priority"):
        job.configure(priority=1)
    assert stored(app) == 0


# -- bad input stores nothing -----------------------------------------------------------------


def test_a_non_json_argument_is_a_type_error_naming_it_and_nothing_is_stored(
    make_app: MakeApp,
) -> None:
    app = make_app()

    @app.job("j")
    def job(*args: object, **kwargs: object) -> None: ...

    with pytest.raises(TypeError, match="positional argument 1"):
        job.enqueue("fine", object())
    with pytest.raises(TypeError, match="keyword argument 'when'"):
        job.enqueue(when=datetime.now(UTC))
    with pytest.raises(TypeError, match="keyword argument 'when'"):
        asyncio.run(job.enqueue_async(when={1, 2}))
    # enqueue_many is all or none: a bad third entry stores none of the first two
    with pytest.raises(TypeError, match=r"entry 2: positional argument 0"):
        job.enqueue_many([(1,), (2,), (object(),)])
    assert stored(app) == 0
    assert app.store.list_jobs() == []


@pytest.mark.parametrize(
    "name", ["", "x" * 201, "two words", "tab\tname", "new\nline", "bell\x07", "nbsp\u00a0"],
    ids=["empty", "201-chars", "space", "tab", "newline", "control", "nbsp"],
)
def test_bad_queue_names_are_value_errors_and_nothing_is_stored(
    make_app: MakeApp, name: str
) -> None:
    app = make_app()
    with pytest.raises(ValueError, match="Queue name"):
        app.job("bad", queue=name)

    @app.job("good")
    def good() -> None: ...

    with pytest.raises(ValueError, match="Queue name"):
        good.configure(queue=name).enqueue()
    assert stored(app) == 0


def test_a_200_character_queue_name_is_fine(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("long", queue="q" * 200)
    def long() -> None: ...

    record = app.get_job(long.enqueue())
    assert record is not None and record.queue == "q" * 200


def test_naive_due_is_a_value_error(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("naive")
    def naive() -> None: ...

    with pytest.raises(ValueError, match="timezone-aware"):
        naive.configure(due=datetime(2030, 1, 1))
    with pytest.raises(ValueError):
        naive.configure(delay=-1)
    with pytest.raises(ValueError):
        naive.configure(due=datetime(2030, 1, 1, tzinfo=UTC), delay=1)
    assert stored(app) == 0


def test_a_duplicate_group_name_is_refused_at_add_worker_group(make_app: MakeApp) -> None:
    app = make_app()
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("a")))
    with pytest.raises(ValueError, match="'g'"):
        app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("b")))
    assert [group.policy for group in app.worker_groups] == [rota.Strict("a")]


def test_get_job_takes_an_int_id_on_every_store(make_app: Callable[[], rota.App]) -> None:
    app = make_app()
    with pytest.raises(TypeError, match="job ids are ints"):
        app.get_job("1")  # type: ignore[arg-type]


def test_cancel_stops_a_scheduled_job_from_running(
    make_app: Callable[[], rota.App],
) -> None:
    # Given two scheduled jobs
    app = make_app()
    ran: list[str] = []

    @app.job("say")
    def say(word: str) -> None:
        ran.append(word)

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    keep, drop = say.enqueue("keep"), say.enqueue("drop")
    # When one is cancelled
    assert app.cancel(drop) is True
    assert app.cancel(drop) is False  # already cancelled
    assert app.cancel(10**9) is False  # no such job
    app.run_until_idle()
    # Then only the other runs, and finished jobs cannot be cancelled
    assert ran == ["keep"]
    job = app.get_job(drop)
    assert job is not None and job.state is JobState.CANCELLED
    assert app.cancel(keep) is False


def test_a_delay_past_year_9999_is_a_value_error_naming_delay(
    make_app: Callable[[], rota.App],
) -> None:
    app = make_app()

    @app.job("later")
    def later() -> None: ...

    with pytest.raises(ValueError, match="delay of 1e\\+12 s puts the due time past"):
        later.configure(delay=1e12).enqueue()
    assert app.store.count_jobs() == {}
