"""Wake-ups between processes sharing one SQLite file (`rota.store.sqlite.wake`).

The wake path is told apart from the 20 ms `data_version` poll by turning the poll off
(`_EnqueueWatcher.INTERVAL_S` = an hour): a hint that arrives then came through a datagram.
No timing is asserted; waits have generous timeouts and end on an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import rota
import rota.core.outcomes
from rota.core.jobs import JobState, NewJob
from rota.store.sqlite import SQLiteStore
from rota.store.sqlite import wake as sqlite_module
from rota.store.sqlite import wake as sqlite_wake
from tests.conftest import short_directory
from tests.store import sqlite_processes

T0 = sqlite_processes.T0
WAIT_S = 30.0

pytestmark = pytest.mark.skipif(not sqlite_wake.supported(), reason="no AF_UNIX datagrams")

ENQUEUE_IN_A_CHILD = """
import sys
from rota.core.jobs import NewJob
from rota.store.sqlite import SQLiteStore
from tests.store.sqlite_processes import T0
store = SQLiteStore(sys.argv[1])
try:
    store.enqueue([NewJob("n", sys.argv[2], T0)], T0)
finally:
    store.close()
"""


def enqueue_in_another_process(db: Path, queue_name: str) -> None:
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-c", ENQUEUE_IN_A_CHILD, str(db), queue_name], check=True,
        timeout=60, cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
    )


@pytest.fixture
def no_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's data_version poll every hour: only a datagram can wake it."""
    monkeypatch.setattr(sqlite_module._EnqueueWatcher, "INTERVAL_S", 3600.0)


@pytest.fixture
def db() -> Iterator[Path]:
    with short_directory() as directory:
        yield directory / "rota.db"


Watcher = sqlite_module._EnqueueWatcher


@contextlib.contextmanager
def listening(store: SQLiteStore) -> Iterator[tuple[queue.Queue[str], Watcher]]:
    hints: queue.Queue[str] = queue.Queue()
    stop: Callable[[], None] = store.listen(hints.put)
    watcher = stop.__self__  # type: ignore[attr-defined]
    try:
        yield hints, watcher
    finally:
        stop()


def wake_sockets(db: Path) -> list[str]:
    folder = Path(sqlite_wake.wake_directory(str(db)))
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_another_process_enqueue_wakes_the_watcher_without_the_poll(
    db: Path, no_poll: None
) -> None:
    # Given a store listening, its poll turned off
    store = SQLiteStore(db)
    try:
        with listening(store) as (hints, watcher):
            assert watcher.wake is not None
            assert wake_sockets(db) == [watcher.wake.name]
            # When another process enqueues into "emails"
            enqueue_in_another_process(db, "emails")
            # Then the watcher is hinted, through its wake-up socket
            assert hints.get(timeout=WAIT_S) == "emails"
            assert watcher.wake.wakes >= 1
        # And stopping removes its socket file
        assert wake_sockets(db) == []
    finally:
        store.close()


def test_a_worker_runs_another_process_job_through_the_wake_path(
    db: Path, no_poll: None
) -> None:
    # Given a worker group that polls every hour and a watcher that polls every hour
    app = rota.App(f"sqlite:///{db}")
    ran = threading.Event()

    @app.job("n", queue="emails")
    async def n() -> None:
        ran.set()

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("emails"), poll_interval=3600))

    async def scenario() -> bool:
        async with app.serve():
            # When another process enqueues a job
            await asyncio.to_thread(enqueue_in_another_process, db, "emails")
            return await asyncio.to_thread(ran.wait, WAIT_S)

    try:
        # Then the worker runs it: only the datagram could have woken it
        assert asyncio.run(scenario())
    finally:
        app.close()


def test_another_store_object_in_this_process_wakes_it_too(db: Path, no_poll: None) -> None:
    # Given two store objects on one file (two connections), the first listening
    listening_store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        with listening(listening_store) as (hints, _watcher):
            # When the other enqueues twice
            other.enqueue([NewJob("n", "a", T0)], T0)
            assert hints.get(timeout=WAIT_S) == "a"
            other.enqueue([NewJob("n", "b", T0)], T0)
            # Then each enqueue is hinted without the poll
            assert hints.get(timeout=WAIT_S) == "b"
    finally:
        listening_store.close()
        other.close()


