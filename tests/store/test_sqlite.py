"""What only the SQLite store promises: processes sharing one file, migrations, locking,
crash safety and its URL forms. The shared contract is in test_contract*.py.

Processes are spawned (not forked) and coordinated with barriers, events and joins.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rota.core.jobs import JobState, Lease, NewJob
from rota.store import SchemaTooNew, StoreConfigError, StoreError, open_store
from rota.store.sqlite import SQLiteStore, schema_version_known
from tests.store import sqlite_processes

T0 = sqlite_processes.T0
LEASE = sqlite_processes.LEASE
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rota.db'}"


@pytest.fixture
def store(url: str) -> Iterator[SQLiteStore]:
    opened = SQLiteStore.from_url(url)
    yield opened
    opened.close()


def new(queue: str = "q", args: str = "[]") -> NewJob:
    return NewJob("job", queue, T0, args)


def raw_connection(store: SQLiteStore) -> sqlite3.Connection:
    """A second, plain connection to the store's file: 'another process'."""
    return sqlite3.connect(store.path, isolation_level=None, timeout=0)


def test_processes_claiming_from_one_file_get_each_job_exactly_once(
    store: SQLiteStore, url: str
) -> None:
    # Given 200 due jobs and 4 processes
    ids = store.enqueue([new() for _ in range(200)], T0)
    start = SPAWN.Barrier(4)
    results = SPAWN.Queue()
    processes = [
        SPAWN.Process(target=sqlite_processes.claim_until_empty,
                      args=(url, f"p{i}", start, results))
        for i in range(4)
    ]
    # When they all drain the Queue at once
    for process in processes:
        process.start()
    claimed = [results.get(timeout=30) for _ in processes]
    for process in processes:
        process.join()
    # Then every job was claimed exactly once
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    all_ids = [job_id for _, batch in claimed for job_id in batch]
    assert sorted(all_ids) == ids
    assert store.count_jobs() == {("q", JobState.LEASED): 200}
    results.close()
    results.join_thread()


def test_processes_opening_a_fresh_file_at_once_migrate_it_once(url: str) -> None:
    # Given a file that does not exist yet, and 4 processes released together
    start = SPAWN.Barrier(4)
    results = SPAWN.Queue()
    processes = [
        SPAWN.Process(target=sqlite_processes.open_fresh_and_enqueue, args=(url, start, results))
        for _ in range(4)
    ]
    # When each opens it (and so migrates it) and enqueues a job
    for process in processes:
        process.start()
    ids = [results.get(timeout=30) for _ in processes]
    for process in processes:
        process.join()
    results.close()
    results.join_thread()
    # Then all succeeded on one schema
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    with closing(SQLiteStore.from_url(url)) as store:
        assert sorted(job.id for job in store.list_jobs()) == sorted(ids)
        with closing(raw_connection(store)) as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    assert version == schema_version_known() and mode == "wal"


def test_a_schema_newer_than_this_rota_is_refused(store: SQLiteStore, url: str) -> None:
    # Given a file migrated by a future rota
    newer = schema_version_known() + 1
    with closing(raw_connection(store)) as conn:
        conn.execute(f"PRAGMA user_version = {newer}")
    # When this rota opens it
    with pytest.raises(SchemaTooNew) as refused:
        SQLiteStore.from_url(url)
    # Then it refuses, saying which versions and what to do
    message = str(refused.value)
    assert f"schema version {newer}" in message
    assert f"up to {schema_version_known()}" in message
    assert "Upgrade rota" in message and url in message


def test_jobs_survive_close_and_reopen(url: str) -> None:
    # Given a store with a leased and a scheduled job, closed
    with closing(SQLiteStore.from_url(url)) as store:
        leased, scheduled = store.enqueue([new(args='[1, "x"]'), new()], T0)
        store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
        before = [store.get_job(leased), store.get_job(scheduled)]
    # When it is opened again
    with closing(SQLiteStore.from_url(url)) as store:
        after = [store.get_job(leased), store.get_job(scheduled)]
        # Then every field came back, and the lease still fences outcomes
        assert after == before
        assert store.complete([Lease(leased, "w1", 1)], T0) == 1


