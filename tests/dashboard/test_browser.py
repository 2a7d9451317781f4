"""The dashboard in a real headless Chromium: what a person sees, and what a click does.

Runs against the seeded SQLite store (tests/dashboard/conftest.py), served by a real
uvicorn. Screenshots of every page go to tests/output/screenshots/. With
ROTA_UPDATE_README_SCREENSHOT=1 the fairness view after a `rota demo` run is also written
to docs/img/fairness.png (the README's picture).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import rota
from tests.dashboard import browser
from tests.dashboard.conftest import Seeded, ServedDashboard

pytestmark = pytest.mark.slow

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "fairness.png"


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser.require_browser()
    yield from browser.open_driver()


def by_css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, selector)


def all_css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By
    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def wait_for(driver: Any, condition: Callable[[Any], Any]) -> Any:
    """Wait (on the browser, up to 30 s) until `condition(driver)` holds; elements of a
    page being replaced (a form post, the auto-refresh) are looked up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, 30, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException)).until(
        condition, message=f"the page never showed it; it shows: {driver.page_source[:2000]}")


def queue_rows(driver: Any) -> dict[str, dict[str, str]]:
    """What the Queues table shows, read in one go (retried by `wait_for` if the page
    refreshed itself meanwhile)."""
    cells = {"scheduled": "[data-state=scheduled]", "succeeded": "[data-state=succeeded]",
             "due": ".due-cell", "age": ".age-cell", "estimate": ".estimate-cell",
             "paused": ".paused-cell", "limit": ".limit-cell"}
    return {row.get_attribute("data-queue"): {k: by_css(row, css).text for k, css in
                                              cells.items()}
            for row in all_css(driver, "tr[data-queue]")}


def act(driver: Any, do: Callable[[Any], object]) -> None:
    """Do something to a page that may refresh itself meanwhile (the Queues page swaps its
    <main> every 5 s): `do(driver)` is retried on the new elements if the old went stale."""
    wait_for(driver, lambda d: do(d) or True)


def test_queues_page_shows_the_rows_and_pause_pauses_the_queue(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    # Given the seeded store, served
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    # When a person opens the Queues page
    driver.get(f"{dashboard.url}/queues")
    # Then they see one row per Queue, with its counts, due backlog and oldest due age
    rows = wait_for(driver, queue_rows)
    assert sorted(rows) == ["a", "b", "c", "emails", "paused-q"]
    a = rows["a"]
    assert (a["scheduled"], a["succeeded"], a["due"], a["age"]) == ("5", "1", "5", "90 s")
    # (group fair's one busy minute on record is too short a history for a number)
    assert a["estimate"] == "when its turn comes: not enough history yet to say how soon"
    assert (rows["paused-q"]["paused"], rows["paused-q"]["limit"]) == ("paused", "2")
    driver.save_screenshot(str(browser.screenshot_path("queues")))
    # When they click "pause" on Queue a
    act(driver, lambda d: by_css(d, "tr[data-queue=a] button.pause").click())
    # Then the page comes back with a paused, says so, and the store says so
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=a] .paused-cell").text == "paused")
    assert by_css(driver, "p.flash").text.startswith("Paused Queue a")
    assert by_css(driver, "footer .read-at").text.startswith("2026-01-01T00:01:30")
    info = sqlite_seeded.queue("a")
    assert info is not None and info.paused
    # And setting a limit in the row's form sets it in the store
    def set_limit(d: Any) -> None:
        field = by_css(d, "tr[data-queue=b] input[name=limit]")
        field.clear()
        field.send_keys("7")
        by_css(d, "tr[data-queue=b] button.set-limit").click()

    act(driver, set_limit)
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=b] .limit-cell").text == "7")
    assert sqlite_seeded.queue("b").limit == 7  # type: ignore[union-attr]
    driver.save_screenshot(str(browser.screenshot_path("queues-after-pause")))


