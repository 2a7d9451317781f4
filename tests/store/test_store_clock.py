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


# -- readings over a slow or asymmetric link ------------------------------------------------


class Link:
    """A store stand-in across a link: a read's request takes `up` seconds, the server
    answers at that moment by its clock (`ahead` of the test's wall), and the answer takes
    `down` seconds back. `trips` gives (up, down) for each read in turn, the last repeated;
    anything the store does before its query (a connect, another statement) is in `up`."""

    url = "fake://link"

    def __init__(self, ticking: Ticking, ahead: timedelta,
                 trips: list[tuple[float, float]]) -> None:
        self.ticking, self.ahead, self.trips = ticking, ahead, list(trips)
        self.reads = 0

    def store_time(self) -> datetime:
        self.reads += 1
        up, down = self.trips.pop(0) if len(self.trips) > 1 else self.trips[0]
        self.ticking.tick(up)
        answer = self.ticking.wall + self.ahead
        self.ticking.tick(down)
        return answer

    def error(self, clock: StoreClock) -> float:
        """How far the clock's `now()` is from the store's time, in seconds."""
        return abs((clock.now() - (self.ticking.wall + self.ahead)).total_seconds())


def reading(link: Link, **kwargs: object) -> StoreClock:
    """A StoreClock on `link` that has taken its first measurement."""
    clock = clock_on(link, link.ticking, **kwargs)  # type: ignore[arg-type]
    clock.now()
    return clock


def uncertainty_s(clock: StoreClock) -> float:
    uncertainty = clock.uncertainty
    assert uncertainty is not None
    return uncertainty.total_seconds()


def imprecise(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if "to within 1 s" in record.getMessage()]


@pytest.mark.parametrize(("up", "down"), [(0.05, 0.75), (0.75, 0.05), (0.4, 0.4)])
def test_over_an_asymmetric_link_now_errs_by_at_most_half_the_round_trip(
        up: float, down: float) -> None:
    # Given a store 30 s ahead across a link of 0.8 s round trips, split unevenly
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=30), [(up, down)])
    # When the clock reads it
    clock = reading(link)
    # Then its uncertainty is half the round trip, and now() is within it of the store's
    assert uncertainty_s(clock) == pytest.approx(0.4, abs=0.001)
    assert link.error(clock) <= uncertainty_s(clock)
    assert link.error(clock) == pytest.approx(abs(down - up) / 2, abs=0.001)


def test_a_slow_link_to_a_server_on_the_same_host_moves_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    # Given a server on this host (same clock) across a link of 0.5-1 s a packet, where
    # each read also makes one round trip before its query: over 2 s per reading, and the
    # answer late in it (its middle would say this clock runs 0.6 s behind)
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(0), [(1.0 + 0.5 + 0.6, 0.9)])
    # When the clock reads it, a measurement and two refreshes
    with caplog.at_level(logging.WARNING, "rota"):
        clock = reading(link, refresh=timedelta(seconds=10))
        assert clock.now() == ticking.wall
        for _ in range(2):
            ticking.tick(11)
            assert clock.now() == ticking.wall
    # Then no offset was applied (each reading is uncertain by 1.5 s); it read twice at
    # first (the first may carry a connect), then once a refresh (as slow as the link
    # was: reading again would not do better); and it said so once, with the offset and
    # the uncertainty
    assert clock.offset == timedelta(0) and clock.uncertainty is None
    assert link.reads == 2 + 1 + 1
    assert imprecise(caplog) == [
        "could not read the store's clock (fake://link) to within 1 s: its best reading "
        "says this machine's clock runs 0.600 s behind the store's, give or take 1.500 s "
        "(half its 3.000 s round trip); keeping this machine's clock. Check the network "
        "to the store"]


def test_a_fast_reading_among_slow_ones_wins() -> None:
    # Given a store 45 s behind, whose link answers slowly twice, then fast
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=-45), [(0.3, 0.1), (0.7, 0.1), (0.001, 0.003)])
    # When the clock measures
    clock = reading(link)
    # Then it read three times and follows the fast reading
    assert link.reads == 3
    assert uncertainty_s(clock) == pytest.approx(0.002, abs=0.0001)
    assert link.error(clock) <= 0.002


