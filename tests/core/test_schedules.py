"""Next-fire computation (rota.core.schedules): pure, `now` is an input.

Cron in UTC and in time zones, daylight-saving transitions both ways (a skipped local time
fires once at the next valid instant, a repeated one fires once), `every` intervals, and
which instant is due after a downtime.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.app.schedules import build_rule, load_timezone, rule_from_text
from rota.core.schedules import (
    CronRule,
    EveryRule,
    Schedule,
    due_instant,
    next_fire,
    parse_every_text,
    validate_schedule_name,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def cron(expression: str, timezone: str = "UTC") -> CronRule:
    return CronRule.parse(expression, timezone, load_timezone(timezone))


def instants(rule: CronRule | EveryRule, after: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    for _ in range(count):
        following = rule.next_after(after)
        assert following is not None
        found.append(following)
        after = following
    return found


# -- cron in UTC ---------------------------------------------------------------------------


def test_cron_next_fire_is_strictly_after_the_given_instant() -> None:
    rule = cron("0 3 * * *")
    assert rule.next_after(utc(2026, 1, 1, 2, 59, 59)) == utc(2026, 1, 1, 3)
    assert rule.next_after(utc(2026, 1, 1, 3)) == utc(2026, 1, 2, 3)
    assert rule.next_after(utc(2026, 1, 1, 3, 0, 0) - timedelta(microseconds=1)) == \
        utc(2026, 1, 1, 3)


def test_cron_every_15_minutes_on_weekdays() -> None:
    rule = cron("*/15 9-10 * * 1-5")
    # 2026-01-02 is a Friday
    assert instants(rule, utc(2026, 1, 2, 10, 40), 3) == [
        utc(2026, 1, 2, 10, 45), utc(2026, 1, 5, 9), utc(2026, 1, 5, 9, 15)]


@pytest.mark.parametrize(("alias", "expanded"), [
    ("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"),
    ("@weekly", "0 0 * * 0"), ("@monthly", "0 0 1 * *"), ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"), ("@DAILY", "0 0 * * *"),
])
def test_cron_aliases_fire_like_their_expansion(alias: str, expanded: str) -> None:
    start = utc(2026, 3, 14, 15, 9)
    assert instants(cron(alias), start, 3) == instants(cron(expanded), start, 3)
    assert cron(alias).text == alias


def test_cron_that_never_matches_has_no_next_fire() -> None:
    # Every minute of the 1st and the 21st, if it is also the last Monday of the month
    rule = cron("* * */20 * 1L")
    assert rule.next_after(utc(2026, 1, 1)) is None
    assert due_instant(rule, utc(2026, 1, 1), utc(2027, 1, 1)) is None


@pytest.mark.parametrize(("text", "problem"), [
    ("61 * * * *", "Bad minute"),
    ("* * * *", "4 fields, not 5"),
    ("0 0 * * * *", "6 fields, not 5"),
    ("", "it is empty"),
    ("   ", "it is empty"),
    ("@reboot", "not an alias"),
    ("0 0 31 2 *", "Bad day"),
    ("0 3 * * \x00", "control characters"),
    ("every 5 minutes", "fields"),
])
def test_bad_cron_text_is_a_value_error_naming_it(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match="bad cron text") as caught:
        cron(text)
    assert problem in str(caught.value)
    assert repr(text) in str(caught.value)


def test_cron_text_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="cron must be a str"):
        CronRule.parse(5)


# -- time zones and daylight-saving time ----------------------------------------------------

# Europe/Berlin 2026: clocks go 02:00 CET -> 03:00 CEST on 29 March (01:00Z), and
# 03:00 CEST -> 02:00 CET on 25 October (01:00Z).


def test_cron_in_a_time_zone_fires_at_local_time() -> None:
    rule = cron("0 3 * * *", "Europe/Berlin")
    assert instants(rule, utc(2026, 1, 10), 2) == [utc(2026, 1, 10, 2), utc(2026, 1, 11, 2)]
    assert instants(rule, utc(2026, 7, 10), 1) == [utc(2026, 7, 10, 1)]  # summer: UTC+2


def test_skipped_local_time_fires_once_at_the_next_valid_instant() -> None:
    # Given 02:30 every day in Berlin, on the night the clocks skip from 02:00 to 03:00
    rule = cron("30 2 * * *", "Europe/Berlin")
    # Then it fires once, at 03:00 CEST (01:00Z), and at 02:30 again the next day
    assert instants(rule, utc(2026, 3, 28, 12), 3) == [
        utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30), utc(2026, 3, 31, 0, 30)]


def test_repeated_local_time_fires_once() -> None:
    # Given 02:30 every day in Berlin, on the night the clocks pass 02:30 twice
    rule = cron("30 2 * * *", "Europe/Berlin")
    # Then it fires at the first 02:30 (CEST, 00:30Z) only, then 02:30 CET the next day
    assert instants(rule, utc(2026, 10, 24, 12), 2) == [
        utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    # and asked from inside the repeated hour (02:10 CET, 01:10Z) it does not fire again
    assert rule.next_after(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 26, 1, 30)


def test_repeated_hour_of_an_interval_like_cron_fires_at_every_real_instant() -> None:
    # Given every 30 minutes in Berlin (a `*` field: scheduled like Debian's cron, at
    # every real instant whose local time matches)
    rule = cron("*/30 * * * *", "Europe/Berlin")
    # Then the repeated hour fires twice as 02:00 and 02:30, 30 minutes apart in real time
    assert instants(rule, utc(2026, 10, 24, 23, 50), 6) == [
        utc(2026, 10, 25, 0), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1),
        utc(2026, 10, 25, 1, 30), utc(2026, 10, 25, 2), utc(2026, 10, 25, 2, 30)]
    # and from inside the second pass too
    assert rule.next_after(utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 25, 1, 30)


def test_skipped_hour_of_an_interval_like_cron_has_nothing_to_fire() -> None:
    rule = cron("0 * * * *", "Europe/Berlin")
    assert instants(rule, utc(2026, 3, 28, 23, 30), 3) == [
        utc(2026, 3, 29, 0), utc(2026, 3, 29, 1), utc(2026, 3, 29, 2)]  # 01:00, 03:00, 04:00


def test_new_york_transitions_both_ways() -> None:
    rule = cron("30 2 * * *", "America/New_York")
    # 2026-03-08: 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01: 02:00 EDT -> 01:00 EST
    assert rule.next_after(utc(2026, 3, 8, 5)) == utc(2026, 3, 8, 7)  # 03:00 EDT
    assert instants(cron("30 1 * * *", "America/New_York"), utc(2026, 11, 1, 0), 2) == [
        utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]  # 01:30 EDT once, then EST


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1),
                    timezones=st.just(UTC)))
def test_fixed_time_cron_fires_once_per_local_day(after: datetime) -> None:
    # Every fire of a daily fixed-time rule falls on a different local date, and the
    # instants strictly increase, DST or not.
    rule = cron("30 2 * * *", "Europe/Berlin")
    tz = load_timezone("Europe/Berlin")
    found = instants(rule, after, 3)
    assert found == sorted(set(found)) and found[0] > after
    dates = [moment.astimezone(tz).date() for moment in found]
    assert len(set(dates)) == 3


def test_unknown_time_zone_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        build_rule("0 3 * * *", None, "Mars/Olympus")
    with pytest.raises(ValueError, match=r"unknown time zone '\.\./etc/passwd'"):
        build_rule("0 3 * * *", None, "../etc/passwd")
    with pytest.raises(TypeError, match="timezone must be a str"):
        build_rule("0 3 * * *", None, 5)
    with pytest.raises(TypeError, match="timezone must be a str"):
        build_rule("0 3 * * *", None, ["Europe/Berlin"])


# -- every ---------------------------------------------------------------------------------


def test_every_fires_on_whole_multiples_since_the_epoch() -> None:
    rule = EveryRule.parse(timedelta(minutes=5))
    assert instants(rule, utc(2026, 1, 1, 0, 3, 7), 3) == [
        utc(2026, 1, 1, 0, 5), utc(2026, 1, 1, 0, 10), utc(2026, 1, 1, 0, 15)]
    assert rule.next_after(utc(2026, 1, 1, 0, 5)) == utc(2026, 1, 1, 0, 10)
    assert rule.text == "every 300s"


def test_every_text_round_trips() -> None:
    for interval in (timedelta(seconds=1), timedelta(seconds=1.5), timedelta(days=7),
                     timedelta(seconds=3, microseconds=7)):
        rule = EveryRule.parse(interval)
        assert parse_every_text(rule.text) == rule
    assert parse_every_text("0 3 * * *") is None
    assert parse_every_text("every xs") is None
    assert rule_from_text("every 60s", "UTC") == EveryRule(timedelta(seconds=60))
    assert rule_from_text("0 3 * * *", "Europe/Berlin") == cron("0 3 * * *", "Europe/Berlin")
    assert rule_from_text("0 3 * * *", "No/Such_Zone") is None


def test_every_under_a_second_or_with_a_time_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 second"):
        build_rule(None, 0.5, "UTC")
    with pytest.raises(ValueError, match="must be positive"):
        build_rule(None, 0, "UTC")
    with pytest.raises(ValueError, match="does not apply to every="):
        build_rule(None, 60, "Europe/Berlin")


def test_both_or_neither_rule_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"exactly one rule.*got both"):
        build_rule("0 3 * * *", 60, "UTC")
    with pytest.raises(ValueError, match=r"exactly one rule.*got neither"):
        build_rule(None, None, "UTC")


def test_every_near_the_end_of_time_has_no_next_fire() -> None:
    rule = EveryRule.parse(timedelta(days=365))
    assert rule.next_after(datetime.max.replace(tzinfo=UTC) - timedelta(days=1)) is None


# -- which instant is due ------------------------------------------------------------------


def test_nothing_is_due_before_the_first_instant_after_the_lower_bound() -> None:
    rule = EveryRule.parse(timedelta(minutes=1))
    registered = utc(2026, 1, 1, 0, 0, 30)
    assert due_instant(rule, registered, utc(2026, 1, 1, 0, 0, 59)) is None
    assert due_instant(rule, registered, registered) is None
    # an instant at the registration itself is not after it
    assert due_instant(rule, utc(2026, 1, 1, 0, 1), utc(2026, 1, 1, 0, 1, 59)) is None


def test_the_due_instant_is_the_instant_itself_when_on_time() -> None:
    rule = cron("0 3 * * *")
    assert due_instant(rule, utc(2026, 1, 1), utc(2026, 1, 1, 3)) == utc(2026, 1, 1, 3)


@pytest.mark.parametrize("rule", [
    cron("* * * * *"), cron("*/5 * * * *", "Europe/Berlin"), cron("0 3 * * *"),
    cron("* * * * 1"), EveryRule.parse(timedelta(seconds=7)),
])
def test_after_a_long_downtime_only_the_most_recent_instant_is_due(
    rule: CronRule | EveryRule,
) -> None:
    lower, now = utc(2026, 1, 1, 0, 0, 30), utc(2026, 3, 17, 11, 22, 33)
    due = due_instant(rule, lower, now)
    assert due is not None and lower < due <= now
    following = rule.next_after(due)
    assert following is not None and following > now  # nothing later is due


def test_next_fire_shows_a_waiting_instant_first() -> None:
    rule = cron("0 3 * * *")
    assert next_fire(rule, utc(2026, 1, 1), utc(2026, 1, 5, 12)) == utc(2026, 1, 5, 3)
    assert next_fire(rule, utc(2026, 1, 5, 3), utc(2026, 1, 5, 12)) == utc(2026, 1, 6, 3)


# -- names and definitions -----------------------------------------------------------------


@pytest.mark.parametrize(("name", "error"), [
    ("", ValueError), ("x" * 201, ValueError), ("a\nb", ValueError), (5, TypeError)])
def test_bad_schedule_names_are_refused(name: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="schedule name"):
        validate_schedule_name(name)


def test_the_definition_digest_changes_with_rule_arguments_and_queue() -> None:
    base = Schedule("s", cron("0 3 * * *"), "job", "default", "[1]", "{}")
    assert base.definition == Schedule("s", cron("0  3 * * *"), "job", "default", "[1]",
                                       "{}").definition
    others = [
        Schedule("s", cron("0 4 * * *"), "job", "default", "[1]", "{}"),
        Schedule("s", cron("0 3 * * *", "Europe/Berlin"), "job", "default", "[1]", "{}"),
        Schedule("s", cron("0 3 * * *"), "job2", "default", "[1]", "{}"),
        Schedule("s", cron("0 3 * * *"), "job", "other", "[1]", "{}"),
        Schedule("s", cron("0 3 * * *"), "job", "default", "[2]", "{}"),
        Schedule("s", cron("0 3 * * *"), "job", "default", "[1]", '{"a":1}'),
    ]
    assert len({base.definition, *(other.definition for other in others)}) == 7
    assert base.new_job(utc(2026, 1, 1, 3)).due_at == utc(2026, 1, 1, 3)


@given(
    st.sampled_from(["*/15 * * * *", "30 2 * * *", "0 * * * 1-5", "*/5 1-3 * * *"]),
    st.integers(min_value=0, max_value=400 * 24 * 60),
    st.integers(min_value=0, max_value=3 * 24 * 60),
)
def test_due_instant_is_the_latest_instant_in_the_window(
    expression: str, start_minute: int, span_minutes: int,
) -> None:
    # Against a plain forward walk, in Berlin, across both DST transitions of 2026-2027
    rule = cron(expression, "Europe/Berlin")
    lower = utc(2026, 1, 1) + timedelta(minutes=start_minute, seconds=17)
    now = lower + timedelta(minutes=span_minutes)
    expected = None
    moment = rule.next_after(lower)
    while moment is not None and moment <= now:
        expected = moment
        moment = rule.next_after(moment)
    assert due_instant(rule, lower, now) == expected
