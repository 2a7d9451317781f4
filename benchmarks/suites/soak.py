"""soak: a queue under a steady load while another client holds back the xmin horizon,
rota beside procrastinate and pgqueuer in one run.

Everything runs on a PostgreSQL cluster of the suite's own (`benchmarks.cluster`), with
the settings `initdb` writes (autovacuum on, fsync on) but three: pg_stat_statements
loaded (claim statement time), `max_connections=200` (three rota workers' pools beside the
holders), and `wal_level=logical`, which the replication-slot mode needs (the stock
`replica` cannot create a logical slot); the shared server on 5432 is never touched.
`pgstattuple` comes from the server's contrib modules.

Each system in turn, in a fresh database of that cluster (dropped after):
1. its schema, as its documentation installs it, and a bystander table of 100,000 rows;
2. its workers: rota one `rota worker` (pool 20) or, `rota-3p`, three (pools of 7);
   procrastinate and pgqueuer as `benchmarks.targets.peers` runs them;
3. a producer process (`benchmarks.workers.soak_producer`) offering `soak` jobs (~1 ms
   of work each, `benchmarks.workers.soak_work`) at a steady rate;
4. the phases (`soak_plan.schedule`): clean, then for each mode a held phase and a
   recovery. Modes: `idle_xact` (BEGIN; SELECT txid_current(); then idle), `rr_readers`
   (three REPEATABLE READ readers of 120 s, staggered so one is always open, each reads
   the bystander table once and idles), `slot` (an idle logical replication slot,
   test_decoding, dropped at the phase end). Holders connect to the system's database:
   since PostgreSQL 14 a snapshot holds back vacuum of its own database only.
5. every `soak_sample_s` (5 s): the claim statement's calls and time (pg_stat_statements
   deltas, the statement told by its text) and every other statement of the system's
   (rota's named by their SQL file), each of the system's tables' dead and live
   tuples (`pgstattuple`; `pgstattuple_approx` above `EXACT_LIMIT`, whose dead count is
   still exact), table and index sizes, the age of the oldest xmin, and the latency of a
   bystander lookup by primary key. Tuple passes that take long are spaced out (the
   samples in between carry none), and what each sample cost is recorded.

Jobs write their enqueue, start and end stamps; the harness cuts them into the same 5 s
windows afterwards: completed/s, due backlog (offered minus started), pickup p50/p99 of
the jobs started in the window. Per system and phase, the table of the README's targets.
Writes benchmarks/results/soak.json (every series) and the plots docs/images/soak/*.png.
Figures only, never pass/fail. `kill -USR1 <harness pid>` ends a run early and still
reports the phases so far (Ctrl-C stops it with nothing reported).

    python -m benchmarks run soak --quick              # ~10 minutes per system
    python -m benchmarks run soak --systems rota --clean-s 30 --held-s 60 --recovery-s 30
    python -m benchmarks run soak --systems rota --modes slot --preload 6000000

`--preload N` starts rota's table with N succeeded jobs (`preload`): a store some hours
into its default retention, whose vacuum passes are long. `--jobs-reloptions` sets
storage parameters of rota's jobs table before the run (per-table autovacuum settings).
`--queue-limit N` gives rota's Queue a concurrency limit, so that every claim counts the
Queue's leases (on the lease index, which keeps dead entries under a held snapshot too).
"""

from __future__ import annotations

import json
import math
import random
import re
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import soak_plan, soak_report
from benchmarks.cluster import Cluster, own_cluster
from benchmarks.processes import WorkerProcess, python_argv
from benchmarks.results import percentile
from benchmarks.soak_plan import MODES, Job, Phase, Window
from benchmarks.venv import ROOT

SUITE = "soak"
SYSTEMS = ("rota", "rota-3p", "procrastinate", "pgqueuer")
CLUSTER_SETTINGS = ("shared_preload_libraries=pg_stat_statements", "max_connections=200",
                    "wal_level=logical")
EXACT_LIMIT = 64 * 1024 * 1024  # bytes: pgstattuple below, pgstattuple_approx above
BYSTANDER_ROWS = 100_000
BYSTANDER_LOOKUPS = 5  # per sample
SLOT = "soak_slot"
RESULTS_JSON = ROOT / "benchmarks" / "results" / "soak.json"
PLOTS = ROOT / "docs" / "images" / "soak"


