"""The store contract for job meta and `find_jobs`, run unchanged against every store: meta
is stored with the job by every enqueue path and read back by every read and claim;
`find_jobs` filters by Queue, state, job name and meta (every given key with an equal JSON
value: strict types, numbers by value), newest first by id, and pages by id (`beyond`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.meta import encode_meta
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)


def job(meta: dict[str, object] | None = None, *, queue: str = "q", name: str = "job",
        key: str | None = None, debounced: bool = False,
        after: tuple[int, ...] = ()) -> NewJob:
    return NewJob(name, queue, T0, key=key, debounced=debounced, parents=after,
                  meta_json=None if meta is None else encode_meta(meta))


def ids(store: Store, **filters: object) -> list[int]:
    return [record.id for record in store.find_jobs(**filters)]  # type: ignore[arg-type]


def test_meta_is_read_back_by_every_read_and_by_the_claim(store: Store) -> None:
    # Given a job with meta and one without, enqueued in one batch
    with_meta, without = store.enqueue(
        [job({"tenant": "acme", "order": 42, "tags": ["a", {"b": None}]}), job()], T0)
    # Then reads give the meta back as stored, {} for none
    record = store.get_job(with_meta)
    assert record is not None
    assert record.meta == {"tenant": "acme", "order": 42, "tags": ["a", {"b": None}]}
    assert store.get_job(without).meta == {}  # type: ignore[union-attr]
    assert [r.meta for r in store.list_jobs()] == [record.meta, {}]
    # And a claim carries it to the worker
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert {r.id: r.meta for r in claimed} == {with_meta: record.meta, without: {}}


def test_meta_is_stored_by_the_keyed_debounced_and_child_enqueues(store: Store) -> None:
    # Given a unique job, a debounced job and a child, each with meta
    keyed, = store.enqueue([job({"kind": "keyed"}, key="k")], T0)
    debounced, = store.enqueue([job({"kind": "debounced"}, name="d", key="k",
                                    debounced=True)], T0)
    child, = store.enqueue([job({"kind": "child"}, after=(keyed,))], T0)
    # Then each keeps its meta
    for job_id, kind in ((keyed, "keyed"), (debounced, "debounced"), (child, "child")):
        assert store.get_job(job_id).meta == {"kind": kind}  # type: ignore[union-attr]
    # And a second debounced enqueue keeps the meta of the job that collects it
    again, = store.enqueue([job({"kind": "later"}, name="d", key="k", debounced=True)], T0)
    assert again == debounced
    assert store.get_job(debounced).meta == {"kind": "debounced"}  # type: ignore[union-attr]


def test_meta_text_that_is_not_an_object_is_refused_and_nothing_stored(store: Store) -> None:
    # Given a batch whose second job's meta text is a JSON array
    with pytest.raises(TypeError, match="meta must be a dict"):
        store.enqueue([job({"a": 1}), NewJob("job", "q", T0, meta_json="[1]")], T0)
    # Then nothing of the batch was stored
    assert store.list_jobs() == []
    # And meta text in another form than encode_meta's (spaced) is refused too
    with pytest.raises(ValueError, match="encode_meta writes it"):
        store.enqueue([NewJob("job", "q", T0, meta_json='{"a": 1}')], T0)
    assert store.list_jobs() == []


def test_find_jobs_matches_every_key_with_an_equal_json_value(store: Store) -> None:
    # Given jobs whose meta differ by type and by nesting
    metas: list[dict[str, object]] = [
        {"tenant": "acme", "order": 42},
        {"tenant": "acme", "order": "42"},
        {"tenant": "acme", "order": 42.0},
        {"tenant": "acme", "order": True},
        {"tenant": "other", "order": 42},
        {"tenant": "acme", "tags": ["a", "b"], "shape": {"x": 1, "y": 2}},
        {"tenant": "acme", "order": None},
        {},
    ]
    stored = store.enqueue([job(meta) for meta in metas], T0)
    by_index = dict(enumerate(stored))

    def found(meta: dict[str, object]) -> set[int]:
        hits = set(ids(store, meta=meta, limit=1000))
        return {index for index, job_id in by_index.items() if job_id in hits}

    # Then 42 matches 42 and 42.0, never "42" or true
    assert found({"order": 42}) == {0, 2, 4}
    assert found({"order": "42"}) == {1}
    assert found({"order": True}) == {3}
    # And every key given must match
    assert found({"tenant": "acme", "order": 42}) == {0, 2}
    # And null is a value (the key must be there), arrays and objects match whole
    assert found({"order": None}) == {6}
    assert found({"tags": ["a", "b"]}) == {5}
    assert found({"tags": ["a"]}) == set()
    assert found({"shape": {"y": 2, "x": 1}}) == {5}
    assert found({"shape": {"x": 1}}) == set()
    assert found({"missing": 1}) == set()
    # And an empty filter matches every job
    assert found({}) == set(range(len(metas)))


def test_find_jobs_filters_orders_newest_first_and_pages_by_id(store: Store) -> None:
    # Given jobs of two Queues and two names, some cancelled
    a1, b1, a2, b2, a3 = store.enqueue([
        job({"t": 1}, queue="a"), job({"t": 1}, queue="b", name="other"),
        job({"t": 2}, queue="a"), job({"t": 1}, queue="b"), job({"t": 1}, queue="a"),
    ], T0)
    assert store.cancel(a3, T0)
    # Then the newest come first, and the filters combine
    assert ids(store) == [a3, b2, a2, b1, a1]
    assert ids(store, newest=False) == [a1, b1, a2, b2, a3]
    assert ids(store, queue="a") == [a3, a2, a1]
    assert ids(store, queue="a", state=JobState.SCHEDULED) == [a2, a1]
    assert ids(store, name="other") == [b1]
    assert ids(store, queue="a", meta={"t": 1}) == [a3, a1]
    assert ids(store, state=JobState.CANCELLED, meta={"t": 1}) == [a3]
    # And `beyond` pages past an id in the order asked; `limit` caps a page
    assert ids(store, limit=2) == [a3, b2]
    assert ids(store, limit=2, beyond=b2) == [a2, b1]
    assert ids(store, newest=False, limit=2, beyond=b1) == [a2, b2]
    assert ids(store, limit=0) == []


def test_find_jobs_refuses_a_meta_filter_that_is_not_an_object(store: Store) -> None:
    with pytest.raises(TypeError, match="meta filter must be a dict"):
        store.find_jobs(meta=["tenant"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key 1 is not a str"):
        store.find_jobs(meta={1: "x"})  # type: ignore[dict-item]
