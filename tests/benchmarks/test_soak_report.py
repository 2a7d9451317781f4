"""The soak report's merge of separate runs (benchmarks/soak_report.py `merged`): a full run
takes ~130 minutes a system, so one comparison's systems may come from separate runs, drawn
and tabled together only when their rate and phases are the same."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.soak_report import merged

SETTINGS = {"soak_rate": 800.0, "soak_clean_s": 600.0, "soak_held_s": 1800.0,
            "soak_recovery_s": 600.0}


def run(settings: dict[str, float], *systems: str) -> dict[str, Any]:
    return {"note": "a run", "settings": settings, "cluster_settings": [],
            "systems": {name: {"table": [{"phase": "clean"}], "series": [], "phases": []}
                        for name in systems}}


def test_runs_with_the_same_settings_are_merged_in_the_order_given() -> None:
    document = merged([run(SETTINGS, "rota"), run(dict(SETTINGS), "pgqueuer", "procrastinate")])
    assert list(document["systems"]) == ["rota", "pgqueuer", "procrastinate"]
    assert document["settings"] == SETTINGS


def test_runs_with_other_phases_are_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="differ in soak_held_s: only runs with the same"):
        merged([run(SETTINGS, "rota"), run({**SETTINGS, "soak_held_s": 300.0}, "pgqueuer")])


def test_a_system_in_two_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="rota is in two of these runs"):
        merged([run(SETTINGS, "rota"), run(SETTINGS, "rota")])
