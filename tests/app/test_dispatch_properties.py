"""`App.run_until_idle()` with several Worker Groups in one App, as properties: it always
returns, runs every job of a Queue it may serve exactly once, leaves nothing due behind,
never runs a paused Queue's jobs, and does the same thing twice for the same scenario.

Each example is a scenario: 1-4 groups on disjoint Queues (Weighted or Strict, any pool
size and claim batch), a backlog per Queue, some Queues paused or limited, a first
`run_until_idle()`, then more jobs, the controls lifted, and a second one.

A drive that never returns must fail, not stall CI: every scenario runs under
`hard_deadline` (SIGALRM), and every test under pytest-timeout as a backstop. Only the
public API is used.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rota
from rota import JobState
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url

START = datetime(2026, 1, 1, tzinfo=UTC)
DEADLINE_S = 20.0  # per scenario build, memory and SQLite: generous on a noisy machine
POSTGRES_DEADLINE_S = 60.0
CLOSE_DEADLINE_S = 2.0  # closing an App whose run was interrupted; see close_app


# -- a hard deadline ------------------------------------------------------------------------


class Hang(Exception):
    """The block (a `run_until_idle()`) did not end within its hard deadline."""


class DeadlinePassed(BaseException):
    """Raised by the SIGALRM handler. A BaseException, so that no `except Exception` in the
    code under test swallows it; `hard_deadline` turns it into `Hang`."""


@contextmanager
def hard_deadline(seconds: float) -> Iterator[None]:
    """Raise `Hang` if the block runs longer than `seconds` of wall-clock time.

    SIGALRM interrupts even a loop that never sleeps. It fires again every second until the
    block ends, in case the code under test catches the first. A timer already armed (the
    one of pytest-timeout's signal method) is suspended meanwhile and re-armed afterwards
    with what was left of it. Main thread only (as pytest runs tests)."""

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise DeadlinePassed

    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    hung = False
    try:
        yield
    except DeadlinePassed:
        hung = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            left = previous_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), previous_interval)
    if hung:
        raise Hang(f"did not end within its hard deadline of {seconds:g} s")


def close_app(app: rota.App, *, interrupted: bool) -> None:
    """Close `app`. After a Hang the alarm may have struck inside the store while it held
    one of its locks, so that closing would wait forever: it then waits at most
    CLOSE_DEADLINE_S, and whatever close raises or leaves is ignored (the test fails with
    the Hang already)."""
    if not interrupted:
        app.close()
        return
    with contextlib.suppress(Exception), hard_deadline(CLOSE_DEADLINE_S):
        app.close()


# -- scenarios ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueuePlan:
    name: str
    weight: int  # used by a Weighted group only
    backlog: int  # jobs enqueued before the first run
    paused: bool  # during the first run
    limit: int | None  # during the first run; None: no limit

    @property
    def blocked(self) -> bool:
        """Whether the first run may take none of its jobs."""
        return self.paused or self.limit == 0


@dataclass(frozen=True)
class GroupPlan:
    name: str
    strict: bool
    pool_size: int
    max_claim_batch: int | None
    queues: tuple[QueuePlan, ...]

    def options(self) -> rota.WorkerGroupOptions:
        policy = (rota.Strict(*(q.name for q in self.queues)) if self.strict
                  else rota.Weighted([(q.name, q.weight) for q in self.queues]))
        return rota.WorkerGroupOptions(name=self.name, policy=policy,
                                       pool_size=self.pool_size,
                                       max_claim_batch=self.max_claim_batch)


@dataclass(frozen=True)
class Scenario:
    groups: tuple[GroupPlan, ...]
    first_order: tuple[str, ...]  # the order the Queues' first backlogs are enqueued in
    second: tuple[tuple[str, int], ...]  # (Queue, jobs) enqueued before the second run

    @property
    def queues(self) -> list[QueuePlan]:
        return [queue for group in self.groups for queue in group.queues]


@dataclass(frozen=True)
class Outcome:
    """What one build of a scenario did."""

    first_returned: int
    first_log: list[str]
    first_view: dict[str, rota.QueueInfo]
    second_returned: int
    second_log: list[str]
    second_view: dict[str, rota.QueueInfo]


@st.composite
def queue_plans(draw: st.DrawFn, group_index: int) -> tuple[QueuePlan, ...]:
    count = draw(st.integers(1, 5))
    return tuple(
        QueuePlan(
            name=f"g{group_index}q{index}",
            weight=draw(st.integers(1, 10)),
            backlog=draw(st.integers(0, 40)),
            paused=draw(st.integers(0, 4)) == 0,
            limit=draw(st.one_of(st.none(), st.none(), st.integers(0, 3))),
        )
        for index in range(count)
    )


@st.composite
def group_plans(draw: st.DrawFn, group_index: int) -> GroupPlan:
    pool_size = draw(st.integers(1, 12))
    return GroupPlan(
        name=f"g{group_index}",
        strict=draw(st.booleans()),
        pool_size=pool_size,
        max_claim_batch=draw(st.one_of(st.none(), st.integers(1, pool_size))),
        queues=draw(queue_plans(group_index)),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    groups = tuple(draw(group_plans(index)) for index in range(draw(st.integers(1, 4))))
    names = [queue.name for group in groups for queue in group.queues]
    second = draw(st.lists(st.tuples(st.sampled_from(names), st.integers(1, 10)),
                           max_size=6))
    return Scenario(groups=groups, first_order=tuple(draw(st.permutations(names))),
                    second=tuple(second))


def view(app: rota.App) -> dict[str, rota.QueueInfo]:
    return {info.name: info for info in app.queues()}


def count(infos: dict[str, rota.QueueInfo], queue: str, state: JobState) -> int:
    info = infos.get(queue)
    return 0 if info is None else info.counts.get(state, 0)


def play(app: rota.App, scenario: Scenario) -> Outcome:
    """Build `scenario` on `app` and run it: controls, backlogs, a first run; more jobs,
    the controls lifted, a second run."""
    log: list[str] = []

    @app.job("w")
    def w(tag: str) -> None:
        log.append(tag)

    serials: Counter[str] = Counter()

    def enqueue(queue: str, jobs: int) -> None:
        if jobs:
            tags = [(f"{queue}.{serials[queue] + n}",) for n in range(jobs)]
            serials[queue] += jobs
            w.configure(queue=queue).enqueue_many(tags)

    for group in scenario.groups:
        app.add_worker_group(group.options())
    plans = {queue.name: queue for queue in scenario.queues}
    for queue in scenario.queues:
        if queue.paused:
            app.pause_queue(queue.name)
        if queue.limit is not None:
            app.set_queue_limit(queue.name, queue.limit)
    for name in scenario.first_order:
        enqueue(name, plans[name].backlog)
    first_returned = app.run_until_idle()
    first_log = list(log)
    first_view = view(app)
    for name, jobs in scenario.second:
        enqueue(name, jobs)
    for queue in scenario.queues:
        if queue.paused:
            app.resume_queue(queue.name)
        if queue.limit is not None:
            app.set_queue_limit(queue.name, None)
    second_returned = app.run_until_idle()
    return Outcome(first_returned, first_log, first_view, second_returned,
                   log[len(first_log):], view(app))


def tags(queue: str, first: int, last: int) -> set[str]:
    return {f"{queue}.{n}" for n in range(first, last)}


def check(scenario: Scenario, outcome: Outcome) -> None:
    """The properties of one build."""
    queues = scenario.queues
    # Round 1: exactly the jobs of the Queues it may serve ran, each once, as many as it said
    assert outcome.first_returned == len(outcome.first_log)
    assert not [tag for tag, n in Counter(outcome.first_log).items() if n > 1]
    expected_first: set[str] = set()
    for queue in queues:
        if not queue.blocked:
            expected_first |= tags(queue.name, 0, queue.backlog)
    assert set(outcome.first_log) == expected_first
    # And nothing is leased; a served Queue has nothing due left; a blocked one has it all
    for queue in queues:
        scheduled = count(outcome.first_view, queue.name, JobState.SCHEDULED)
        assert count(outcome.first_view, queue.name, JobState.LEASED) == 0, queue
        assert scheduled == (queue.backlog if queue.blocked else 0), queue
        assert count(outcome.first_view, queue.name, JobState.SUCCEEDED) == (
            0 if queue.blocked else queue.backlog), queue
    # Round 2 (controls lifted): every job left and every new one ran, each once in all
    added = Counter[str]()
    for name, jobs in scenario.second:
        added[name] += jobs
    assert outcome.second_returned == len(outcome.second_log)
    expected_second: set[str] = set()
    for queue in queues:
        expected_second |= tags(queue.name, queue.backlog, queue.backlog + added[queue.name])
        if queue.blocked:
            expected_second |= tags(queue.name, 0, queue.backlog)
    assert set(outcome.second_log) == expected_second
    everything = outcome.first_log + outcome.second_log
    assert not [tag for tag, n in Counter(everything).items() if n > 1]
    # And every Queue is drained: all its jobs succeeded, none due, none leased
    for queue in queues:
        total = queue.backlog + added[queue.name]
        info = outcome.second_view.get(queue.name)
        if info is None:
            assert total == 0, queue
            continue
        assert info.counts[JobState.SUCCEEDED] == total, (queue, info)
        assert sum(info.counts.values()) == total, (queue, info)
        assert info.due == 0, (queue, info)


def check_scenario(scenario: Scenario, open_app: Callable[[], rota.App],
                   deadline_s: float = DEADLINE_S) -> None:
    """Build `scenario` twice on fresh stores; each build must hold the properties and
    both must run the same jobs in the same order."""
    outcomes: list[Outcome] = []
    for _ in range(2):
        app = open_app()
        hung = False
        try:
            with hard_deadline(deadline_s):
                outcomes.append(play(app, scenario))
        except Hang:
            hung = True
            raise
        finally:
            close_app(app, interrupted=hung)
        check(scenario, outcomes[-1])
    first, again = outcomes
    # Determinism: the same scenario runs the same jobs in the same order
    assert (again.first_returned, again.first_log) == (first.first_returned, first.first_log)
    assert (again.second_returned, again.second_log) == (
        first.second_returned, first.second_log)


def sqlite_opener(tmp_path: Path) -> Callable[[], rota.App]:
    """Apps on fresh SQLite files under tmp_path (which Hypothesis examples share)."""

    def open_app() -> rota.App:
        folder = tempfile.mkdtemp(dir=tmp_path)
        return rota.App(f"sqlite:///{Path(folder) / 'rota.db'}",
                        clock=rota.VirtualClock(START))

    return open_app


# -- the properties ---------------------------------------------------------------------------

@pytest.mark.timeout(900)
@settings(max_examples=60, deadline=None)
@given(scenario=scenarios())
def test_several_groups_on_memory(scenario: Scenario) -> None:
    # Given a random scenario of 1-4 groups on disjoint Queues, on memory://
    # When it runs (twice, on fresh stores) / Then it returns, exactly once, nothing due left
    # behind, paused Queues untouched, the same order both times
    check_scenario(scenario, lambda: rota.App("memory://", clock=rota.VirtualClock(START)))


@pytest.mark.timeout(900)
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_several_groups_on_sqlite(scenario: Scenario, tmp_path: Path) -> None:
    # Given a random scenario, each build on its own fresh SQLite file
    # When it runs / Then the same properties as on memory://
    check_scenario(scenario, sqlite_opener(tmp_path))


@pytest.fixture
def postgres_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The PostgreSQL server's admin URL, once it is known to be reachable (else skip, or
    fail under ROTA_REQUIRE_POSTGRES=1, as tests/pg.py does)."""
    for _ in fresh_postgres_url(POSTGRES_URL, request.node.name):
        yield POSTGRES_URL


@contextmanager
def postgres_database(admin_url: str, label: str) -> Iterator[str]:
    yield from fresh_postgres_url(admin_url, label)


@pytest.mark.postgres
@pytest.mark.timeout(900)
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_several_groups_on_postgres(scenario: Scenario, postgres_server: str) -> None:
    # Given a random scenario, each build on its own fresh PostgreSQL database
    # When it runs / Then the same properties as on memory://
    with postgres_database(postgres_server, "props_a") as url_a, \
            postgres_database(postgres_server, "props_b") as url_b:
        urls = iter([url_a, url_b])

        def open_app() -> rota.App:
            return rota.App(next(urls), clock=rota.VirtualClock(START))

        check_scenario(scenario, open_app, POSTGRES_DEADLINE_S)


# -- the bug report's reproduction ---------------------------------------------------------------

W631 = (("a", 6, 60), ("b", 3, 30), ("c", 1, 10))  # (Queue prefix, weight, jobs)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize(
    ("pools", "batch"), [((3, 4), None), ((3, 7), None), ((1, 20), None), ((1, 20), 4)],
    ids=["p3-p4", "p3-p7", "p1-p20", "p1-p20-batch4"])
