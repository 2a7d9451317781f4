"""families: a Weighted Queue family of 100,000 member Queues (`Weighted([("tenant-*", 1)])`)
against one Queue, real `rota worker` processes, on SQLite and PostgreSQL (`--stores`).

Every run starts from a fresh store (PostgreSQL: database `rota_families_bench` on the
benchmark server, created and dropped by the suite; SQLite: a file in a scratch directory)
that knows `families_members` member Queues `tenant-000000`, ... : one finished (succeeded)
job each, written by one bulk INSERT ... SELECT in the suite's own database (on SQLite
with the matching rows of the per-Queue job counts, which a hand-written insert does not
update by itself). That is the cheapest honest way to make the store know them: a member
is a Queue with a job, and a finished job is never claimable, so it stays out of the claim
index the worker reads. `app.served_queues` checks that the store knows all of them.
`families_due` of them (every 100th) then get due work through `store.enqueue`.

1. Drain: N noop jobs (`families_jobs`) round-robin over the due members, one `rota worker`
   whose group is `Weighted([("tenant-*", 1)])`; and the same N jobs on one Queue
   (`Weighted([("solo", 1)])`) on a store with the same 100,000 members; pool 20 both.
   Runs alternate family, one Queue, one Queue, family, ...; jobs/s from the worker's
   spawn until the store shows none unfinished (start-up included, as in the drain
   suite), and the ratio family / one Queue (target: 0.6 or more).
2. Memory: each drain's worker peak RSS (VmHWM from /proc, read before it stops) and how
   many members its group holds (the worker writes it when it stops).
3. New-member pickup: one family worker drains a backlog (`families_pickup_backlog` jobs
   over the due members) while the harness enqueues single `labelled_probe` jobs, one
   at a time `families_pickup_interval_s` apart, alternately on a never-seen member
   (`tenant-new-00000`, ...) and on idle members the group knows
   (`tenant-known-00000`, ..., each made known by one warm-up job, so no backlog of its
   own); pickup = the job's start - time.time() taken just before its enqueue call.
   p50 / p99 of each and the ratios new / known (target: 2 or less). The probes stop
   early if the backlog runs out, and the backlog left is reported.
4. Reads of one pass (PostgreSQL): on a store with the members and the due work, a
   family group's first pass (`GroupRunner.claim_pass`, 20 free slots, the worker's own
   code) runs in this process while every statement it sends is recorded; each is then
   run again under EXPLAIN (ANALYZE, BUFFERS) in a transaction rolled back: the rows its
   scan nodes returned and the buffers it touched. Measured with a tenth of the members
   and with all of them, the same due work: what a pass reads must follow the members
   with work, and no statement may read every member. (pg_stat_statements is not on
   the shared server, and the server's log is not the suite's to read: EXPLAIN of the
   statements themselves is what a client can see.)

Writes benchmarks/results/families.json (every figure and run) and families.md (the
markdown table). Every wait is bounded by `families_timeout_s`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.ab import alternate
from benchmarks.processes import WorkerProcess, wait_drained
from benchmarks.results import Figure, SuiteResult, percentile
from benchmarks.settings import Settings
from benchmarks.targets import paced
from benchmarks.targets.rota_target import APP, POOL_SIZE, RotaTarget, rota_command
from benchmarks.venv import ROOT
from benchmarks.workers import read_labelled_pickups

SUITE = "families"
PREFIX = "tenant-"
FAMILY = f"{PREFIX}*"
ONE_QUEUE = "solo"
KNOWN_MEMBER = f"{PREFIX}known-"  # idle members the group knows: one job run before
NEW_MEMBER = f"{PREFIX}new-"
FAMILY_SIDE = "family"
LISTED_SIDE = "listed"  # the same due members, named one by one in the policy
ONE_SIDE = "one Queue"
POLICIES = {FAMILY_SIDE: f"weighted:{FAMILY}=1", ONE_SIDE: f"weighted:{ONE_QUEUE}=1"}
DATABASE = "rota_families_bench"
RESULTS_JSON = ROOT / "benchmarks" / "results" / "families.json"
DRAIN_TARGET = 0.6  # family jobs/s / one-Queue jobs/s, at least
PICKUP_TARGET = 2.0  # new-member pickup / known-member pickup, at most


# -- the pure parts: sizes, names, figures, the table --------------------------------------


def member(number: int) -> str:
    """The name of member `number` (what the bulk insert writes, six digits)."""
    return f"{PREFIX}{number:06d}"


def due_members(members: int, due: int) -> list[str]:
    """The `due` members that get work: spread evenly over the `members` (every
    members // due-th, starting at 0).

    Raises:
        ValueError: if due is not in 1..members, or members needs more than six digits.
    """
    if not 1 <= due <= members:
        raise ValueError(f"families: {due:,} due members of {members:,}; give 1 to members")
    if members > 1_000_000:
        raise ValueError(f"families: {members:,} members; member names have six digits, "
                         "so at most 1,000,000")
    step = members // due
    return [member(number) for number in range(0, step * due, step)]


def spread(jobs: int, queues: Sequence[str]) -> list[str]:
    """The Queue of each of `jobs` jobs, round-robin over `queues`."""
    return [queues[index % len(queues)] for index in range(jobs)]


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0 or either is NaN."""
    if denominator == 0 or math.isnan(numerator) or math.isnan(denominator):
        return math.nan
    return numerator / denominator


def pickup_figures(pickups: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per label ("new", "known"): the count, p50 and p99 in ms (nearest rank) of its
    sorted pickup latencies (seconds), and "ratio": new / known of each percentile."""
    figures: dict[str, dict[str, float]] = {}
    for label in ("new", "known"):
        values = sorted(pickups.get(label, []))
        figures[label] = {"count": float(len(values)),
                          "p50_ms": percentile(values, 0.50) * 1000,
                          "p99_ms": percentile(values, 0.99) * 1000}
    figures["ratio"] = {key: ratio(figures["new"][key], figures["known"][key])
                        for key in ("p50_ms", "p99_ms")}
    return figures


def plan_reads(plan: dict[str, Any]) -> dict[str, float]:
    """From one EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) document's top "Plan": the rows
    its scan nodes returned (actual rows x loops, summed: what the statement read from
    tables and indexes after their conditions), the largest single scan's, and the shared
    buffers hit and read (the top node's figures include its children's)."""
    scanned = 0.0
    largest = 0.0

    def walk(node: dict[str, Any]) -> None:
        nonlocal scanned, largest
        if "Scan" in str(node.get("Node Type", "")):
            rows = float(node.get("Actual Rows", 0)) * float(node.get("Actual Loops", 1))
            scanned += rows
            largest = max(largest, rows)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    return {"rows_scanned": scanned, "largest_scan_rows": largest,
            "buffers_hit": float(plan.get("Shared Hit Blocks", 0)),
            "buffers_read": float(plan.get("Shared Read Blocks", 0))}


EXPLAINABLE = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE")


def statement_head(query: str) -> str:
    """The first line of `query` that is not a comment nor blank (what it does)."""
    for line in query.splitlines():
        line = line.strip()
        if line and not line.startswith("--"):
            return line
    return ""


def explainable(query: str) -> bool:
    """Whether EXPLAIN takes `query`: a query or a data change, not a SET, BEGIN, ..."""
    head = statement_head(query).split(" ", 1)[0].split("(", 1)[0].upper()
    return head in EXPLAINABLE


def met(held: bool) -> str:
    """How a target reads in the summary line (a NaN figure compares False: missed)."""
    return "met" if held else "missed"


def _cell(value: float, digits: int = 0) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The suite's table, one line per store: drain jobs/s of each side and their ratio,
    pickup p50 / p99 of each and the ratios, the family worker's peak RSS and the members
    its group held. A row holds medians over the runs (keys as `summary` writes)."""
    header = ("store", "family jobs/s", "listed jobs/s", "one Queue jobs/s",
              "family / listed", "family / one Queue (>= 0.6)",
              "pickup new p50 / p99 ms", "pickup known p50 / p99 ms", "ratios (<= 2)",
              "RSS family / one Queue MiB", "members held")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in rows:
        cells = (
            row["store"], _cell(row["family_jobs_s"]), _cell(row["listed_jobs_s"]),
            _cell(row["one_jobs_s"]), _cell(row["listed_ratio"], 2),
            _cell(row["drain_ratio"], 2),
            f"{_cell(row['new_p50_ms'], 1)} / {_cell(row['new_p99_ms'], 1)}",
            f"{_cell(row['known_p50_ms'], 1)} / {_cell(row['known_p99_ms'], 1)}",
            f"{_cell(row['p50_ratio'], 2)} / {_cell(row['p99_ratio'], 2)}",
            f"{_cell(row['family_rss_mib'], 1)} / {_cell(row['one_rss_mib'], 1)}",
            _cell(row["members_held"]),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def median(values: Sequence[float]) -> float:
    finite = sorted(v for v in values if not math.isnan(v))
    if not finite:
        return math.nan
    middle = len(finite) // 2
    return finite[middle] if len(finite) % 2 else (finite[middle - 1] + finite[middle]) / 2


# -- one store: making it, the members, the due work ---------------------------------------


MEMBERS_POSTGRES = """
INSERT INTO rota.jobs (name, queue, state, attempt, due_at, args, kwargs, created_at,
                       started_at, finished_at)
SELECT 'noop', %(prefix)s || lpad(n::text, 6, '0'), 'succeeded', 1, now(), '[]', '{}',
       now(), now(), now()
FROM generate_series(0, %(members)s - 1) AS n
"""
MEMBERS_SQLITE = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :members)
INSERT INTO rota_jobs (name, queue, state, attempt, due_at, args, kwargs, created_at,
                       started_at, finished_at)
SELECT 'noop', :prefix || substr('000000' || i, -6), 'succeeded', 1, :now, '[]', '{}',
       :now, :now, :now
FROM n
"""
# SQLite's per-Queue job counts are kept by the store's own statements, not by a trigger,
# for an insert: the members' rows are counted here, in the same transaction.
COUNTS_SQLITE = """
INSERT INTO rota_job_counts (queue, state, jobs)
SELECT queue, state, count(*) FROM rota_jobs
WHERE state = 'succeeded' AND queue >= :prefix AND queue < :prefix || '~'
GROUP BY queue, state
ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + excluded.jobs
"""


def insert_members(target: RotaTarget, members: int) -> float:
    """Write one finished job into each of `members` member Queues, one statement; the
    seconds it took."""
    started = time.perf_counter()
    if target.kind == "postgres":
        import psycopg

        with psycopg.connect(target.url, autocommit=True) as conn:
            conn.execute(MEMBERS_POSTGRES, {"prefix": PREFIX, "members": members})
    else:
        import sqlite3

        db = sqlite3.connect(target.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            now_us = int(datetime.now(UTC).timestamp() * 1_000_000)
            db.execute("BEGIN IMMEDIATE")
            db.execute(MEMBERS_SQLITE, {"prefix": PREFIX, "members": members, "now": now_us})
            db.execute(COUNTS_SQLITE, {"prefix": PREFIX})
            db.execute("COMMIT")
        finally:
            db.close()
    return time.perf_counter() - started


def known_members(url: str) -> int:
    """How many members of the family the store knows, as `app.served_queues` says."""
    from benchmarks.workers.rota_app import make_app

    app = make_app(url, POLICIES[FAMILY_SIDE], POOL_SIZE)
    try:
        return sum(1 for queue, _ in app.served_queues("bench") if queue.startswith(PREFIX))
    finally:
        app.close()


def enqueue_spread(url: str, queues: Sequence[str], chunk: int) -> float:
    """Enqueue one noop job per entry of `queues` into that Queue, `chunk` per store call;
    the seconds it took."""
    from rota.core.jobs import NewJob
    from rota.store import open_store

    store = open_store(url)
    try:
        started = time.perf_counter()
        now = datetime.now(UTC)
        for offset in range(0, len(queues), chunk):
            store.enqueue([NewJob("noop", queue, now)
                           for queue in queues[offset:offset + chunk]], now)
        return time.perf_counter() - started
    finally:
        store.close()


@contextlib.contextmanager
def fresh_store(kind: str, settings: Settings) -> Iterator[RotaTarget]:
    """A fresh store that knows `families_members` members (checked), discarded after."""
    target = RotaTarget(kind, database=DATABASE)
    target.prepare()
    try:
        insert_members(target, settings.families_members)
        yield target
    finally:
        target.discard()


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set size (VmHWM) in MiB; NaN if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def read_members(path: Path) -> float:
    """The members the worker's group held when it stopped (NaN: it wrote nothing)."""
    try:
        return float(path.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return math.nan


def policy_text(side: str, settings: Settings) -> str:
    """The worker's policy (benchmarks.workers.rota_app): the family, the due members
    listed, or the one Queue."""
    if side == LISTED_SIDE:
        due = due_members(settings.families_members, settings.families_due)
        return "weighted:" + ",".join(f"{queue}=1" for queue in due)
    return POLICIES[side]


def start_worker(target: RotaTarget, side: str, label: str, scratch: Path,
                 latency_file: Path | None = None, settings: Settings | None = None
                 ) -> WorkerProcess:
    policy = POLICIES[side] if settings is None else policy_text(side, settings)
    env = {"ROTA_BENCH_STORE": target.url, "ROTA_BENCH_POOL": str(POOL_SIZE),
           "ROTA_BENCH_POLICY": policy,
           "BENCH_MEMBERS_FILE": str(scratch / f"{label}.members")}
    if latency_file is not None:
        env["BENCH_LATENCY_FILE"] = str(latency_file)
    return WorkerProcess(label, [rota_command(), "worker", APP], env)


# -- 1 and 2: the drains --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Drain:
    jobs_s: float
    first_job_s: float
    peak_rss_mib: float
    members_held: float


def drain_once(kind: str, side: str, settings: Settings, label: str,
               check: bool = False) -> Drain:
    """One drain of one side on a fresh store (`check`: first count the members the store
    knows, outside the timing)."""
    due = due_members(settings.families_members, settings.families_due)
    queues = spread(settings.families_jobs, [ONE_QUEUE] if side == ONE_SIDE else due)
    with fresh_store(kind, settings) as target, \
            tempfile.TemporaryDirectory(prefix="rota-families-") as scratch:
        enqueue_spread(target.url, queues, settings.enqueue_chunk)
        target.settle()
        count = len(queues)
        if check:
            knows = known_members(target.url)
            print(f"    {label}: the store knows {knows:,} members (app.served_queues)")
        start = time.perf_counter()
        worker = start_worker(target, side, label, Path(scratch), settings=settings)
        try:
            first = wait_drained(target.unfinished, [worker], settings.families_timeout_s,
                                 settings.poll_interval_s / 5, below=count)
            end = wait_drained(target.unfinished, [worker], settings.families_timeout_s,
                               settings.poll_interval_s)
            rss = peak_rss_mib(worker.popen.pid)
        finally:
            worker.stop()
        return Drain(count / (end - start), first - start, rss,
                     read_members(Path(scratch) / f"{label}.members"))


# -- 3: new-member pickup ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pickup:
    pickups: dict[str, list[float]]
    probes: int  # new-member probes enqueued while the backlog lasted (known: as many)
    backlog_left: int
    peak_rss_mib: float
    members_held: float


def wait_for_lines(path: Path, label: str, count: int, worker: WorkerProcess,
                   timeout_s: float) -> None:
    """Wait until `path` holds `count` pickups labelled `label` (bounded)."""
    deadline = time.perf_counter() + timeout_s
    while len(read_labelled_pickups(path).get(label, [])) < count:
        if not worker.alive():
            raise RuntimeError(f"worker {worker.label} exited:\n{worker.tail()}")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{label}: fewer than {count} pickups after {timeout_s:.0f} s")
        time.sleep(0.05)


def pickup_once(kind: str, settings: Settings, label: str) -> Pickup:
    from benchmarks.workers.rota_app import make_app

    due = due_members(settings.families_members, settings.families_due)
    backlog = spread(settings.families_pickup_backlog, due)
    with fresh_store(kind, settings) as target, \
            tempfile.TemporaryDirectory(prefix="rota-families-") as scratch:
        enqueue_spread(target.url, backlog, settings.enqueue_chunk)
        target.settle()
        latency_file = Path(scratch) / "pickups.txt"
        app = make_app(target.url, POLICIES[FAMILY_SIDE], POOL_SIZE)
        probe = app.jobs["labelled_probe"]
        worker = start_worker(target, FAMILY_SIDE, label, Path(scratch), latency_file)
        try:
            wait_drained(target.unfinished, [worker], settings.families_timeout_s,
                         settings.poll_interval_s / 5, below=len(backlog))
            # Each known probe goes to a member of its own that the group already knows
            # and that is idle (one job run before): the same single job as a new
            # member's, so the two differ only in whether the group knew the Queue. (One
            # known Queue taking every known probe would get more jobs than its share of
            # the Workers, and its pickups would measure its own backlog.)
            probes = settings.families_pickup_probes
            for number in range(probes):
                probe.configure(queue=f"{KNOWN_MEMBER}{number:05d}").enqueue(
                    time.time(), "warmup")
            wait_for_lines(latency_file, "warmup", probes, worker,
                           settings.families_timeout_s)
            sent = {"new": 0, "known": 0}
            ran_out = [False]

            def one(index: int) -> None:
                pair, is_known = divmod(index, 2)
                # No probe is taken once the background load is gone (fewer jobs left
                # than the pool holds); checked every 10th pair, before a probe's stamp.
                if ran_out[0] or (index % 20 == 0 and target.unfinished() < POOL_SIZE):
                    ran_out[0] = True
                    return
                if is_known:
                    probe.configure(queue=f"{KNOWN_MEMBER}{pair:05d}").enqueue(
                        time.time(), "known")
                    sent["known"] += 1
                else:
                    probe.configure(queue=f"{NEW_MEMBER}{pair:05d}").enqueue(time.time(), "new")
                    sent["new"] += 1

            paced(2 * settings.families_pickup_probes, settings.families_pickup_interval_s,
                  one)
            backlog_left = target.unfinished()
            for which, count in sent.items():
                wait_for_lines(latency_file, which, count, worker, settings.families_timeout_s)
            rss = peak_rss_mib(worker.popen.pid)
        finally:
            worker.stop()
            app.close()
        pickups = read_labelled_pickups(latency_file)
        pickups.pop("warmup", None)
        return Pickup(pickups, sent["new"], backlog_left, rss,
                      read_members(Path(scratch) / f"{label}.members"))


# -- 4: what one pass reads (PostgreSQL) ----------------------------------------------------


@contextlib.contextmanager
def recorded_statements() -> Iterator[list[tuple[str, Any]]]:
    """Every statement this process sends through a psycopg cursor meanwhile, with its
    parameters."""
    import psycopg

    sent: list[tuple[str, Any]] = []
    original = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append((query if isinstance(query, str) else str(query), params))
        return original(self, query, params, **kwargs)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]


def explain(url: str, query: str, params: Any) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of one statement, in a transaction rolled
    back (a claim's EXPLAIN ANALYZE claims): its top plan and execution time."""
    import psycopg

    with psycopg.connect(url) as conn:
        try:
            conn.execute("SET TIME ZONE 'UTC'")  # as the store's connections
            row = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query,
                               params).fetchone()
        finally:
            conn.rollback()
    document = row[0] if row else [{}]
    if isinstance(document, str):
        document = json.loads(document)
    return dict(document[0])


def pass_reads(settings: Settings, members: int) -> list[dict[str, Any]]:
    """One family group pass on PostgreSQL over a store that knows `members` members
    (`families_due` of them with work): every statement it sent and what each reads."""
    import rota
    from rota.store import open_store
    from rota.worker.group import GroupRunner

    label = f"one pass, {members:,} members"
    sized = dataclasses.replace(settings, families_members=members)
    due = due_members(members, settings.families_due)
    with fresh_store("postgres", sized) as target:
        enqueue_spread(target.url, spread(settings.families_jobs, due), settings.enqueue_chunk)
        target.settle()
        store = open_store(target.url)
        try:
            runner = GroupRunner(rota.WorkerGroupOptions(
                name="bench", policy=rota.Weighted([(FAMILY, 1)]), pool_size=POOL_SIZE))
            store.count_jobs()  # connects and checks the schema before the recording
            now = datetime.now(UTC)
            with recorded_statements() as sent:
                _, claimed = runner.claim_pass(store, POOL_SIZE, now, raise_errors=True)
            names = {text: name for name, text in
                     getattr(store, "_queries", {}).items()}
        finally:
            store.close()
        statements: list[dict[str, Any]] = []
        for query, params in sent:
            name = names.get(query, statement_head(query)[:40])
            if not explainable(query):
                continue
            top = explain(target.url, query, params)
            reads = plan_reads(top.get("Plan", {}))
            statements.append({"statement": name, **reads,
                               "execution_ms": float(top.get("Execution Time", math.nan))})
            print(f"  {label}: {name}: {reads['rows_scanned']:,.0f} rows read by its scans "
                  f"(largest {reads['largest_scan_rows']:,.0f}), buffers hit "
                  f"{reads['buffers_hit']:,.0f} read {reads['buffers_read']:,.0f}, "
                  f"{statements[-1]['execution_ms']:.2f} ms", flush=True)
        largest = max((one["rows_scanned"] for one in statements), default=0.0)
        print(f"  {label}: the pass claimed {len(claimed)} jobs with {len(statements)} "
              f"statements; the most rows one of them read: {largest:,.0f}, with "
              f"{members:,} members known to the store, {len(due):,} with due work",
              flush=True)
        return statements


def reads_table(reads: dict[int, list[dict[str, Any]]]) -> str:
    """The statements of one pass (in the order sent) and, for each member count measured,
    the rows its scans read; buffers and time at the largest count."""
    counts = sorted(reads)
    header = ["statement", *(f"rows read, {count:,} members" for count in counts),
              f"buffers, {counts[-1]:,} members", f"ms, {counts[-1]:,} members"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    longest = max(len(statements) for statements in reads.values())
    for index in range(longest):
        named = [reads[count][index] if index < len(reads[count]) else None
                 for count in counts]
        last = named[-1]
        name = next(one["statement"] for one in named if one is not None)
        cells = [name, *(_cell(one["rows_scanned"]) if one else "-" for one in named),
                 _cell(last["buffers_hit"] + last["buffers_read"]) if last else "-",
                 _cell(last["execution_ms"], 2) if last else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- the suite ---------------------------------------------------------------------------------


def summary(store: str, drains: dict[str, list[Drain]], pickups: list[Pickup]
            ) -> dict[str, Any]:
    """One line of the table: medians over the runs (keys as `markdown_table` reads)."""
    family = [d.jobs_s for d in drains[FAMILY_SIDE]]
    listed = [d.jobs_s for d in drains[LISTED_SIDE]]
    one = [d.jobs_s for d in drains[ONE_SIDE]]
    figures = [pickup_figures(p.pickups) for p in pickups]
    row: dict[str, Any] = {
        "store": store,
        "family_jobs_s": median(family), "listed_jobs_s": median(listed),
        "one_jobs_s": median(one),
        "drain_ratio": median([ratio(f, o) for f, o in zip(family, one, strict=True)]),
        "listed_ratio": median([ratio(f, o) for f, o in zip(family, listed, strict=True)]),
        "new_p50_ms": median([f["new"]["p50_ms"] for f in figures]),
        "new_p99_ms": median([f["new"]["p99_ms"] for f in figures]),
        "known_p50_ms": median([f["known"]["p50_ms"] for f in figures]),
        "known_p99_ms": median([f["known"]["p99_ms"] for f in figures]),
        "family_rss_mib": median([d.peak_rss_mib for d in drains[FAMILY_SIDE]]),
        "one_rss_mib": median([d.peak_rss_mib for d in drains[ONE_SIDE]]),
        "members_held": median([d.members_held for d in drains[FAMILY_SIDE]]),
    }
    row["p50_ratio"] = ratio(row["new_p50_ms"], row["known_p50_ms"])
    row["p99_ratio"] = ratio(row["new_p99_ms"], row["known_p99_ms"])
    return row


def run_store(kind: str, settings: Settings, result: SuiteResult) -> dict[str, Any]:
    store = f"rota[{kind}]"
    drains: dict[str, list[Drain]] = {FAMILY_SIDE: [], LISTED_SIDE: [], ONE_SIDE: []}

    def measure(side: str, run_index: int) -> None:
        label = f"families-{kind}-{side.replace(' ', '-').lower()}-{run_index + 1}"
        one = drain_once(kind, side, settings, label, check=run_index == 0)
        drains[side].append(one)
        print(f"  drain {store} {side} run {run_index + 1}: {settings.families_jobs:,} jobs, "
              f"{one.jobs_s:,.0f} jobs/s, first job done after {one.first_job_s:.2f} s; peak "
              f"RSS {one.peak_rss_mib:.1f} MiB, group holds {one.members_held:,.0f} members",
              flush=True)

    alternate([FAMILY_SIDE, LISTED_SIDE, ONE_SIDE], settings.runs, measure)
    pickups: list[Pickup] = []
    for run_index in range(settings.runs):
        got = pickup_once(kind, settings, f"families-{kind}-pickup-{run_index + 1}")
        pickups.append(got)
        figures = pickup_figures(got.pickups)
        print(f"  pickup {store} run {run_index + 1}: {got.probes} new and {got.probes} known "
              f"probes, new p50 {figures['new']['p50_ms']:.1f} ms p99 "
              f"{figures['new']['p99_ms']:.1f} ms, known p50 {figures['known']['p50_ms']:.1f} "
              f"ms p99 {figures['known']['p99_ms']:.1f} ms; backlog left {got.backlog_left:,}, "
              f"group holds {got.members_held:,.0f} members", flush=True)
        if got.backlog_left < POOL_SIZE:
            print(f"    warning: the backlog ran out; raise families_pickup_backlog "
                  f"({settings.families_pickup_backlog:,})")
    row = summary(store, drains, pickups)
    print(f"  {store}: family {row['family_jobs_s']:,.0f} jobs/s, listed "
          f"{row['listed_jobs_s']:,.0f} jobs/s (family / listed {row['listed_ratio']:.2f}), "
          f"one Queue {row['one_jobs_s']:,.0f} jobs/s, ratio {row['drain_ratio']:.2f} (target >= "
          f"{DRAIN_TARGET}: {met(row['drain_ratio'] >= DRAIN_TARGET)}); pickup new/known "
          f"p50 {row['p50_ratio']:.2f}, p99 {row['p99_ratio']:.2f} (target <= "
          f"{PICKUP_TARGET:g}: {met(max(row['p50_ratio'], row['p99_ratio']) <= PICKUP_TARGET)})",
          flush=True)
    members = settings.families_members
    note = (f"{settings.families_jobs:,} jobs, {members:,} members, "
            f"{settings.families_due:,} due, pool {POOL_SIZE}")
    for side in (FAMILY_SIDE, LISTED_SIDE, ONE_SIDE):
        subject = f"{store} {side}"
        result.add(SUITE, subject, "jobs/s", Figure.of(
            [d.jobs_s for d in drains[side]], "jobs/s", note))
        result.add(SUITE, subject, "peak RSS MiB", Figure.of(
            [d.peak_rss_mib for d in drains[side]], "MiB", note))
    result.add(SUITE, f"{store} family / one Queue", "ratio", Figure.of(
        [ratio(f.jobs_s, o.jobs_s) for f, o in zip(drains[FAMILY_SIDE], drains[ONE_SIDE],
                                                   strict=True)], "x", note))
    pickup_note = (f"probes {1e3 * settings.families_pickup_interval_s:g} ms apart over a "
                   f"{settings.families_pickup_backlog:,}-job backlog")
    for which in ("new", "known"):
        for key, metric in (("p50_ms", "pickup p50 ms"), ("p99_ms", "pickup p99 ms")):
            values = [pickup_figures(p.pickups)[which][key] for p in pickups]
            if not any(math.isnan(v) for v in values):
                result.add(SUITE, f"{store} {which} member", metric,
                           Figure.of(values, "ms", pickup_note))
    return {"summary": row,
            "drains": {side: [vars_of(d) for d in runs] for side, runs in drains.items()},
            "pickups": [{"probes": p.probes, "backlog_left": p.backlog_left,
                         "peak_rss_mib": p.peak_rss_mib, "members_held": p.members_held,
                         "figures": pickup_figures(p.pickups)} for p in pickups]}


def vars_of(drain: Drain) -> dict[str, float]:
    return {"jobs_s": drain.jobs_s, "first_job_s": drain.first_job_s,
            "peak_rss_mib": drain.peak_rss_mib, "members_held": drain.members_held}


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    if not Path("/proc/self/status").exists():
        result.skipped[SUITE] = "needs Linux /proc for the RSS figures"
        return result
    due_members(settings.families_members, settings.families_due)  # refuse bad sizes first
    stores: dict[str, Any] = {}
    reads: dict[int, list[dict[str, Any]]] = {}
    for kind in settings.families_stores:
        why = RotaTarget(kind).unavailable()
        if why:
            result.skipped[f"rota[{kind}]"] = why
            print(f"  families rota[{kind}]: skipped ({why})")
            continue
        stores[kind] = run_store(kind, settings, result)
        if kind == "postgres":
            # The same due work over a tenth of the members, then all: what a pass
            # reads follows the members with work, not the members the store knows.
            counts = [settings.families_members // 10, settings.families_members]
            reads = {members: pass_reads(settings, members) for members in counts
                     if members >= settings.families_due}
    rows = [one["summary"] for one in stores.values()]
    sizes = {k: v for k, v in settings.as_json().items() if k.startswith("families_")}
    document = {"finished_at": datetime.now(UTC).isoformat(), "runs": settings.runs,
                "settings": sizes, "versions": report.versions(), "stores": stores,
                "pass_reads": reads}
    RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(_json_safe(document), indent=1) + "\n")
    table = markdown_table(rows) + (f"\n\n{reads_table(reads)}" if reads else "")
    RESULTS_JSON.with_suffix(".md").write_text(table + "\n")
    print(f"\n{table}\n  wrote {RESULTS_JSON} and {RESULTS_JSON.with_suffix('.md')}")
    result.detail[SUITE] = {"json": str(RESULTS_JSON), "pass_reads": _json_safe(reads)}
    return result