# -- the systems --------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    name: str
    tables_where: str  # which relations of pg_class are the system's (SQL, on n and c)
    hot_table: str
    claim_index: str  # a regular expression over index names
    is_claim: Callable[[str], bool]  # a pg_stat_statements text, lower case, one line
    workers: tuple[int, ...]  # pool size of each worker process (peers: one entry)
    statement_mark: str  # in the text of every statement of the system's (not the harness's)


def _rota_claim(text: str) -> bool:
    """claim.sql, claim_limited.sql and the claim carrying completions lock with FOR UPDATE
    SKIP LOCKED; the purge's lock (purge_lock.sql) too, told apart by its finished rows;
    lock_parents.sql takes FOR NO KEY UPDATE."""
    return "for update skip locked" in text and "finished_at is not null" not in text


def _pgqueuer_claim(text: str) -> bool:
    return "skip locked" in text and "pgqueuer" in text


def _procrastinate_claim(text: str) -> bool:
    return "procrastinate_fetch_job" in text


def system(name: str) -> System:
    rota_where = "n.nspname = 'rota'"
    if name == "rota":
        return System(name, rota_where, "jobs", "claim", _rota_claim, (20,), '"rota".')
    if name == "rota-3p":
        return System(name, rota_where, "jobs", "claim", _rota_claim, (7, 7, 7), '"rota".')
    if name == "procrastinate":
        return System(name, "n.nspname = 'public' AND c.relname LIKE 'procrastinate%'",
                      "procrastinate_jobs", "queue|fetch|status", _procrastinate_claim, (20,),
                      "procrastinate")
    if name == "pgqueuer":
        return System(name, "n.nspname = 'public' AND c.relname LIKE 'pgqueuer%'",
                      "pgqueuer", "priority|status|dequeue", _pgqueuer_claim, (20,),
                      "pgqueuer")
    raise ValueError(f"unknown system {name!r}; one of {', '.join(SYSTEMS)}")


def known_statements(spec: System) -> dict[tuple[str, ...], str]:
    """rota's statements by their words (soak_plan.statement_words), each named by its SQL
    file; the peers' go by their text."""
    if not spec.name.startswith("rota"):
        return {}
    from rota.store.postgres.schema import FILES, render_sql

    return {soak_plan.statement_words(render_sql(name, "rota")): name
            for name in FILES.names()}


def database_name(name: str) -> str:
    return "soak_" + name.replace("-", "_")


def install(spec: System, url: str) -> None:
    """The system's schema in the database at `url`, as its documentation installs it."""
    if spec.name.startswith("rota"):
        from rota.store import open_store

        store = open_store(url)
        try:
            store.migrate()
        finally:
            store.close()
    elif spec.name == "pgqueuer":
        from benchmarks.targets.peers import install_pgqueuer

        install_pgqueuer(url)
    else:
        from benchmarks.targets.peers import install_procrastinate

        install_procrastinate(url)


def start_workers(spec: System, url: str, scratch: Path) -> list[WorkerProcess]:
    from benchmarks.targets.rota_target import APP, rota_command

    procs = []
    for number, pool in enumerate(spec.workers, 1):
        env = {"BENCH_SOAK_FILE": str(scratch / f"jobs-{number}.txt")}
        if spec.name.startswith("rota"):
            argv = [rota_command(), "worker", APP]
            env.update(ROTA_BENCH_STORE=url, ROTA_BENCH_POOL=str(pool))
        else:
            argv = python_argv("-m", "benchmarks.targets.peers", spec.name, url)
        procs.append(WorkerProcess(f"soak-{spec.name}-{number}", argv, env))
    return procs


def wait_ready(spec: System, url: str, procs: Sequence[WorkerProcess]) -> None:
    """Until rota's workers are in its registry (peers: two seconds, none exited)."""
    import psycopg

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        dead = [p for p in procs if not p.alive()]
        if dead:
            raise RuntimeError(f"worker {dead[0].label} exited:\n{dead[0].tail()}")
        if not spec.name.startswith("rota"):
            time.sleep(2.0)
            return
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM rota.workers").fetchone()
        if row is not None and row[0] >= len(procs):
            return
        time.sleep(0.5)
    raise TimeoutError("the workers did not register within 120 s")