def test_the_rate_form_sets_and_removes_a_queues_rate(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    # Given the Queues page of the seeded store
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    driver.get(f"{dashboard.url}/queues")
    wait_for(driver, queue_rows)

    def set_rate(rate: str, burst: str) -> Callable[[Any], None]:
        def do(d: Any) -> None:
            for name, value in (("rate", rate), ("burst", burst)):
                field = by_css(d, f"tr[data-queue=b] input[name={name}]")
                field.clear()
                if value:
                    field.send_keys(value)
            by_css(d, "tr[data-queue=b] button.set-rate").click()
        return do

    # When a person types a rate and a burst in Queue b's row and sets it
    act(driver, set_rate("30/1m", "5"))
    # Then the row shows it, the page says what was done, and the store holds it
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=b] .rate-cell").text
             == "30/1m (burst 5)")
    assert by_css(driver, "p.flash").text.startswith("Set the rate of Queue b to 30/1m")
    assert by_css(driver, "tr[data-queue=b] input[name=rate]").get_attribute("value") == "30/1m"
    rate = sqlite_seeded.queue("b").rate  # type: ignore[union-attr]
    assert rate is not None and (rate.jobs, rate.per.total_seconds(), rate.burst) == (30, 60, 5)
    driver.save_screenshot(str(browser.screenshot_path("queues-rate")))
    # When they type a rate that is not one, the error page names the form
    act(driver, set_rate("fast", ""))
    wait_for(driver, lambda d: "is not a rate" in d.page_source)
    assert sqlite_seeded.queue("b").rate == rate  # type: ignore[union-attr]
    # And emptying the field removes the rate
    driver.get(f"{dashboard.url}/queues")
    act(driver, set_rate("", ""))
    wait_for(driver, lambda d: by_css(d, "p.flash").text.startswith("Removed the rate"))
    assert sqlite_seeded.queue("b").rate is None  # type: ignore[union-attr]
    assert by_css(driver, "tr[data-queue=b] .rate-cell").text == ""


def group_view(driver: Any, name: str) -> dict[str, Any]:
    """What a Worker Group's section shows, read in one go (retried by `wait_for` if the
    page refreshed itself meanwhile): its heading, its facts, and per Queue of the chart
    the printed shares, the bars' data and the served bar's width."""
    group = by_css(driver, f"section.group[data-group={name}]")
    bars = {}
    for bar in all_css(group, "svg.fairness g.share"):
        printed = all_css(bar, ".target-pct")
        bars[bar.get_attribute("data-queue")] = {
            "target": bar.get_attribute("data-target"),
            "served": bar.get_attribute("data-served"),
            "target_text": printed[0].text if printed else None,
            "served_text": by_css(bar, ".served-pct").text,
            "width": float(by_css(bar, "rect.served-bar").get_attribute("width")),
        }
    return {"heading": by_css(group, "h2").text, "text": group.text, "bars": bars}


def screenshot(driver: Any, selector: str, path: Path) -> None:
    act(driver, lambda d: by_css(d, selector).screenshot(str(path)))


