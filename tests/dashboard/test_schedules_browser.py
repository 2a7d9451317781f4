"""The schedules page in a real headless Chromium: reached from the navigation, it shows
each schedule's rule, next and last fire; with a token, pause needs a login, then pauses
the schedule in the store and resume resumes it. Screenshots go to
tests/output/screenshots/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from rota.store.base import ScheduleStore
from tests.dashboard import browser
from tests.dashboard.conftest import NOW, Seeded, ServedDashboard
from tests.dashboard.test_browser import act, all_css, by_css, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser.require_browser()
    yield from browser.open_driver()


def schedule_rows(driver: Any) -> dict[str, dict[str, str]]:
    cells = {"rule": ".rule", "timezone": ".timezone", "kind": ".kind",
             "status": ".status-cell", "next": ".next-fire", "last": ".last-fire"}
    return {row.get_attribute("data-schedule"): {k: by_css(row, css).text
                                                 for k, css in cells.items()}
            for row in all_css(driver, "tr[data-schedule]")}


def cell_of(driver: Any, name: str, cell: str = "status") -> str | None:
    """What a schedule's row shows in one cell, or None while the page is between two
    loads (a form post replaces it: for a moment it has no rows)."""
    return schedule_rows(driver).get(name, {}).get(cell)


def test_the_schedules_page_pauses_and_resumes_after_a_login(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    # Given a stored schedule and a schedule in code that fired an hour ago
    app = sqlite_seeded.app
    app.set_schedule("nightly-b", "build-report", cron="0 3 * * *",
                     timezone="Europe/Berlin", args=("2026-01-01",))
    hourly = app.schedule("hourly-a", "send-mail", every=3600, args=("ops@example.com",))
    store = app.store
    assert isinstance(store, ScheduleStore)
    store.register_schedules([hourly.registration()], NOW - timedelta(hours=3))
    fired_for = NOW.replace(minute=0, second=0) - timedelta(hours=1)
    assert store.fire_schedule("hourly-a", hourly.definition, hourly.new_job(fired_for),
                               fired_for).fired
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock, token="t0ken")
    driver.delete_all_cookies()
    # When a person opens the Queues page and follows the navigation to Schedules
    driver.get(f"{dashboard.url}/queues")
    by_css(driver, "header nav a[href='/schedules']").click()
    wait_for(driver, lambda d: d.current_url.endswith("/schedules"))
    # Then they see both schedules with their rules, next and last fires
    rows = wait_for(driver, schedule_rows)
    assert sorted(rows) == ["hourly-a", "nightly-b"]
    assert (rows["nightly-b"]["rule"], rows["nightly-b"]["timezone"],
            rows["nightly-b"]["kind"], rows["nightly-b"]["status"]) == (
        "0 3 * * *", "Europe/Berlin", "stored", "active")
    assert rows["nightly-b"]["next"].startswith("2026-01-01T02:00:00")
    assert rows["nightly-b"]["last"] == "never"
    assert rows["hourly-a"]["kind"] == "code"
    assert rows["hourly-a"]["last"] == fired_for.isoformat()[:19]
    assert by_css(driver, "header nav a.current").text == "Schedules"
    # and the pause button needs a login
    button = by_css(driver, "tr[data-schedule=nightly-b] button.pause")
    assert not button.is_enabled()
    driver.save_screenshot(str(browser.screenshot_path("schedules-signed-out")))
    by_css(driver, ".sign-in-note a").click()
    wait_for(driver, lambda d: "/login?next=" in d.current_url)
    assert "POST /api/schedules/{name}/pause" in by_css(driver, "main").text
    by_css(driver, "input[name=token]").send_keys("t0ken")
    by_css(driver, ".login-form button").click()
    wait_for(driver, lambda d: d.current_url.endswith("/schedules"))
    # When they click pause on the stored schedule
    act(driver, lambda d: by_css(d, "tr[data-schedule=nightly-b] button.pause").click())
    # Then the page says so, the row shows it paused without a next fire, and so does
    # the store
    wait_for(driver, lambda d: cell_of(d, "nightly-b") == "paused")
    assert by_css(driver, "p.flash").text.startswith("Paused schedule nightly-b")
    wait_for(driver, lambda d: cell_of(d, "nightly-b", "next") == "")
    assert {i.name: i.paused for i in app.list_schedules()}["nightly-b"]
    driver.save_screenshot(str(browser.screenshot_path("schedules-paused")))
    # When they resume it
    act(driver, lambda d: by_css(d, "tr[data-schedule=nightly-b] button.resume").click())
    wait_for(driver, lambda d: cell_of(d, "nightly-b") == "active")
    assert not {i.name: i.paused for i in app.list_schedules()}["nightly-b"]
    driver.delete_all_cookies()
