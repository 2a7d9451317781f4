"""The dashboard's Queue families: which row a Queue shows in, members by backlog, and
the family row of the JSON API, its page, its actions and /metrics (memory store; the
SQL stores' family settings are checked by the store contract)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

import rota
from rota.core.jobs import JobState
from rota.core.queue_controls import QueueInfo
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo
from rota.dashboard import views
from rota.store.memory import MemoryStore
from tests.conftest import START
from tests.dashboard.conftest import ServedDashboard
from tests.dashboard.test_health_and_inputs import form_post

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TENANTS = rota.Weighted([("tenant-vip", 5), ("tenant-*", 1), ("plain", 1)])

Serve = Callable[..., ServedDashboard]


def info(name: str, due: int = 0, leased: int = 0, **fields: object) -> QueueInfo:
    return QueueInfo(name, counts={JobState.SCHEDULED: due, JobState.LEASED: leased},
                     due=due, **fields)  # type: ignore[arg-type]


# -- the pure rules --------------------------------------------------------------------


def test_a_queue_shows_under_the_family_entry_that_serves_it() -> None:
    infos = [info("plain"), info("tenant-a"), info("tenant-vip"), info("x-1")]
    found = views.family_of_queues(infos, [TENANTS])
    # tenant-vip has an entry of its own (an override): a row of its own
    assert found == {"tenant-a": "tenant-*"}


def test_the_first_policy_serving_a_queue_decides_its_row() -> None:
    infos = [info("tenant-vip"), info("tenant-a")]
    found = views.family_of_queues(infos, [rota.Strict("tenant-v*"), TENANTS])
    assert found == {"tenant-vip": "tenant-v*", "tenant-a": "tenant-*"}


def test_a_queue_no_policy_serves_shows_under_the_family_whose_settings_apply() -> None:
    infos = [info("t-1", family="t-*"), info("t-2"), info("t-*", members=1, paused=True)]
    assert views.family_of_queues(infos, []) == {"t-1": "t-*"}
    # A policy entry wins over the settings
    assert views.family_of_queues(infos, [rota.Strict("t-1")]) == {}


def test_members_sort_by_backlog_then_name() -> None:
    members = [info("b", 2), info("a", 2), info("c", 9), info("d", 0)]
    assert [one.name for one in views.by_backlog(members)] == ["c", "a", "b", "d"]


def test_rows_hold_each_queue_once_and_never_a_familys_entry_as_a_queue() -> None:
    # Given members of tenant-* (which has settings: its entry sums them), a Queue of its
    # own row, and a family with settings whose Queues all show elsewhere
    infos = sorted([
        info("plain", 1), info("tenant-a", 2, family="tenant-*"),
        info("tenant-b", 5, family="tenant-*"), info("tenant-vip", 3, family="tenant-*"),
        info("tenant-*", 10, members=3, limit=2), info("tenant-v*", 3, members=1),
    ], key=lambda one: one.name)
    rows = views.queue_rows(infos, [TENANTS])
    assert [(row.name, None if row.members is None else [m.name for m in row.members])
            for row in rows] == [
        ("plain", None), ("tenant-*", ["tenant-b", "tenant-a"]), ("tenant-v*", []),
        ("tenant-vip", None)]
    assert rows[1].info is not None and rows[1].info.limit == 2
    # Each Queue's jobs count once over the rows
    shown = [one for row in rows for one in (row.members or (row.info,)) if one is not None
             and one.members is None]
    assert sum(one.due for one in shown) == 11


def test_a_familys_entry_in_the_fairness_view_is_held_back_by_its_pause_only() -> None:
    # Its limit bounds each member on its own: summed leased jobs say nothing about it
    entry = views.family_entry("t-*", info("t-*", members=2, limit=1, paused=False),
                               [info("t-1", 2, leased=1),
                                info("t-2", 1)])
    assert (entry.due, entry.limit) == (3, 1)
    assert views.family_held_back(entry) is None
    assert views.family_held_back(views.family_entry("t-*", None, [])) == "nothing due"
    paused = views.family_entry("t-*", info("t-*", members=0, paused=True), [info("t-1", 1)])
    assert views.family_held_back(paused) == "paused"


# -- over a served dashboard -------------------------------------------------------------


def tenants_store(clock: rota.VirtualClock) -> tuple[rota.App, MemoryStore]:
    """tenant-a 2 due, tenant-b 5, tenant-c 5 (served by family entry tenant-* of group
    fair), tenant-vip 3 (its own entry), plain 1, other-x 1 (served by nobody; family
    other-* has a limit); tenant-* has a limit of 2; fair served tenant-a 10, tenant-b
    30 and tenant-vip 60 jobs in the window."""
    store = MemoryStore()
    app = rota.App(store, clock=clock)

    @app.job("work", queue="plain")
    def work() -> None:
        return None

    for queue, count in (("tenant-a", 2), ("tenant-b", 5), ("tenant-c", 5),
                         ("tenant-vip", 3), ("plain", 1), ("other-x", 1)):
        for _ in range(count):
            work.configure(queue=queue).enqueue()
    app.set_queue_limit("tenant-*", 2)
    app.set_queue_limit("other-*", 1)
    group = WorkerGroupInfo(name="fair", policy=TENANTS, pool_size=4, owner="fair@h:1:t")
    store.register_worker(WorkerInfo(
        id="h:1:t", host="h", pid=1, version=rota.__version__, started_at=START,
        last_seen=START, dead_at=START + timedelta(hours=1), groups=(group,)), START)
    served = [ServedCount("fair", queue, "succeeded", count) for queue, count in
              (("tenant-a", 10), ("tenant-b", 30), ("tenant-vip", 60))]
    store.refresh_worker("h:1:t", START, dead_at=START + timedelta(hours=1),
                         in_flight={"fair": 0}, served=served, new=served)
    return app, store


@pytest.fixture
def tenants(clock: rota.VirtualClock) -> Iterator[tuple[rota.App, MemoryStore]]:
    app, store = tenants_store(clock)
    yield app, store
    app.close()


def test_api_queues_shows_a_family_row_with_its_members_by_backlog(
    tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock, serve: Serve
) -> None:
    # Given the tenants store, served
    _app, store = tenants
    dashboard = serve(store, clock=clock)
    # When /api/queues is read
    rows = {row["name"]: row for row in dashboard.get("/api/queues").json()}
    # Then tenant-* is one row, its members inside; the override tenant-vip has its own
    assert sorted(rows) == ["other-*", "plain", "tenant-*", "tenant-vip"]
    assert rows["plain"]["kind"] == rows["tenant-vip"]["kind"] == "queue"
    family = rows["tenant-*"]
    assert family["kind"] == "family" and family["settings"] is True
    assert (family["paused"], family["limit"], family["rate"]) == (False, 2, None)
    assert family["member_count"] == 3 and family["holds"] == 4
    assert family["due"] == 12 and family["counts"]["scheduled"] == 12
    assert family["groups"] == ["fair"] and family["weights"] == {"fair": 1}
    assert family["unserved"] is False
    # Its members, most due first (ties by name), each with what holds it back
    members = family["members"]
    assert [(m["name"], m["due"]) for m in members] == [
        ("tenant-b", 5), ("tenant-c", 5), ("tenant-a", 2)]
    b = members[0]
    assert (b["limit"], b["rate"], b["held_back"]) == (2, None, None)
    assert b["weights"] == {"fair": 1}
    assert "estimate" not in b  # a member's own page has it (a replay per Queue)
    assert "estimate" in dashboard.get("/api/queues/tenant-b").json()
    assert b["shares"] == [{"group": "fair", "weight": 1, "served": 30,
                            "served_share": pytest.approx(0.3)}]
    assert members[1]["shares"][0]["served"] == 0
    # A family that only has settings, its one Queue served by nobody
    other = rows["other-*"]
    assert [m["name"] for m in other["members"]] == ["other-x"]
    assert other["unserved"] is True and other["members"][0]["unserved"] is True
    # And no job is counted twice over the rows
    assert sum(row["due"] for row in rows.values()) == 2 + 5 + 5 + 3 + 1 + 1


def test_a_familys_api_and_page_show_its_settings_and_members(
    tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock, serve: Serve
) -> None:
    _app, store = tenants
    dashboard = serve(store, clock=clock)
    family = dashboard.get("/api/queues/tenant-*").json()
    assert family["kind"] == "family" and [m["name"] for m in family["members"]] == [
        "tenant-b", "tenant-c", "tenant-a"]
    # A family nobody set or serves: an empty row, not an error
    assert dashboard.get("/api/queues/nobody-*").json()["members"] == []
    # A name that is neither a Queue nor a family is refused, naming the rule
    assert dashboard.get("/api/queues/a*b").status == 400
    page = dashboard.get("/queues/tenant-*", headers={"Accept": "text/html"})
    assert page.status == 200
    assert "Queue family <span class=\"queue-name\">tenant-*</span>" in page.text
    assert "Limit 2 for each of its Queues." in page.text
    assert page.text.index('data-member="tenant-b"') < page.text.index(
        'data-member="tenant-a"')
    # A member's page links to its family
    member = dashboard.get("/queues/tenant-a").text
    assert 'One of the Queues of family <a href="/queues/tenant-%2A">tenant-*</a>' in member


def test_family_actions_need_the_token_and_act_on_the_family(
    tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock, serve: Serve
) -> None:
    app, store = tenants
    dashboard = serve(store, clock=clock, token=TOKEN)
    actions = [("/api/queues/tenant-*/pause", {}), ("/api/queues/tenant-*/resume", {}),
               ("/api/queues/tenant-*/limit", {"limit": "3"}),
               ("/api/queues/tenant-*/rate", {"rate": "5/1m"})]
    # Without the token: 401, nothing changes
    for path, form in actions:
        assert dashboard.post(path, data=form).status == 401, path
    family = next(one for one in app.queues() if one.name == "tenant-*")
    assert (family.paused, family.limit, family.rate) == (False, 2, None)
    # With it: pause pauses every member, and the row says so
    reply = dashboard.post("/api/queues/tenant-*/pause", headers=AUTH)
    assert reply.status == 200 and reply.json()["paused"] is True
    rows = {row["name"]: row for row in dashboard.get("/api/queues").json()}
    assert rows["tenant-*"]["paused"] is True
    assert {m["held_back"] for m in rows["tenant-*"]["members"]} == {"paused"}
    # Each Queue it holds says which family pauses it (resuming the Queue would not)
    assert {m["paused_by"] for m in rows["tenant-*"]["members"]} == {"tenant-*"}
    assert rows["tenant-vip"]["paused_by"] == "tenant-*"
    assert rows["plain"]["paused_by"] is None
    assert dashboard.post("/api/queues/tenant-*/resume", headers=AUTH).json()["paused"] is False
    limit = dashboard.post("/api/queues/tenant-*/limit", data={"limit": "3"}, headers=AUTH)
    assert limit.json()["limit"] == 3
    rate = dashboard.post("/api/queues/tenant-*/rate", body={"rate": "5/1m"}, headers=AUTH)
    assert rate.json()["rate"]["text"].startswith("5/1m")
    member = next(one for one in app.queues() if one.name == "tenant-a")
    assert (member.limit, member.rate is not None, member.family) == (3, True, "tenant-*")
    # A bad family name is refused before any store sees it
    assert dashboard.post("/api/queues/a*b/pause", headers=AUTH).status == 400


def test_a_family_action_from_the_page_says_what_was_done(
    tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock, serve: Serve
) -> None:
    _app, store = tenants
    dashboard = serve(store, clock=clock)
    set_cookie = form_post(dashboard, "/api/queues/tenant-%2A/limit",
                           {"limit": "4", "next": "/queues"})
    landed = dashboard.get("/queues", headers={"Accept": "text/html",
                                               "Cookie": set_cookie.split(";")[0]})
    assert "Set the limit of Queue family tenant-* to 4 jobs leased at once, each of its " \
        "Queues on its own." in landed.text


def test_metrics_and_the_fairness_view_never_count_a_familys_entry_as_a_queue(
    tenants: tuple[rota.App, MemoryStore], clock: rota.VirtualClock, serve: Serve
) -> None:
    app, store = tenants
    app.pause_queue("tenant-*")
    dashboard = serve(store, clock=clock)
    samples = [(s.name, s.labels) for family in
               text_string_to_metric_families(dashboard.get("/metrics").text)
               for s in family.samples]
    assert not [one for one in samples if one[1].get("queue", "").endswith("*")]
    due = {labels["queue"] for name, labels in samples if name == "rota_queue_due_jobs"}
    assert due == {"plain", "tenant-a", "tenant-b", "tenant-c", "tenant-vip", "other-x"}
    # The fairness view: the family's entry of group fair has its members' due jobs
    fair = dashboard.get("/api/groups").json()[0]
    entry = next(q for q in fair["queues"] if q["queue"] == "tenant-*")
    assert (entry["due"], entry["paused"], entry["held_back"]) == (12, True, "paused")
