"""The soak benchmark's pure parts (benchmarks/soak_plan.py and the producer's ticks):
the phase schedule, the staggered readers, the 5-second windows, recovery detection, the
statements' figures; and its options on rota's store (the CLI, the preload and the Queue
limit, on the test server). No cluster is started here; the suite itself runs with
`python -m benchmarks run soak`."""

from __future__ import annotations

import math

import pytest

from benchmarks import soak_plan
from benchmarks.soak_plan import Job, Window
from benchmarks.workers.soak_producer import tick_sizes


def test_schedule_puts_a_held_phase_and_its_recovery_after_clean_for_each_mode() -> None:
    phases = soak_plan.schedule(60, 120, 60)
    assert [(p.name, p.start_s, p.end_s) for p in phases] == [
        ("clean", 0, 60),
        ("held idle_xact", 60, 180), ("recovery idle_xact", 180, 240),
        ("held rr_readers", 240, 360), ("recovery rr_readers", 360, 420),
        ("held slot", 420, 540), ("recovery slot", 540, 600)]
    assert soak_plan.phase_at(phases, 180.0).name == "recovery idle_xact"
    assert soak_plan.phase_at(phases, 600.0) is None


def test_readers_are_staggered_so_that_one_is_always_open_until_the_phase_ends() -> None:
    intervals = soak_plan.reader_intervals(100, 400, readers=3, life_s=120)
    assert intervals[:3] == [(100, 220), (140, 260), (180, 300)]
    assert all(end <= 400 for _, end in intervals)
    for t in range(100, 400):
        open_now = [iv for iv in intervals if iv[0] <= t < iv[1]]
        assert 1 <= len(open_now) <= 3


def test_tick_sizes_add_up_to_the_rate_with_a_fractional_rate_per_tick() -> None:
    assert sum(tick_sizes(800, 0.02, k) for k in range(50)) == 800
    assert sum(tick_sizes(130, 0.02, k) for k in range(500)) == 1300
    assert {tick_sizes(130, 0.02, k) for k in range(500)} == {2, 3}


def test_windows_count_completions_by_end_and_pickups_by_start() -> None:
    jobs = [Job(0.0, 0.5, 0.6), Job(1.0, 4.9, 5.1), Job(6.0, 6.2, 6.3)]
    offers = [(0.0, 1), (1.0, 2), (6.0, 3), (7.0, 4)]  # the fourth never started
    first, second = soak_plan.windows(jobs, offers, end_s=10.0, width_s=5.0)
    assert (first.completed_per_s, first.started, first.backlog) == (1 / 5, 2, 0)
    assert first.p50_ms == 500.0  # nearest rank of [0.5 s, 3.9 s]
    assert math.isclose(first.p99_ms, 3900.0)
    assert (second.completed_per_s, second.started, second.backlog) == (2 / 5, 1, 1)
    assert second.offered_per_s == 2 / 5


def test_windows_without_a_start_have_no_percentile() -> None:
    (window,) = soak_plan.windows([], [(1.0, 5)], end_s=5.0)
    assert window.backlog == 5 and window.started == 0 and math.isnan(window.p99_ms)


def _window(start: float, p99: float, backlog: int) -> Window:
    return Window(start, start + 5, 800, 800, backlog, p99 / 2, p99, 4000)


def test_recovery_is_the_first_window_after_the_held_phase_back_to_clean_figures() -> None:
    series = [_window(0, 900, 5000),  # held: ignored
              _window(100, 400, 3000), _window(105, 20, 500), _window(110, 14, 10),
              _window(115, 12, 0)]
    assert soak_plan.recovery_s(series, held_end_s=100, clean_p99_ms=10, backlog_limit=80) == 15
    assert soak_plan.recovery_s(series[:3], 100, 10, 80) is None


def test_verdict_holds_each_target_apart() -> None:
    assert soak_plan.verdict(0, 80, 2.9, 60.0).all
    v = soak_plan.verdict(5000, 80, 18.0, None)
    assert not (v.keeps_up or v.p99_within_3x or v.back_within_60s)
    assert soak_plan.near_zero(800) == 80 and soak_plan.near_zero(50) == 20


