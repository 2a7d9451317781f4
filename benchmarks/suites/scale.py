"""scale: cost as the jobs table grows, on the durable stores.

For each table size (`--rows`, default 10,000 / 1,000,000 / 10,000,000) and each durable
store (SQLite file, PostgreSQL), a table is built with bulk SQL: half the rows finished
(`succeeded`, with `finished_at`, so the retention index is as big as in production), the
older half; the newer half scheduled, due except 1 % scheduled 30-60 days ahead; ids
spread over 100 Queues in turn (`q000`-`q099`, as jobs of many producers arrive).
Then, with every size's store open, rounds alternate between the sizes (so a burst of load
from other work on the machine hits every size alike), and each round measures per size:

- claim latency: `claim` of 20 from one Queue (Queues in turn), timed; then `complete` of
  those 20 and `enqueue` of 20 new due jobs, one to each of 20 Queues, to keep the
  backlog and its layout (neither timed);
- enqueue rate: `enqueue` of 1,000 jobs per call (the bulk path), rows/s; and a single-job
  `enqueue`'s latency;
- `queue_infos` (what `app.queues()`, `rota queues` and the dashboard's counts read) and
  `count_jobs`;
- `list_jobs(newest=True, limit=50)` (`rota jobs --newest`): no filter, one Queue, state
  `succeeded`, state `scheduled`.

Run: `python3 -m benchmarks.suites.scale [--rows 10000 1000000 10000000]
[--stores sqlite,postgres] [--rounds 10] [--keep /tmp/scale] [--json PATH]
[--plot PATH]` (rota's own .venv is enough; the plot needs matplotlib), or as the `scale`
suite of `python3 -m benchmarks run --suite scale [--rows ...]` (run only when named).
`--keep DIR` keeps the built tables (SQLite files in DIR, PostgreSQL databases
`scale_<rows>_bench`) and reuses them on the next run, so a before/after pair measures the
same tables (the later tree migrates them: the migration's time is printed); `--drop`
deletes them. A 10,000,000-row table takes ~3 GB per store.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import rota
from rota.core.jobs import Lease, NewJob
from rota.store import open_store
from rota.store.base import Migratable, Store

QUEUES = 100
CLAIM = 20
CLAIMS_PER_ROUND = 50
ENQUEUE_BATCH = 1_000
ENQUEUE_BATCHES_PER_ROUND = 2
SINGLE_ENQUEUES_PER_ROUND = 20
NEWEST_LIMIT = 50  # `rota jobs`'s default --limit
LOAD_CHUNK = 1_000_000
DEFAULT_ROWS = (10_000, 1_000_000, 10_000_000)
SPAN = timedelta(days=30)  # the built rows were created over the last 30 days


def queue_name(index: int) -> str:
    return f"q{index % QUEUES:03d}"


# -- building a table ---------------------------------------------------------------------

_PG_LOAD = """
INSERT INTO rota.jobs (name, queue, state, attempt, due_at, args, kwargs, created_at,
                       started_at, finished_at)
SELECT 'noop', 'q' || lpad((i %% 100)::text, 3, '0'),
       CASE WHEN i <= %(finished)s THEN 'succeeded' ELSE 'scheduled' END,
       CASE WHEN i <= %(finished)s THEN 1 ELSE 0 END,
       CASE WHEN i > %(finished)s AND (i / 100) %% 100 = 0 THEN at + interval '60 days'
            ELSE at END,
       '[]', '{}', at,
       CASE WHEN i <= %(finished)s THEN at END,
       CASE WHEN i <= %(finished)s THEN at + interval '1 second' END
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i,
     LATERAL (SELECT %(start)s::timestamptz + (i * %(step_us)s) * interval '1 microsecond')
         AS t(at)
"""

_SQLITE_LOAD = """
WITH RECURSIVE n(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM n WHERE i < :last)
INSERT INTO rota_jobs (name, queue, state, attempt, due_at, args, kwargs, created_at,
                       started_at, finished_at)
SELECT 'noop', printf('q%03d', i % 100),
       CASE WHEN i <= :finished THEN 'succeeded' ELSE 'scheduled' END,
       CASE WHEN i <= :finished THEN 1 ELSE 0 END,
       CASE WHEN i > :finished AND (i / 100) % 100 = 0
            THEN :start + i * :step_us + 60 * 86400000000 ELSE :start + i * :step_us END,
       '[]', '{}', :start + i * :step_us,
       CASE WHEN i <= :finished THEN :start + i * :step_us END,
       CASE WHEN i <= :finished THEN :start + i * :step_us + 1000000 END