def test_a_write_lock_held_elsewhere_makes_a_claim_wait_then_fail_cleanly(
    tmp_path: Path,
) -> None:
    # Given a due job, and another connection holding the write lock
    url = f"sqlite:///{tmp_path / 'busy.db'}?busy_timeout_s=0.2"
    with closing(open_store(url)) as store:
        assert isinstance(store, SQLiteStore)
        (job_id,) = store.enqueue([new()], T0)
        with closing(raw_connection(store)) as other:
            other.execute("BEGIN IMMEDIATE")
            # When a claim runs
            started = time.monotonic()
            with pytest.raises(StoreError) as failed:
                store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
            waited = time.monotonic() - started
            # Then it waited for the busy timeout, and failed naming the file
            assert waited >= 0.15
            assert store.path in str(failed.value) and "busy" in str(failed.value)
            # And an enqueue fails the same way without writing anything
            with pytest.raises(StoreError):
                store.enqueue([new(), new()], T0)
            other.execute("ROLLBACK")
        # And once the lock is free, the untouched job is claimable
        assert store.count_jobs() == {("q", JobState.SCHEDULED): 1}
        (job,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
        assert (job.id, job.attempt) == (job_id, 1)


def test_a_write_waiting_for_the_lock_takes_it_in_a_short_gap_between_others_writes(
    tmp_path: Path,
) -> None:
    # Given another connection that holds the write lock for 0.45 s, lets it go for 30 ms,
    # then holds it for 1.5 s (a bulk enqueue's run of transactions)
    url = f"sqlite:///{tmp_path / 'gap.db'}?busy_timeout_s=1"
    with closing(open_store(url)) as store:
        assert isinstance(store, SQLiteStore)
        store.enqueue([new()], T0)
        holding = threading.Event()

        def hold() -> None:
            with closing(raw_connection(store)) as other:
                other.execute("BEGIN IMMEDIATE")
                holding.set()
                time.sleep(0.45)
                other.execute("COMMIT")
                time.sleep(0.03)
                other.execute("BEGIN IMMEDIATE")
                time.sleep(1.5)
                other.execute("COMMIT")

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            holding.wait()
            # When a claim needs the lock meanwhile
            (job,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
            # Then it took the lock in the 30 ms gap (SQLite's own busy handler, sleeping
            # up to 100 ms between tries, missed it and failed after 1 s)
            assert job.attempt == 1
            assert holder.is_alive()
        finally:
            holder.join()
        # And the busy handler is back for everything else on the store's connection
        with store._read("checking") as conn:
            assert conn.execute("PRAGMA busy_timeout").fetchone() == (1000,)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_process_killed_mid_claim_leaves_the_job_claimable(
    store: SQLiteStore, url: str
) -> None:
    # Given a process caught inside a claim transaction, before its COMMIT
    (job_id,) = store.enqueue([new()], T0)
    holding, never = SPAWN.Event(), SPAWN.Event()
    process = SPAWN.Process(target=sqlite_processes.hold_claim_open, args=(url, holding, never))
    process.start()
    assert holding.wait(timeout=30)
    # When it is killed
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    assert process.exitcode == -signal.SIGKILL
    # Then its claim never happened: the next claimer gets the job, first attempt
    (job,) = store.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE)
    assert (job.id, job.attempt, job.lease_owner) == (job_id, 1, "w2")


@pytest.mark.parametrize(
    "bad_url",
    [
        "sqlite://relative.db",
        "sqlite:///",
        "sqlite:///some/dir/",
        "sqlite:///:memory:",
        "sqlite:///rota.db?timeout=3",
        "sqlite:///rota.db?busy_timeout_s=soon",
        "sqlite:///rota.db?busy_timeout_s=-1",
    ],
)
def test_malformed_urls_name_the_url_and_the_expected_form(bad_url: str) -> None:
    with pytest.raises(StoreConfigError) as refused:
        open_store(bad_url)
    assert bad_url in str(refused.value)
    assert "sqlite:///relative/path.db" in str(refused.value)


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'rota.db'}"
    with pytest.raises(StoreConfigError) as refused:
        open_store(url)
    assert url in str(refused.value) and "does not exist" in str(refused.value)


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_bytes(b"this is not a database" * 100)
    url = f"sqlite:///{tmp_path / 'notes.db'}"
    with pytest.raises(StoreError) as refused:
        open_store(url)
    assert url in str(refused.value)