def test_worker_groups_page_draws_target_against_served_shares(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    driver.get(f"{dashboard.url}/workers")
    fair = wait_for(driver, lambda d: group_view(d, "fair"))
    assert "Weighted a=6, b=3, c=1" in fair["heading"]
    assert "1 live worker(s)" in fair["text"]
    # The chart: one pair of bars per Queue, target and served, with the right shares
    bars = fair["bars"]
    assert sorted(bars) == ["a", "b", "c"]
    for queue, share in (("a", "60%"), ("b", "30%"), ("c", "10%")):
        assert (bars[queue]["target_text"], bars[queue]["served_text"]) == (share, share)
    widths = {queue: bar["width"] for queue, bar in bars.items()}
    assert widths["a"] == pytest.approx(2 * widths["b"]) == pytest.approx(6 * widths["c"])
    # The worker processes: the live one and the dead one, marked
    states = wait_for(driver, lambda d: {
        by_css(row, "td").text: row.get_attribute("class")
        for row in all_css(d, "table.workers > tbody > tr:not(.running-row)")})
    assert states == {"host:1:tok": "alive", "host:2:old": "dead"}
    # What runs now: the live worker holds no lease in the seeded store
    assert by_css(driver, "tr.running-row.idle").text == "nothing running on host:1:tok now"
    # The group's chart of attempts over time: the 100 served in the minute of START
    chart = by_css(driver, "figure.served-chart[data-group=fair]")
    assert (chart.get_attribute("data-succeeded"), chart.get_attribute("data-failed")) == (
        "100", "0")
    assert len(all_css(chart, "rect.ok-bar")) == 2  # the minute's bar and the legend's
    driver.save_screenshot(str(browser.screenshot_path("workers")))
    screenshot(driver, "section.group[data-group=fair]", browser.screenshot_path("fairness"))


def test_after_rota_demo_the_fairness_view_shows_its_served_shares(
    driver: Any, tmp_path: Path, serve: Callable[..., ServedDashboard]
) -> None:
    # Given a finished `rota demo` run (its workers have stopped)
    db = tmp_path / "rota-demo.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    subprocess.run([sys.executable, "-m", "rota.cli", "demo", "--seconds", "2", "--db",
                    str(db)], env=env, check=True, capture_output=True, timeout=300)
    # When the dashboard shows its store
    dashboard = serve(f"sqlite:///{db}")
    driver.get(f"{dashboard.url}/workers")
    # Then the Weighted group's served shares stand beside its weights 6:3:1
    fair = wait_for(driver, lambda d: group_view(d, "fair"))
    assert "0 live worker(s)" in fair["text"]
    for queue, target in (("a", 0.6), ("b", 0.3), ("c", 0.1)):
        assert float(fair["bars"][queue]["target"]) == pytest.approx(target)
        assert float(fair["bars"][queue]["served"]) == pytest.approx(target, abs=0.02)
    # And the Strict group shows both its Queues, without targets
    priority = wait_for(driver, lambda d: group_view(d, "priority"))
    assert set(priority["bars"]) == {"critical", "bulk"}
    assert all(bar["target"] == "" for bar in priority["bars"].values())
    driver.save_screenshot(str(browser.screenshot_path("demo-workers")))
    selector = "section.group[data-group=fair]"
    screenshot(driver, selector, browser.screenshot_path("demo-fairness"))
    if os.environ.get("ROTA_UPDATE_README_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        screenshot(driver, selector, README_SCREENSHOT)


def test_jobs_page_filters_and_the_detail_view(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    driver.get(f"{dashboard.url}/jobs")
    ids = [int(row.get_attribute("data-job")) for row in all_css(driver, "tr[data-job]")]
    assert ids == sorted(ids, reverse=True) and len(ids) == 12
    # Filter by state through the form
    from selenium.webdriver.support.ui import Select
    Select(by_css(driver, "select[name=state]")).select_by_value("dead_lettered")
    by_css(driver, "form.filters button").click()
    wait_for(driver, lambda d: len(all_css(d, "tr[data-job]")) == 1)
    [failed] = sqlite_seeded.ids["failed"]
    # Open the job: its detail shows its arguments, attempts and last error
    by_css(driver, f"tr[data-job='{failed}'] a").click()
    wait_for(driver, lambda d: d.current_url.endswith(f"/jobs/{failed}"))
    assert by_css(driver, ".job-name").text == "always-fails"
    assert by_css(driver, ".attempt").text == "1"
    assert by_css(driver, ".last-error").text == "RuntimeError: boom"
    driver.save_screenshot(str(browser.screenshot_path("job-dead-lettered")))
    # Requeue it from the detail view
    by_css(driver, "button.requeue").click()
    wait_for(driver, lambda d: by_css(d, "h1 .state").text == "scheduled")
    assert sqlite_seeded.job(failed).state is rota.JobState.SCHEDULED
    # A succeeded job shows its result and arguments
    [done] = sqlite_seeded.ids["done"]
    driver.get(f"{dashboard.url}/jobs/{done}")
    assert '"sent": 1' in by_css(driver, ".result").text
    assert "done@example.com" in by_css(driver, ".args").text
    # A scheduled job shows when it will run, with the basis
    driver.get(f"{dashboard.url}/jobs/{sqlite_seeded.ids['b'][0]}")
    # (b's first due job: one job of a goes before it in the 6:3:1 order)
    assert by_css(driver, ".estimate-text").text == (
        "when its turn comes: not enough history yet to say how soon")
    basis = by_css(driver, ".estimate .basis").text
    assert "number 1 of the 3 due job(s) of Queue b" in basis and "Weighted 6:3:1" in basis
    driver.save_screenshot(str(browser.screenshot_path("job-scheduled")))


def test_a_childs_page_leads_to_its_parent(
    driver: Any, tmp_path: Path, clock: rota.VirtualClock,
    serve: Callable[..., ServedDashboard],
) -> None:
    # Given a parent and a child waiting for it, on an SQLite file
    url = f"sqlite:///{tmp_path / 'workflow.db'}"
    app = rota.App(url, clock=clock)
    try:
        @app.job("step", queue="q")
        def step(name: str) -> None: ...

        parent = step.enqueue("parent")
        child = step.configure(after=[parent]).enqueue("child")
        dashboard = serve(url, clock=clock)
        # When the child's page is opened, it says what it waits for
        driver.get(f"{dashboard.url}/jobs/{child}")
        assert by_css(driver, "h1 .state").text == "waiting"
        assert by_css(driver, ".waiting-for").text == "for 1 of its 1 parent(s) to finish"
        assert len(all_css(driver, "svg.workflow-graph g.node")) == 2
        driver.save_screenshot(str(browser.screenshot_path("job-workflow")))
        # Then the link in its list of parents opens the parent, which lists the child
        by_css(driver, f".relatives-parents tr[data-job='{parent}'] a").click()
        wait_for(driver, lambda d: d.current_url.endswith(f"/jobs/{parent}"))
        assert by_css(driver, f".relatives-children tr[data-job='{child}'] .state"
                      ).text == "waiting"
        # And so does the parent's box in the child's graph
        driver.get(f"{dashboard.url}/jobs/{child}")
        by_css(driver, f"svg.workflow-graph g.node[data-job='{parent}']").click()
        wait_for(driver, lambda d: d.current_url.endswith(f"/jobs/{parent}"))
    finally:
        app.close()


def test_a_running_jobs_page_shows_its_progress_bar_and_failed_attempts(
    driver: Any, tmp_path: Path, clock: rota.VirtualClock,
    serve: Callable[..., ServedDashboard],
) -> None:
    # Given a job that failed once and now runs, 3 of 8 done
    url = f"sqlite:///{tmp_path / 'progress.db'}"
    app = rota.App(url, clock=clock)
    try:
        @app.job("export", queue="q")
        def export() -> None: ...

        job_id = export.enqueue()
        store, now = app.store, clock.now()
        store.claim(["q"], 1, now=now, owner="g@host-a:1:aaaa0000",
                    lease_expires_at=now + timedelta(minutes=1))
        assert store.retry(app.get_job(job_id).lease, now, now,  # type: ignore[union-attr]
                           "TimeoutError: slow", traceback="Traceback: slow\n")
        store.claim(["q"], 1, now=now, owner="g@host-b:2:bbbb0000",
                    lease_expires_at=now + timedelta(minutes=1))
        lease = app.get_job(job_id).lease  # type: ignore[union-attr]
        assert store.set_progress(lease, rota.Progress(3, 8, "files", now))
        dashboard = serve(url, clock=clock)
        # When its page is opened
        driver.get(f"{dashboard.url}/jobs/{job_id}")
        # Then a bar shows how far it got, with its text
        bar = by_css(driver, ".job-progress progress")
        assert (bar.get_attribute("value"), bar.get_attribute("max")) == ("375", "1000")
        assert by_css(driver, ".job-progress .progress-text").text == "3/8 (38%) files"
        assert by_css(driver, ".job-worker").text == "host-b:2:bbbb0000"
        # And the failed attempt is listed, its traceback folded until opened
        assert by_css(driver, "tr[data-attempt='1'] .attempt-error").text == "TimeoutError: slow"
        assert not by_css(driver, ".attempt-traceback").is_displayed()
        by_css(driver, "tr[data-attempt='1'] details summary").click()
        wait_for(driver, lambda d: by_css(d, ".attempt-traceback").is_displayed())
        driver.save_screenshot(str(browser.screenshot_path("job-progress")))
    finally:
        app.close()


def test_with_a_token_the_buttons_need_a_login(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock, token="t0ken")
    driver.delete_all_cookies()
    driver.get(f"{dashboard.url}/queues")
    # Without logging in, the buttons are disabled and the page says what to do
    button = wait_for(driver, lambda d: by_css(d, "tr[data-queue=a] button.pause"))
    assert not button.is_enabled()
    assert button.get_attribute("title") == "sign in with the token to act"
    note = by_css(driver, ".sign-in-note a")
    assert note.text == "Sign in with the token to act"
    driver.save_screenshot(str(browser.screenshot_path("queues-signed-out")))
    # Log in with a wrong token, then the right one (the note leads to the login page)
    note.click()
    wait_for(driver, lambda d: "/login?next=" in d.current_url)
    by_css(driver, "input[name=token]").send_keys("wrong")
    by_css(driver, ".login-form button").click()
    wait_for(driver, lambda d: "not the token" in by_css(d, "main").text)
    by_css(driver, "input[name=token]").send_keys("t0ken")
    by_css(driver, ".login-form button").click()
    wait_for(driver, lambda d: d.current_url.endswith("/queues"))
    # Now the button works
    act(driver, lambda d: by_css(d, "tr[data-queue=a] button.pause").click())
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=a] .paused-cell").text == "paused")
    assert sqlite_seeded.queue("a").paused  # type: ignore[union-attr]
    driver.delete_all_cookies()


def test_the_pages_refresh_themselves(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    # Given the Queues page open in the browser
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    driver.get(f"{dashboard.url}/queues")
    assert by_css(driver, "tr[data-queue=b] .paused-cell").text == ""
    # When someone else pauses Queue b and enqueues into a (another process, the CLI, ...)
    sqlite_seeded.app.pause_queue("b")
    sqlite_seeded.app.jobs["send-mail"].enqueue("late@example.com")
    # Then the open page shows it without a reload (its script re-reads it every 5 s)
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=b] .paused-cell").text == "paused")
    wait_for(driver, lambda d: by_css(d, "tr[data-queue=a] [data-state=scheduled]").text == "6")


def test_a_bulk_cancel_of_the_filtered_jobs_after_logging_in(
    driver: Any, sqlite_seeded: Seeded, serve: Callable[..., ServedDashboard]
) -> None:
    # Given three jobs of tenant acme and one of another tenant, and a dashboard with a token
    send_mail = sqlite_seeded.app.jobs["send-mail"]
    acme = send_mail.configure(meta={"tenant": "acme"}, delay=3600).enqueue_many(
        [("a@example.com",)] * 3)
    [zeta] = send_mail.configure(meta={"tenant": "zeta"}, delay=3600).enqueue_many(
        [("z@example.com",)])
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock, token="t0ken")
    driver.delete_all_cookies()
    # When a person filters the jobs list by meta, signed out, the bulk buttons are disabled
    driver.get(f"{dashboard.url}/jobs")
    by_css(driver, "input[name=meta]").send_keys("tenant=acme")
    by_css(driver, "form.filters button").click()
    wait_for(driver, lambda d: len(all_css(d, "tr[data-job]")) == 3)
    assert not by_css(driver, "form.bulk-cancel button").is_enabled()
    filtered = driver.current_url
    # And the login page lists every action, the bulk ones too
    driver.get(f"{dashboard.url}/login?next={quote(filtered.split(dashboard.url)[1])}")
    listed = by_css(driver, "ul.actions").text
    assert "POST /api/jobs/cancel" in listed and "POST /api/jobs/requeue" in listed
    by_css(driver, "input[name=token]").send_keys("t0ken")
    by_css(driver, ".login-form button").click()
    wait_for(driver, lambda d: d.current_url == filtered)
    # When they confirm and cancel every job the filter selects
    by_css(driver, "form.bulk-cancel input[name=confirm]").click()
    driver.save_screenshot(str(browser.screenshot_path("jobs-bulk-cancel")))
    by_css(driver, "form.bulk-cancel button").click()
    # Then the page says how many, and only the tenant's jobs are cancelled
    wait_for(driver, lambda d: by_css(d, ".flash").text
             == "Cancelled 3 jobs (running ones on request).")
    assert {sqlite_seeded.job(i).state for i in acme} == {rota.JobState.CANCELLED}
    assert sqlite_seeded.job(zeta).state is rota.JobState.SCHEDULED
    assert {row.text for row in all_css(driver, "tr[data-job] .state")} == {"cancelled"}
    driver.delete_all_cookies()
