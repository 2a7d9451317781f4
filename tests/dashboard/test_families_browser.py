"""A Queue family's row in a real headless Chromium: one row for the family, opened to
show its Queues most due first; pausing the family shows it paused, row and members.
Runs on the memory store (the tenants of tests/dashboard/test_families.py). Screenshots
go to tests/output/screenshots/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rota
from rota.store.memory import MemoryStore
from tests.dashboard import browser
from tests.dashboard.conftest import ServedDashboard
from tests.dashboard.test_browser import act, all_css, by_css, wait_for
from tests.dashboard.test_families import tenants_store

pytestmark = pytest.mark.slow

FAMILY = "tr[data-family='tenant-*']"


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser.require_browser()
    yield from browser.open_driver()


@pytest.fixture
def tenants(clock: rota.VirtualClock) -> Iterator[tuple[rota.App, MemoryStore]]:
    app, store = tenants_store(clock)
    yield app, store
    app.close()


def members(driver: Any) -> list[tuple[str, str, str, str]]:
    """The open family's Queues as shown, in order: name, due, weight, share served."""
    return [(row.get_attribute("data-member"), by_css(row, ".due-cell").text,
             by_css(row, ".weight-cell").text, by_css(row, ".share-cell").text)
            for row in all_css(driver, "details[data-family='tenant-*'] tr[data-member]")
            if row.is_displayed()]


def stale(element: Any) -> bool:
    """Whether `element` left the page (the auto-refresh replaced it)."""
    from selenium.common.exceptions import StaleElementReferenceException
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    return False


def test_a_family_row_opens_on_its_queues_by_backlog_and_shows_its_pause(
    driver: Any, tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock,
    serve: Callable[..., ServedDashboard],
) -> None:
    app, store = tenants
    dashboard = serve(store, clock=clock)
    # When a person opens the Queues page
    driver.get(f"{dashboard.url}/queues")
    # Then tenant-* is one row, its jobs added up; its Queues are not rows of their own
    row = wait_for(driver, lambda d: by_css(d, FAMILY))
    assert by_css(row, ".due-cell").text == "12"
    assert by_css(row, ".limit-cell").text == "2"
    assert "3 Queues" in by_css(row, "td.name").text
    assert [r.get_attribute("data-queue") for r in all_css(driver, "tr[data-queue]")] == [
        "plain", "tenant-vip"]
    assert members(driver) == []  # closed
    # When they open the family
    act(driver, lambda d: by_css(d, "details[data-family='tenant-*'] > summary").click())
    # Then its Queues show, most due first, with their weight and share served
    shown = wait_for(driver, members)
    assert shown == [("tenant-b", "5", "fair: 1", "fair: 30%"),
                     ("tenant-c", "5", "fair: 1", "fair: 0%"),
                     ("tenant-a", "2", "fair: 1", "fair: 10%")]
    driver.save_screenshot(str(browser.screenshot_path("queues-family-open")))
    # And it stays open when the page refreshes itself (its <main> swapped every 5 s)
    opened = by_css(driver, "details[data-family='tenant-*']")
    wait_for(driver, lambda d: stale(opened))
    assert by_css(driver, "details[data-family='tenant-*']").get_attribute("open") is not None
    assert by_css(driver, "details[data-family='other-*']").get_attribute("open") is None
    # When they pause the family from its row
    act(driver, lambda d: by_css(d, f"{FAMILY} button.pause").click())
    # Then the row says paused, each Queue is held back by it, and the store holds it
    wait_for(driver, lambda d: by_css(d, f"{FAMILY} .paused-cell").text == "paused")
    assert by_css(driver, "p.flash").text.startswith("Paused Queue family tenant-*")
    act(driver, lambda d: by_css(d, "details[data-family='tenant-*'] > summary").click())
    wait_for(driver, members)
    held = [by_css(r, ".held-back-cell").text
            for r in all_css(driver, "details[data-family='tenant-*'] tr[data-member]")]
    assert held == ["paused"] * 3
    assert by_css(driver, "tr[data-member=tenant-b] .actions").text.startswith(
        "paused with tenant-*")
    # tenant-vip, a row of its own, is paused with the family too: no resume of its own
    assert by_css(driver, "tr[data-queue=tenant-vip] .actions").text.startswith(
        "paused with tenant-*")
    family = next(one for one in app.queues() if one.name == "tenant-*")
    assert family.paused
    driver.save_screenshot(str(browser.screenshot_path("queues-family-paused")))
    # And the family's page shows it paused, with its Queues
    driver.get(f"{dashboard.url}/queues/tenant-%2A")
    text = wait_for(driver, lambda d: by_css(d, "p.family-settings").text)
    assert text.startswith("Paused: no Queue of it is served.")
    assert [r.get_attribute("data-member") for r in all_css(driver, "tr[data-member]")] == [
        "tenant-b", "tenant-c", "tenant-a"]
    driver.save_screenshot(str(browser.screenshot_path("queue-family-page")))
