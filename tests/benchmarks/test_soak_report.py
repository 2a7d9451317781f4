"""The soak report (benchmarks/soak_report.py): the merge of separate runs (a full run takes
~130 minutes a system, so one comparison's systems may come from separate runs, drawn and
tabled together only when their rate and phases are the same), and the statements' table."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.soak_report import SETTINGS_ADDED, merged, statements_markdown

SETTINGS = {"soak_rate": 800.0, "soak_clean_s": 600.0, "soak_held_s": 1800.0,
            "soak_recovery_s": 600.0}


def run(settings: dict[str, Any], *systems: str) -> dict[str, Any]:
    return {"note": "a run", "settings": {**settings, "soak_systems": list(systems)},
            "cluster_settings": [],
            "systems": {name: {"table": [{"phase": "clean"}], "series": [], "phases": []}
                        for name in systems}}


def test_runs_with_the_same_settings_are_merged_in_the_order_given() -> None:
    document = merged([run(SETTINGS, "rota"), run(dict(SETTINGS), "pgqueuer", "procrastinate")])
    assert list(document["systems"]) == ["rota", "pgqueuer", "procrastinate"]
    assert document["settings"] == {**SETTINGS, **SETTINGS_ADDED,
                                     "soak_systems": ["rota", "pgqueuer", "procrastinate"]}


def test_a_setting_an_older_run_did_not_record_counts_as_its_value_then() -> None:
    newer = run({**SETTINGS, "soak_preload": 0, "soak_queue_limit": 0}, "rota-3p")
    assert list(merged([newer, run(SETTINGS, "pgqueuer")])["systems"]) == ["rota-3p", "pgqueuer"]
    with pytest.raises(ValueError, match="differ in soak_queue_limit"):
        merged([run({**SETTINGS, "soak_queue_limit": 1000}, "rota"), run(SETTINGS, "pgqueuer")])


def test_runs_with_other_phases_are_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="differ in soak_held_s: only runs with the same"):
        merged([run(SETTINGS, "rota"), run({**SETTINGS, "soak_held_s": 300.0}, "pgqueuer")])


def test_a_system_in_two_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="rota is in two of these runs"):
        merged([run(SETTINGS, "rota"), run(SETTINGS, "rota")])


def figures(mean_ms: float, total_ms: float) -> dict[str, float]:
    return {"calls_per_s": 2.0, "mean_ms": mean_ms, "worst_mean_ms": 2 * mean_ms,
            "total_ms": total_ms}


def test_statements_are_tabled_by_the_server_time_they_took_over_the_run() -> None:
    tables = {"rota": [
        {"phase": "clean", "statements": {"claim": figures(0.2, 100.0),
                                          "heartbeat": figures(0.1, 1.0)}},
        {"phase": "held idle_xact", "statements": {"claim": figures(0.3, 150.0),
                                                   "find_expired_leases": figures(9.0, 90.0)}}]}
    lines = statements_markdown(tables, shown=2).splitlines()
    assert lines[0] == "| rota statement | calls/s clean | clean ms | held idle_xact ms |"
    assert lines[2:] == ["| `claim` | 2.00 | 0.200 (0.40) | 0.300 (0.60) |",
                         "| `find_expired_leases` |  |  | 9.000 (18.00) |"]
    assert statements_markdown({"rota": [{"phase": "clean"}]}) == ""
