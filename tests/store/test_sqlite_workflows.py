"""What only the SQLite store's workflows promise: the settle trigger of migration 14 ends
a cascade of any depth in one firing (no recursive trigger, so no depth limit, and the
same result on a connection with or without PRAGMA recursive_triggers), it agrees with a
plain model of rota.core.workflows over random workflows, the job counts it moves stay
exact, and children enqueued while their parents finish in other processes never stay
waiting."""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.workflows import at_enqueue, parent_failed_error, parent_lets_child_run
from rota.store.sqlite import SQLiteStore
from tests.store import sqlite_processes

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "rota.db")
    try:
        yield opened
    finally:
        opened.close()


def recount(store: SQLiteStore) -> dict[tuple[str, JobState], int]:
    """The jobs per (Queue, state) counted from the table itself."""
    with closing(sqlite3.connect(store.path)) as conn:
        return {(queue, JobState(state)): jobs for queue, state, jobs in conn.execute(
            "SELECT queue, state, count(*) FROM rota_jobs GROUP BY queue, state")}


def chain(store: SQLiteStore, links: int) -> list[int]:
    ids = store.enqueue([NewJob("job", "p", T0)], T0)
    for _ in range(links):
        ids += store.enqueue([NewJob("job", "c", T0, parents=(ids[-1],))], T0)
    return ids


def test_a_chain_longer_than_the_trigger_depth_limit_is_cancelled_at_once(
        store: SQLiteStore) -> None:
    # Given a chain of 1,100 waiting jobs after one parent (SQLite stops a recursion of
    # triggers at 1,000 levels)
    ids = chain(store, 1100)
    lease = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)[0].lease
    # When the parent dead-letters
    assert store.dead_letter(lease, T0, "Boom: failed")
    # Then every link is cancelled, each naming the one before it, and counted so
    records = store.list_jobs(queue="c", state=JobState.CANCELLED, limit=2000)
    assert len(records) == 1100
    by_id = {record.id: record for record in records}
    assert by_id[ids[1]].last_error == parent_failed_error(ids[0], JobState.DEAD_LETTERED)
    assert by_id[ids[-1]].last_error == parent_failed_error(ids[-2], JobState.CANCELLED)
    assert store.count_jobs() == recount(store) == {
        ("p", JobState.DEAD_LETTERED): 1, ("c", JobState.CANCELLED): 1100}


def test_a_chain_longer_than_the_depth_limit_is_cancelled_by_cancelling_its_first_link(
        store: SQLiteStore) -> None:
    ids = chain(store, 1100)
    assert store.cancel(ids[1], T0)  # a waiting job, cancelled by hand
    assert store.count_jobs() == {("p", JobState.SCHEDULED): 1, ("c", JobState.CANCELLED): 1100}


@pytest.mark.parametrize("recursive", [False, True])
def test_a_finish_by_hand_settles_alike_with_or_without_recursive_triggers(
        store: SQLiteStore, recursive: bool) -> None:
    # Given a parent, a chain of 1,100 that needs it to succeed, and beside each link a
    # child that runs whatever happened
    parent, = store.enqueue([NewJob("job", "p", T0)], T0)
    links, anyway = [parent], []
    for _ in range(1100):
        links += store.enqueue([NewJob("job", "c", T0, parents=(links[-1],))], T0)
        anyway += store.enqueue([NewJob("job", "f", T0, parents=(links[-1],),
                                        after_outcome="finished")], T0)
    # When another connection (a shell, a caller's) dead-letters the parent by hand
    with closing(sqlite3.connect(store.path, isolation_level=None)) as conn:
        conn.execute(f"PRAGMA recursive_triggers = {'ON' if recursive else 'OFF'}")
        conn.execute("UPDATE rota_jobs SET state = 'dead_lettered', finished_at = 5 "
                     "WHERE id = ?", (parent,))
    # Then the chain is cancelled and every child beside it released, whatever the pragma
    assert store.count_jobs() == recount(store) == {
        ("p", JobState.DEAD_LETTERED): 1, ("c", JobState.CANCELLED): 1100,
        ("f", JobState.SCHEDULED): 1100}


def test_the_edges_of_purged_jobs_go_with_them(store: SQLiteStore) -> None:
    parent, = store.enqueue([NewJob("job", "p", T0)], T0)
    store.enqueue([NewJob("job", "c", T0, parents=(parent,))], T0)
    lease = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)[0].lease
    assert store.dead_letter(lease, T0, "Boom: failed")  # the child is cancelled
    assert store.purge([JobState.DEAD_LETTERED, JobState.CANCELLED], T0 + LEASE, 10) == 2
    with closing(sqlite3.connect(store.path)) as conn:
        assert conn.execute("SELECT count(*) FROM rota_job_edges").fetchone() == (0,)


