"""Claim floors (rota.store.postgres.floors): the pure table and the rule of where a
claim leaves each Queue. No server: PostgreSQL's side is in test_postgres_floors.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("psycopg")  # the package rota.store.postgres imports it

from rota.store.postgres.floors import (
    MARGIN,
    START,
    ClaimFloors,
    hint_payload_position,
    reached_positions,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def listening(max_age_s: float = 60.0) -> tuple[ClaimFloors, Clock]:
    clock = Clock()
    floors = ClaimFloors(max_age_s, clock)
    floors.listening(True)
    return floors, clock


def test_a_hint_payload_names_its_queue_and_maybe_a_position() -> None:
    assert hint_payload_position("q") == ("q", None)
    micros = int((T0 - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)
    assert hint_payload_position(f"tenant-1 {micros}") == ("tenant-1", T0)
    # A Queue name holds no space, so anything else is a plain (older) payload
    assert hint_payload_position("q x") == ("q x", None)


def test_without_a_listener_no_floor_is_kept() -> None:
    floors = ClaimFloors()
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0, 7)])
    assert floors.positions(["q"]) == ([START], [0])


def test_a_claim_raises_a_floor_and_a_hint_lowers_it() -> None:
    floors, _ = listening()
    _, _, token = floors.begin(["q", "r"])
    floors.raise_(token, [("q", T0, 7)])
    assert floors.positions(["q", "r"]) == ([T0, START], [7, 0])
    # A hint at a later position changes nothing; one before the floor lowers it
    floors.hint("q", T0 + timedelta(seconds=5))
    assert floors.positions(["q"]) == ([T0], [7])
    floors.hint("q", T0 - timedelta(seconds=5))
    assert floors.positions(["q"]) == ([T0 - timedelta(seconds=5)], [0])
    # A hint without a position removes the floor
    floors.hint("q", None)
    assert floors.positions(["q"]) == ([START], [0])


def test_a_hint_during_a_claim_caps_the_raise_at_its_position() -> None:
    # Given a claim that read its floors, then a hint for "q" came in
    floors, _ = listening()
    _, _, token = floors.begin(["q", "r"])
    floors.hint("q", T0)
    # When the claim ends having reached past it in "q" (and somewhere in "r")
    floors.raise_(token, [("q", T0 + timedelta(seconds=9), 3), ("r", T0, 4)])
    # Then "q" is raised only to the hinted position (the claim may not have seen that
    # job); "r" as far as the claim reached
    assert floors.positions(["q", "r"]) == ([T0, T0], [0, 4])


def test_a_positionless_hint_cancels_a_claims_raise_and_many_hints_cap_it_at_the_lowest(
) -> None:
    # Given a claim over q and r, during which q had a hint without a position and r a
    # thousand hints (a producer at 800 jobs/s hints ~50 times a second: a claim slowed
    # by a held snapshot overlaps many), one of them early
    floors, _ = listening()
    _, _, token = floors.begin(["q", "r"])
    floors.hint("q", None)
    for second in range(1000):
        floors.hint("r", T0 + timedelta(seconds=second if second != 500 else -3))
    # When it ends having reached T0 + 10 s in both
    floors.raise_(token, [("q", T0 + timedelta(seconds=10), 1),
                          ("r", T0 + timedelta(seconds=10), 2)])
    # Then q has no floor, and r's is the lowest position hinted
    assert floors.positions(["q", "r"]) == ([START, T0 - timedelta(seconds=3)], [0, 0])
    # Hints before a claim began do not cap it
    _, _, token = floors.begin(["q", "r"])
    floors.raise_(token, [("q", T0, 1), ("r", T0, 2)])
    assert floors.positions(["q", "r"]) == ([T0, T0], [1, 2])


def test_a_listener_change_or_a_failed_claim_removes_floors() -> None:
    floors, _ = listening()
    _, _, token = floors.begin(["q", "r"])
    floors.raise_(token, [("q", T0, 1), ("r", T0, 2)])
    # A claim over q fails while another over q and r is in flight: q's floor goes, and
    # the other claim raises only r's (the failed claim's locks were rolled back)
    _, _, other = floors.begin(["q", "r"])
    _, _, failed = floors.begin(["q"])
    floors.forget(["q"], failed)
    floors.raise_(other, [("q", T0 + timedelta(seconds=1), 3),
                          ("r", T0 + timedelta(seconds=1), 4)])
    assert floors.positions(["q", "r"]) == ([START, T0 + timedelta(seconds=1)], [0, 4])
    floors.raise_(failed, [("q", T0, 1)])  # it ended with forget: nothing
    assert floors.positions(["q"]) == ([START], [0])
    _, _, token = floors.begin(["q"])
    floors.listening(False)
    floors.raise_(token, [("q", T0, 1)])
    assert floors.positions(["q", "r"]) == ([START, START], [0, 0])


def test_a_floor_max_age_old_is_checked_once_while_claims_keep_it() -> None:
    floors, clock = listening(max_age_s=60)
    _, _, token = floors.begin(["q", "r"])
    floors.raise_(token, [("q", T0, 1), ("r", T0, 5)])
    clock.now = 59
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0 + timedelta(seconds=59), 2)])  # raised, not renewed
    assert floors.due_checks(["q", "r"]) == []
    # When the floors are a minute old, the first claim hands them over for a check...
    clock.now = 60
    assert floors.due_checks(["q", "r"]) == [
        ("q", START, 0, T0 + timedelta(seconds=59), 2), ("r", START, 0, T0, 5)]
    assert floors.due_checks(["q", "r"]) == []  # ...once
    # ...and claims keep scanning from them meanwhile, raising them as before
    _, _, token = floors.begin(["q", "r"])
    assert floors.positions(["q", "r"]) == ([T0 + timedelta(seconds=59), T0], [2, 5])
    floors.raise_(token, [("q", T0 + timedelta(seconds=70), 3)])
    # Then a check that found a job under q's floor lowers it there; one that found
    # nothing under r's leaves it; both are good for another minute
    clock.now = 61
    floors.checked("q", (T0 - timedelta(seconds=30), 9))
    floors.checked("r", None)
    assert floors.positions(["q", "r"]) == ([T0 - timedelta(seconds=30), T0], [9, 5])
    clock.now = 120
    assert floors.due_checks(["q", "r"]) == []
    clock.now = 121
    assert [check.queue for check in floors.due_checks(["q", "r"])] == ["q", "r"]
    # A check that failed removes the floor
    floors.checked("q", None, failed=True)
    assert floors.positions(["q"]) == ([START], [0])


def test_a_check_starts_where_the_last_one_ended_or_where_a_hint_since_says() -> None:
    floors, clock = listening(max_age_s=60)
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0, 1)])
    clock.now = 60
    assert floors.due_checks(["q"]) == [("q", START, 0, T0, 1)]  # the first: from the start
    # A check that found nothing: the next one starts at the floor it checked, however
    # far the claims raised the floor meanwhile
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0 + timedelta(seconds=30), 2)])
    floors.checked("q", None)
    clock.now = 120
    assert floors.due_checks(["q"]) == [("q", T0, 1, T0 + timedelta(seconds=30), 2)]
    # A hint under way lowers where the check under way ends: the check's snapshot may
    # not have seen the hinted job; a hint between checks lowers where the next starts
    floors.hint("q", T0 - timedelta(seconds=5))
    floors.checked("q", None)
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0 + timedelta(seconds=40), 3)])
    clock.now = 180
    assert floors.due_checks(["q"]) == [
        ("q", T0 - timedelta(seconds=5), 0, T0 + timedelta(seconds=40), 3)]
    # A check that found a job starts the next one there
    floors.checked("q", (T0 - timedelta(seconds=3), 4))
    clock.now = 240
    (check,) = floors.due_checks(["q"])
    assert (check.from_due, check.from_id) == (T0 - timedelta(seconds=3), 4)
    # A floor removed and set again starts from the start
    floors.hint("q", None)
    _, _, token = floors.begin(["q"])
    floors.raise_(token, [("q", T0, 1)])
    clock.now = 300
    assert floors.due_checks(["q"]) == [("q", START, 0, T0, 1)]


def test_a_check_caps_the_claims_in_flight_and_a_removed_floor_ignores_it() -> None:
    floors, clock = listening(max_age_s=60)
    _, _, token = floors.begin(["q", "r"])
    floors.raise_(token, [("q", T0, 1), ("r", T0, 2)])
    clock.now = 60
    floors.due_checks(["q", "r"])
    # A claim in flight while the check finds a job under q's floor raises q no further
    _, _, token = floors.begin(["q"])
    floors.checked("q", (T0 - timedelta(seconds=5), 7))
    floors.raise_(token, [("q", T0 + timedelta(seconds=5), 8)])
    assert floors.positions(["q"]) == ([T0 - timedelta(seconds=5)], [7])
    # A floor removed while its check ran (and set again) ignores the check's answer
    floors.hint("r", None)
    _, _, token = floors.begin(["r"])
    floors.raise_(token, [("r", T0 + timedelta(seconds=3), 4)])
    floors.checked("r", (T0 - timedelta(seconds=9), 1))
    assert floors.positions(["r"]) == ([T0 + timedelta(seconds=3)], [4])


def test_where_a_claim_leaves_its_queues() -> None:
    a, b = T0 - timedelta(seconds=30), T0 - timedelta(seconds=20)
    # Fewer than asked from each: every Queue is reached up to now less the margin
    assert reached_positions([("q", 10), ("r", 10)], 10, [("q", a, 1)], T0,
                             exhaustive=True) == [("q", T0 - MARGIN, 0), ("r", T0 - MARGIN, 0)]
    # The overall limit filled in "q": "q" only as far as its rows, "r" not scanned
    assert reached_positions([("q", 10), ("r", 10)], 2, [("q", a, 1), ("q", b, 2)], T0,
                             exhaustive=True) == [("q", b, 2)]
    # "q" gave fewer than its cap, "r" filled the limit: "q" up to now, "r" its rows
    assert reached_positions([("q", 10), ("r", 10)], 2, [("q", a, 1), ("r", b, 2)], T0,
                             exhaustive=True) == [("q", T0 - MARGIN, 0), ("r", b, 2)]
    # A claim cut by a concurrency limit or a rate: only as far as the rows
    assert reached_positions([("q", 10), ("r", 10)], 10, [("q", a, 1)], T0,
                             exhaustive=False) == [("q", a, 1)]


@given(
    st.lists(st.lists(st.integers(0, 50), max_size=12), min_size=1, max_size=4),
    st.lists(st.integers(0, 6), min_size=4, max_size=4),
    st.integers(1, 15),
    st.sets(st.integers(0, 200), max_size=10),
)
def test_a_reached_position_never_passes_a_job_the_claim_left(
    dues: list[list[int]], caps: list[int], limit: int, locked: set[int],
) -> None:
    """Model of claim.sql: Queues in order, each scanned in (due, id) order up to its cap,
    rows locked by another claim skipped, until the overall limit. Due times are seconds
    after T0 - 100 s, so all are due at T0 but for those past it (none here: max 50)."""
    queues = [f"q{number}" for number in range(len(dues))]
    jobs: dict[str, list[tuple[datetime, int]]] = {}
    next_id = 0
    for queue, seconds in zip(queues, dues, strict=True):
        jobs[queue] = []
        for second in sorted(seconds):
            next_id += 1
            jobs[queue].append((T0 - timedelta(seconds=100 - second), next_id))
    rows: list[tuple[str, datetime, int]] = []
    for queue, cap in zip(queues, caps, strict=False):
        taken = 0
        for due, job_id in jobs[queue]:
            if len(rows) >= limit or taken >= min(cap, limit):
                break
            if job_id in locked:
                continue
            rows.append((queue, due, job_id))
            taken += 1
    claimed = {job_id for _, _, job_id in rows}
    reached = reached_positions(list(zip(queues, caps, strict=False)), limit, rows, T0,
                                exhaustive=True)
    for queue, due, job_id in reached:
        left = [(d, i) for d, i in jobs[queue] if i not in claimed and i not in locked]
        assert all((d, i) >= (due, job_id) for d, i in left), (queue, due, job_id, left)
