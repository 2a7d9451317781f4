"""Job meta, `find_jobs` and the bulk actions through the App, on every store: meta set by
`configure(meta=...)` and `enqueue_many` entries, read by the handler, refused when it is
not a small JSON object; `cancel_jobs` and `requeue_jobs` act on what `find_jobs` selects,
as `cancel` and `requeue` act on one job, keeping the per-Queue counts exact."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

import rota
from rota.core.jobs import JobState

MakeApp = Callable[[], rota.App]


def counts_are_exact(app: rota.App) -> None:
    """The store's kept counts per (Queue, state) equal the jobs it lists."""
    listed = Counter((job.queue, job.state) for job in app.store.list_jobs(limit=100_000))
    assert app.store.count_jobs() == dict(listed)


def test_meta_is_stored_shown_and_read_by_the_handler(make_app: MakeApp) -> None:
    app = make_app()
    seen: list[dict[str, object]] = []

    @app.job("bill", queue="q")
    def bill() -> None:
        seen.append(rota.current_job().meta)

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    # Given a job with meta, entries of a batch with their own, and a job without
    one = bill.configure(meta={"tenant": "acme", "order": 42}).enqueue()
    many = bill.configure(meta={"tenant": "acme"}).enqueue_many(
        [(), {"meta": {"tenant": "zeta"}}])
    plain = bill.enqueue()
    # Then the records carry it, {} for none
    metas = {job_id: app.get_job(job_id).meta for job_id in [one, *many, plain]}  # type: ignore[union-attr]
    assert metas == {one: {"tenant": "acme", "order": 42}, many[0]: {"tenant": "acme"},
                     many[1]: {"tenant": "zeta"}, plain: {}}
    # And each handler reads its own job's meta
    assert app.run_until_idle() == 4
    assert sorted(map(str, seen)) == sorted(map(str, metas.values()))


@pytest.mark.parametrize(("meta", "error", "match"), [
    (["tenant"], TypeError, "meta must be a dict"),
    ({1: "acme"}, TypeError, "key 1 is not a str"),
    ({"when": object()}, TypeError, "is not a JSON value"),
    ({"nan": float("nan")}, TypeError, "not a JSON number"),
    ({"nul": "a\x00b"}, TypeError, "NUL"),
    ({"big": "x" * 4090}, ValueError, "over the limit of 4,096 bytes"),
])
def test_bad_meta_is_refused_and_nothing_stored(
        make_app: MakeApp, meta: object, error: type[Exception], match: str) -> None:
    app = make_app()

    @app.job("bill")
    def bill() -> None: ...

    with pytest.raises(error, match=match):
        bill.configure(meta=meta).enqueue()  # type: ignore[arg-type]
    with pytest.raises(error, match=f"enqueue_many entry 1: .*{match}"):
        bill.enqueue_many([(), {"meta": meta}])
    assert app.find_jobs() == []