@pytest.mark.parametrize("after_outcome", ["succeeded", "finished"])
def test_a_parent_s_end_writes_its_child_s_row_only_when_the_wait_ends(
        store: SQLiteStore, after_outcome: str) -> None:
    # Given a child waiting for 300 parents (its row holds their ids, past one page)
    parents = store.enqueue([NewJob("job", "p", T0) for _ in range(300)], T0)
    child, = store.enqueue([NewJob("job", "c", T0, parents=tuple(parents),
                                   after_outcome=after_outcome)], T0)
    with closing(sqlite3.connect(store.path, isolation_level=None)) as conn:
        conn.execute("CREATE TEMP TABLE written (state TEXT)")
        conn.execute(f"CREATE TEMP TRIGGER watch AFTER UPDATE ON main.rota_jobs "
                     f"WHEN OLD.id = {child} BEGIN INSERT INTO written VALUES (NEW.state); END")
        # When all its parents but one end (some of them otherwise, for a child that runs
        # whatever happened), one by one
        for index, parent in enumerate(parents[:-1]):
            ended = "dead_lettered" if after_outcome == "finished" and index % 3 else "succeeded"
            conn.execute("UPDATE rota_jobs SET state = ?, finished_at = 5 WHERE id = ?",
                         (ended, parent))
        # Then none of those ends wrote the child's row; the last one releases it
        assert conn.execute("SELECT state FROM written").fetchall() == []
        conn.execute("UPDATE rota_jobs SET state = 'succeeded', finished_at = 5 WHERE id = ?",
                     (parents[-1],))
        assert conn.execute("SELECT state FROM written").fetchall() == [("scheduled",)]
    assert store.count_jobs()[("c", JobState.SCHEDULED)] == 1
    assert store.count_jobs() == recount(store)


class Model:
    """rota.core.workflows played out plainly, one job at a time: what the store must
    agree with."""

    def __init__(self) -> None:
        self.state: dict[int, JobState] = {}
        self.parents: dict[int, tuple[int, ...]] = {}
        self.outcome: dict[int, str] = {}
        self.waiting_for: dict[int, int] = {}
        self.pending: dict[tuple[int, int], bool] = {}

    def enqueue(self, job_id: int, parents: tuple[int, ...], outcome: str) -> None:
        start = at_enqueue(parents, self.state, outcome)
        self.state[job_id] = start.state
        self.parents[job_id], self.outcome[job_id] = parents, outcome
        self.waiting_for[job_id] = start.waiting_for
        for parent in parents:
            self.pending[(parent, job_id)] = not self.state[parent].finished

    def end(self, job_id: int, state: JobState) -> None:
        self.state[job_id] = state
        for child in sorted(c for (p, c) in self.pending if p == job_id):
            if not self.pending[(job_id, child)]:
                continue
            self.pending[(job_id, child)] = False
            if self.state[child] is not JobState.WAITING:
                continue
            if parent_lets_child_run(state, self.outcome[child]):
                self.waiting_for[child] -= 1
                if self.waiting_for[child] == 0:
                    self.state[child] = JobState.SCHEDULED
            else:
                self.end(child, JobState.CANCELLED)


