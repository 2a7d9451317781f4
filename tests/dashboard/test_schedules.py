"""The dashboard's schedules: the /schedules page (linked from every page), /api/schedules,
and the pause and resume actions behind the token, over a real server, on every store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota.store.base import ScheduleStore
from tests.dashboard.conftest import NOW, Seeded, ServedDashboard

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Serve = Callable[..., ServedDashboard]


def with_schedules(seeded: Seeded) -> None:
    """A stored schedule "nightly-b", and a schedule in code "hourly-a" a worker registered
    (its row in the store)."""
    app = seeded.app
    app.set_schedule("nightly-b", "build-report", cron="0 3 * * *",
                     timezone="Europe/Berlin", args=("2026-01-01",))
    store = app.store
    assert isinstance(store, ScheduleStore)
    hourly = app.schedule("hourly-a", "send-mail", every=3600, args=("ops@example.com",))
    store.register_schedules([hourly.registration()], NOW - timedelta(hours=2))


def test_the_schedules_page_and_api_list_them(seeded: Seeded, serve: Serve) -> None:
    with_schedules(seeded)
    dashboard = serve(seeded.source, clock=seeded.clock)
    # The API: both, by name, with next and last fire
    reply = dashboard.get("/api/schedules")
    assert reply.status == 200
    listed = {s["name"]: s for s in reply.json()}
    assert sorted(listed) == ["hourly-a", "nightly-b"]
    nightly, hourly = listed["nightly-b"], listed["hourly-a"]
    assert (nightly["job"], nightly["rule"], nightly["timezone"], nightly["queue"],
            nightly["stored"], nightly["paused"]) == (
        "build-report", "0 3 * * *", "Europe/Berlin", "b", True, False)
    assert nightly["next_fire_at"] == "2026-01-01T02:00:00+00:00"
    assert nightly["last_fire_at"] is None
    assert (hourly["stored"], hourly["rule"]) == (False, "every 3600s")
    assert hourly["next_fire_at"] is not None
    # The page shows the same, with a pause button each
    page = dashboard.get("/schedules")
    assert page.status == 200
    for text in ("nightly-b", "0 3 * * *", "Europe/Berlin", "hourly-a", "every 3600s",
                 'data-schedule="nightly-b"', "/api/schedules/nightly-b/pause", "never"):
        assert text in page.text


def test_every_page_links_to_the_schedules_page(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    job_id = seeded.ids["a"][0]
    for path in ("/queues", "/queues/a", "/workers", "/jobs", f"/jobs/{job_id}",
                 "/schedules", "/login"):
        page = dashboard.get(path)
        assert page.status == 200, path
        assert 'href="/schedules"' in page.text, path
    empty = dashboard.get("/schedules").text
    assert "No schedules" in empty


def test_pause_and_resume_need_the_token(seeded: Seeded, serve: Serve) -> None:
    with_schedules(seeded)
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    # Without the token: 401, nothing changes
    for action in ("pause", "resume"):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            reply = dashboard.post(f"/api/schedules/nightly-b/{action}", headers=headers)
            assert reply.status == 401
            assert "needs its token" in reply.json()["error"]
    assert not any(info.paused for info in seeded.app.list_schedules())
    # With it: pause, then resume
    reply = dashboard.post("/api/schedules/nightly-b/pause", headers=AUTH)
    assert reply.status == 200 and reply.json() == {"schedule": "nightly-b", "paused": True}
    listed = {s["name"]: s for s in dashboard.get("/api/schedules").json()}
    assert listed["nightly-b"]["paused"] and listed["nightly-b"]["next_fire_at"] is None
    # a schedule in code too
    assert dashboard.post("/api/schedules/hourly-a/pause", headers=AUTH).status == 200
    assert {i.name: i.paused for i in seeded.app.list_schedules()} == {
        "hourly-a": True, "nightly-b": True}
    reply = dashboard.post("/api/schedules/nightly-b/resume", headers=AUTH)
    assert reply.status == 200 and reply.json()["paused"] is False
    # An unknown one is 404, a bad name 400
    missing = dashboard.post("/api/schedules/missing/pause", headers=AUTH)
    assert missing.status == 404 and "no schedule named 'missing'" in missing.json()["error"]
    assert dashboard.post("/api/schedules/a%00b/pause", headers=AUTH).status == 400


def test_the_login_page_lists_every_action(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    page = dashboard.get("/login").text
    # The page lists every action from the API index: the schedules' among them
    for action in ("POST /api/schedules/{name}/pause", "POST /api/schedules/{name}/resume",
                   "POST /api/queues/{name}/rate", "POST /api/jobs/cancel"):
        assert action in page
    index = {entry["path"] for entry in dashboard.get("/api/").json()}
    assert {"/api/schedules", "/api/schedules/{name}/pause",
            "/api/schedules/{name}/resume"} <= index


@pytest.mark.parametrize("path", ["/schedules", "/api/schedules"])
def test_a_dashboard_of_an_app_shows_its_code_schedules_before_any_worker(
    serve: Serve, path: str, clock: rota.VirtualClock
) -> None:
    app = rota.App("memory://", clock=clock)
    try:
        app.job("tick")(lambda: None)
        app.schedule("tick-code", "tick", every=60)
        dashboard = serve(app)
        reply = dashboard.get(path)
        assert reply.status == 200 and "tick-code" in reply.text
    finally:
        app.close()