def test_relative_and_absolute_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a working directory
    monkeypatch.chdir(tmp_path)
    # When a relative and an absolute URL are opened
    with closing(open_store("sqlite:///relative.db")):
        pass
    absolute = tmp_path / "absolute.db"
    assert str(absolute).startswith("/")
    with closing(open_store(f"sqlite:///{absolute}")) as store:  # four slashes
        assert store.url == f"sqlite:////{str(absolute).lstrip('/')}"
    # Then both files exist where the URLs say
    assert (tmp_path / "relative.db").is_file() and absolute.is_file()


def test_an_sqlite_without_returning_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    with pytest.raises(StoreError, match=r"needs SQLite 3\.35\.0 or newer"):
        SQLiteStore(tmp_path / "old.db")


def test_enqueue_of_many_jobs_is_one_transaction(store: SQLiteStore) -> None:
    # Given 10,000 jobs
    ids = store.enqueue([new() for _ in range(10_000)], T0)
    # Then their ids ascend one by one, in order
    assert ids == list(range(ids[0], ids[0] + 10_000))
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 10_000}
    # And a batch with one bad job stores none of them
    with pytest.raises(ValueError):
        store.enqueue([new(), new(args="not json"), new()], T0)
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 10_000}


def test_times_round_trip_to_the_microsecond_far_from_now(store: SQLiteStore) -> None:
    moments = [datetime(1970, 1, 1, tzinfo=UTC) - timedelta(microseconds=1),
               datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)]
    ids = store.enqueue([NewJob("job", "q", moment) for moment in moments], T0)
    assert [store.get_job(job_id).due_at for job_id in ids] == moments  # type: ignore[union-attr]


def test_naive_times_are_refused(store: SQLiteStore) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        store.enqueue([NewJob("job", "q", datetime(2026, 1, 1))], T0)
    assert store.count_jobs() == {}


def test_a_closed_store_says_so(url: str) -> None:
    store = SQLiteStore.from_url(url)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.get_job(1)


def test_listen_hints_enqueues_from_other_connections_by_queue(tmp_path: Path) -> None:
    # Given a store listening, and a second store (another connection) on the same file
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    listening, other = SQLiteStore.from_url(url), SQLiteStore.from_url(url)
    hints: queue.Queue[str] = queue.Queue()
    stop = listening.listen(hints.put)
    try:
        # When the other connection enqueues into two Queues
        other.enqueue([NewJob("n", "emails", T0), NewJob("n", "bulk", T0)], T0)
        # Then each Queue is hinted, once
        got = {hints.get(timeout=5), hints.get(timeout=5)}
        assert got == {"emails", "bulk"}
        # And claims and completes (no new jobs) hint nothing
        (job,) = other.claim(["emails"], 1, now=T0, owner="w", lease_expires_at=T0)
        other.complete([job.lease], T0)
        other.enqueue([NewJob("n", "emails", T0)], T0)
        assert hints.get(timeout=5) == "emails"
        assert hints.empty()
    finally:
        stop()
        listening.close()
        other.close()


# -- read-only opening -----------------------------------------------------------------