def test_a_reading_as_slow_as_the_link_ends_a_measurement() -> None:
    # Given a link whose round trips are always 0.4 s
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=5), [(0.2, 0.2)])
    clock = reading(link, refresh=timedelta(seconds=10))
    assert link.reads == 2  # the first may carry a connect: it is read again
    # When it measures again at each refresh
    for _ in range(3):
        ticking.tick(11)
        clock.now()
    # Then one reading a measurement: reading again would not do better
    assert link.reads == 2 + 3


def test_the_best_recent_reading_is_kept_across_refreshes_aged() -> None:
    # Given a clock that read a store 20 s ahead in 4 ms
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=20), [(0.001, 0.003), (0.7, 0.1)])
    clock = reading(link, refresh=timedelta(seconds=60))
    assert uncertainty_s(clock) == pytest.approx(0.002, abs=0.0001)
    # When, a minute later, the link turns slow and lopsided (0.8 s, 0.7 s of it up)
    ticking.tick(61)
    clock.now()
    # Then it still follows the fast reading, its uncertainty grown by the drift allowed
    # in a minute, not the slow readings' 0.3 s error
    assert link.reads == 1 + 3
    # (aged 61 s, and the 2.4 s the slow readings took)
    assert uncertainty_s(clock) == pytest.approx(0.002 + 63.4 * 100e-6, abs=0.0001)
    assert link.error(clock) <= 0.002
    # And once the fast reading is older than the readings are kept, the best slow one
    # (within a second) is followed instead
    ticking.tick(11 * 60)
    clock.now()
    assert uncertainty_s(clock) == pytest.approx(0.4, abs=0.001)
    assert link.error(clock) == pytest.approx(0.3, abs=0.001)


def test_an_offset_too_uncertain_keeps_the_last_one_applied(
        caplog: pytest.LogCaptureFixture) -> None:
    # Given a clock that read a store 30 s ahead in 4 ms
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=30), [(0.001, 0.003), (2.0, 0.4)])
    clock = reading(link, refresh=timedelta(seconds=60))
    # When the link turns to 2.4 s round trips for longer than readings are kept
    with caplog.at_level(logging.WARNING, "rota"):
        for _ in range(12):
            ticking.tick(61)
            clock.now()
    # Then now() still counts on from the reading applied, which says how old it is,
    # and the slow readings were named once
    assert link.error(clock) <= 0.002
    assert uncertainty_s(clock) == pytest.approx(0.002 + 12 * 61 * 100e-6, abs=0.01)
    assert abs(clock.offset + link.ahead) < timedelta(milliseconds=2)
    messages = imprecise(caplog)
    assert len(messages) == 1
    assert "runs 30.800 s behind the store's, give or take 1.200 s" in messages[0]
    assert "keeping the last offset applied" in messages[0]
    # And a precise reading is applied again at once, and a later imprecise one is named
    link.trips = [(0.002, 0.002), (2.0, 0.4)]
    ticking.tick(61)
    clock.now()
    assert uncertainty_s(clock) == pytest.approx(0.002, abs=0.0001)
    with caplog.at_level(logging.WARNING, "rota"):
        ticking.tick(11 * 60)
        clock.now()
    assert len(imprecise(caplog)) == 2


def test_a_reading_that_contradicts_older_ones_replaces_them() -> None:
    # Given a clock that read a store 10 s ahead in 4 ms
    ticking = Ticking(T0)
    link = Link(ticking, timedelta(seconds=10), [(0.002, 0.002), (0.1, 0.1)])
    clock = reading(link, refresh=timedelta(seconds=60))
    # When the store's clock is set 5 s forward and the next readings are slower
    link.ahead = timedelta(seconds=15)
    ticking.tick(61)
    # Then the old reading, which cannot be true with the new ones, no longer counts
    assert link.error(clock) <= 0.1
    assert uncertainty_s(clock) == pytest.approx(0.1, abs=0.001)


def test_uncertainty_is_none_while_now_is_the_wall_clock() -> None:
    ticking = Ticking(T0)
    server = ServerClock(ticking, timedelta(seconds=3))
    server.down = True
    clock = clock_on(server, ticking)
    assert clock.now() == T0 and clock.uncertainty is None
    server.down = False
    ticking.tick(6)
    clock.now()
    assert uncertainty_s(clock) == pytest.approx(0.001, abs=0.0001)
