"""Clocks: VirtualClock now/advance/set; every time is an aware UTC datetime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

import rota
from rota.core.clock import SystemClock, VirtualClock

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def make_clock() -> type[VirtualClock]:
    return VirtualClock


def test_now_is_the_start_until_moved(make_clock: type[VirtualClock]) -> None:
    clock = make_clock(START)
    assert clock.now() == START
    assert clock.now() == START  # reading never moves it


def test_default_start_is_aware_utc() -> None:
    assert VirtualClock().now().tzinfo is UTC


@pytest.mark.parametrize("by", [90, 90.0, timedelta(seconds=90)], ids=repr)
def test_advance_takes_seconds_or_timedelta_and_returns_the_new_time(by: object) -> None:
    clock = VirtualClock(START)
    assert clock.advance(by) == START + timedelta(seconds=90)  # type: ignore[arg-type]
    assert clock.now() == START + timedelta(seconds=90)


def test_advance_by_zero_is_allowed_and_negative_is_refused() -> None:
    clock = VirtualClock(START)
    assert clock.advance(0) == START
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.advance(timedelta(seconds=-1))
    assert clock.now() == START


def test_set_jumps_forwards_and_backwards() -> None:
    clock = VirtualClock(START)
    clock.set(START + timedelta(days=1))
    assert clock.now() == START + timedelta(days=1)
    clock.set(START - timedelta(days=1))
    assert clock.now() == START - timedelta(days=1)


def test_other_time_zones_are_normalised_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    clock = VirtualClock(datetime(2026, 3, 1, 14, 0, tzinfo=plus_two))
    assert clock.now() == START and clock.now().tzinfo is UTC
    clock.set(datetime(2026, 3, 1, 16, 0, tzinfo=plus_two))
    assert clock.now().tzinfo is UTC and clock.now() == START + timedelta(hours=2)


def test_naive_datetimes_are_refused() -> None:
    naive = datetime(2026, 3, 1, 12, 0)
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(naive)
    clock = VirtualClock(START)
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.set(naive)
    assert clock.now() == START


def test_both_clocks_satisfy_the_clock_protocol() -> None:
    assert isinstance(VirtualClock(START), rota.Clock)
    assert isinstance(SystemClock(), rota.Clock)
    assert SystemClock().now().tzinfo is UTC
