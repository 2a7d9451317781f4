"""`Store.store_time()` on every store, and `StoreClock`: "now" by the store's clock on a
machine whose own clock disagrees, counted forward on the monotonic clock."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota.store import Store, StoreClock, StoreError, store_clock_for

T0 = datetime(2026, 6, 1, 12, tzinfo=UTC)


def test_store_time_is_the_servers_clock_or_none(store: Store) -> None:
    answer = store.store_time()
    if store.url.startswith(("memory:", "sqlite:")):
        assert answer is None  # its callers share one clock
        return
    assert answer is not None and answer.tzinfo is not None
    assert abs(answer - datetime.now(UTC)) < timedelta(seconds=5)


class Ticking:
    """A wall clock and a monotonic clock a test moves (the wall may also step alone)."""

    def __init__(self, wall: datetime) -> None:
        self.wall, self.mono = wall, 1000.0

    def now(self) -> datetime:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def tick(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds


class ServerClock:
    """A store stand-in whose clock is `ahead` of the test's wall; each read takes
    `trip` seconds, the answer true at its middle."""

    url = "fake://server"

    def __init__(self, ticking: Ticking, ahead: timedelta, trip: float = 0.002) -> None:
        self.ticking, self.ahead, self.trip = ticking, ahead, trip
        self.reads = 0
        self.down = False

    def store_time(self) -> datetime | None:
        self.reads += 1
        if self.down:
            raise StoreError("the store is down")
        self.ticking.tick(self.trip / 2)
        answer = self.ticking.wall + self.ahead
        self.ticking.tick(self.trip / 2)
        return answer


def clock_on(server: ServerClock, ticking: Ticking, **kwargs: object) -> StoreClock:
    return StoreClock(server, wall=ticking, monotonic=ticking.monotonic,  # type: ignore[arg-type]
                      **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("ahead_s", [-600, -120, -1.5, 0, 0.5, 120, 600])
def test_now_is_the_stores_time_whatever_this_machines_clock_says(ahead_s: float) -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=ahead_s))
    clock = clock_on(server, ticking)
    assert abs(clock.now() - (ticking.wall + server.ahead)) < timedelta(milliseconds=1)
    assert abs(clock.offset + server.ahead) < timedelta(milliseconds=1)
    ticking.tick(30)
    assert abs(clock.now() - (ticking.wall + server.ahead)) < timedelta(milliseconds=1)


def test_a_step_of_the_wall_clock_does_not_move_now_until_the_next_measurement() -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(0))
    clock = clock_on(server, ticking, refresh=timedelta(seconds=60))
    first = clock.now()
    ticking.wall += timedelta(minutes=5)  # NTP steps this machine's clock
    ticking.mono += 1
    assert abs(clock.now() - (first + timedelta(seconds=1))) < timedelta(milliseconds=5)
    assert server.reads == 1


def test_it_measures_again_after_refresh_and_only_then() -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=10))
    clock = clock_on(server, ticking, refresh=timedelta(seconds=60))
    clock.now()
    ticking.tick(59)
    clock.now()
    assert server.reads == 1
    server.ahead = timedelta(seconds=20)  # the store's clock moved (it was set right)
    ticking.tick(2)
    assert abs(clock.now() - (ticking.wall + server.ahead)) < timedelta(milliseconds=1)
    assert server.reads == 2


def test_a_slow_first_round_trip_is_read_again() -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=120), trip=0.5)  # connecting, migrating
    read = server.store_time

    def slow_then_fast() -> datetime | None:
        answer = read()
        server.trip = 0.001
        return answer

    server.store_time = slow_then_fast  # type: ignore[method-assign]
    clock = clock_on(server, ticking)
    assert abs(clock.now() - (ticking.wall + server.ahead)) < timedelta(milliseconds=1)
    assert server.reads == 2
    ticking.tick(1)
    clock.now()
    assert server.reads == 2  # a fast round trip is not read again


def test_a_failed_measurement_keeps_the_last_offset_and_retries(
        caplog: pytest.LogCaptureFixture) -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=-90))
    clock = clock_on(server, ticking, refresh=timedelta(seconds=10))
    clock.now()
    server.down = True
    ticking.tick(11)
    with caplog.at_level(logging.WARNING, "rota"):
        assert abs(clock.now() - (ticking.wall + server.ahead)) < timedelta(milliseconds=1)
        clock.now()  # no second try at once, no second warning
    assert server.reads == 2
    assert [r.getMessage() for r in caplog.records if "store's clock" in r.getMessage()] \
        == ["could not read the store's clock (the store is down); keeping the last offset "
            "until it answers"]
    server.down = False
    ticking.tick(6)
    clock.now()
    assert server.reads == 3


def test_before_any_measurement_a_failure_means_this_machines_clock() -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=30))
    server.down = True
    assert clock_on(server, ticking).now() == T0


def test_an_offset_over_a_second_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=-120))
    clock = clock_on(server, ticking, refresh=timedelta(seconds=1))
    with caplog.at_level(logging.WARNING, "rota"):
        for _ in range(5):
            clock.now()
            ticking.tick(2)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and server.reads == 5
    assert messages[0].startswith("this machine's clock runs 120.000 s ahead of the store's "
                                  "(fake://server)")
    server.ahead = timedelta(seconds=300)  # it moved by more than a second: say so again
    with caplog.at_level(logging.WARNING, "rota"):
        clock.now()
    assert caplog.records[-1].getMessage().startswith("this machine's clock runs 300.000 s "
                                                      "behind the store's")


def test_a_small_offset_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    ticking = Ticking(T0)
    with caplog.at_level(logging.WARNING, "rota"):
        clock_on(ServerClock(ticking, timedelta(seconds=0.9)), ticking).now()
    assert caplog.records == []


def test_a_store_without_a_clock_is_the_wall_clock_with_no_call_per_now() -> None:
    ticking = Ticking(T0)

    class NoClock:
        url = "fake://"
        reads = 0

        def store_time(self) -> None:
            self.reads += 1

    store = NoClock()
    clock = StoreClock(store, wall=ticking, monotonic=ticking.monotonic)  # type: ignore[arg-type]
    for _ in range(100):
        assert clock.now() == ticking.wall
        ticking.tick(0.1)
    assert store.reads == 1 and clock.offset == timedelta(0)


def test_a_virtual_clock_is_never_corrected() -> None:
    virtual = rota.VirtualClock(T0)
    app = rota.App("memory://", clock=virtual)
    assert app.clock is virtual
    assert store_clock_for(app.store, virtual) is virtual
    assert isinstance(rota.App("memory://").clock, StoreClock)
    assert isinstance(rota.App("memory://", clock=rota.SystemClock()).clock, StoreClock)
