"""The soak suite's pure parts: the phase schedule, the staggered readers, the 5-second
windows computed from the job records, the figures derived from them (recovery time,
the issue's targets), and what each statement cost per phase (from pg_stat_statements'
totals). No I/O, no clock: the suite passes times in.

Times are seconds since the run's start (the harness converts wall-clock stamps).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from benchmarks.results import percentile

MODES = ("idle_xact", "rr_readers", "slot")
MODE_TITLES = {"idle_xact": "idle in transaction (xid held)",
               "rr_readers": "3 staggered REPEATABLE READ readers",
               "slot": "idle logical replication slot"}


@dataclass(frozen=True, slots=True)
class Phase:
    name: str  # "clean", "held idle_xact", "recovery idle_xact", ...
    kind: str  # "clean", "held", "recovery"
    mode: str  # "" for clean, else one of MODES
    start_s: float
    end_s: float


def schedule(clean_s: float, held_s: float, recovery_s: float,
             modes: Sequence[str] = MODES) -> list[Phase]:
    """Clean, then for each mode a held phase and its recovery, back to back."""
    phases = [Phase("clean", "clean", "", 0.0, clean_s)]
    at = clean_s
    for mode in modes:
        phases.append(Phase(f"held {mode}", "held", mode, at, at + held_s))
        phases.append(Phase(f"recovery {mode}", "recovery", mode, at + held_s,
                            at + held_s + recovery_s))
        at += held_s + recovery_s
    return phases


def phase_at(phases: Sequence[Phase], t: float) -> Phase | None:
    for phase in phases:
        if phase.start_s <= t < phase.end_s:
            return phase
    return None


def reader_intervals(start_s: float, end_s: float, readers: int = 3,
                     life_s: float = 120.0) -> list[tuple[float, float]]:
    """(open, close) of every REPEATABLE READ reader of a held phase: reader i first opens
    i * life/readers after the start, each lives `life_s` and is reopened at once, all
    closed at the phase end; so from the start one is always open."""
    got: list[tuple[float, float]] = []
    for index in range(readers):
        opens = start_s + index * life_s / readers
        while opens < end_s:
            got.append((opens, min(opens + life_s, end_s)))
            opens += life_s
    return sorted(got)


@dataclass(frozen=True, slots=True)
class Job:
    """One job as its handler recorded it, in seconds since the run's start."""

    enqueued_s: float
    started_s: float
    finished_s: float

    @property
    def pickup_s(self) -> float:
        return self.started_s - self.enqueued_s


@dataclass(frozen=True, slots=True)
class Window:
    start_s: float
    end_s: float
    offered_per_s: float
    completed_per_s: float
    backlog: int  # offered minus started, at the window's end
    p50_ms: float  # pickup of the jobs started in the window
    p99_ms: float
    started: int


def offered_at(offers: Sequence[tuple[float, int]], t: float) -> int:
    """Cumulative jobs offered by time t, from the producer's (time, cumulative) ticks."""
    got = 0
    for at, cumulative in offers:
        if at > t:
            break
        got = cumulative
    return got


