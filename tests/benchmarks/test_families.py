"""The families benchmark's pure parts (benchmarks/suites/families.py): the sizes and
names, the figures, the reads of an EXPLAIN plan, the table; and its one SQL shortcut, the
bulk insert of members, on a small SQLite file: the store must know exactly the members
written, and count their jobs. No worker is started here; the suite itself runs with
`python -m benchmarks run families`."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.suites import families
from benchmarks.targets.rota_target import RotaTarget
from benchmarks.workers import read_labelled_pickups
from rota.core.jobs import JobState


def test_due_members_are_spread_evenly_over_the_members() -> None:
    assert families.due_members(10, 5) == [
        "tenant-000000", "tenant-000002", "tenant-000004", "tenant-000006", "tenant-000008"]
    assert len(families.due_members(100_000, 1_000)) == 1_000
    assert families.due_members(100_000, 1_000)[-1] == "tenant-099900"
    assert families.member(99_999) == "tenant-099999"


@pytest.mark.parametrize(("members", "due"), [(10, 0), (10, 11), (2_000_000, 10)])
def test_due_members_refuses_sizes_it_cannot_name(members: int, due: int) -> None:
    with pytest.raises(ValueError, match="families: "):
        families.due_members(members, due)


def test_jobs_are_spread_round_robin() -> None:
    assert families.spread(5, ["a", "b"]) == ["a", "b", "a", "b", "a"]
    assert families.spread(3, ["solo"]) == ["solo"] * 3


def test_ratio_and_median_leave_missing_figures_out() -> None:
    assert families.ratio(3.0, 2.0) == 1.5
    assert math.isnan(families.ratio(1.0, 0.0))
    assert math.isnan(families.ratio(math.nan, 2.0))
    assert families.median([3.0, math.nan, 1.0, 2.0]) == 2.0
    assert families.median([4.0, 1.0]) == 2.5
    assert math.isnan(families.median([math.nan]))


def test_pickup_figures_are_nearest_rank_percentiles_and_ratios_new_over_known() -> None:
    pickups = {"new": [0.001 * n for n in range(1, 101)],
               "known": [0.002 * n for n in range(1, 101)]}
    figures = families.pickup_figures(pickups)
    assert figures["new"] == {"count": 100.0, "p50_ms": pytest.approx(50.0),
                              "p99_ms": pytest.approx(99.0)}
    assert figures["known"]["p50_ms"] == pytest.approx(100.0)
    assert figures["ratio"] == {"p50_ms": pytest.approx(0.5), "p99_ms": pytest.approx(0.5)}
    missing = families.pickup_figures({"new": [0.01]})
    assert missing["known"]["count"] == 0 and math.isnan(missing["ratio"]["p99_ms"])


def test_plan_reads_sums_the_rows_every_scan_returned_over_its_loops() -> None:
    plan = {
        "Node Type": "Limit", "Actual Rows": 20, "Actual Loops": 1,
        "Shared Hit Blocks": 311, "Shared Read Blocks": 4,
        "Plans": [
            {"Node Type": "Index Only Scan", "Actual Rows": 1, "Actual Loops": 101},
            {"Node Type": "Nested Loop", "Actual Rows": 20, "Actual Loops": 1, "Plans": [
                {"Node Type": "Index Scan", "Actual Rows": 20, "Actual Loops": 1},
                {"Node Type": "Function Scan", "Actual Rows": 1, "Actual Loops": 3}]},
        ],
    }
    assert families.plan_reads(plan) == {"rows_scanned": 124.0, "largest_scan_rows": 101.0,
                                         "buffers_hit": 311.0, "buffers_read": 4.0}


def test_only_queries_and_data_changes_are_explained() -> None:
    assert families.explainable("-- a comment\n\nWITH RECURSIVE walk(queue) AS (...)")
    assert families.explainable("SELECT 1")
    assert families.explainable("UPDATE rota.jobs SET ...")
    assert not families.explainable("SET TIME ZONE 'UTC'")
    assert not families.explainable("BEGIN")
    assert families.statement_head("-- what it does\n  SELECT queue\nFROM x") == "SELECT queue"


def test_labelled_pickups_are_read_back_sorted_by_label(tmp_path: Path) -> None:
    path = tmp_path / "pickups.txt"
    assert read_labelled_pickups(path) == {}
    path.write_text("new 0.030000\nknown 0.010000\nnew 0.020000\nwarmup 1.5\n")
    assert read_labelled_pickups(path) == {"new": [0.02, 0.03], "known": [0.01],
                                           "warmup": [1.5]}


def test_the_table_has_one_line_per_store_and_a_dash_for_a_missing_figure() -> None:
    row = {"store": "rota[sqlite]", "family_jobs_s": 2_345.6, "listed_jobs_s": 2_400.0,
           "one_jobs_s": 3_000.0, "listed_ratio": 0.97733,
           "drain_ratio": 0.78187, "new_p50_ms": 4.25, "new_p99_ms": 19.0,
           "known_p50_ms": 3.0, "known_p99_ms": math.nan, "p50_ratio": 1.41667,
           "p99_ratio": math.nan, "family_rss_mib": 61.23, "one_rss_mib": 55.0,
           "members_held": 1_000.0}
    lines = families.markdown_table([row]).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("| store | family jobs/s | listed jobs/s | one Queue jobs/s | "
                               "family / listed | family / one Queue (>= 0.6)")
    assert lines[2] == ("| rota[sqlite] | 2,346 | 2,400 | 3,000 | 0.98 | 0.78 | 4.2 / 19.0 | "
                        "3.0 / - | 1.42 / - | 61.2 / 55.0 | 1,000 |")


def test_the_reads_table_lines_up_the_statements_of_each_member_count() -> None:
    def read(name: str, rows: float) -> dict[str, object]:
        return {"statement": name, "rows_scanned": rows, "largest_scan_rows": rows,
                "buffers_hit": 10.0, "buffers_read": 2.0, "execution_ms": 1.234}

    table = families.reads_table({
        100_000: [read("due_queues", 4_999.0), read("claim", 160.0)],
        10_000: [read("due_queues", 5_001.0)]})
    assert table.splitlines() == [
        "| statement | rows read, 10,000 members | rows read, 100,000 members | "
        "buffers, 100,000 members | ms, 100,000 members |",
        "|---|---:|---:|---:|---:|",
        "| due_queues | 5,001 | 4,999 | 12 | 1.23 |",
        "| claim | - | 160 | 12 | 1.23 |"]


def test_bulk_members_are_known_to_the_store_and_counted(tmp_path: Path) -> None:
    target = RotaTarget("sqlite")
    target.url = f"sqlite:///{tmp_path / 'families.db'}"
    from benchmarks.workers.rota_app import make_app

    app = make_app(target.url)
    try:
        app.store.count_jobs()  # migrates
    finally:
        app.close()
    families.insert_members(target, 25)
    assert families.known_members(target.url) == 25
    from rota.store import open_store

    store = open_store(target.url)
    try:
        assert store.count_jobs() == {(families.member(n), JobState.SUCCEEDED): 1
                                      for n in range(25)}
        infos = {info.name for info in store.queue_infos(datetime.now(UTC))}
        assert infos == {families.member(n) for n in range(25)}
        assert store.due_queues([families.PREFIX], datetime.now(UTC)) == []
    finally:
        store.close()
