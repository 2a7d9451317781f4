"""The dashboard's meta filter and bulk actions (POST /api/jobs/cancel and
/api/jobs/requeue), over a real server, on every store: behind the token, with the
filters as a form or JSON, refusing no filter without `everything`, and the login page
listing every action."""

from __future__ import annotations

from collections.abc import Callable

import rota
from rota.dashboard.server import API_INDEX
from tests.dashboard.conftest import Seeded, ServedDashboard

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Serve = Callable[..., ServedDashboard]


def tag(seeded: Seeded, meta: dict[str, object], count: int) -> list[int]:
    """`count` jobs of Queue a with `meta`, due in an hour."""
    definition = seeded.app.jobs["send-mail"]
    return definition.configure(meta=meta, delay=3600).enqueue_many(
        [("x@example.com",)] * count)


def test_jobs_filter_by_meta_and_page_by_id(seeded: Seeded, serve: Serve) -> None:
    acme = tag(seeded, {"tenant": "acme", "order": 42}, 3)
    tag(seeded, {"tenant": "acme", "order": "42"}, 1)
    dashboard = serve(seeded.source, clock=seeded.clock)
    first = dashboard.get("/api/jobs?meta=tenant%3Dacme+order%3D42&limit=2").json()
    assert [job["id"] for job in first["jobs"]] == [acme[2], acme[1]]
    assert first["jobs"][0]["meta"] == {"tenant": "acme", "order": 42}
    assert first["meta"] == {"tenant": "acme", "order": 42}
    following = dashboard.get(f"/api/jobs?meta=tenant%3Dacme+order%3D42&limit=2"
                              f"&before={first['next_before']}").json()
    assert [job["id"] for job in following["jobs"]] == [acme[0]]
    # A JSON object works too; a bad filter is a 400 naming the problem
    as_json = dashboard.get('/api/jobs?meta={"order":"42"}').json()
    assert len(as_json["jobs"]) == 1
    bad = dashboard.get("/api/jobs?meta=tenant")
    assert bad.status == 400 and "KEY=VALUE" in bad.json()["error"]
    page = dashboard.get("/jobs?meta=tenant%3Dacme", headers={"Accept": "text/html"})
    assert page.status == 200
    assert '<td class="meta">{"order": 42, "tenant": "acme"}</td>' in page.text


def test_bulk_actions_need_the_token_and_change_nothing_without_it(
        seeded: Seeded, serve: Serve) -> None:
    acme = tag(seeded, {"tenant": "acme"}, 2)
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    for path in ("/api/jobs/cancel", "/api/jobs/requeue"):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            reply = dashboard.post(path, data={"meta": "tenant=acme"}, headers=headers)
            assert reply.status == 401 and "needs its token" in reply.json()["error"]
    assert {seeded.job(i).state for i in acme} == {rota.JobState.SCHEDULED}


def test_bulk_cancel_and_requeue_by_form_and_json(seeded: Seeded, serve: Serve) -> None:
    acme = tag(seeded, {"tenant": "acme"}, 3)
    other = tag(seeded, {"tenant": "zeta"}, 1)
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    reply = dashboard.post("/api/jobs/cancel", data={"queue": "a", "meta": "tenant=acme"},
                           headers=AUTH)
    assert reply.status == 200 and reply.json() == {"cancelled": 3}
    assert {seeded.job(i).state for i in acme} == {rota.JobState.CANCELLED}
    assert seeded.job(other[0]).state is rota.JobState.SCHEDULED
    reply = dashboard.post("/api/jobs/requeue", body={"meta": {"tenant": "acme"}},
                           headers=AUTH)
    assert reply.status == 200 and reply.json() == {"requeued": 3}
    assert {seeded.job(i).state for i in acme} == {rota.JobState.SCHEDULED}


def test_a_bulk_action_without_a_filter_needs_everything(
        seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    reply = dashboard.post("/api/jobs/cancel", data={}, headers=AUTH)
    assert reply.status == 400 and "everything=true" in reply.json()["error"]
    reply = dashboard.post("/api/jobs/cancel", data={"state": "running"}, headers=AUTH)
    assert reply.status == 400 and "the states are waiting, scheduled" in reply.json()["error"]
    assert seeded.queue("a").counts[rota.JobState.SCHEDULED] == 5  # type: ignore[union-attr]
    reply = dashboard.post("/api/jobs/cancel", body={"everything": True}, headers=AUTH)
    assert reply.status == 200 and reply.json()["cancelled"] == 10
    assert seeded.queue("a").counts[rota.JobState.SCHEDULED] == 0  # type: ignore[union-attr]


def test_a_bulk_form_post_from_a_page_needs_its_confirmation(
        seeded: Seeded, serve: Serve) -> None:
    acme = tag(seeded, {"tenant": "acme"}, 1)
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    html = {**AUTH, "Accept": "text/html"}
    reply = dashboard.post("/api/jobs/cancel", data={"meta": "tenant=acme"}, headers=html)
    assert reply.status == 400 and "tick the box to confirm" in reply.text
    assert seeded.job(acme[0]).state is rota.JobState.SCHEDULED


def test_the_login_page_and_the_api_index_list_every_action(
        seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    page = dashboard.get("/login").text
    posts = [path for method, path, _text in API_INDEX if method == "POST"]
    assert "/api/jobs/cancel" in posts and "/api/jobs/requeue" in posts
    for path in posts:
        assert f"POST {path}" in page, path
    listed = {entry["path"] for entry in dashboard.get("/api/").json()}
    assert {"/api/jobs/cancel", "/api/jobs/requeue"} <= listed
