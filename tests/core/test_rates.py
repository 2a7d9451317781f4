"""The token bucket of Queue rate limits (rota.core.rates): exact bounds, refill, and
when the next token comes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rota.core.rates import (
    QueueRate,
    available,
    next_token_at,
    take,
    to_us,
    validate_rate,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)

rates = st.builds(
    QueueRate,
    jobs=st.integers(1, 50),
    per=st.integers(1, 120_000_000).map(lambda us: timedelta(microseconds=us)),
    burst=st.integers(1, 60),
)
# Claims: (microseconds after T0, how many the claimer asks), in the order they run;
# their times need not be sorted (claimers on different machines, virtual time).
claims = st.lists(st.tuples(st.integers(0, 600_000_000), st.integers(0, 30)),
                  min_size=1, max_size=60)


@given(rates, claims)
@example(QueueRate(3, timedelta(seconds=1), 3), [(0, 3), (333_333, 1), (333_334, 1)])
def test_no_window_ever_gets_more_than_burst_plus_the_rate(rate, asks) -> None:
    # Given a bucket taken from by claims at arbitrary times, each taking what it may
    bucket = None
    taken: list[tuple[int, int]] = []
    for offset, asked in asks:
        now = T0 + timedelta(microseconds=offset)
        got = min(asked, available(rate, bucket, now))
        bucket = take(rate, bucket, now, got)
        taken.append((offset, got))
    # Then over every window [t0, t1] of claim times: claimed * per <= burst * per +
    # jobs * (t1 - t0), in exact integers
    times = sorted({offset for offset, _ in taken})
    for start in times:
        for end in times:
            if end < start:
                continue
            count = sum(got for offset, got in taken if start <= offset <= end)
            assert count * rate.per_us <= rate.burst * rate.per_us + rate.jobs * (end - start)


@given(rates, st.integers(0, 10**12))
def test_a_new_bucket_is_full(rate, offset) -> None:
    assert available(rate, None, T0 + timedelta(microseconds=offset)) == rate.burst


@given(rates, st.integers(0, 60), st.integers(0, 600_000_000))
def test_the_next_token_comes_exactly_when_announced(rate, drained, later) -> None:
    # Given a bucket emptied at T0, then some time passing
    bucket = take(rate, None, T0, rate.burst)
    now = T0 + timedelta(microseconds=later)
    bucket = take(rate, bucket, now, available(rate, bucket, now))
    # When the claimer asks when the next token comes
    due = next_token_at(rate, bucket, now)
    # Then there is none before it, and one at it
    assert due > now
    assert available(rate, bucket, due) >= 1
    assert available(rate, bucket, due - timedelta(microseconds=1)) == 0


@given(rates, st.integers(1, 20))
def test_an_empty_bucket_refills_at_the_rate_up_to_the_burst(rate, periods) -> None:
    bucket = take(rate, None, T0, rate.burst)
    assert available(rate, bucket, T0) == 0
    later = T0 + rate.per * periods
    assert available(rate, bucket, later) == min(rate.burst, rate.jobs * periods)


def test_a_claim_cannot_take_tokens_the_bucket_lacks() -> None:
    rate = QueueRate(2, timedelta(seconds=10), 2)
    bucket = take(rate, None, T0, 2)
    with pytest.raises(ValueError, match="may take 0 to 0 tokens"):
        take(rate, bucket, T0, 1)


def test_validation_names_the_range_and_the_fix() -> None:
    assert validate_rate(10, timedelta(minutes=1)) == QueueRate(10, timedelta(minutes=1), 10)
    assert validate_rate(10, 60, 25).burst == 25
    with pytest.raises(ValueError, match=r"jobs must be a whole number from 1 to 2147483647"):
        validate_rate(0, timedelta(seconds=1))
    with pytest.raises(TypeError, match="jobs must be a whole number"):
        validate_rate(True, timedelta(seconds=1))
    with pytest.raises(ValueError, match="burst must be a whole number from 1"):
        validate_rate(5, timedelta(seconds=1), 0)
    with pytest.raises(ValueError, match=r"period \(per\) must be positive"):
        validate_rate(5, timedelta(0))
    with pytest.raises(TypeError, match="timedelta or a number of seconds"):
        validate_rate(5, "1m")
    with pytest.raises(ValueError, match="to refill"):
        validate_rate(1, timedelta(days=3650), 2**31 - 1)


def test_microseconds_are_counted_from_the_epoch() -> None:
    assert to_us(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000
    assert str(QueueRate(10, timedelta(minutes=1), 10)) == "10/1m"
    assert str(QueueRate(6, timedelta(seconds=30), 12)) == "6/30s (burst 12)"