def windows(jobs: Sequence[Job], offers: Sequence[tuple[float, int]], end_s: float,
            width_s: float = 5.0) -> list[Window]:
    """The run cut into `width_s` windows from 0 to `end_s` (the last may be shorter)."""
    count = max(1, math.ceil(end_s / width_s - 1e-9))
    starts: list[list[float]] = [[] for _ in range(count)]
    finished = [0] * count
    started_before = [0] * (count + 1)  # jobs started before window i's end, cumulative
    for job in jobs:
        i = int(job.started_s // width_s)
        if 0 <= i < count:
            starts[i].append(job.pickup_s)
        j = int(job.finished_s // width_s)
        if 0 <= j < count:
            finished[j] += 1
    running = sum(1 for job in jobs if job.started_s < 0)
    got: list[Window] = []
    for i in range(count):
        a, b = i * width_s, min((i + 1) * width_s, end_s)
        running += len(starts[i])
        started_before[i + 1] = running
        span = max(b - a, 1e-9)
        pickups = sorted(starts[i])
        got.append(Window(a, b, (offered_at(offers, b) - offered_at(offers, a)) / span,
                          finished[i] / span, offered_at(offers, b) - running,
                          percentile(pickups, 0.50) * 1e3, percentile(pickups, 0.99) * 1e3,
                          len(pickups)))
    return got


def pickups_between(jobs: Sequence[Job], start_s: float, end_s: float) -> list[float]:
    """Sorted pickup latencies (s) of the jobs started in [start_s, end_s)."""
    return sorted(job.pickup_s for job in jobs if start_s <= job.started_s < end_s)


def near_zero(rate: float) -> int:
    """A backlog small enough to call none: what 0.1 s of the offered rate adds (80 jobs
    at 800 jobs/s), at least 20 (one worker pool's worth in flight)."""
    return max(20, round(rate * 0.1))


def recovery_s(series: Sequence[Window], held_end_s: float, clean_p99_ms: float,
               backlog_limit: int, factor: float = 1.5) -> float | None:
    """Seconds from the held phase's end to the end of the first window after it whose
    pickup p99 is within `factor` of the clean p99 and whose backlog is at most
    `backlog_limit`; None if no window after it is."""
    for window in series:
        if window.start_s < held_end_s - 1e-9:
            continue
        if (window.started and window.p99_ms <= factor * clean_p99_ms
                and window.backlog <= backlog_limit):
            return window.end_s - held_end_s
    return None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The issue's targets for one held phase of one system."""

    keeps_up: bool  # completed/s equals the offered rate: no backlog growth
    p99_within_3x: bool
    back_within_60s: bool

    @property
    def all(self) -> bool:
        return self.keeps_up and self.p99_within_3x and self.back_within_60s


def verdict(backlog_growth: int, backlog_limit: int, p99_ratio: float,
            recovered_s: float | None) -> Verdict:
    return Verdict(backlog_growth <= backlog_limit, p99_ratio <= 3.0,
                   recovered_s is not None and recovered_s <= 60.0)


# -- statements ---------------------------------------------------------------------------

# What pg_stat_statements replaces by $1, $2, ... (constants) and what a client sends in
# their place (psycopg's %(name)s and %s), and comments: left out of a statement's words.
_NOT_WORDS = re.compile(r"--[^\n]*|'(?:[^']|'')*'|%\(\w+\)s|%s|\$\d+|\b\d+(?:\.\d+)?\b"
                        r"|\b(?:true|false|null)\b", re.IGNORECASE)
LABEL_CHARS = 60


def statement_words(text: str) -> tuple[str, ...]:
    """The identifiers and keywords of a statement, lower case, in order: the text
    pg_stat_statements keeps of a statement and the text its client sent give the same
    words, so a statement is known by them (its constants, parameters and comments are
    left out)."""
    return tuple(re.findall(r"[a-z_][a-z0-9_]*", _NOT_WORDS.sub(" ", text.lower())))


def statement_label(text: str, known: Mapping[tuple[str, ...], str]) -> str:
    """The name `known` gives the statement's words, else its text's first LABEL_CHARS
    characters on one line."""
    return known.get(statement_words(text)) or " ".join(text.split())[:LABEL_CHARS]


Totals = Mapping[str, tuple[int, float]]  # statement -> cumulative calls, execution ms


@dataclass(frozen=True, slots=True)
class StatementFigures:
    calls_per_s: float
    mean_ms: float  # over the phase
    worst_mean_ms: float  # the highest mean of one interval between two samples
    total_ms: float


def phase_statements(samples: Sequence[tuple[float, Totals]], start_s: float,
                     end_s: float) -> dict[str, StatementFigures]:
    """Per statement called between `start_s` and `end_s`: what it cost, from the
    cumulative totals sampled at the times given (in order). An interval counts in the
    phase when its later sample falls in it; a statement's totals that went down (reset)
    count from zero."""
    calls: dict[str, int] = {}
    spent: dict[str, float] = {}
    worst: dict[str, float] = {}
    seconds = 0.0
    for (t_before, before), (t, now) in pairwise(samples):
        if not start_s < t <= end_s + 1e-6:
            continue
        seconds += t - t_before
        for name, (count, ms) in now.items():
            count_before, ms_before = before.get(name, (0, 0.0))
            if count < count_before:
                count_before, ms_before = 0, 0.0
            if count > count_before:
                calls[name] = calls.get(name, 0) + count - count_before
                spent[name] = spent.get(name, 0.0) + ms - ms_before
                worst[name] = max(worst.get(name, 0.0),
                                  (ms - ms_before) / (count - count_before))
    return {name: StatementFigures(calls[name] / seconds, spent[name] / calls[name],
                                   worst[name], spent[name])
            for name in calls}