# -- the holders of the xmin horizon --------------------------------------------------------


class Holders:
    """Opens and closes what holds the horizon back, as the phase at hand asks."""

    def __init__(self, url: str, phases: Sequence[Phase], reader_life_s: float) -> None:
        self.url = url
        self.phases = phases
        self.reader_life_s = reader_life_s
        self.xact: Any = None
        self.readers: dict[tuple[float, float], Any] = {}
        self.slot_open = False
        self.events: list[tuple[float, str]] = []

    def update(self, t: float) -> None:
        import psycopg

        phase = soak_plan.phase_at(self.phases, t)
        mode = phase.mode if phase is not None and phase.kind == "held" else ""
        if mode == "idle_xact" and self.xact is None:
            self.xact = psycopg.connect(self.url, application_name="soak idle_xact")
            self.xact.execute("SELECT txid_current()")  # opens the transaction, takes an xid
            self.events.append((t, "idle_xact open"))
        elif mode != "idle_xact" and self.xact is not None:
            self.xact.close()
            self.xact = None
            self.events.append((t, "idle_xact closed"))
        wanted: set[tuple[float, float]] = set()
        if mode == "rr_readers" and phase is not None:
            wanted = {iv for iv in soak_plan.reader_intervals(
                phase.start_s, phase.end_s, 3, self.reader_life_s) if iv[0] <= t < iv[1]}
        for interval in [iv for iv in self.readers if iv not in wanted]:
            self.readers.pop(interval).close()
            self.events.append((t, f"reader {interval[0]:.0f}-{interval[1]:.0f} closed"))
        for interval in sorted(wanted - set(self.readers)):
            reader = psycopg.connect(self.url, application_name="soak reader")
            reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            reader.execute("SELECT count(*) FROM soak_bystander")
            self.readers[interval] = reader
            self.events.append((t, f"reader {interval[0]:.0f}-{interval[1]:.0f} open"))
        if mode == "slot" and not self.slot_open:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')",
                             (SLOT,))
            self.slot_open = True
            self.events.append((t, "slot created"))
        elif mode != "slot" and self.slot_open:
            self.drop_slot()
            self.events.append((t, "slot dropped"))

    def drop_slot(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                         "pg_replication_slots WHERE slot_name = %s", (SLOT,))
        self.slot_open = False

    def close(self) -> None:
        if self.xact is not None:
            self.xact.close()
            self.xact = None
        for reader in self.readers.values():
            reader.close()
        self.readers.clear()
        if self.slot_open:
            self.drop_slot()


# -- the sampler --------------------------------------------------------------------------

RELATIONS = """
SELECT c.oid, c.relname, c.relkind, coalesce(t.relname, c.relname),
       pg_relation_size(c.oid)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class t ON t.oid = i.indrelid
WHERE c.relkind IN ('r', 'i') AND ({where})
"""
HORIZON = """
SELECT greatest((SELECT max(age(backend_xmin)) FROM pg_stat_activity),
                (SELECT max(age(backend_xid)) FROM pg_stat_activity),
                (SELECT max(age(xmin)) FROM pg_replication_slots),
                (SELECT max(age(catalog_xmin)) FROM pg_replication_slots))
"""


@dataclass
class Sample:
    t: float  # seconds since the run's start
    claim_calls: int  # cumulative
    claim_ms: float  # cumulative total execution time
    statements: dict[str, tuple[int, float]]  # the system's, by name: cumulative calls, ms
    tables: dict[str, dict[str, float]]  # name -> size, and dead, live when measured
    indexes: dict[str, dict[str, Any]]  # name -> table, size
    bystander_ms: float
    xmin_age: int
    cost_ms: float  # what this sample took (the tuple pass included)
    tuples_measured: bool
    autovacuums: int  # the system's tables' autovacuum_count, summed