def test_read_only_never_creates_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreConfigError, match="does not exist yet; read-only commands never"):
        open_store(f"sqlite:///{missing}", read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_read_only_refuses_a_file_without_this_rotas_schema(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    with closing(sqlite3.connect(empty)) as conn:
        conn.execute("CREATE TABLE other (x)")
    with pytest.raises(StoreError, match="holds no rota store"):
        open_store(f"sqlite:///{empty}", read_only=True)
    with closing(sqlite3.connect(empty)) as conn:
        conn.execute("PRAGMA user_version = 1")  # an older schema than this rota's
    if schema_version_known() > 1:
        with pytest.raises(StoreError, match="read-only commands do not migrate"):
            open_store(f"sqlite:///{empty}", read_only=True)


def test_read_only_reads_everything_and_writes_nothing(url: str) -> None:
    # Given a store with jobs, still open in a writer (the WAL holds the commits)
    writer = open_store(url)
    (job_id,) = writer.enqueue([NewJob("j", "q", T0, '["x"]')], T0)
    reader = open_store(url, read_only=True)
    try:
        # Then a read-only store sees them
        assert reader.count_jobs() == {("q", JobState.SCHEDULED): 1}
        job = reader.get_job(job_id)
        assert job is not None and job.args == ("x",)
        assert [j.id for j in reader.list_jobs()] == [job_id]
        # And refuses every write, clearly, changing nothing
        with pytest.raises(StoreError, match="opened read-only; enqueueing needs a writable"):
            reader.enqueue([NewJob("j", "q", T0)], T0)
        with pytest.raises(StoreError, match="opened read-only"):
            reader.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
        with pytest.raises(StoreError, match="opened read-only"):
            reader.cancel(job_id, T0)
        assert writer.count_jobs() == {("q", JobState.SCHEDULED): 1}
    finally:
        reader.close()
        writer.close()


UNPRIVILEGED = 65534  # nobody: root ignores file modes, so the check runs as another user
AS_UNPRIVILEGED = {"user": UNPRIVILEGED, "group": UNPRIVILEGED, "extra_groups": []}


@functools.cache
def why_unprivileged_cannot_run_rota() -> str | None:
    """Why the unprivileged user cannot run this interpreter and import this checkout's
    rota (a root user's clone under /root, mode 0700), or None when it can or when this
    user is not root (the modes then hold for this user itself)."""
    if os.geteuid() != 0:
        return None
    try:
        done = subprocess.run([sys.executable, "-c", "import rota.cli"], capture_output=True,
                              text=True, timeout=60, cwd="/", check=False,
                              **AS_UNPRIVILEGED)  # type: ignore[call-overload]
    except PermissionError as error:
        return f"the unprivileged user (uid {UNPRIVILEGED}) may not run {sys.executable}: {error}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"the unprivileged user (uid {UNPRIVILEGED}) cannot import rota here: {last}"
    return None


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's tmp_path is private).
    Skips the test where that user cannot run this checkout at all."""
    import shutil
    import tempfile

    why = why_unprivileged_cannot_run_rota()
    if why is not None:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="rota-ro-"))
    folder.chmod(0o755)
    yield folder
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o700 if path.is_dir() else 0o600)
    shutil.rmtree(folder)


def read_as_unprivileged(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run `rota argv...` as a user who cannot write what root made read-only (as root:
    the `nobody` user; otherwise: this user, for whom the modes already hold)."""
    as_other = AS_UNPRIVILEGED if os.geteuid() == 0 else {}
    return subprocess.run(
        [sys.executable, "-m", "rota.cli", *argv], capture_output=True, text=True,
        timeout=60, cwd="/", env={**os.environ, "COLUMNS": "200"}, check=False,
        **as_other,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("directory_mode", [0o555, 0o777], ids=["ro-dir", "rw-dir"])
def test_queues_and_jobs_read_a_read_only_file(shared_dir: Path, directory_mode: int) -> None:
    # Given a store file of mode 0444, in a read-only or a writable directory
    db = shared_dir / "data" / "rota.db"
    db.parent.mkdir()
    store = open_store(f"sqlite:///{db}")
    store.enqueue([NewJob("report", "nightly", T0)], T0)
    store.close()
    db.chmod(0o444)
    db.parent.chmod(directory_mode)
    before = sorted(p.name for p in db.parent.iterdir())
    # When the read commands run as a user who may not write it
    queues = read_as_unprivileged("queues", "--store", f"sqlite:///{db}", "--json")
    jobs = read_as_unprivileged("jobs", "--store", f"sqlite:///{db}")
    # Then they read it, without migrating or writing
    assert queues.returncode == 0, queues.stderr
    assert [(q["name"], q["counts"]["scheduled"]) for q in json.loads(queues.stdout)] == [
        ("nightly", 1)]
    assert jobs.returncode == 0, jobs.stderr
    assert "report" in jobs.stdout and "nightly" in jobs.stdout
    if directory_mode == 0o555:
        assert sorted(p.name for p in db.parent.iterdir()) == before


def test_read_only_directory_with_a_live_writer_sees_its_latest_commits(
    shared_dir: Path,
) -> None:
    # Given a worker-like writer holding the store open (commits still in the -wal file)
    db = shared_dir / "live" / "rota.db"
    db.parent.mkdir()
    writer = open_store(f"sqlite:///{db}")
    try:
        writer.enqueue([NewJob("j", "q", T0)] * 3, T0)
        db.parent.chmod(0o555)
        assert Path(f"{db}-wal").stat().st_size > 0
        # When another user reads it, Then the read sees the commits in the WAL
        queues = read_as_unprivileged("queues", "--store", f"sqlite:///{db}", "--json")
        assert queues.returncode == 0, queues.stderr
        assert [(q["name"], q["counts"]["scheduled"]) for q in json.loads(queues.stdout)] == [
            ("q", 3)]
    finally:
        writer.close()


@pytest.mark.parametrize("existing", [True, False], ids=["existing-file", "new-file"])
def test_opening_for_writing_in_a_read_only_directory_says_the_directory_must_be_writable(
    shared_dir: Path, existing: bool,
) -> None:
    # Given a directory the user may not write, holding a store file it may write (or none)
    db = shared_dir / "ro" / "rota.db"
    db.parent.mkdir()
    if existing:
        open_store(f"sqlite:///{db}").close()
        db.chmod(0o666)
    db.parent.chmod(0o555)
    # When a command that writes opens it as that user
    done = read_as_unprivileged("pause", "q", "--store", f"sqlite:///{db}")
    # Then the one-line error says the directory must be writable, and why
    assert done.returncode == 1, done.stderr
    assert (f"The directory {str(db.parent)!r} must be writable by this user: SQLite keeps "
            "the store's WAL and shared-memory files beside the database file, and rota "
            "its wake-up sockets") in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_read_commands_name_a_missing_file_and_create_nothing(tmp_path: Path) -> None:
    for command in ("queues", "jobs"):
        done = subprocess.run(
            [sys.executable, "-m", "rota.cli", command, "--store",
             f"sqlite:///{tmp_path / 'typo.db'}"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 2
        assert "does not exist yet; read-only commands never create a store" in done.stderr
        assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


# -- the WAL stays small ---------------------------------------------------------------

WAL_LIMIT = 4 * 2**20  # journal_size_limit, connection_pragmas.sql


def test_connections_bound_the_wal(store: SQLiteStore) -> None:
    with store._read("test") as conn:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
        assert conn.execute("PRAGMA journal_size_limit").fetchone() == (WAL_LIMIT,)


def test_a_passive_checkpoint_lets_the_wal_shrink_back_after_a_big_write(
    store: SQLiteStore, url: str
) -> None:
    wal = Path(f"{store.path}-wal")
    # Given one big transaction (a WAL beyond the limit) while a reader holds a snapshot,
    # so that the commit's own automatic checkpoint cannot fold it back
    reader = sqlite3.connect(store.path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM rota_jobs").fetchone()
        store.enqueue([NewJob("j", "q", T0, json.dumps(["x" * 300]))] * 30_000, T0)
        assert wal.stat().st_size > 2 * WAL_LIMIT
        assert store.checkpoint_wal() > 0  # the reader still needs the WAL
        reader.execute("COMMIT")
    finally:
        reader.close()
    # When the worker's periodic checkpoint runs with no reader in the way
    assert store.checkpoint_wal() == 0
    # Then the next write starts the WAL over, truncated to the limit
    store.enqueue([NewJob("j", "q", T0)], T0)
    assert wal.stat().st_size <= WAL_LIMIT
    assert sum(store.count_jobs().values()) == 30_001


def test_a_read_only_store_does_not_checkpoint(store: SQLiteStore, url: str) -> None:
    reader = open_store(url, read_only=True)
    try:
        assert isinstance(reader, SQLiteStore) and reader.checkpoint_wal() == 0
    finally:
        reader.close()


def test_a_full_database_fails_a_write_cleanly_and_recovers(store: SQLiteStore) -> None:
    # Given a store that can grow by only a few pages (as on a full disk: SQLITE_FULL)
    (kept,) = store.enqueue([NewJob("j", "q", T0)], T0)
    with store._read("test") as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    # When a big batch cannot fit, Then it fails as a StoreError and writes none of it
    with pytest.raises(StoreError, match="full"):
        store.enqueue([NewJob("j", "q", T0, json.dumps(["x" * 500]))] * 5_000, T0)
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 1}
    # And reads, claims and outcomes of the jobs already there still work
    (claimed,) = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert claimed.id == kept and store.complete([claimed.lease], T0) == 1
    # And once there is room again, so do writes, with nothing to repair
    with store._read("test") as conn:
        conn.execute("PRAGMA max_page_count = 4294967294")
    assert len(store.enqueue([NewJob("j", "q", T0)] * 5_000, T0)) == 5_000
    assert store.checkpoint_wal() == 0
def test_the_enqueue_watcher_survives_an_unexpected_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a watcher whose first check raises something that is not an sqlite3.Error
    from rota.store.sqlite import wake as sqlite_module

    watcher_class = sqlite_module._EnqueueWatcher
    original = watcher_class._check
    calls = 0

    def flaky_check(self: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyError("a bug")
        original(self)  # type: ignore[arg-type]

    monkeypatch.setattr(watcher_class, "_check", flaky_check)
    monkeypatch.setattr(watcher_class, "UNEXPECTED_BACKOFF_S", 0.01)
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    listening, other = SQLiteStore.from_url(url), SQLiteStore.from_url(url)
    hints: queue.Queue[str] = queue.Queue()
    try:
        with caplog.at_level("ERROR", logger="rota.store.sqlite"):
            stop = listening.listen(hints.put)
            try:
                # When another connection enqueues after that failure
                other.enqueue([NewJob("n", "emails", T0)], T0)
                # Then the watcher logged the failure and still delivers the hint
                assert hints.get(timeout=5) == "emails"
            finally:
                stop()
        assert any(r.exc_info and "failed unexpectedly" in r.getMessage()
                   for r in caplog.records)
    finally:
        listening.close()
        other.close()
def test_migration_3_backfills_finished_at_of_jobs_finished_before_it(tmp_path: Path) -> None:
    # Given a file at schema version 1 holding a succeeded, a cancelled and a scheduled job
    path = tmp_path / "old.db"
    from rota.store.sqlite.schema import migrations as _migrations

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in _migrations()[0].statements:
            conn.execute(statement)
        due, created = 2_000_000, 1_000_000
        for state in ("succeeded", "cancelled", "scheduled"):
            conn.execute(
                "INSERT INTO rota_jobs (name, queue, state, due_at, args, kwargs, created_at) "
                "VALUES ('job', 'q', ?, ?, '[]', '{}', ?)", (state, due, created))
    # When this rota opens it
    store = SQLiteStore(path)
    try:
        done, cancelled, waiting = (store.get_job(i) for i in (1, 2, 3))
        # Then the finished jobs got their due time as finish time, so retention sees them
        assert done is not None and cancelled is not None and waiting is not None
        expected = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=2)
        assert done.finished_at == expected and cancelled.finished_at == expected
        assert waiting.finished_at is None
        assert store.purge([JobState.SUCCEEDED, JobState.CANCELLED], T0, 10) == 2
        assert store.schema_version() == schema_version_known() >= 2
    finally:
        store.close()


def test_purge_walks_the_finished_index_not_the_table(store: SQLiteStore) -> None:
    # When the purge statement is planned
    from rota.store.sqlite.schema import sql as _sql

    with closing(raw_connection(store)) as conn:
        plan = " ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _sql("purge"),
            {"state": "succeeded", "finished_before": 0, "limit": 10}))
    # Then it searches rota_jobs_finished and never scans the table
    assert "USING INDEX rota_jobs_finished" in plan or "USING COVERING INDEX rota_jobs_finished" \
        in plan, plan
    assert "SCAN rota_jobs" not in plan, plan


def test_the_newest_jobs_of_a_finished_state_walk_the_finished_index(
    store: SQLiteStore,
) -> None:
    # When the listing of the newest succeeded jobs is planned (rota jobs --newest --state)
    from rota.store.sqlite.schema import sql as _sql

    with closing(raw_connection(store)) as conn:
        plan = " ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _sql("list_jobs_finished"),
            {"state": "succeeded", "queue": None, "name": None, "limit": 50, "offset": 0}))
    # Then it walks rota_jobs_finished in its order: no table scan, no sort
    assert "USING INDEX rota_jobs_finished" in plan, plan
    assert "SCAN rota_jobs " not in plan + " " and "TEMP B-TREE" not in plan, plan


def test_a_batched_claim_is_one_statement_of_index_range_scans(store: SQLiteStore) -> None:
    # When claim_many with three arms (a batched claim) is planned
    from rota.store.sqlite.claims import claim_many_sql as _claim_many_sql

    params: dict[str, object] = {"now": 0, "owner": "w", "worker": "w", "lease_expires_at": 1}
    for index in range(3):
        params[f"queue_{index}"] = f"q{index}"
        params[f"limit_{index}"] = 2
    with closing(raw_connection(store)) as conn:
        plan = " ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _claim_many_sql(3), params))
    # Then every arm searches rota_jobs_claimable and none scans the table
    assert plan.count("rota_jobs_claimable") >= 3, plan
    assert "SCAN rota_jobs " not in plan + " ", plan


def test_migration_8_counts_the_jobs_of_an_existing_file(tmp_path: Path) -> None:
    # Given a file at schema version 7 holding jobs of two Queues in three states
    path = tmp_path / "old.db"
    from rota.store.sqlite.schema import migrations as _migrations

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for migration in _migrations()[:7]:
            for statement in migration.statements:
                conn.execute(statement)
        for queue, state, finished in (("a", "succeeded", 5), ("a", "scheduled", None),
                                       ("a", "scheduled", None), ("b", "dead_lettered", 5)):
            conn.execute(
                "INSERT INTO rota_jobs (name, queue, state, due_at, args, kwargs, created_at, "
                "finished_at) VALUES ('job', ?, ?, 1, '[]', '{}', 1, ?)",
                (queue, state, finished))
    # When this rota opens it and changes a job
    store = SQLiteStore(path)
    try:
        counted = store.count_jobs()
        store.requeue(4, T0)
        # Then the migration counted the existing jobs, and the counts follow changes
        assert counted == {("a", JobState.SUCCEEDED): 1, ("a", JobState.SCHEDULED): 2,
                           ("b", JobState.DEAD_LETTERED): 1}
        assert store.count_jobs() == {("a", JobState.SUCCEEDED): 1,
                                      ("a", JobState.SCHEDULED): 2,
                                      ("b", JobState.SCHEDULED): 1}
    finally:
        store.close()


def test_queue_infos_reads_the_counts_and_searches_only_the_claimable_index(
        store: SQLiteStore) -> None:
    # When queue_infos.sql is planned (counts kept by migration 8)
    from rota.store.sqlite.schema import sql as _sql

    with closing(raw_connection(store)) as conn:
        plan = " | ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _sql("queue_infos"), {"now": 0}))
    # Then it scans the counts, and reaches jobs only through rota_jobs_claimable
    assert "SCAN rota_job_counts" in plan, plan
    assert "SCAN rota_jobs " not in plan + " " and "USING INDEX rota_jobs_claimable" in plan, plan


def test_a_batched_complete_finds_each_job_by_primary_key(store: SQLiteStore) -> None:
    # When the one-statement complete of a batch is planned
    from rota.store.sqlite.claims import complete_sql as _complete_sql

    with closing(raw_connection(store)) as conn:
        plan = " | ".join(str(row[-1]) for row in conn.execute(
            "EXPLAIN QUERY PLAN " + _complete_sql(2, False), [0, 1, "w", 1, 2, "w", 1]))
    # Then it walks the leases and looks each job up by id, never scanning the table
    assert "SEARCH rota_jobs USING INTEGER PRIMARY KEY" in plan, plan
    assert "SCAN rota_jobs" not in plan, plan


def test_a_complete_larger_than_one_statement_finishes_every_job_and_counts_it(
        store: SQLiteStore) -> None:
    # Given 450 leased jobs of two Queues (complete.sql takes 200 leases a statement)
    store.enqueue([new("a") for _ in range(300)] + [new("b") for _ in range(150)], T0)
    claimed = store.claim(["a", "b"], 450, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    leases = [Lease(job.id, "w", job.attempt) for job in claimed]
    results = [None if job.id % 2 else json.dumps(job.id) for job in claimed]
    # When they are completed in one call, one lease listed twice in one statement's
    # batch and one in two
    finished = store.complete([leases[1], *leases, leases[0]], T0,
                              [results[1], *results, results[0]])
    # Then each job finished once, with its own result, and the counts moved with them
    assert finished == 450
    assert all(store.get_job(job.id).result == (None if job.id % 2 else job.id)  # type: ignore[union-attr]
               for job in claimed)
    assert store.count_jobs() == {("a", JobState.SUCCEEDED): 300,
                                  ("b", JobState.SUCCEEDED): 150}