@pytest.mark.parametrize("store_kind", ["postgres"])
def test_preload_fills_rota_table_with_counted_succeeded_jobs(store_url: str) -> None:
    from benchmarks.suites.soak import preload
    from rota.core.jobs import JobState
    from rota.store import open_store

    store = open_store(store_url)
    try:
        store.migrate()
        rows = 7
        preload(store_url, rows, chunk=3)  # three INSERTs, the last of one row
        assert store.count_jobs() == {("bench", JobState.SUCCEEDED): rows}
        (newest,) = store.list_jobs(limit=1, state=JobState.SUCCEEDED)
        assert newest.finished_at is not None and newest.name == "soak"
    finally:
        store.close()


# What a client sends and what pg_stat_statements keeps of it: every constant a $n.
SENT = """-- the leases that ran out
SELECT id FROM "rota".jobs
WHERE state = 'leased' AND lease_expires_at <= %(now)s AND NOT cancel_requested = true
LIMIT 20"""
KEPT = ('SELECT id FROM "rota".jobs WHERE state = $1 AND lease_expires_at <= $2 '
        'AND NOT cancel_requested = $3 LIMIT $4')


def test_a_statement_is_known_by_its_words_sent_or_kept_by_pg_stat_statements() -> None:
    assert soak_plan.statement_words(SENT) == soak_plan.statement_words(KEPT)
    known = {soak_plan.statement_words(SENT): "find_expired_leases"}
    assert soak_plan.statement_label(KEPT, known) == "find_expired_leases"
    other = KEPT.replace("lease_expires_at", "due_at")
    assert soak_plan.statement_label(other, known) == other[:soak_plan.LABEL_CHARS]


def test_each_of_rotas_postgres_statements_has_words_of_its_own() -> None:
    from benchmarks.suites.soak import known_statements, system
    from rota.store.postgres.schema import FILES

    assert sorted(known_statements(system("rota")).values()) == FILES.names()


def test_a_phase_counts_each_statement_over_the_intervals_that_end_in_it() -> None:
    samples = [(0.0, {"claim": (100, 20.0)}),
               (5.0, {"claim": (600, 120.0), "sweep": (1, 0.5)}),  # clean: ends at 5
               (10.0, {"claim": (1100, 420.0), "sweep": (1, 0.5)}),
               (15.0, {"claim": (1600, 520.0), "sweep": (2, 30.5)})]
    clean = soak_plan.phase_statements(samples, 0.0, 5.0)
    assert clean["claim"] == soak_plan.StatementFigures(100.0, 0.2, 0.2, 100.0)
    assert clean["sweep"].calls_per_s == 0.2
    held = soak_plan.phase_statements(samples, 5.0, 15.0)
    assert held["claim"] == soak_plan.StatementFigures(100.0, 0.4, 0.6, 400.0)
    assert held["sweep"] == soak_plan.StatementFigures(0.1, 30.0, 30.0, 30.0)
    # Totals that went down (pg_stat_statements_reset) count from zero.
    reset = [*samples, (20.0, {"claim": (50, 5.0)})]
    assert soak_plan.phase_statements(reset, 15.0, 20.0)["claim"].mean_ms == 0.1


def test_the_soak_options_on_rotas_store_refuse_the_peers_and_a_limit_under_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.cli import parse, soak_settings
    from benchmarks.settings import Settings

    args = parse(["run", "soak", "--systems", "rota", "rota-3p", "--queue-limit", "1000"])
    assert soak_settings(Settings(), args).soak_queue_limit == 1000
    for wrong, said in ((["--systems", "rota", "pgqueuer", "--queue-limit", "9"],
                         "--queue-limit is about rota's store"),
                        (["--systems", "rota", "--queue-limit", "0"], "at least 1 job"),
                        (["--preload", "9"], "--preload is about rota's store")):
        with pytest.raises(SystemExit):
            parse(["run", "soak", *wrong])
        assert said in capsys.readouterr().err


@pytest.mark.parametrize("store_kind", ["postgres"])
def test_queue_limit_limits_the_queue_rotas_soak_jobs_go_to(store_url: str) -> None:
    from datetime import UTC, datetime

    from benchmarks.suites.soak import limit_queue
    from benchmarks.workers.rota_app import make_app

    app = make_app(store_url)
    try:
        app.store.migrate()
        limit_queue(store_url, 1000)
        limits = {info.name: info.limit for info in app.store.queue_infos(datetime.now(UTC))}
        assert limits[app.jobs["soak"].queue] == 1000
    finally:
        app.store.close()