@pytest.mark.parametrize("seed", range(12))
def test_random_workflows_settle_as_the_core_rule_says(store: SQLiteStore, seed: int) -> None:
    rng = random.Random(seed)
    model = Model()
    now = T0
    for _ in range(60):
        now += timedelta(seconds=1)
        ids = list(model.state)
        step = rng.random()
        if step < 0.45 or len(ids) < 3:  # a job after up to three others, or none
            parents = tuple(rng.sample(ids, rng.randint(0, min(3, len(ids)))))
            outcome = rng.choice(["succeeded", "finished"])
            job_id, = store.enqueue([NewJob("job", "q", T0, parents=parents,
                                            after_outcome=outcome)], now)
            model.enqueue(job_id, parents, outcome)
        elif step < 0.8:  # claim what is due, end some of it each way
            for record in store.claim(["q"], 1000, now=now + timedelta(days=1), owner="w",
                                      lease_expires_at=now + timedelta(days=2)):
                model.state[record.id] = JobState.LEASED
            leased = [i for i in ids if model.state[i] is JobState.LEASED]
            for job_id in rng.sample(leased, rng.randint(0, len(leased))):
                lease = store.get_job(job_id).lease  # type: ignore[union-attr]
                how = rng.choice(["succeed", "dead_letter", "quarantine", "cancel", "retry"])
                if how == "succeed":
                    assert store.complete([lease], now) == 1
                    model.end(job_id, JobState.SUCCEEDED)
                elif how == "dead_letter":
                    assert store.dead_letter(lease, now, "Boom: failed")
                    model.end(job_id, JobState.DEAD_LETTERED)
                elif how == "quarantine":
                    assert store.quarantine(lease, now, "UnknownJob: no handler")
                    model.end(job_id, JobState.QUARANTINED)
                elif how == "cancel":
                    assert store.cancel(job_id, now)
                    assert store.cancel_leased(lease, now, "Cancelled: on request")
                    model.end(job_id, JobState.CANCELLED)
                else:
                    assert store.retry(lease, now, now, "Flaky: again")
                    model.state[job_id] = JobState.SCHEDULED
        elif step < 0.9:  # cancel a waiting or scheduled job
            open_ = [i for i in ids if model.state[i] in (JobState.WAITING, JobState.SCHEDULED)]
            if open_:
                job_id = rng.choice(open_)
                assert store.cancel(job_id, now)
                model.end(job_id, JobState.CANCELLED)
        else:  # requeue a job that ended otherwise than succeeded: it runs afresh
            failed = [i for i in ids if model.state[i].finished
                      and model.state[i] is not JobState.SUCCEEDED]
            if failed:
                job_id = rng.choice(failed)
                assert store.requeue(job_id, now)
                model.state[job_id] = JobState.SCHEDULED
        records = {r.id: r for r in store.list_jobs(limit=1000)}
        assert {i: r.state for i, r in records.items()} == model.state
        assert store.count_jobs() == recount(store)
        for job_id, record in records.items():
            assert record.parents == model.parents[job_id]
            if record.state is JobState.WAITING:
                assert any(not model.state[p].finished for p in record.parents)


def test_children_enqueued_while_their_parents_finish_elsewhere_never_stay_waiting(
        store: SQLiteStore) -> None:
    # Given 120 parents (odd ids will succeed, even ones dead-letter), and children of
    # random pairs of them, one "succeeded" and one "finished" child per pair
    parents = store.enqueue([NewJob("job", "p", T0) for _ in range(120)], T0)
    rng = random.Random(7)
    pairs = [tuple(rng.sample(parents, 2)) for _ in range(150)]
    url = f"sqlite:///{store.path}"
    start = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    # When one process finishes the parents one at a time while another enqueues the
    # children, both at once
    processes = [
        SPAWN.Process(target=sqlite_processes.finish_parents_one_by_one,
                      args=(url, start, results)),
        SPAWN.Process(target=sqlite_processes.enqueue_children,
                      args=(url, pairs, start, results)),
    ]
    for process in processes:
        process.start()
    outputs = dict(results.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    children: list[int] = outputs["children"]
    assert sorted(outputs["finished"]) == parents
    # Then each child is scheduled exactly when all its parents succeeded (or it runs
    # whatever happened), else cancelled; none waits
    for index, pair in enumerate(pairs):
        all_succeeded = all(parent % 2 for parent in pair)
        needs_success, anyway = (store.get_job(children[2 * index]),
                                 store.get_job(children[2 * index + 1]))
        assert needs_success is not None and anyway is not None
        assert needs_success.state is (
            JobState.SCHEDULED if all_succeeded else JobState.CANCELLED), pair
        assert anyway.state is JobState.SCHEDULED
    assert store.count_jobs() == recount(store)
    assert ("c", JobState.WAITING) not in store.count_jobs()


def test_the_released_queues_walk_edges_first(store: SQLiteStore) -> None:
    # When released_queues.sql (read after a parent's end) is planned
    from rota.store.sqlite.schema import sql as _sql

    with closing(sqlite3.connect(store.path)) as conn:
        plan = " | ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _sql("released_queues"), {"parents": "[1]", "now": 0}))
    # Then each step seeks the edges of the jobs it has, then each child by id: never the
    # finished index, whose (state, finished_at) range holds every job ended at that
    # instant (a fan-out of 10,000 cancelled at once made the walk quadratic)
    assert "rota_jobs_finished" not in plan, plan
    assert plan.count("SEARCH edge USING PRIMARY KEY (parent_id=?)") == 2, plan