class Sampler:
    def __init__(self, cluster: Cluster, database: str, spec: System) -> None:
        import psycopg

        self.spec = spec
        self.database = database
        self.conn = psycopg.connect(cluster.url(database), autocommit=True,
                                    application_name="soak sampler")
        self.admin = psycopg.connect(cluster.url(), autocommit=True,
                                     application_name="soak sampler")
        self.bystander = psycopg.connect(cluster.url(database), autocommit=True,
                                         application_name="soak bystander")
        self.skip = 0  # samples left without a tuple pass
        self.random = random.Random(39)
        self.known = known_statements(spec)

    def statement_totals(self) -> tuple[int, float, dict[str, tuple[int, float]]]:
        """The claim's calls and ms, and every statement of the system's by name."""
        rows = self.admin.execute(
            "SELECT query, calls, total_exec_time FROM pg_stat_statements WHERE dbid = "
            "(SELECT oid FROM pg_database WHERE datname = %s)", (self.database,)).fetchall()
        calls, ms = 0, 0.0
        named: dict[str, tuple[int, float]] = {}
        for query, count, total in rows:
            text = str(query)
            if self.spec.is_claim(" ".join(text.lower().split())):
                calls += int(count)
                ms += float(total)
            if self.spec.statement_mark in text:
                name = soak_plan.statement_label(text, self.known)
                had_calls, had_ms = named.get(name, (0, 0.0))
                named[name] = (had_calls + int(count), had_ms + float(total))
        return calls, ms, named

    def lookups_ms(self) -> float:
        took = []
        for _ in range(BYSTANDER_LOOKUPS):
            key = self.random.randint(1, BYSTANDER_ROWS)
            began = time.perf_counter()
            self.bystander.execute("SELECT payload FROM soak_bystander WHERE id = %s", (key,))
            took.append((time.perf_counter() - began) * 1e3)
        return statistics.median(took)

    def sample(self, t: float, interval_s: float) -> Sample:
        began = time.perf_counter()
        bystander_ms = self.lookups_ms()
        calls, ms, statements = self.statement_totals()
        relations = self.conn.execute(
            RELATIONS.format(where=self.spec.tables_where)).fetchall()
        tables: dict[str, dict[str, float]] = {}
        indexes: dict[str, dict[str, Any]] = {}
        for _oid, name, kind, table, size in relations:
            if kind == "i":
                indexes[name] = {"table": table, "size": int(size)}
            else:
                tables[name] = {"size": float(size)}
        measured = self.skip <= 0
        if measured:
            tuple_began = time.perf_counter()
            for oid, name, kind, _table, size in relations:
                if kind != "r":
                    continue
                if size <= EXACT_LIMIT:
                    row = self.conn.execute("SELECT tuple_count, dead_tuple_count "
                                            "FROM pgstattuple(%s)", (oid,)).fetchone()
                else:
                    row = self.conn.execute("SELECT approx_tuple_count, dead_tuple_count "
                                            "FROM pgstattuple_approx(%s)", (oid,)).fetchone()
                tables[name].update(live=float(row[0]), dead=float(row[1]),
                                    exact=float(size <= EXACT_LIMIT))
            # A tuple pass may take at most a fifth of the interval on average.
            self.skip = math.ceil((time.perf_counter() - tuple_began) / (0.2 * interval_s)) - 1
        else:
            self.skip -= 1
        horizon = self.conn.execute(HORIZON).fetchone()
        vacuums = self.conn.execute(
            "SELECT coalesce(sum(autovacuum_count), 0) FROM pg_stat_all_tables s JOIN "
            f"pg_class c ON c.oid = s.relid JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE {self.spec.tables_where}").fetchone()
        return Sample(t, calls, ms, statements, tables, indexes, bystander_ms,
                      int(horizon[0] or 0) if horizon else 0,
                      (time.perf_counter() - began) * 1e3, measured,
                      int(vacuums[0]) if vacuums else 0)

    def close(self) -> None:
        for conn in (self.conn, self.admin, self.bystander):
            conn.close()


# -- one system ---------------------------------------------------------------------------


@dataclass
class Run:
    system: str
    phases: list[Phase]
    rate: float
    windows: list[Window] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    producer_note: str = ""
    stopped_at_s: float | None = None


def read_jobs(paths: Sequence[Path], t0: float) -> list[Job]:
    jobs = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                enq, start, end = (float(p) - t0 for p in parts)
                jobs.append(Job(enq, start, end))
    return jobs


def read_offers(path: Path, t0: float) -> list[tuple[float, int]]:
    offers = []
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                offers.append((float(parts[0]) - t0, int(parts[1])))
    return offers


