"""The dashboard's /healthz, its /api/ index, the ranges of its numbers, the read time
on every page, what a logged-out person is offered, and the confirmation of an action."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta

import psycopg
import pytest

import rota
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from rota.store import open_store
from rota.store.base import Migratable
from rota.store.memory import MemoryStore
from tests.conftest import START
from tests.dashboard.conftest import NOW, Seeded, ServedDashboard

Serve = Callable[..., ServedDashboard]
TOKEN = "s3cret-token"
HTML = {"Accept": "text/html"}


# -- /healthz ---------------------------------------------------------------------------


def test_healthz_answers_200_for_a_current_store_without_the_token(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    reply = dashboard.get("/healthz")
    assert reply.status == 200 and reply.headers["Cache-Control"] == "no-store"
    body = reply.json()
    assert body["ok"] is True and body["problems"] == []
    assert body["schema_version"] == body["known_schema_version"]


def test_healthz_answers_503_when_the_store_fails(
    serve: Serve, clock: rota.VirtualClock
) -> None:
    class Down(MemoryStore):
        def list_workers(self, now: object) -> list[WorkerInfo]:
            raise rota.StoreError("connection refused")

    reply = serve(Down(), clock=clock).get("/healthz")
    assert reply.status == 503
    assert reply.json()["problems"] == ["the store does not answer: connection refused"]


def test_healthz_answers_503_when_postgresql_does_not_answer(serve: Serve) -> None:
    reply = serve("postgresql://postgres@127.0.0.1:1/nothing").get("/healthz")
    assert reply.status == 503 and "does not answer" in reply.json()["problems"][0]


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    from tests.conftest import POSTGRES_URL
    from tests.pg import fresh_postgres_url

    yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


def test_healthz_answers_503_for_a_schema_behind_and_leaves_it(
    postgres_url: str, serve: Serve
) -> None:
    # Given a PostgreSQL store lacking its last migration (an SQLite file in that state
    # is refused when the dashboard opens it read-only, before it serves)
    durable_store_url = postgres_url
    store = open_store(durable_store_url)
    try:
        assert isinstance(store, Migratable)
        store.migrate()
        known = store.known_schema_version()
    finally:
        store.close()
    with psycopg.connect(durable_store_url, autocommit=True) as conn:
        conn.execute("DELETE FROM rota.schema_migrations WHERE version = %s", (known,))
    # When /healthz is read
    reply = serve(durable_store_url).get("/healthz")
    # Then 503 with what to run, and the schema is still behind
    assert reply.status == 503 and "rota migrate" in reply.json()["problems"][0]
    with psycopg.connect(durable_store_url, autocommit=True) as conn:
        row = conn.execute("SELECT max(version) FROM rota.schema_migrations").fetchone()
    assert row is not None and row[0] == known - 1


def test_healthz_with_an_app_needs_live_workers_for_its_queues(
    serve: Serve, clock: rota.VirtualClock
) -> None:
    # Given an App whose group serves a and b, and no live worker
    app = rota.App(MemoryStore(), clock=clock)
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("a", "b")))
    dashboard = serve(app)
    reply = dashboard.get("/healthz")
    assert reply.status == 503 and reply.json()["unserved"] == ["a", "b"]
    # When a live worker serves them
    app.store.register_worker(WorkerInfo(
        id="h:1:t", host="h", pid=1, version=rota.__version__, started_at=START,
        last_seen=START, dead_at=START + timedelta(minutes=5),
        groups=(WorkerGroupInfo("g", rota.Strict("a", "b"), 2, owner="g@h:1:t"),)), START)
    # Then 200
    assert dashboard.get("/healthz").status == 200


# -- /api/ ------------------------------------------------------------------------------


def test_api_index_lists_the_json_endpoints(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    for path in ("/api/", "/api"):
        reply = dashboard.get(path)
        assert reply.status == 200, path
        index = {(one["method"], one["path"]): one["description"] for one in reply.json()}
        assert ("GET", "/api/queues") in index and ("POST", "/api/jobs/{id}/cancel") in index
        assert all(text for text in index.values())
    # Every GET it lists without a placeholder answers
    for method, path in index:
        if method == "GET" and "{" not in path:
            assert dashboard.get(path.split("?")[0]).status in (200, 503), path
    # And the footer of every page links it
    assert 'href="/api/"' in dashboard.get("/queues").text


# -- numbers in the query ---------------------------------------------------------------


@pytest.mark.parametrize(("path", "words"), [
    ("/api/groups?minutes=0", "minutes must be a whole number from 1 to 1440; got '0'"),
    ("/api/groups?minutes=1441", "from 1 to 1440"),
    ("/workers?minutes=0", "from 1 to 1440"),
    ("/api/jobs?limit=0", "limit must be a whole number from 1 to 500; got '0'"),
    ("/jobs?limit=0", "from 1 to 500"),
    ("/api/jobs?offset=-1", "offset must be a whole number from 0 to"),
])
def test_numbers_out_of_their_range_answer_400_with_the_range(
    seeded: Seeded, serve: Serve, path: str, words: str
) -> None:
    reply = serve(seeded.source, clock=seeded.clock).get(path)
    assert reply.status == 400 and words in reply.text


def test_numbers_at_the_ends_of_their_range_are_taken(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    assert dashboard.get("/api/groups?minutes=1").status == 200
    assert dashboard.get("/api/groups?minutes=1440").status == 200
    assert len(dashboard.get("/api/jobs?limit=1").json()["jobs"]) == 1
    assert dashboard.get("/api/jobs?offset=0&limit=500").status == 200


# -- the read time, on every page -------------------------------------------------------


def test_every_page_shows_its_read_time(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    [job_id] = seeded.ids["done"]
    read_at = f"Read at <time class=\"read-at\" datetime=\"{NOW.isoformat()}\">"
    for path in ("/queues", "/queues/a", "/workers", "/jobs", f"/jobs/{job_id}", "/login",
                 "/jobs/999999", "/jobs?state=nope"):
        page = dashboard.get(path, headers=HTML).text
        assert read_at in page, path
        assert "Read at ·" not in page
    # And a refused action's page too
    refused = dashboard.post("/api/queues/a/pause", headers=HTML)
    assert refused.status == 401 and read_at in refused.text


# -- signed out -------------------------------------------------------------------------


def test_signed_out_the_buttons_are_disabled_and_say_why(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    [failed] = seeded.ids["failed"]
    for path in ("/queues", f"/jobs/{failed}", f"/jobs/{seeded.ids['a'][0]}"):
        page = dashboard.get(path).text
        assert "Sign in with the token to act" in page, path
        assert page.count("<button class=") == page.count(
            'disabled title="sign in with the token to act"'), path
    # Signed in (by the cookie /login sets), the buttons are live
    cookie = {"Cookie": f"rota_dashboard={session(TOKEN)}"}
    page = dashboard.get("/queues", headers=cookie).text
    assert "Sign in with the token" not in page and " disabled" not in page
    # And without a token, nobody needs to sign in
    open_page = serve(seeded.source, clock=seeded.clock).get("/queues").text
    assert "Sign in with the token" not in open_page and " disabled" not in open_page


def session(token: str) -> str:
    from rota.dashboard.auth import session_value
    return session_value(token)


# -- the confirmation of an action ------------------------------------------------------


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def form_post(dashboard: ServedDashboard, path: str, fields: dict[str, str]) -> str:
    """POST a form as a page does; the Set-Cookie of its 303 (the redirect not followed)."""
    request = urllib.request.Request(
        dashboard.url + path, method="POST", data=urllib.parse.urlencode(fields).encode(),
        headers={**HTML, "Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.build_opener(NoRedirect).open(request, timeout=30)
    except urllib.error.HTTPError as error:
        with error:
            assert error.code == 303
            return str(error.headers["Set-Cookie"])
    raise AssertionError("expected a redirect")


@pytest.mark.parametrize(("path", "fields", "words"), [
    ("/api/queues/a/pause", {}, "Paused Queue a"),
    ("/api/queues/paused-q/resume", {}, "Resumed Queue paused-q."),
    ("/api/queues/a/limit", {"limit": "3"}, "Set the limit of Queue a to 3"),
    ("/api/queues/paused-q/limit", {"limit": "none"}, "Removed the limit of Queue paused-q."),
    ("/api/jobs/{a}/cancel", {}, "cancelled: now cancelled."),
    ("/api/jobs/{failed}/requeue", {}, "requeued: now scheduled."),
])
def test_after_an_action_the_next_page_confirms_it_once(
    seeded: Seeded, serve: Serve, path: str, fields: dict[str, str], words: str
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    path = path.format(a=seeded.ids["a"][0], failed=seeded.ids["failed"][0])
    # When a page's form acts
    set_cookie = form_post(dashboard, path, {**fields, "next": "/queues"})
    assert set_cookie.startswith("rota_flash=") and "HttpOnly" in set_cookie
    flash = set_cookie.split(";")[0]
    # Then the page it lands on says what was done, and drops the message
    landed = dashboard.get("/queues", headers={**HTML, "Cookie": flash})
    assert '<p class="flash" role="status">' in landed.text
    assert words in landed.text
    assert landed.headers["Set-Cookie"].startswith('rota_flash=""')
    # And a page read without it shows none
    assert 'class="flash"' not in dashboard.get("/queues").text


def test_a_hostile_queue_name_in_the_confirmation_is_escaped(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    name = urllib.parse.quote("<b>q</b>", safe="")
    flash = form_post(dashboard, f"/api/queues/{name}/pause", {}).split(";")[0]
    page = dashboard.get("/queues", headers={"Cookie": flash}).text
    assert "Paused Queue &lt;b&gt;q&lt;/b&gt;" in page and "<b>q</b>" not in page


# -- the limit's range ------------------------------------------------------------------


@pytest.mark.parametrize("limit", [-1, 3_000_000_000, 99999999999999999999, 2**31, "-1",
                                   "99999999999999999999"])
def test_a_limit_out_of_range_answers_400_before_the_store(
    seeded: Seeded, serve: Serve, limit: object
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.post("/api/queues/a/limit", body={"limit": limit})
    assert reply.status == 400
    assert "limit must be a whole number" in reply.json()["error"]
    assert seeded.queue("a").limit is None  # type: ignore[union-attr]
    # The range's ends are taken, as by app.set_queue_limit and rota limit (0 takes nothing)
    for taken in (0, 2**31 - 1):
        assert dashboard.post("/api/queues/a/limit", body={"limit": taken}).json()[
            "limit"] == taken


@pytest.mark.parametrize("error", [
    ValueError("limit must be from 1 to 2147483647; got 7"),
    TypeError("limit must be an int; got 7"), OverflowError("int too large"),
])
def test_a_settings_call_refusing_its_input_answers_400_with_its_message(
    seeded: Seeded, serve: Serve, monkeypatch: pytest.MonkeyPatch, error: Exception,
) -> None:
    def refuse(self: rota.App, queue: str, limit: int | None) -> None:
        raise error

    monkeypatch.setattr(rota.App, "set_queue_limit", refuse)
    reply = serve(seeded.source, clock=seeded.clock).post("/api/queues/a/limit",
                                                          body={"limit": 7})
    assert reply.status == 400 and reply.json() == {"error": str(error)}