FROM n
"""


def _pg_database(rows: int) -> str:
    return f"scale_{rows}_bench"


def _sqlite_path(folder: Path, rows: int) -> Path:
    return folder / f"scale_{rows}.db"


def _chunks(rows: int) -> list[tuple[int, int]]:
    return [(first, min(rows, first + LOAD_CHUNK - 1)) for first in range(1, rows + 1, LOAD_CHUNK)]


def _migrate(url: str) -> list[int]:
    """Open the store at `url` and apply the migrations it lacks; the versions applied."""
    store = open_store(url)
    try:
        if not isinstance(store, Migratable):
            raise TypeError(f"{url}: not a store with a schema")
        return store.migrate()
    finally:
        store.close()


def build_postgres(rows: int, start: datetime, *, keep: bool) -> tuple[str, float | None]:
    """The PostgreSQL database of `rows` jobs; (URL, build seconds or None if reused)."""
    import psycopg
    from psycopg import sql

    from benchmarks import pg

    name = _pg_database(rows)
    if keep:
        with psycopg.connect(pg.url_for("postgres"), autocommit=True) as admin:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                             (name,)).fetchone():
                return pg.url_for(name), None
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = pg.url_for(name)
    else:
        url = pg.fresh_database(name)
    began = time.perf_counter()
    _migrate(url)
    step_us = int(SPAN.total_seconds() * 1e6) // rows
    with psycopg.connect(url, autocommit=True) as conn:
        for first, last in _chunks(rows):
            conn.execute(_PG_LOAD, {"first": first, "last": last, "finished": rows // 2,
                                    "start": start, "step_us": step_us})
        conn.execute("VACUUM ANALYZE")  # what autovacuum does to a table this old
    return url, time.perf_counter() - began


def build_sqlite(rows: int, start: datetime, folder: Path, *, keep: bool
                 ) -> tuple[str, float | None]:
    """The SQLite file of `rows` jobs; (URL, build seconds or None if reused)."""
    path = _sqlite_path(folder, rows)
    url = f"sqlite:///{path}"
    if keep and path.exists():
        return url, None
    for stale in folder.glob(path.name + "*"):
        stale.unlink()
    began = time.perf_counter()
    _migrate(url)
    start_us = int(start.timestamp() * 1e6)
    step_us = int(SPAN.total_seconds() * 1e6) // rows
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        for first, last in _chunks(rows):
            conn.execute("BEGIN")
            conn.execute(_SQLITE_LOAD, {"first": first, "last": last, "finished": rows // 2,
                                        "start": start_us, "step_us": step_us})
            conn.execute("COMMIT")
        # Rows written behind the store's back: rebuild the per-Queue counters as the
        # migration that created them does (only on a schema that has them).
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'rota_job_counts'"
                        ).fetchone():
            conn.execute("BEGIN")
            conn.execute("DELETE FROM rota_job_counts")
            conn.execute("INSERT INTO rota_job_counts (queue, state, jobs) "
                         "SELECT queue, state, count(*) FROM rota_jobs GROUP BY queue, state")
            conn.execute("COMMIT")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return url, time.perf_counter() - began


def drop_all(rows: Sequence[int], folder: Path) -> None:
    from benchmarks import pg

    for count in rows:
        pg.drop_database(_pg_database(count))
        for stale in folder.glob(_sqlite_path(folder, count).name + "*"):
            stale.unlink()


# -- measuring ----------------------------------------------------------------------------

@dataclass(slots=True)
class Samples:
    """Every timing of one (store, size), in seconds unless named otherwise."""

    store: str
    rows: int
    build_s: float | None = None
    migrated: list[int] = field(default_factory=list)  # migrations a kept table needed
    migrate_s: float = 0.0
    claim: list[float] = field(default_factory=list)
    enqueue_rows_per_s: list[float] = field(default_factory=list)
    enqueue_one: list[float] = field(default_factory=list)
    queue_infos: list[float] = field(default_factory=list)
    count_jobs: list[float] = field(default_factory=list)
    newest: dict[str, list[float]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        claims = sorted(self.claim)

        def ms(values: list[float]) -> float:
            return round(statistics.median(values) * 1000, 3) if values else float("nan")

        return {
            "store": self.store, "rows": self.rows,
            "build_s": None if self.build_s is None else round(self.build_s, 1),
            "migrated": self.migrated, "migrate_s": round(self.migrate_s, 3),
            "claims": len(claims),
            "claim_p50_ms": round(_percentile(claims, 0.50) * 1000, 3),
            "claim_p99_ms": round(_percentile(claims, 0.99) * 1000, 3),
            "enqueue_rows_per_s": round(statistics.median(self.enqueue_rows_per_s)),
            "enqueue_rows_per_s_min_max": [round(min(self.enqueue_rows_per_s)),
                                           round(max(self.enqueue_rows_per_s))],
            "claim_p50_ms_per_round": [
                round(statistics.median(self.claim[i:i + CLAIMS_PER_ROUND]) * 1000, 3)
                for i in range(0, len(self.claim), CLAIMS_PER_ROUND)],
            "enqueue_one_p50_ms": ms(self.enqueue_one),
            "queue_infos_ms": ms(self.queue_infos),
            "queue_infos_max_ms": round(max(self.queue_infos) * 1000, 3),
            "count_jobs_ms": ms(self.count_jobs),
            **{f"newest_{what}_ms": ms(values) for what, values in self.newest.items()},
        }


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    rank = max(1, min(len(sorted_values), int(-(-fraction * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def _timed(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    began = time.perf_counter()
    call(*args, **kwargs)
    return time.perf_counter() - began


def one_round(store: Store, samples: Samples, round_index: int) -> None:
    clock = rota.SystemClock()
    # Claims: 20 at a time, one Queue after another; complete them, enqueue 20 new.
    for turn in range(CLAIMS_PER_ROUND):
        queue = queue_name(round_index * CLAIMS_PER_ROUND + turn)
        now = clock.now()
        began = time.perf_counter()
        claimed = store.claim([queue], CLAIM, now=now, owner="scale",
                              lease_expires_at=now + timedelta(minutes=5))
        samples.claim.append(time.perf_counter() - began)
        store.complete([Lease(job.id, "scale", job.attempt) for job in claimed], clock.now())
        store.enqueue([NewJob(name="noop", queue=queue_name(turn + k), due_at=now)
                       for k in range(CLAIM)], now)
    # Enqueue: the bulk path, then one job a call.
    for batch in range(ENQUEUE_BATCHES_PER_ROUND):
        now = clock.now()
        jobs = [NewJob(name="noop", queue=queue_name(batch + i), due_at=now)
                for i in range(ENQUEUE_BATCH)]
        samples.enqueue_rows_per_s.append(ENQUEUE_BATCH / _timed(store.enqueue, jobs, now))
    for i in range(SINGLE_ENQUEUES_PER_ROUND):
        now = clock.now()
        job = [NewJob(name="noop", queue=queue_name(i), due_at=now)]
        samples.enqueue_one.append(_timed(store.enqueue, job, now))
    # The counts every view reads.
    samples.queue_infos.append(_timed(store.queue_infos, clock.now()))
    samples.count_jobs.append(_timed(store.count_jobs))
    # `rota jobs --newest`, with and without filters.
    variants: dict[str, dict[str, Any]] = {
        "all": {}, "queue": {"queue": queue_name(round_index)},
        "succeeded": {"state": rota.JobState.SUCCEEDED},
        "scheduled": {"state": rota.JobState.SCHEDULED},
    }
    for what, filters in variants.items():
        samples.newest.setdefault(what, []).append(
            _timed(store.list_jobs, newest=True, limit=NEWEST_LIMIT, **filters))


def run_all(kinds: Sequence[str], sizes: Sequence[int], rounds: int,
            keep: Path | None) -> list[Samples]:
    folder = keep or Path(os.environ.get("SCALE_DIR", "/tmp/scale"))
    folder.mkdir(parents=True, exist_ok=True)
    start = datetime.now(UTC) - SPAN - timedelta(hours=1)
    opened: list[tuple[Store, Samples]] = []
    try:
        for kind in kinds:
            for rows in sizes:
                print(f"  building {kind} {rows:,} rows", end="", flush=True)
                if kind == "postgres":
                    url, build_s = build_postgres(rows, start, keep=keep is not None)
                else:
                    url, build_s = build_sqlite(rows, start, folder, keep=keep is not None)
                samples = Samples(kind, rows, build_s)
                began = time.perf_counter()
                samples.migrated = _migrate(url)  # a kept table of an older tree: timed
                samples.migrate_s = time.perf_counter() - began
                print(f": {'reused' if build_s is None else f'{build_s:.0f} s'}, "
                      f"migrations {samples.migrated or 'none'} in {samples.migrate_s:.2f} s",
                      flush=True)
                opened.append((open_store(url), samples))
        for index in range(rounds):
            for store, samples in opened:
                one_round(store, samples, index)
            print(f"  round {index + 1}/{rounds}", flush=True)
    finally:
        for store, _ in opened:
            store.close()
        if keep is None:
            drop_all(sizes, folder)
    return [samples for _, samples in opened]


# -- output -------------------------------------------------------------------------------

COLUMNS = (
    ("claim_p50_ms", "claim p50 ms"), ("claim_p99_ms", "claim p99 ms"),
    ("enqueue_rows_per_s", "enqueue rows/s"), ("enqueue_one_p50_ms", "enqueue 1 p50 ms"),
    ("queue_infos_ms", "queue_infos ms"), ("count_jobs_ms", "count_jobs ms"),
    ("newest_all_ms", "newest ms"), ("newest_queue_ms", "newest Queue ms"),
    ("newest_succeeded_ms", "newest succeeded ms"), ("newest_scheduled_ms", "newest scheduled ms"),
)


def table(summaries: Sequence[dict[str, Any]]) -> str:
    head = "| store | rows | " + " | ".join(label for _, label in COLUMNS) + " |"
    lines = [head, "|---|---:|" + "---:|" * len(COLUMNS)]
    for one in summaries:
        cells = [f"{one[key]:,}" if isinstance(one[key], int) else f"{one[key]:.3g}"
                 for key, _ in COLUMNS]
        lines.append(f"| {one['store']} | {one['rows']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.suites.scale",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=list(DEFAULT_ROWS))
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=10,
                        help=f"rounds per size ({CLAIMS_PER_ROUND} claims each; default 10)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the built tables (SQLite files in DIR) and reuse them")
    parser.add_argument("--drop", action="store_true", help="delete kept tables and exit")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    parser.add_argument("--plot", type=Path, help="write a PNG plot here (matplotlib; "
                        "`python -m benchmarks chart scale JSON` draws an earlier --json)")
    parser.add_argument("--title", default="claim latency against table size")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.drop:
        drop_all(args.rows, args.keep or Path("/tmp/scale"))
        return 0
    kinds = [kind.strip() for kind in args.stores.split(",") if kind.strip()]
    print(f"scale: rows {', '.join(f'{n:,}' for n in args.rows)}; stores {', '.join(kinds)}; "
          f"{args.rounds} rounds; rota from {Path(rota.__file__).parent}", flush=True)
    summaries = [one.summary() for one in run_all(kinds, args.rows, args.rounds, args.keep)]
    print(table(summaries))
    if args.json:
        args.json.write_text(json.dumps({
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "rota": str(Path(rota.__file__).parent), "summaries": summaries}, indent=1) + "\n")
    if args.plot:
        from benchmarks import chart

        chart.scale(summaries, args.plot, args.title)
        print(f"plot: {args.plot}")
    return 0


def run(settings: Any, rows: Sequence[int] = DEFAULT_ROWS) -> Any:
    """The `scale` suite of `python3 -m benchmarks run`: rota only, both durable stores,
    the tables dropped afterwards."""
    from benchmarks.results import Figure, SuiteResult

    suite = SuiteResult()
    results = run_all(["sqlite", "postgres"], rows, 3 if settings.drain_jobs < 100_000 else 10,
                      None)
    for samples in results:
        one = samples.summary()
        subject = f"rota[{samples.store}] {samples.rows:,} rows"
        for key, label in COLUMNS:
            unit = "rows/s" if key.endswith("per_s") else "ms"
            suite.add("scale", subject, label, Figure.of([float(one[key])], unit,
                                                          f"{samples.rows:,} rows"))
    suite.detail["scale"] = [samples.summary() for samples in results]
    return suite


if __name__ == "__main__":
    raise SystemExit(main())