def test_meta_of_exactly_4_kib_is_stored(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("bill")
    def bill() -> None: ...

    # '{"big":"' + text + '"}' is 10 bytes around the text
    job_id = bill.configure(meta={"big": "é" * 2043}).enqueue()
    assert app.get_job(job_id).meta == {"big": "é" * 2043}  # type: ignore[union-attr]


def test_find_jobs_filters_by_meta_queue_state_and_name(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("bill", queue="a")
    def bill() -> None: ...

    acme = bill.configure(meta={"tenant": "acme", "order": 42}).enqueue()
    text = bill.configure(meta={"tenant": "acme", "order": "42"}).enqueue()
    other = bill.configure(queue="b", meta={"tenant": "zeta", "order": 42}).enqueue()
    assert [j.id for j in app.find_jobs(meta={"order": 42})] == [other, acme]
    assert [j.id for j in app.find_jobs(meta={"order": "42"})] == [text]
    assert [j.id for j in app.find_jobs(meta={"tenant": "acme"}, newest=False)] == [acme, text]
    assert [j.id for j in app.find_jobs(queue="b", state="scheduled", name="bill")] == [other]
    assert [j.id for j in app.find_jobs(limit=1)] == [other]
    assert app.find_jobs(state=JobState.SUCCEEDED) == []


def test_find_jobs_refuses_an_unknown_state_naming_the_states(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(ValueError, match="unknown job state 'running'; the states are "
                                         "waiting, scheduled, leased, succeeded"):
        app.find_jobs(state="running")
    with pytest.raises(ValueError, match="unknown job state"):
        app.cancel_jobs(state="done")
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        app.find_jobs(limit=-1)


def test_a_bulk_action_without_a_filter_needs_everything(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("bill")
    def bill() -> None: ...

    bill.enqueue_many([()] * 3)
    with pytest.raises(ValueError, match=r"no filter would change every job.*everything=True"):
        app.cancel_jobs()
    with pytest.raises(ValueError, match="no filter"):
        app.requeue_jobs(meta={})  # an empty meta filter is no filter
    assert len(app.find_jobs(state="scheduled")) == 3
    assert app.cancel_jobs(everything=True) == 3
    assert app.requeue_jobs(everything=True) == 3


def test_cancel_jobs_cancels_what_find_jobs_selects_and_counts_the_changes(
        make_app: MakeApp) -> None:
    app = make_app()
    started = []

    @app.job("bill", queue="q")
    def bill() -> None:
        started.append(rota.current_job().id)
        # While it runs, its cancel is requested with the others of its tenant
        assert app.cancel_jobs(meta={"tenant": "acme"}) == 3  # itself and two scheduled
        assert app.cancel_jobs(meta={"tenant": "acme"}) == 0  # already cancelled or asked
        assert rota.current_job().id in {j.id for j in app.find_jobs(state="leased")}
        raise RuntimeError("stopped")

    acme = bill.configure(meta={"tenant": "acme"})
    running = acme.enqueue()
    scheduled = bill.configure(meta={"tenant": "acme"}, delay=60).enqueue_many([(), ()])
    others = bill.configure(meta={"tenant": "zeta"}, delay=60).enqueue_many([(), ()])
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    # When the running job's handler cancels its tenant's jobs (its own on request)
    assert app.run_until_idle() == 1
    assert started == [running]
    # Then its tenant's jobs are cancelled, the running one too once its attempt failed
    for job_id in (running, *scheduled):
        assert app.get_job(job_id).state is JobState.CANCELLED  # type: ignore[union-attr]
    # And the other tenant's jobs are untouched, and finished jobs are never counted
    assert {app.get_job(i).state for i in others} == {JobState.SCHEDULED}  # type: ignore[union-attr]
    assert app.cancel_jobs(meta={"tenant": "acme"}) == 0
    counts_are_exact(app)


def test_cancel_jobs_cancels_a_workflow_and_counts_each_matching_job_once(
        make_app: MakeApp) -> None:
    app = make_app()

    @app.job("step", queue="q")
    def step() -> None: ...

    # Given a chain parent -> child -> grandchild, all of one batch's meta, and a child
    # of the parent without it
    flow = step.configure(meta={"batch": 7}, delay=60)
    parent = flow.enqueue()
    child = step.configure(meta={"batch": 7}, after=[parent]).enqueue()
    grandchild = step.configure(meta={"batch": 7}, after=[child]).enqueue()
    outsider = step.configure(after=[parent]).enqueue()
    # When the batch is cancelled
    assert app.cancel_jobs(meta={"batch": 7}) == 3
    # Then all are cancelled: the outsider as the parent's child
    for job_id in (parent, child, grandchild, outsider):
        assert app.get_job(job_id).state is JobState.CANCELLED  # type: ignore[union-attr]
    counts_are_exact(app)


def test_requeue_jobs_requeues_only_failed_and_cancelled_jobs(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("flaky", queue="q", retry=rota.RetryPolicy(max_attempts=1))
    def flaky(fail: bool) -> None:
        if fail:
            raise RuntimeError("boom")

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    tagged = flaky.configure(meta={"run": 1})
    failed = tagged.enqueue_many([(True,), (True,)])
    succeeded = tagged.enqueue(False)
    waiting = flaky.configure(meta={"run": 1}, delay=600).enqueue(False)
    assert app.run_until_idle() == 3
    cancelled = tagged.enqueue(False)
    assert app.cancel(cancelled)
    # When the run's jobs are requeued
    assert app.requeue_jobs(meta={"run": 1}) == 3
    # Then the dead-lettered and the cancelled ones are scheduled, attempt 0, and the
    # succeeded and the still-scheduled ones are untouched
    for job_id in (*failed, cancelled):
        job = app.get_job(job_id)
        assert job is not None and (job.state, job.attempt) == (JobState.SCHEDULED, 0)
    assert app.get_job(succeeded).state is JobState.SUCCEEDED  # type: ignore[union-attr]
    assert app.get_job(waiting).state is JobState.SCHEDULED  # type: ignore[union-attr]
    assert app.requeue_jobs(meta={"run": 1}, state="succeeded") == 0
    counts_are_exact(app)


def test_bulk_actions_walk_more_jobs_than_a_page(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("bulk", queue="q")
    def bulk() -> None: ...

    bulk.configure(meta={"t": "x"}).enqueue_many([()] * 1203)
    bulk.enqueue_many([()] * 5)
    assert app.cancel_jobs(queue="q", meta={"t": "x"}) == 1203
    assert len(app.find_jobs(state="scheduled", limit=10_000)) == 5
    assert app.requeue_jobs(state="cancelled") == 1203
    counts_are_exact(app)