# --preload: finished jobs already in rota's table when the run starts, as a store keeps
# them for its retention (a day by default): succeeded `soak` jobs of Queue `bench`,
# finished over the hour before (counted by rota's trigger on the table), then
# vacuumed and analysed so that the table starts as an old one would be: all its pages
# visible, its statistics current.
PRELOAD_CHUNK = 500_000
PRELOAD_SQL = """
INSERT INTO rota.jobs (name, queue, state, attempt, due_at, args, kwargs, created_at,
                       started_at, finished_at)
SELECT 'soak', 'bench', 'succeeded', 1, at, '[0]', '{}', at, at, at + interval '1 ms'
FROM (SELECT now() - interval '1 hour' + i * interval '1 hour' / %(rows)s::bigint AS at
      FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i) AS finished
"""


def preload(url: str, rows: int, chunk: int = PRELOAD_CHUNK) -> None:
    """`rows` succeeded jobs in rota's table at `url` (see PRELOAD_SQL), `chunk` rows an
    INSERT."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for first in range(0, rows, chunk):
            conn.execute(PRELOAD_SQL, {"rows": rows, "first": first,
                                       "last": min(rows, first + chunk) - 1})
        conn.execute("VACUUM (FREEZE, ANALYZE) rota.jobs")


def limit_queue(url: str, limit: int) -> None:
    """A concurrency limit of `limit` jobs on the Queue of rota's soak jobs."""
    from benchmarks.workers.rota_app import QUEUE
    from rota.store import open_store

    store = open_store(url)
    try:
        store.set_queue_limit(QUEUE, limit)
    finally:
        store.close()


def prepare_database(cluster: Cluster, database: str, spec: System, preloaded: int = 0,
                     reloptions: str = "", queue_limit: int = 0) -> str:
    with cluster.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    with cluster.admin(database) as conn:
        conn.execute("CREATE EXTENSION pgstattuple")
        conn.execute("CREATE TABLE soak_bystander (id integer PRIMARY KEY, payload text)")
        conn.execute("INSERT INTO soak_bystander SELECT i, md5(i::text) "
                     "FROM generate_series(1, %s) AS i", (BYSTANDER_ROWS,))
        conn.execute("VACUUM ANALYZE soak_bystander")
    url = cluster.url(database)
    install(spec, url)
    if reloptions:  # e.g. autovacuum_vacuum_scale_factor=0.01 (rota only: the CLI checks)
        with cluster.admin(database) as conn:
            conn.execute(f"ALTER TABLE rota.jobs SET ({reloptions})")
    if queue_limit:  # rota only (the CLI checks)
        limit_queue(url, queue_limit)
    if preloaded:
        began = time.monotonic()
        preload(url, preloaded)
        print(f"    {spec.name}: {preloaded:,} succeeded jobs preloaded in "
              f"{time.monotonic() - began:.0f} s", flush=True)
    return url


