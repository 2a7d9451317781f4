"""`rota demo --tenants N`: one noisy tenant and many small ones under one Weighted group.

One Queue per tenant, all of weight 1, served by one Weighted group of `POOL_SIZE` Workers
on the demo's SQLite file. `tenant-noisy` enqueues a backlog larger than the run can
drain, *before* the N - 1 small tenants enqueue a few jobs each: behind one shared FIFO
Queue they would wait for the whole noisy backlog. Under Weighted every tenant with due
work gets the same share of claim opportunity, so the small tenants are served at once,
and the noisy one has the Workers to itself as soon as they are done.

The final table shows, for the noisy tenant and for the small ones together: weight,
backlog, jobs served, the share of the Workers while the small tenants still had work
against their weight share, and the time to each tenant's first job.

Imports the public API, rich and the demos' shared live run (rota.cli.demo_live).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

import rota
from rota.cli.demo_live import serve_live
from rota.cli.display import line, print_whole, user_text

POOL_SIZE = 4
NOISY = "tenant-noisy"
GROUP = "tenants"


def small_tenants(count: int) -> list[str]:
    """The small tenants' Queue names (`count` of them)."""
    width = len(str(count))
    return [f"tenant-{number:0{width}d}" for number in range(1, count + 1)]


def small_backlog(tenants: int, ceiling: float) -> int:
    """Jobs per small tenant: up to 3, fewer when there are so many tenants that their
    jobs together would take more than about 40 % of the run."""
    return max(1, min(3, int(ceiling * 0.4 / tenants)))


@dataclass
class TenantTally:
    """Served jobs per Queue, and when, from outcome events (the event loop's thread)."""

    small_jobs: int  # the small tenants' jobs in all
    served: Counter[str] = field(default_factory=Counter)
    first_at: dict[str, float] = field(default_factory=dict)
    small_served: int = 0
    # When the small tenants' last job finished, and what the noisy one had served then.
    small_done_at: float | None = None
    noisy_by_then: int = 0
    began: float = field(default_factory=time.monotonic)

    def __call__(self, event: rota.OutcomeEvent) -> None:
        now = time.monotonic() - self.began
        queue = event.queue
        self.served[queue] += 1
        self.first_at.setdefault(queue, now)
        if queue != NOISY:
            self.small_served += 1
            if self.small_served == self.small_jobs:
                self.small_done_at = now
                self.noisy_by_then = self.served[NOISY]


async def run_tenants_demo(
    app: rota.App, tenants: int, seconds: float, work_s: float, console: Console
) -> None:
    """Enqueue, run the group for `seconds` with live bars, print the table."""
    @app.job("demo.tenant-work")
    def work() -> None:
        time.sleep(work_s)  # stands for a few milliseconds of real work

    names = small_tenants(tenants - 1)
    ceiling = POOL_SIZE / max(work_s, 0.001) * seconds  # more than the run can serve
    per_small = small_backlog(len(names), ceiling)
    noisy_backlog = int(ceiling)
    with console.status("enqueueing the backlog..."):
        work.configure(queue=NOISY).enqueue_many([()] * noisy_backlog)
        for name in names:  # after the noisy backlog: FIFO would serve them last
            work.configure(queue=name).enqueue_many([()] * per_small)

    app.add_worker_group(rota.WorkerGroupOptions(
        name=GROUP, policy=rota.Weighted([(NOISY, 1)] + [(name, 1) for name in names]),
        pool_size=POOL_SIZE))
    tally = TenantTally(small_jobs=per_small * len(names))
    app.on_outcome(tally)

    progress = Progress(TextColumn("[bold]{task.description:<24}"), BarColumn(bar_width=40),
                        MofNCompleteColumn(), console=console)
    noisy_bar = progress.add_task(NOISY, total=noisy_backlog)
    small_bar = progress.add_task(f"{len(names)} small tenants", total=tally.small_jobs)
    console.print(line(("rota demo --tenants", "bold"),
                       f": {tenants} tenant Queues under one Weighted group of {POOL_SIZE} "
                       "Workers on ", user_text(app.store.url),
                       f", jobs of {work_s * 1000:.0f} ms, for {seconds:.0f} s"))

    def refresh() -> None:
        progress.update(noisy_bar, completed=tally.served[NOISY])
        progress.update(small_bar, completed=tally.small_served)

    elapsed = await serve_live(app, progress, seconds, tally, refresh)
    report(console, tally, names, noisy_backlog, per_small, elapsed)


def report(
    console: Console, tally: TenantTally, names: list[str], noisy_backlog: int,
    per_small: int, elapsed: float,
) -> None:
    tenants = len(names) + 1
    small_firsts = [tally.first_at[name] for name in names if name in tally.first_at]
    table = Table(title="Tenants served", title_justify="left")
    for column in ("tenant", "weight", "backlog", "served", "share while small had work",
                   "weight share", "first job after"):
        table.add_column(column, justify="left" if column == "tenant" else "right")
    if tally.small_done_at is not None:
        contended = tally.noisy_by_then + tally.small_jobs
        noisy_share = f"{tally.noisy_by_then / contended:.1%}"
        small_share = f"{tally.small_jobs / contended:.1%}"
    else:
        noisy_share = small_share = "-"
    noisy_first = tally.first_at.get(NOISY)
    table.add_row(NOISY, "1", str(noisy_backlog), str(tally.served[NOISY]), noisy_share,
                  f"{1 / tenants:.1%}", "-" if noisy_first is None else f"{noisy_first:.2f} s")
    firsts = ("-" if not small_firsts else
              f"median {statistics.median(small_firsts):.2f} s, max {max(small_firsts):.2f} s")
    table.add_row(f"{len(names)} small tenants", "1 each", f"{per_small} each",
                  str(tally.small_served), small_share, f"{len(names) / tenants:.1%}", firsts)
    print_whole(console, table)

    total = sum(tally.served.values())
    if tally.small_done_at is not None:
        console.print(
            f"Every small tenant was served: all {len(names)} had their first job within "
            f"{max(small_firsts):.2f} s and their last by {tally.small_done_at:.2f} s, "
            f"while {NOISY} had {noisy_backlog} jobs queued ahead of them. Behind one "
            f"shared FIFO Queue their first jobs would have waited for all of those "
            f"(~{noisy_backlog * elapsed / max(total, 1):.0f} s at this run's rate).")
    else:
        console.print(
            f"{len(small_firsts)} of {len(names)} small tenants were served in "
            f"{elapsed:.1f} s; give the demo more --seconds to see them all done.")
    console.print(f"Throughput: {total} jobs in {elapsed:.1f} s = "
                  f"[bold]{total / elapsed:.0f} jobs/s[/].")
