"""The dashboard's group view: the policy in force (stored or the code's), editing it
behind the token (`POST /api/groups/{name}/policy`), and why a Queue is held back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

import rota
from tests.conftest import START
from tests.dashboard.conftest import Seeded, ServedDashboard

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Serve = Callable[..., ServedDashboard]


def fair(dashboard: ServedDashboard) -> dict[str, Any]:
    groups = {g["name"]: g for g in dashboard.get("/api/groups").json()}
    group: dict[str, Any] = groups["fair"]
    return group


def test_the_group_view_shows_the_codes_policy_then_the_stored_one(
    seeded: Seeded, serve: Serve,
) -> None:
    # Given the "fair" group as its worker registered it (a=6, b=3, c=1)
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    group = fair(dashboard)
    assert (group["policy_source"], group["policy_input"]) == ("code", "a=6,b=3,c=1")
    # When its weights are edited through the API
    reply = dashboard.post("/api/groups/fair/policy", data={"weighted": "a=1,b=1,d=2"},
                           headers=AUTH)
    # Then the policy is stored, and the view shows it in force, with its version
    assert reply.status == 200, reply.json()
    assert reply.json()["source"] == "stored"
    assert seeded.app.group_policy("fair") == rota.Weighted([("a", 1), ("b", 1), ("d", 2)])
    group = fair(dashboard)
    assert (group["policy_source"], group["policy_version"], group["policy_input"]) == (
        "stored", 1, "a=1,b=1,d=2")
    assert [q["queue"] for q in group["queues"]][:3] == ["a", "b", "d"]
    # And the page says so, with the form and the way back
    page = dashboard.get("/workers", headers=AUTH).text
    assert "stored, version 1" in page and 'value="a=1,b=1,d=2"' in page
    assert "back to the code" in page
    # And a clear goes back to the code's
    cleared = dashboard.post("/api/groups/fair/policy", body={"clear": True}, headers=AUTH)
    assert cleared.status == 200 and cleared.json()["source"] == "code"
    assert fair(dashboard)["policy_source"] == "code"


def test_editing_needs_the_token_and_bad_input_changes_nothing(
    seeded: Seeded, serve: Serve,
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    assert dashboard.post("/api/groups/fair/policy", data={"weighted": "a=1"}).status == 401
    for body, words in (
        ({"weighted": "a=0"}, "Weighted dispatch needs at least one queue, all weights >= 1."),
        ({"weighted": "a=x"}, "is not an integer"),
        ({"strict": "a,a"}, "named twice"),
        ({}, "give one of"),
        ({"weighted": "a=1", "strict": "a"}, "give one of"),
        ({"weighted": 5}, "takes text like a=5,b=1"),
    ):
        reply = dashboard.post("/api/groups/fair/policy", body=body, headers=AUTH)
        assert reply.status == 400 and words in reply.json()["error"], (body, reply.json())
    assert dashboard.post("/api/groups/two%20words/policy", body={"clear": True},
                          headers=AUTH).status == 400
    assert fair(dashboard)["policy_source"] == "code"


@pytest.mark.parametrize("store_kind", ["memory"], indirect=True)
def test_each_queue_says_what_holds_it_back(seeded: Seeded, serve: Serve) -> None:
    # Given a paused, b at its limit with jobs due, c with nothing due
    seeded.app.pause_queue("a")
    seeded.app.set_queue_limit("b", 0)
    dashboard = serve(seeded.source, clock=seeded.clock)
    reasons = {q["queue"]: q["held_back"] for q in fair(dashboard)["queues"]}
    # Then each gets its reason
    assert reasons == {"a": "paused", "b": "limit 0 reached", "c": "nothing due"}
    page = dashboard.get("/workers").text
    assert '<td class="held-back">limit 0 reached</td>' in page


def test_a_queue_out_of_tokens_says_its_rate_is_reached(seeded: Seeded, serve: Serve) -> None:
    # Given b rated 1 a minute, its one token taken by a claim (2 of its jobs still due),
    # and a rated 100 a minute, its bucket full
    now = seeded.clock.now()
    seeded.app.set_queue_rate("b", 1, per=timedelta(minutes=1))
    seeded.app.set_queue_rate("a", 100, per=timedelta(minutes=1))
    taken = seeded.app.store.claim(["b"], 1, now=now, owner="other",
                                   lease_expires_at=now + timedelta(minutes=5))
    assert len(taken) == 1
    dashboard = serve(seeded.source, clock=seeded.clock)
    # Then the fairness view says b's rate is reached, in the rate's own syntax, and a
    # is not held back
    reasons = {q["queue"]: q["held_back"] for q in fair(dashboard)["queues"]}
    assert reasons == {"a": None, "b": "rate 1/1m reached", "c": "nothing due"}
    assert '<td class="held-back">rate 1/1m reached</td>' in dashboard.get("/workers").text
    # And once its next token is due, nothing holds b back
    seeded.clock.advance(60)
    reasons = {q["queue"]: q["held_back"] for q in fair(dashboard)["queues"]}
    assert reasons["b"] is None


def test_an_unknown_group_is_refused_naming_the_known_ones_unless_forced(
    seeded: Seeded, serve: Serve,
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    # When a policy is posted for a group nobody runs
    reply = dashboard.post("/api/groups/fiar/policy", data={"weighted": "a=1"},
                           headers=AUTH)
    # Then it is refused, naming the known group and force, and not stored
    assert reply.status == 400
    error = reply.json()["error"]
    assert "Worker Group 'fiar' is not known here" in error and "'fair'" in error
    assert "force=True" in error
    assert seeded.app.store.group_policy("fiar") is None
    # And with force (a form field, or JSON true) it is stored
    for body, group in (({"weighted": "a=1", "force": "1"}, "later"),
                        ({"strict": "a", "force": True}, "later2")):
        forced = dashboard.post(f"/api/groups/{group}/policy", body=body, headers=AUTH)
        assert forced.status == 200, forced.json()
    assert seeded.app.group_policy("later") == rota.Weighted([("a", 1)])
    assert seeded.app.group_policy("later2") == rota.Strict("a")
    # And a force that is not a yes or no is bad input
    odd = dashboard.post("/api/groups/x/policy", body={"strict": "a", "force": "maybe"},
                         headers=AUTH)
    assert odd.status == 400 and "force" in odd.json()["error"]


@pytest.mark.parametrize("weight", [2**31, 10**26], ids=repr)
def test_a_weight_above_the_range_is_refused(
    seeded: Seeded, serve: Serve, weight: int,
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    reply = dashboard.post("/api/groups/fair/policy", data={"weighted": f"a=1,b={weight}"},
                           headers=AUTH)
    assert reply.status == 400
    assert f"from 1 to 2147483647; got {weight}" in reply.json()["error"]
    assert fair(dashboard)["policy_source"] == "code"


# -- every view shows the policy in force ----------------------------------------------------


def test_a_stored_policy_is_what_every_view_shows(seeded: Seeded, serve: Serve) -> None:
    # Given the live "fair" worker (a=6, b=3, c=1 in its code), which served a, b, c in
    # the minute START, and a dead-lettered job on "emails" requeued: due, served by nobody
    seeded.app.requeue(seeded.ids["failed"][0])
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    queues = {q["name"]: q for q in dashboard.get("/api/queues").json()}
    assert (queues["emails"]["groups"], queues["emails"]["unserved"]) == ([], True)
    assert "rota_queue_unserved_jobs{queue=\"emails\"} 1.0" in dashboard.get("/metrics").text
    assert queues["a"]["weights"] == {"fair": 6} and queues["a"]["unserved"] is False
    # When its policy is set to serve "emails" first
    seeded.app.set_group_policy("fair", rota.Strict("emails", "a"))
    # Then the Queue view names it as served, weightless under Strict, and the gauge is 0
    queues = {q["name"]: q for q in dashboard.get("/api/queues").json()}
    assert (queues["emails"]["groups"], queues["emails"]["unserved"]) == (["fair"], False)
    assert queues["emails"]["weights"] == {"fair": None}
    assert queues["b"]["groups"] == [] and queues["b"]["unserved"] is True
    metrics = dashboard.get("/metrics").text
    assert "rota_queue_unserved_jobs{queue=\"emails\"} 0.0" in metrics
    assert "rota_queue_unserved_jobs{queue=\"b\"} 3.0" in metrics
    # And the estimate replays the stored policy (Strict: emails first)
    estimate = dashboard.get("/api/queues/emails").json()["estimate"]
    assert [g["group"] for g in estimate["groups"]] == ["fair"]
    assert "Strict emails > a" in estimate["groups"][0]["basis"]
    assert dashboard.get("/api/queues/b").json()["estimate"]["groups"] == []
    # And the fairness view marks the change and counts from its minute on: what was
    # served under the code's policy is not compared against the new one
    group = fair(dashboard)
    assert group["policy_changed_at"] == (seeded.clock.now()).isoformat()
    assert group["shares_since"] == (START + timedelta(minutes=1)).isoformat()
    assert group["served_total"] == 0
    assert [q["queue"] for q in group["queues"]] == ["emails", "a"]
    page = dashboard.get("/workers").text
    assert "The policy changed at" in page
    # And the worker list shows the policy in force
    [worker] = [w for w in dashboard.get("/api/workers").json() if w["alive"]]
    assert worker["groups"][0]["policy_text"] == "Strict emails > a"
    queues_page = dashboard.get("/queues").text
    assert "nobody: no live worker serves it" in queues_page