def test_a_requeue_resume_or_limit_change_elsewhere_names_its_queue_without_the_poll(
    db: Path, no_poll: None
) -> None:
    # Given a listening store, its poll off, and another store object holding a cancelled
    # job of "billing" and a paused Queue "reports"
    listening_store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        (job_id,) = other.enqueue([NewJob("n", "billing", T0)], T0)
        assert other.cancel(job_id, T0)
        other.pause_queue("reports")
        with listening(listening_store) as (hints, _watcher):
            # When the other requeues the job: no new job id for the watcher to find
            assert other.requeue(job_id, T0)
            # Then the datagram names its Queue
            assert hints.get(timeout=WAIT_S) == "billing"
            # And so do a resume and a limit change; a pause, or a requeue that finds
            # nothing, sends nothing (the next hint is the resume's)
            other.pause_queue("billing")
            assert not other.requeue(job_id, T0)
            other.resume_queue("reports")
            assert hints.get(timeout=WAIT_S) == "reports"
            other.set_queue_limit("limited", 3)
            assert hints.get(timeout=WAIT_S) == "limited"
            # And a requeue of many names each Queue that got jobs back, once
            ids = other.enqueue([NewJob("n", queue, T0) for queue in ("x", "y", "x")], T0)
            # (the enqueue's own hints first: found in the same check as the requeue's
            # datagram, they would be merged with its names)
            assert {hints.get(timeout=WAIT_S), hints.get(timeout=WAIT_S)} == {"x", "y"}
            for cancelled in ids:
                assert other.cancel(cancelled, T0)
            assert other.requeue_many(state=JobState.CANCELLED, queue=None, now=T0) == 3
            assert {hints.get(timeout=WAIT_S), hints.get(timeout=WAIT_S)} == {"x", "y"}
            assert hints.empty()
    finally:
        listening_store.close()
        other.close()


def test_queue_names_are_split_into_datagrams_that_fit() -> None:
    # Given 300 Queue names of 200 characters (60,000 bytes in all)
    names = [f"{i:03d}" + "é" * 197 for i in range(300)]
    datagrams = sqlite_wake.named_datagrams(names)
    # Then each datagram fits, and together they name every Queue once, in order
    assert all(len(datagram) <= 4096 for datagram in datagrams)
    assert len(datagrams) > 1
    decoded = [name for datagram in datagrams
               for name in datagram[1:].decode().split("\n")]
    assert decoded == names


def test_a_store_sends_nothing_to_its_own_watcher(db: Path) -> None:
    # Given a store listening (its own App wakes its groups in-process)
    store = SQLiteStore(db)
    try:
        with listening(store) as (_hints, watcher):
            assert store._wake is not None and watcher.wake is not None
            # When it enqueues, it sends no datagram to its own socket
            assert store._wake.send() == 0
    finally:
        store.close()


def test_stale_socket_files_are_removed_by_the_next_enqueue(db: Path) -> None:
    # Given the socket file of a worker that was killed (nobody bound to it any more)
    store = SQLiteStore(db)
    folder = Path(sqlite_wake.wake_directory(str(db)))
    folder.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dead:
        dead.bind(str(folder / "999999-dead.sock"))
    other = SQLiteStore(db)
    try:
        with listening(other) as (_hints, watcher):
            assert watcher.wake is not None
            assert wake_sockets(db) == sorted(["999999-dead.sock", watcher.wake.name])
            # When a job is enqueued
            store.enqueue([NewJob("n", "q", T0)], T0)
            # Then the stale file is gone and the live one stays
            assert wake_sockets(db) == [watcher.wake.name]
    finally:
        store.close()
        other.close()