def test_two_weighted_groups_of_different_pool_sizes_return(
    kind: str, pools: tuple[int, int], batch: int | None, tmp_path: Path
) -> None:
    # Given two groups, each Weighted 6:3:1 over its own Queues a<key>, b<key>, c<key> with
    # 60/30/10 jobs, of different pool sizes (the second capped at `batch` claims a pass)
    # (regression: run_until_idle() looped forever)
    app = (rota.App("memory://", clock=rota.VirtualClock(START)) if kind == "memory"
           else sqlite_opener(tmp_path)())
    log: list[str] = []

    @app.job("w")
    def w(tag: str) -> None:
        log.append(tag)

    backlog: dict[str, int] = {}
    for pool, max_claim_batch in zip(pools, (None, batch), strict=True):
        key = f"p{pool}"
        app.add_worker_group(rota.WorkerGroupOptions(
            name=key, policy=rota.Weighted([(f"{q}{key}", weight) for q, weight, _ in W631]),
            pool_size=pool, max_claim_batch=max_claim_batch))
        for q, _, jobs in W631:
            backlog[f"{q}{key}"] = jobs
            w.configure(queue=f"{q}{key}").enqueue_many([(f"{q}{key}",)] * jobs)
    hung = False
    try:
        # When run until idle, under a hard deadline
        try:
            with hard_deadline(DEADLINE_S):
                executions = app.run_until_idle()
                again = app.run_until_idle()
        except Hang:
            hung = True
            raise
        # Then it returns 200, and every Queue is drained, each job run once
        assert executions == 200
        assert Counter(log) == backlog
        infos = view(app)
        for queue, jobs in backlog.items():
            assert infos[queue].counts[JobState.SUCCEEDED] == jobs
            assert sum(infos[queue].counts.values()) == jobs
            assert infos[queue].due == 0
        assert again == 0
    finally:
        close_app(app, interrupted=hung)


def test_hard_deadline_turns_a_hang_into_a_failure() -> None:
    # Given a block that would never end, even catching Exception
    started = time.monotonic()
    # When it runs under a hard deadline of 0.2 s / Then Hang, soon
    with pytest.raises(Hang), hard_deadline(0.2):
        for _ in itertools.count():
            with contextlib.suppress(Exception):  # as a swallowing caller would
                time.sleep(0.01)
    assert time.monotonic() - started < 5
