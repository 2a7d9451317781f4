"""Retention, the value: defaults, validation, the purge rules it gives, purgeable states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota.core.jobs import JobState
from rota.core.retention import PurgeRule, Retention, purgeable_states

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_defaults_keep_successes_a_day_and_failures_two_weeks() -> None:
    retention = rota.Retention()
    assert (retention.succeeded, retention.failed) == (timedelta(days=1), timedelta(days=14))
    assert retention.interval == timedelta(minutes=1)
    assert retention.rules(NOW) == (
        PurgeRule((JobState.SUCCEEDED, JobState.CANCELLED), NOW - timedelta(days=1)),
        PurgeRule((JobState.DEAD_LETTERED, JobState.QUARANTINED), NOW - timedelta(days=14)),
    )


def test_durations_accept_seconds_and_none_keeps_forever() -> None:
    retention = Retention(succeeded=3600, failed=None, interval=0.5)
    assert retention.succeeded == timedelta(hours=1) and retention.failed is None
    assert retention.interval == timedelta(milliseconds=500)
    assert retention.rules(NOW) == (
        PurgeRule((JobState.SUCCEEDED, JobState.CANCELLED), NOW - timedelta(hours=1)),)
    assert not retention.keeps_everything
    assert Retention(succeeded=None, failed=None).keeps_everything
    assert Retention(succeeded=None, failed=None).rules(NOW) == ()


def test_retention_is_an_immutable_value() -> None:
    assert Retention(succeeded=60) == Retention(succeeded=timedelta(minutes=1))
    assert hash(Retention()) == hash(Retention())
    with pytest.raises(AttributeError):
        Retention().succeeded = None  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"succeeded": 0}, ValueError, r"Retention\(succeeded=...\) must be positive.*None"),
        ({"failed": -5}, ValueError, r"Retention\(failed=...\) must be positive"),
        ({"failed": float("inf")}, ValueError, r"Retention\(failed=...\) must be a finite"),
        ({"succeeded": "1d"}, TypeError, r"Retention\(succeeded=...\) must be a timedelta"),
        ({"interval": 0}, ValueError, r"Retention\(interval=...\) must be positive"),
        ({"interval": None}, TypeError, r"Retention\(interval=...\) must be a timedelta"),
    ],
)
def test_bad_durations_are_named(kwargs: dict[str, object], error: type[Exception],
                                 message: str) -> None:
    with pytest.raises(error, match=message):
        Retention(**kwargs)  # type: ignore[arg-type]


def test_arguments_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Retention(60, 60)  # type: ignore[call-arg]


def test_purgeable_states_default_to_every_finished_state_in_a_fixed_order() -> None:
    assert purgeable_states(None) == (JobState.SUCCEEDED, JobState.CANCELLED,
                                      JobState.DEAD_LETTERED, JobState.QUARANTINED)
    assert purgeable_states(["quarantined", JobState.SUCCEEDED, "succeeded"]) == (
        JobState.SUCCEEDED, JobState.QUARANTINED)
    assert purgeable_states("cancelled") == (JobState.CANCELLED,)
    assert purgeable_states(JobState.DEAD_LETTERED) == (JobState.DEAD_LETTERED,)


@pytest.mark.parametrize(
    ("states", "error", "message"),
    [
        (["scheduled"], ValueError, "only finished jobs, not scheduled"),
        ([JobState.LEASED], ValueError, "only finished jobs, not leased"),
        (["done"], ValueError, "unknown job state 'done'.*succeeded, cancelled"),
        ([], ValueError, "selects nothing"),
        ([3], TypeError, "JobState values or their names; got 3"),
    ],
)
def test_purgeable_states_refuse_what_is_not_a_finished_state(
    states: list[object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        purgeable_states(states)  # type: ignore[arg-type]