def drop_database(cluster: Cluster, database: str) -> None:
    with cluster.admin(database) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE database = current_database()")
    with cluster.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def run_system(cluster: Cluster, spec: System, settings: Any) -> Run:
    """One system through every phase (see the module docstring)."""
    phases = soak_plan.schedule(settings.soak_clean_s, settings.soak_held_s,
                                settings.soak_recovery_s, settings.soak_modes)
    total_s = phases[-1].end_s
    run = Run(spec.name, phases, settings.soak_rate)
    database = database_name(spec.name)
    url = prepare_database(cluster, database, spec, settings.soak_preload,
                           settings.soak_jobs_reloptions, settings.soak_queue_limit)
    interval = settings.soak_sample_s
    with tempfile.TemporaryDirectory(prefix="rota-soak-") as scratch_dir:
        scratch = Path(scratch_dir)
        procs: list[WorkerProcess] = []
        producer: WorkerProcess | None = None
        holders = Holders(url, phases, settings.soak_reader_s)
        sampler = Sampler(cluster, database, spec)
        stop = threading.Event()  # `kill -USR1 <pid>`: end here, report what ran
        previous_handler = signal.signal(signal.SIGUSR1, lambda *_: stop.set())
        try:
            procs = start_workers(spec, url, scratch)
            wait_ready(spec, url, procs)
            t0 = time.time()
            m0 = time.monotonic()
            producer = WorkerProcess(
                f"soak-{spec.name}-producer",
                python_argv("-m", "benchmarks.workers.soak_producer", spec.name, url,
                            f"{settings.soak_rate:g}", f"{total_s + interval:g}",
                            str(scratch / "offers.txt")))
            next_sample = interval
            while True:
                t = time.monotonic() - m0
                if t >= total_s:
                    break
                if stop.is_set():
                    run.stopped_at_s = t
                    print(f"    {spec.name}: stopped at {t:.0f} s; reporting the phases "
                          "so far", flush=True)
                    break
                holders.update(t)
                if t >= next_sample:
                    sample = sampler.sample(time.time() - t0, interval)
                    run.samples.append(sample)
                    progress(run, sample, phases, scratch, t0)
                    while next_sample <= time.monotonic() - m0:
                        next_sample += interval
                for proc in [*procs, producer]:
                    if not proc.alive():
                        raise RuntimeError(f"{proc.label} exited:\n{proc.tail()}")
                time.sleep(max(0.0, min(0.5, next_sample - (time.monotonic() - m0))))
            end_s = time.time() - t0
        finally:
            signal.signal(signal.SIGUSR1, previous_handler)
            holders.close()
            run.events = holders.events
            if producer is not None:
                producer.stop()
                run.producer_note = producer.tail(1)
            for proc in procs:
                proc.stop()
            sampler.close()
        run.jobs = read_jobs(sorted(scratch.glob("jobs-*.txt")), t0)
        offers = read_offers(scratch / "offers.txt", t0)
    drop_database(cluster, database)
    run.windows = soak_plan.windows(run.jobs, offers, min(end_s, total_s), interval)
    return run


def progress(run: Run, sample: Sample, phases: Sequence[Phase], scratch: Path,
             t0: float) -> None:
    """One line per sample: what the harness sees as it goes (completed jobs so far)."""
    phase = soak_plan.phase_at(phases, sample.t)
    done = sum(1 for path in scratch.glob("jobs-*.txt") for _ in path.open())
    offers = read_offers(scratch / "offers.txt", t0)
    offered = offers[-1][1] if offers else 0
    dead = sum(t.get("dead", 0) for t in sample.tables.values())
    print(f"    {run.system} {sample.t:6.0f} s {phase.name if phase else '-':<22} offered "
          f"{offered:>8} done {done:>8} (gap {offered - done:>7}) dead "
          f"{dead if sample.tuples_measured else math.nan:>9.0f} xmin age "
          f"{sample.xmin_age:>7} bystander {sample.bystander_ms:6.2f} ms sample "
          f"{sample.cost_ms:5.0f} ms", flush=True)


# -- figures per phase ----------------------------------------------------------------------


def series(run: Run, spec: System) -> list[dict[str, Any]]:
    """Per window: the job figures with the sample taken at its end (claim time over the
    window as the delta of the two samples around it)."""
    rows = []
    previous: Sample | None = None
    by_end = {round(s.t / (run.windows[0].end_s - run.windows[0].start_s)): s
              for s in run.samples} if run.windows else {}
    for index, window in enumerate(run.windows):
        sample = by_end.get(index + 1)
        row: dict[str, Any] = {
            "t": window.end_s, "offered_per_s": window.offered_per_s,
            "completed_per_s": window.completed_per_s, "backlog": window.backlog,
            "p50_ms": window.p50_ms, "p99_ms": window.p99_ms, "started": window.started}
        if sample is not None:
            calls = sample.claim_calls - (previous.claim_calls if previous else 0)
            ms = sample.claim_ms - (previous.claim_ms if previous else 0.0)
            hot = sample.tables.get(spec.hot_table, {})
            claim_indexes = [i for name, i in sample.indexes.items()
                             if i["table"] == spec.hot_table
                             and re.search(spec.claim_index, name)]
            row.update(
                claim_mean_ms=ms / calls if calls else math.nan, claim_calls=calls,
                dead=(sum(t.get("dead", 0) for t in sample.tables.values())
                      if sample.tuples_measured else math.nan),
                live=(sum(t.get("live", 0) for t in sample.tables.values())
                      if sample.tuples_measured else math.nan),
                hot_dead=hot.get("dead", math.nan) if sample.tuples_measured else math.nan,
                hot_table_mib=hot.get("size", 0) / 2**20,
                claim_index_mib=sum(i["size"] for i in claim_indexes) / 2**20,
                indexes_mib=sum(i["size"] for i in sample.indexes.values()) / 2**20,
                bystander_ms=sample.bystander_ms, xmin_age=sample.xmin_age,
                sample_ms=sample.cost_ms, autovacuums=sample.autovacuums,
                tables={name: t for name, t in sample.tables.items()},
                indexes={name: i["size"] for name, i in sample.indexes.items()})
            previous = sample
        rows.append(row)
    return rows


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]