def test_an_enqueue_with_nobody_listening_creates_nothing(db: Path) -> None:
    store = SQLiteStore(db)
    try:
        assert store._wake is not None
        store.enqueue([NewJob("n", "q", T0)], T0)
        assert store._wake.send() == 0
        assert not Path(sqlite_wake.wake_directory(str(db))).exists()
    finally:
        store.close()


def _hinted_by_the_poll(db: Path) -> None:
    """Listen on `db` (a wake-up socket cannot be made) and check the poll still hints."""
    store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        with listening(store) as (hints, watcher):
            assert watcher.wake is None
            other.enqueue([NewJob("n", "q", T0)], T0)
            assert hints.get(timeout=WAIT_S) == "q"
    finally:
        store.close()
        other.close()


def test_a_directory_that_cannot_be_created_means_polling(db: Path) -> None:
    # Given something else at the wake directory's path (a file)
    SQLiteStore(db).close()
    Path(sqlite_wake.wake_directory(str(db))).write_text("not a directory")
    # Then listening works, by polling, and enqueues ignore the file
    _hinted_by_the_poll(db)


@pytest.mark.parametrize("refused", ["mkdir", "bind"])
def test_a_read_only_directory_means_polling(
    db: Path, monkeypatch: pytest.MonkeyPatch, refused: str
) -> None:
    # Given a directory rota may not write (simulated: as root, file modes do not hold)
    SQLiteStore(db).close()

    def deny(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    if refused == "mkdir":
        monkeypatch.setattr(os, "mkdir", deny)
    else:
        monkeypatch.setattr(socket.socket, "bind", deny)
    _hinted_by_the_poll(db)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory modes")
def test_a_real_read_only_directory_means_polling(db: Path) -> None:
    # A store kept open keeps the -wal and -shm files, which a read-only directory could
    # not get back once the last connection closed.
    keeper = SQLiteStore(db)
    db.parent.chmod(0o555)
    try:
        _hinted_by_the_poll(db)
    finally:
        db.parent.chmod(0o755)
        keeper.close()


def test_a_path_too_long_for_a_socket_address_means_polling(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    _hinted_by_the_poll(deep / "rota.db")


def test_without_unix_datagram_sockets_it_polls(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_wake, "supported", lambda: False)
    _hinted_by_the_poll(db)


def test_a_read_only_store_creates_nothing_beside_the_file(db: Path) -> None:
    SQLiteStore(db).close()
    reader, writer = SQLiteStore(db, read_only=True), SQLiteStore(db)
    try:
        with listening(reader) as (hints, watcher):
            assert watcher.wake is None
            writer.enqueue([NewJob("n", "q", T0)], T0)
            assert hints.get(timeout=WAIT_S) == "q"
        assert not Path(sqlite_wake.wake_directory(str(db))).exists()
    finally:
        reader.close()
        writer.close()


def test_a_wake_socket_above_fd_setsize_works(db: Path, no_poll: None) -> None:
    # Given a process with more than 1,024 descriptors open (select() refuses those)
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"RLIMIT_NOFILE {soft} < 1200")
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        with listening(store) as (hints, watcher):
            assert watcher.wake is not None and watcher.wake._sock.fileno() > 1024
            # When another store enqueues, the watcher is still woken by its datagram
            other.enqueue([NewJob("n", "q", T0)], T0)
            assert hints.get(timeout=WAIT_S) == "q"
            assert watcher.wake.wakes >= 1  # not a failing wait turned into a busy loop
    finally:
        store.close()
        other.close()
        for fd in fillers:
            os.close(fd)


def test_children_released_elsewhere_name_their_queues_without_the_poll(
    db: Path, no_poll: None
) -> None:
    # Given a listening store, its poll off, and another store object holding parents
    # whose children wait in other Queues
    listening_store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        a, b, c, d = other.enqueue([NewJob("n", "p", T0) for _ in range(4)], T0)
        other.enqueue([NewJob("n", "after-a", T0, parents=(a,))], T0)
        doomed, = other.enqueue([NewJob("n", "doomed", T0, parents=(b,))], T0)
        other.enqueue([NewJob("n", "anyway", T0, parents=(doomed,),
                              after_outcome="finished")], T0)
        other.enqueue([NewJob("n", "after-c", T0, parents=(c,))], T0)
        waiting, = other.enqueue([NewJob("n", "w", T0, parents=(d,))], T0)
        other.enqueue([NewJob("n", "after-w", T0, parents=(waiting,),
                              after_outcome="finished")], T0)
        leases = {job.id: job.lease for job in other.claim(
            ["p"], 4, now=T0, owner="o", lease_expires_at=T0)}
        with listening(listening_store) as (hints, _watcher):
            # When a parent succeeds: no new job id for the watcher to find
            assert other.complete([leases[a]], T0) == 1
            # Then the datagram names its child's Queue
            assert hints.get(timeout=WAIT_S) == "after-a"
            # And a dead-lettered parent names the Queue of the job released past the
            # child it cancelled (the cascade)
            assert other.dead_letter(leases[b], T0, "Boom: failed")
            assert hints.get(timeout=WAIT_S) == "anyway"
            # And so do an outcome carried by a claim, and the cancel of a waiting job
            other.claim([], 0, now=T0, owner="o", lease_expires_at=T0,
                        outcomes=[(leases[c], rota.core.outcomes.Succeeded())])
            assert hints.get(timeout=WAIT_S) == "after-c"
            assert other.cancel(waiting, T0)
            assert hints.get(timeout=WAIT_S) == "after-w"
            assert hints.empty()
    finally:
        listening_store.close()
        other.close()


def test_a_claim_that_ends_an_expired_parent_names_its_children_queues(
    db: Path, no_poll: None
) -> None:
    # Given a parent whose expiry has passed, with a child that runs whatever it ends in
    listening_store, other = SQLiteStore(db), SQLiteStore(db)
    try:
        expired, = other.enqueue([NewJob("n", "x", T0, expires_at=T0)], T0)
        other.enqueue([NewJob("n", "after-x", T0, parents=(expired,),
                              after_outcome="finished")], T0)
        with listening(listening_store) as (hints, _watcher):
            # When another store's claim ends the parent, expired
            later = T0 + timedelta(seconds=1)
            answer = other.claim(["x"], 1, now=later, owner="o", lease_expires_at=later)
            assert [job.id for job in answer.expired] == [expired]
            # Then the datagram names the Queue of the child it released
            assert hints.get(timeout=WAIT_S) == "after-x"
            assert hints.empty()
    finally:
        listening_store.close()
        other.close()


FINISH_IN_A_CHILD = """
import sys
from rota.store.sqlite import SQLiteStore
from tests.store.sqlite_processes import T0
store = SQLiteStore(sys.argv[1])
try:
    (job,) = store.claim(["parents"], 1, now=T0, owner="other", lease_expires_at=T0)
    assert store.complete([job.lease], T0) == 1
finally:
    store.close()
"""


def test_a_worker_runs_a_child_its_parent_released_in_another_process(
    db: Path, no_poll: None
) -> None:
    # Given a worker serving "children" that polls every hour, its watcher too, and a
    # waiting child there after a parent in a Queue it does not serve
    app = rota.App(f"sqlite:///{db}")
    ran = threading.Event()

    @app.job("n", queue="children")
    async def n() -> None:
        ran.set()

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("children"), poll_interval=3600))
    store = SQLiteStore(db)
    parent, = store.enqueue([NewJob("n", "parents", T0)], T0)
    store.enqueue([NewJob("n", "children", T0, parents=(parent,))], T0)
    store.close()
    root = Path(__file__).resolve().parents[2]

    async def scenario() -> bool:
        async with app.serve():
            # When another process runs the parent to success
            await asyncio.to_thread(
                subprocess.run, [sys.executable, "-c", FINISH_IN_A_CHILD, str(db)],
                check=True, timeout=60, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
            return await asyncio.to_thread(ran.wait, WAIT_S)

    try:
        # Then the worker runs the child: only the datagram could have woken it
        assert asyncio.run(scenario())
    finally:
        app.close()
