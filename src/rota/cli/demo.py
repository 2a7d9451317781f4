"""`rota demo`: Strict and Weighted Worker Groups at work, live, on an embedded SQLite file.

Recreates the SQLite file (default `./rota-demo.db`), enqueues a backlog into five Queues,
runs two groups for `--seconds` with the real runtime, shows a live progress bar per Queue,
then prints the served shares against the weights (and Strict's order) and throughput.

- group `priority`: Strict("critical", "bulk"). critical's backlog drains first; bulk is
  served only once critical has no due work.
- group `fair`: Weighted 6:3:1 over a, b, c, each with the same, never-exhausted backlog:
  the bars fill at 6:3:1 and the served shares match the weights.

`--tenants N` runs the tenant demo instead (rota.cli.demo_tenants): one Queue per tenant
under one Weighted group, a noisy tenant's huge backlog ahead of N-1 small tenants.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

import rota
from rota.cli.common import UsageError, whole_number
from rota.cli.demo_live import serve_live
from rota.cli.demo_tenants import run_tenants_demo
from rota.cli.display import line, make_console, print_whole, user_text
from rota.store import StoreConfigError, StoreError

WEIGHTS = (("a", 6), ("b", 3), ("c", 1))
POOL_SIZE = 4
MAX_TENANTS = 10_000


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="watch Strict and Weighted groups at work on an embedded SQLite file",
        description="Enqueue a backlog into five Queues of an embedded SQLite file, run a "
        "Strict and a Weighted 6:3:1 Worker Group for a while with live progress bars, "
        "then show the served shares against the weights.",
    )
    parser.add_argument("--seconds", type=float, default=12.0,
                        help="how long the groups run (default 12)")
    parser.add_argument("--db", default="rota-demo.db",
                        help="the SQLite file, recreated each run (default ./rota-demo.db)")
    parser.add_argument("--work-ms", type=float, default=4.0,
                        help="how long each demo job works, in milliseconds (default 4)")
    parser.add_argument("--tenants", type=whole_number(2, MAX_TENANTS), metavar="N",
                        help="instead: N tenant Queues under one Weighted group, one noisy "
                        "tenant with a huge backlog and N-1 small ones enqueued behind it "
                        f"(N from 2 to {MAX_TENANTS:,})")
    parser.set_defaults(func=run)


@dataclass
class Tally:
    """Served jobs per Queue, from outcome events (the event loop's thread only)."""

    served: Counter[str] = field(default_factory=Counter)
    first_at: dict[str, float] = field(default_factory=dict)
    last_at: dict[str, float] = field(default_factory=dict)
    began: float = field(default_factory=time.monotonic)

    def __call__(self, event: rota.OutcomeEvent) -> None:
        now = time.monotonic() - self.began
        self.served[event.queue] += 1
        self.first_at.setdefault(event.queue, now)
        self.last_at[event.queue] = now


def run(args: argparse.Namespace) -> int:
    if not 0 < args.seconds <= 3600:
        raise UsageError(f"--seconds must be more than 0 and at most 3600; got {args.seconds}")
    if not 0 <= args.work_ms <= 1000:
        raise UsageError(f"--work-ms must be between 0 and 1000; got {args.work_ms}")
    path = Path(args.db)
    _remove_previous_demo(path)
    console = make_console()
    try:
        app = rota.App(f"sqlite:///{path}")
        _mark_as_demo(path)
    except (StoreError, StoreConfigError) as error:
        raise UsageError(f"--db {args.db!r}: {error}") from None
    try:
        if args.tenants is not None:
            asyncio.run(run_tenants_demo(app, args.tenants, args.seconds, args.work_ms / 1000,
                                         console))
        else:
            asyncio.run(_demo(app, args.seconds, args.work_ms / 1000, console))
    finally:
        app.close()
    return 0


# Stamped into the demo's SQLite file (PRAGMA application_id), so that a rerun deletes only
# a file it made itself and never a user's store or any other file given as --db.
DEMO_APPLICATION_ID = 0x726F7461  # "rota"


def _application_id(path: Path) -> int | None:
    """The file's SQLite application_id, or None if it is not an SQLite database."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        ) as conn:
            row = conn.execute("PRAGMA application_id").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row is not None else None


def _remove_previous_demo(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"--db {str(path)!r} is a directory; give a file name")
    if not path.exists():
        return
    if _application_id(path) != DEMO_APPLICATION_ID:
        raise UsageError(
            f"--db {str(path)!r} exists and is not a database made by rota demo; refusing to "
            "overwrite it. Give another --db, or remove the file yourself"
        )
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)


def _mark_as_demo(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA application_id = {DEMO_APPLICATION_ID}")
        conn.commit()


async def _demo(app: rota.App, seconds: float, work_s: float, console: Console) -> None:
    @app.job("demo.work")
    def work() -> None:
        time.sleep(work_s)  # stands for a few milliseconds of real work

    # Backlogs sized from an upper bound on throughput, so a, b and c never run dry (their
    # shares stay visible to the end) while critical drains in about a third of the run.
    ceiling = POOL_SIZE / max(work_s, 0.001) * seconds
    backlog = {"critical": int(ceiling / 4), "bulk": int(ceiling)}
    backlog.update({queue: int(ceiling * 0.75) for queue, _ in WEIGHTS})
    with console.status("enqueueing the backlog..."):
        for queue, count in backlog.items():
            work.configure(queue=queue).enqueue_many([()] * count)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="priority", policy=rota.Strict("critical", "bulk"), pool_size=POOL_SIZE))
    app.add_worker_group(rota.WorkerGroupOptions(
        name="fair", policy=rota.Weighted(list(WEIGHTS)), pool_size=POOL_SIZE))
    tally = Tally()
    app.on_outcome(tally)

    progress = Progress(
        TextColumn("{task.fields[group]:>9} [bold]{task.description:<8}"),
        BarColumn(bar_width=40), MofNCompleteColumn(), console=console,
    )
    bars = {
        "critical": progress.add_task("critical", total=backlog["critical"], group="strict"),
        "bulk": progress.add_task("bulk", total=backlog["bulk"], group="strict"),
    }
    for queue, weight in WEIGHTS:
        bars[queue] = progress.add_task(
            f"{queue} ({weight})", total=backlog[queue], group="weighted")
    console.print(line(("rota demo", "bold"), f": two Worker Groups of {POOL_SIZE} Workers on ",
                       user_text(app.store.url),
                       f", jobs of {work_s * 1000:.0f} ms, for {seconds:.0f} s"))

    def refresh() -> None:
        for queue, bar in bars.items():
            progress.update(bar, completed=tally.served[queue])

    elapsed = await serve_live(app, progress, seconds, tally, refresh)
    _report(console, tally, backlog, elapsed)


def _report(console: Console, tally: Tally, backlog: dict[str, int], elapsed: float) -> None:
    fair_total = sum(tally.served[q] for q, _ in WEIGHTS)
    weight_total = sum(w for _, w in WEIGHTS)
    table = Table(title="Served shares", title_justify="left")
    for column in ("group", "Queue", "policy", "expected", "served", "share"):
        table.add_column(column, justify="right" if column in ("served", "share") else "left")
    for queue, weight in WEIGHTS:
        share = tally.served[queue] / fair_total if fair_total else 0.0
        table.add_row("fair", queue, f"weight {weight}", f"{weight / weight_total:.0%}",
                      str(tally.served[queue]), f"{share:.1%}")
    strict_total = tally.served["critical"] + tally.served["bulk"]
    for order, queue in enumerate(("critical", "bulk"), 1):
        share = tally.served[queue] / strict_total if strict_total else 0.0
        expected = "all while due" if order == 1 else "only when critical is empty"
        table.add_row("priority", queue, f"strict #{order}", expected,
                      str(tally.served[queue]), f"{share:.1%}")
    print_whole(console, table)

    drained = tally.served["critical"] >= backlog["critical"]
    if drained and "bulk" in tally.first_at:
        console.print(
            f"Strict: critical's {backlog['critical']} jobs were served first (drained at "
            f"{tally.last_at['critical']:.1f} s); bulk's first job finished at "
            f"{tally.first_at['bulk']:.1f} s.")
    else:
        console.print("Strict: critical never ran dry, so bulk was starved, as Strict "
                      "promises.")
    total = fair_total + strict_total
    console.print(
        f"Throughput: {total} jobs in {elapsed:.1f} s = [bold]{total / elapsed:.0f} jobs/s[/] "
        f"(fair {fair_total / elapsed:.0f}/s, priority {strict_total / elapsed:.0f}/s).")