def phase_table(run: Run, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase: the figures of the README's table."""
    width = run.windows[0].end_s - run.windows[0].start_s if run.windows else 5.0
    clean = run.phases[0]
    # The first window warms up (the workers' first claims, the producer's first ticks).
    clean_pickups = soak_plan.pickups_between(run.jobs, clean.start_s + width, clean.end_s)
    clean_p50 = percentile(clean_pickups, 0.5) * 1e3
    clean_p99 = percentile(clean_pickups, 0.99) * 1e3
    clean_backlogs = [w.backlog for w in run.windows
                      if clean.start_s + width <= w.start_s and w.end_s <= clean.end_s]
    limit = max(soak_plan.near_zero(run.rate), max(clean_backlogs, default=0))
    totals = [(sample.t, sample.statements) for sample in run.samples]
    got = []
    for phase in run.phases:
        inside = [(w, r) for w, r in zip(run.windows, rows, strict=True)
                  if phase.start_s <= w.start_s and w.end_s <= phase.end_s + 1e-6]
        if not inside:
            continue
        if phase.kind == "clean":  # the clean row is the reference: its warm-up left out
            inside = [(w, r) for w, r in inside if w.start_s >= clean.start_s + width] or inside
        pickups = soak_plan.pickups_between(run.jobs, inside[0][0].start_s, phase.end_s)
        duration = inside[-1][0].end_s - inside[0][0].start_s
        done = sum(w.completed_per_s * (w.end_s - w.start_s) for w, _ in inside)
        offered = sum(w.offered_per_s * (w.end_s - w.start_s) for w, _ in inside)
        before = [w for w in run.windows if w.end_s <= phase.start_s + 1e-6]
        start_backlog = before[-1].backlog if before else 0
        p50 = percentile(pickups, 0.5) * 1e3
        p99 = percentile(pickups, 0.99) * 1e3
        claims = sum(r.get("claim_calls", 0) for _, r in inside)
        claim_ms = sum(r.get("claim_mean_ms", 0) * r.get("claim_calls", 0)
                       for _, r in inside if r.get("claim_calls"))
        entry: dict[str, Any] = {
            "phase": phase.name, "kind": phase.kind, "mode": phase.mode,
            "seconds": round(duration, 1),
            "offered_per_s": offered / duration, "completed_per_s": done / duration,
            "backlog_end": inside[-1][0].backlog,
            "backlog_growth": inside[-1][0].backlog - start_backlog,
            "p50_ms": p50, "p99_ms": p99,
            "p50_ratio": p50 / clean_p50 if clean_p50 else math.nan,
            "p99_ratio": p99 / clean_p99 if clean_p99 else math.nan,
            "max_dead": max(_finite([r.get("dead", math.nan) for _, r in inside]),
                            default=math.nan),
            "max_claim_index_mib": max(_finite([r.get("claim_index_mib", math.nan)
                                                for _, r in inside]), default=math.nan),
            "claim_mean_ms": claim_ms / claims if claims else math.nan,
            "bystander_ms": statistics.median(_finite(
                [r.get("bystander_ms", math.nan) for _, r in inside]) or [math.nan]),
            "recovery_s": None,
            "statements": {name: asdict(figures) for name, figures in
                           soak_plan.phase_statements(totals, phase.start_s,
                                                      phase.end_s).items()},
        }
        if phase.kind == "held":
            # Looked for within the recovery phase that follows.
            after = [p for p in run.phases if p.start_s >= phase.end_s]
            until = after[0].end_s if after else phase.end_s
            entry["recovery_s"] = soak_plan.recovery_s(
                [w for w in run.windows if w.end_s <= until + 1e-6], phase.end_s, clean_p99,
                limit)
            entry["backlog_limit"] = limit
        got.append(entry)
    return got


# -- the suite ------------------------------------------------------------------------------


def run(settings: Any) -> Any:
    """The `soak` suite of `python -m benchmarks run` (run only when named)."""
    from benchmarks.results import Figure, SuiteResult

    result = SuiteResult()
    runs: dict[str, Run] = {}
    try:
        with own_cluster("rota_soak", CLUSTER_SETTINGS) as cluster:
            print(f"  cluster {cluster.name} (PostgreSQL {cluster.version}) on port "
                  f"{cluster.port}: {', '.join(CLUSTER_SETTINGS)}", flush=True)
            for name in settings.soak_systems:
                print(f"  {name}: phases "
                      f"{settings.soak_clean_s:g}/{settings.soak_held_s:g}/"
                      f"{settings.soak_recovery_s:g} s, {settings.soak_rate:g} jobs/s",
                      flush=True)
                try:
                    runs[name] = run_system(cluster, system(name), settings)
                except Exception as error:  # the next system still runs
                    result.skipped[f"soak {name}"] = f"{type(error).__name__}: {error}"
                    print(f"  soak {name}: failed ({error})", flush=True)
                    continue
                if runs[name].stopped_at_s is not None:
                    break
    except (OSError, RuntimeError) as error:
        result.skipped[SUITE] = str(error)
        print(f"  soak: skipped ({error})")
    note = (f"{settings.soak_rate:g} jobs/s offered, ~1 ms jobs; phases "
            f"{settings.soak_clean_s:g}/{settings.soak_held_s:g}/{settings.soak_recovery_s:g}"
            " s (clean/held/recovery)")
    document: dict[str, Any] = {"note": note, "settings": {
        k: v for k, v in settings.as_json().items() if k.startswith("soak_")},
        "cluster_settings": list(CLUSTER_SETTINGS), "systems": {}}
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, got in runs.items():
        spec = system(name)
        rows = series(got, spec)
        tables[name] = phase_table(got, rows)
        costs = [s.cost_ms for s in got.samples]
        document["systems"][name] = {
            "phases": [asdict(p) for p in got.phases], "series": rows,
            "stopped_at_s": got.stopped_at_s,
            "table": tables[name], "events": got.events, "producer": got.producer_note,
            "sampler_ms": {"median": statistics.median(costs) if costs else None,
                           "max": max(costs, default=None),
                           "tuple_passes": sum(s.tuples_measured for s in got.samples),
                           "samples": len(got.samples)}}
        for entry in tables[name]:
            for metric, unit in (("completed_per_s", "jobs/s"), ("p99_ms", "ms"),
                                 ("p99_ratio", "x"), ("backlog_growth", "jobs"),
                                 ("max_dead", "tuples")):
                value = entry[metric]
                if isinstance(value, (int, float)) and not math.isnan(value):
                    result.add(SUITE, f"{name} {entry['phase']}", metric,
                               Figure.of([float(value)], unit, note))
    if tables:
        print(soak_report.table(tables), flush=True)
        print(soak_report.targets(tables), flush=True)
        print(soak_report.statements_markdown(tables), flush=True)
        for name, doc in document["systems"].items():
            print(f"  {name}: sampler {doc['sampler_ms']}; producer: {doc['producer']}")
        RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
        RESULTS_JSON.write_text(json.dumps(_json_safe(document), indent=1) + "\n")
        (RESULTS_JSON.with_suffix(".md")).write_text(soak_report.markdown(tables) + "\n")
        written = soak_report.plot(document, PLOTS)
        print(f"  wrote {RESULTS_JSON}, {RESULTS_JSON.with_suffix('.md')} and "
              f"{len(written)} plots under {PLOTS}", flush=True)
    result.detail[SUITE] = {"tables": _json_safe(tables), "json": str(RESULTS_JSON)}
    return result


def _json_safe(value: Any) -> Any:
    """NaN as null: the JSON standard has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


__all__ = ["MODES", "SYSTEMS", "run"]
