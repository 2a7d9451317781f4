"""The dashboard's JSON API, actions and /metrics, over a real server, on every store."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

import rota
from rota.core.jobs import NewJob
from rota.core.workers import ServedCount
from rota.store.memory import MemoryStore
from tests.dashboard.conftest import NOW, START, Seeded, ServedDashboard, seed

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

Serve = Callable[..., ServedDashboard]


def test_api_queues_shows_counts_due_backlog_oldest_age_paused_and_limit(
    seeded: Seeded, serve: Serve
) -> None:
    # Given the seeded store, served
    dashboard = serve(seeded.source, clock=seeded.clock)
    # When /api/queues is read
    reply = dashboard.get("/api/queues")
    # Then every Queue is there, by name, with what a person needs
    assert reply.status == 200
    queues = {q["name"]: q for q in reply.json()}
    assert sorted(queues) == ["a", "b", "c", "emails", "paused-q"]
    a = queues["a"]
    assert a["counts"] == {"waiting": 0, "scheduled": 5, "leased": 0, "succeeded": 1,
                           "dead_lettered": 0, "quarantined": 0, "cancelled": 0}
    assert a["due"] == 5 and a["oldest_due_age_s"] == pytest.approx(90.0)
    assert (a["paused"], a["limit"]) == (False, None)
    assert queues["c"]["due"] == 0 and queues["c"]["oldest_due_age_s"] is None
    assert queues["emails"]["counts"]["dead_lettered"] == 1
    assert (queues["paused-q"]["paused"], queues["paused-q"]["limit"]) == (True, 2)
    # And the estimate of a job enqueued now into a: the replay puts 5 of a and 3 of b
    # before it (8 jobs, 6:3 shares); group fair served 100 jobs in its first minute, too
    # short a history for a rate (the minute was not fully busy, as far as rota knows)
    estimate = a["estimate"]
    assert a["groups"] == ["fair"]
    assert estimate["groups"][0]["ahead"] == 8
    assert estimate["seconds"] is None and estimate["groups"][0]["why"] == "history"
    assert estimate["text"] == "when its turn comes: not enough history yet to say how soon"
    assert "no fully busy minute on record yet" in estimate["basis"]
    # Once the minutes around that one were busy too, it was fully busy: 100 jobs a minute
    served = [ServedCount("fair", "a", "succeeded", 1)]
    for at in (START - timedelta(seconds=30), START + timedelta(seconds=75)):
        seeded.app.store.refresh_worker("host:1:tok", at, dead_at=START + timedelta(hours=1),
                                        in_flight={"fair": 2}, served=served, new=served)
    estimate = {q["name"]: q for q in dashboard.get("/api/queues").json()}["a"]["estimate"]
    assert estimate["seconds"] == pytest.approx(8 / (100 / 60))
    assert estimate["text"] == "in about 5 s" and "Weighted 6:3:1" in estimate["basis"]
    # And a Queue no live worker serves says so
    assert queues["paused-q"]["estimate"]["text"] == (
        "when a worker serving it runs: none does now")


def test_api_groups_shows_target_and_served_shares(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    groups = {g["name"]: g for g in dashboard.get("/api/groups").json()}
    fair = groups["fair"]
    assert fair["policy"] == {"kind": "weighted", "queues": [
        {"queue": "a", "weight": 6}, {"queue": "b", "weight": 3}, {"queue": "c", "weight": 1}]}
    assert (fair["workers"], fair["in_flight"], fair["pool_size"]) == (1, 2, 4)
    assert fair["pool_use"] == pytest.approx(0.5)
    shares = {q["queue"]: (q["target_share"], q["served_share"], q["served"])
              for q in fair["queues"]}
    assert shares == {"a": (pytest.approx(0.6), pytest.approx(0.6), 60),
                      "b": (pytest.approx(0.3), pytest.approx(0.3), 30),
                      "c": (pytest.approx(0.1), pytest.approx(0.1), 10)}
    assert fair["queues"][0]["longest_wait_s"] == pytest.approx(90.0)


def test_api_workers_lists_the_registry(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    dead, worker = dashboard.get("/api/workers").json()  # by start time
    assert (dead["id"], dead["alive"]) == ("host:2:old", False)
    assert (worker["id"], worker["host"], worker["pid"], worker["alive"]) == (
        "host:1:tok", "host", 1, True)
    assert worker["groups"][0]["name"] == "fair" and worker["groups"][0]["in_flight"] == 2
    assert worker["last_seen_ago_s"] == pytest.approx(60.0)
    assert worker["clock_offset_s"] == dead["clock_offset_s"] == 0.0


def test_the_workers_page_shows_nothing_in_use_for_a_dead_worker(
        seeded: Seeded, serve: Serve) -> None:
    # The dead worker last reported 1 of 4 in flight: nothing of it is in use now
    page = serve(seeded.source, clock=seeded.clock).get("/workers").text
    dead_row = page[page.index("host:2:old"):]
    dead_row = dead_row[:dead_row.index("</tr>")]
    assert "pool 4, nothing in use" in dead_row and "1/4 in use" not in dead_row
    assert "2/4 in use" in page  # the live one
    assert 'class="num clock-offset">+0.0 s' in page


def test_the_workers_page_and_api_list_each_live_workers_jobs_in_flight(
        seeded: Seeded, serve: Serve) -> None:
    # Given a job of b leased 75 s ago by the live worker's group, and one by the dead one
    store = seeded.app.store
    claimed_at = NOW - timedelta(seconds=75)
    [running] = store.claim(["b"], 1, now=claimed_at, owner="fair@host:1:tok",
                            lease_expires_at=NOW + timedelta(minutes=5))
    store.claim(["b"], 1, now=claimed_at, owner="fair@host:2:old",
                lease_expires_at=NOW + timedelta(minutes=5))
    dashboard = serve(seeded.source, clock=seeded.clock)
    # When the workers are read
    dead, worker = dashboard.get("/api/workers").json()
    # Then the live worker lists its job: id, name, Queue, group, attempt, running for
    assert worker["jobs"] == [{
        "worker": "host:1:tok", "group": "fair", "id": running.id, "name": "build-report",
        "queue": "b", "attempt": 1, "started_at": claimed_at.isoformat(),
        "running_for_s": 75.0}]
    assert dead["jobs"] == []  # a dead worker runs nothing it can finish
    # And the page shows it under the worker
    page = dashboard.get("/workers").text
    table = page[page.index('class="running" data-worker="host:1:tok"'):]
    table = table[:table.index("</table>")]
    assert f'data-job="{running.id}"' in table and "build-report" in table
    assert "75 s" in table


def test_charts_show_attempts_per_minute_split_into_succeeded_failed_and_cancelled(
        seeded: Seeded, serve: Serve) -> None:
    # Given the seeded history (group fair: 60 of a, 30 of b, 10 of c succeeded in the
    # minute of START) and, a minute later, failures and a cancel of a
    later = START + timedelta(minutes=1)
    new = [ServedCount("fair", "a", "retried", 4), ServedCount("fair", "a", "dead_lettered", 1),
           ServedCount("fair", "a", "quarantined", 2), ServedCount("fair", "a", "cancelled", 3),
           ServedCount("fair", "b", "succeeded", 5)]
    seeded.app.store.refresh_worker("host:1:tok", later, dead_at=later + timedelta(hours=1),
                                    in_flight={"fair": 2}, served=new, new=new)
    dashboard = serve(seeded.source, clock=seeded.clock)
    # When the groups are read over the last 5 minutes
    [fair] = [g for g in dashboard.get("/api/groups?minutes=5").json() if g["name"] == "fair"]
    chart = fair["chart"]
    # Then the chart has one bar a minute, the last two holding the two minutes' attempts
    assert chart["minutes_per_bar"] == 1 and len(chart["bars"]) == 5
    assert [(b["succeeded"], b["failed"], b["cancelled"]) for b in chart["bars"]] == [
        (0, 0, 0), (0, 0, 0), (0, 0, 0), (100, 0, 0), (5, 7, 3)]
    assert chart["bars"][-1]["start"] == later.isoformat()
    assert (chart["succeeded"], chart["failed"], chart["cancelled"], chart["peak"]) == (
        105, 7, 3, 100)
    # And a long window puts several minutes in a bar (at most 60 bars)
    day = next(g for g in dashboard.get("/api/groups?minutes=1440").json()
               if g["name"] == "fair")["chart"]
    assert (day["minutes_per_bar"], len(day["bars"]), day["succeeded"]) == (24, 60, 105)
    # And the pages draw them: per group on the workers page, per Queue on its page
    page = dashboard.get("/workers?minutes=5").text
    assert '<figure class="served-chart" data-group="fair" data-succeeded="105" ' \
        'data-failed="7" data-cancelled="3">' in page
    queue_page = dashboard.get("/queues/a?minutes=15").text
    assert '<figure class="served-chart" data-queue="a" data-succeeded="60" ' \
        'data-failed="7" data-cancelled="3">' in queue_page
    assert "60 succeeded, 0 failed, 0 cancelled" in queue_page
    assert "No attempt of this Queue served" in dashboard.get("/queues/emails").text


def test_api_jobs_newest_first_with_filters_and_paging(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    # Newest first
    listing = dashboard.get("/api/jobs").json()
    ids = [job["id"] for job in listing["jobs"]]
    assert ids == sorted(ids, reverse=True) and len(ids) == 12
    # Filters: Queue, state, name, and combined
    assert [j["id"] for j in dashboard.get("/api/jobs?queue=b").json()["jobs"]] \
        == seeded.ids["b"][::-1]
    assert [j["id"] for j in dashboard.get("/api/jobs?state=dead_lettered").json()["jobs"]] \
        == seeded.ids["failed"]
    by_name = dashboard.get("/api/jobs?name=send-mail&state=scheduled").json()["jobs"]
    assert [j["id"] for j in by_name] == (seeded.ids["a"] + seeded.ids["c"])[::-1]
    # Paging
    first = dashboard.get("/api/jobs?queue=a&state=scheduled&limit=2").json()
    assert [j["id"] for j in first["jobs"]] == seeded.ids["a"][::-1][:2]
    assert first["next_offset"] == 2
    last = dashboard.get("/api/jobs?queue=a&state=scheduled&limit=2&offset=4").json()
    assert [j["id"] for j in last["jobs"]] == [seeded.ids["a"][0]]
    assert last["next_offset"] is None


@pytest.mark.parametrize(("query", "words"), [
    ("state=sleeping", "state must be one of"),
    ("queue=has%20space", "Queue name must not contain whitespace"),
    ("limit=-1", "limit must be a whole number"),
    ("offset=abc", "offset must be a whole number"),
    ("limit=100000", "limit must be a whole number from 1 to 500"),
])
def test_api_jobs_refuses_bad_filters(seeded: Seeded, serve: Serve, query: str,
                                      words: str) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.get(f"/api/jobs?{query}")
    assert reply.status == 400 and words in reply.json()["error"]


def test_the_job_detail_shows_the_traceback_of_the_last_failed_attempt(
    seeded: Seeded, serve: Serve
) -> None:
    # Given the seeded job that failed for good in its handler, and one that succeeded
    dashboard = serve(seeded.source, clock=seeded.clock)
    [failed] = seeded.ids["failed"]
    [done] = seeded.ids["done"]
    # When its detail is read, as JSON and as the page
    job = dashboard.get(f"/api/jobs/{failed}").json()
    page = dashboard.get(f"/jobs/{failed}").text
    # Then both carry the handler's traceback, the page in its own block, escaped
    traceback = job["last_traceback"]
    assert traceback.startswith("Traceback (most recent call last):\n")
    assert "in always_fails\n" in traceback and traceback.endswith("RuntimeError: boom\n")
    assert '<pre class="last-traceback">Traceback (most recent call last):' in page
    assert "in always_fails" in page
    # And the attempt's duration is known (the virtual clock stood still: 0 s)
    assert job["duration_s"] == 0.0 and '<td class="duration">0 s</td>' in page
    # And a job that never failed has no traceback block
    assert dashboard.get(f"/api/jobs/{done}").json()["last_traceback"] is None
    assert 'class="last-traceback"' not in dashboard.get(f"/jobs/{done}").text


def test_the_job_detail_shows_progress_every_failed_attempt_and_the_worker(
    seeded: Seeded, serve: Serve
) -> None:
    # Given a job that failed once, then runs reporting progress
    store = seeded.app.store
    (job_id,) = store.enqueue([NewJob("export", "x", NOW)], NOW)
    store.claim(["x"], 1, now=NOW, owner="g@host-a:1:aaaa0000",
                lease_expires_at=NOW + timedelta(minutes=1))
    assert store.retry(seeded.job(job_id).lease, NOW, NOW, "TimeoutError: slow <b>",
                       traceback="Traceback: slow\n")
    store.claim(["x"], 1, now=NOW, owner="g@host-b:2:bbbb0000",
                lease_expires_at=NOW + timedelta(minutes=1))
    assert store.set_progress(seeded.job(job_id).lease, rota.Progress(40, 160, "rows", NOW))
    dashboard = serve(seeded.source, clock=seeded.clock)
    # When its detail is read, as JSON and as the page
    job = dashboard.get(f"/api/jobs/{job_id}").json()
    page = dashboard.get(f"/jobs/{job_id}").text
    # Then the JSON has them, as `rota job --json` has them
    assert job["progress"] == {"done": 40, "total": 160, "message": "rows",
                               "at": NOW.isoformat()}
    assert job["errors"] == [{"attempt": 1, "at": NOW.isoformat(),
                              "error": "TimeoutError: slow <b>", "worker": "host-a:1:aaaa0000",
                              "traceback": "Traceback: slow\n"}]
    assert job["worker"] == "host-b:2:bbbb0000"
    # And the page draws a bar with its text, and lists the failed attempt, escaped
    assert '<progress value="250" max="1000"></progress>' in page
    assert '<span class="progress-text">40/160 (25%) rows</span>' in page
    assert '<pre class="attempt-error">TimeoutError: slow &lt;b&gt;</pre>' in page
    assert '<td class="attempt-worker">host-a:1:aaaa0000</td>' in page
    # And a job that never failed nor reported has neither
    [done] = seeded.ids["done"]
    other = dashboard.get(f"/jobs/{done}").text
    assert "<progress" not in other and 'class="attempt-errors"' not in other


def test_api_job_detail_and_its_estimate(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    [done] = seeded.ids["done"]
    job = dashboard.get(f"/api/jobs/{done}").json()
    assert (job["state"], job["attempt"], job["result"]) == ("succeeded", 1, {"sent": 1})
    assert job["args"] == ["done@example.com"] and job["estimate"] is None
    assert job["started_at"] is not None and job["finished_at"] is not None
    [failed] = seeded.ids["failed"]
    assert dashboard.get(f"/api/jobs/{failed}").json()["last_error"] == "RuntimeError: boom"
    assert "key" not in job
    # A unique job shows its key
    keyed = seeded.app.jobs["build-report"].configure(key="day-9").enqueue("2026-01-09")
    assert dashboard.get(f"/api/jobs/{keyed}").json()["key"] == "day-9"
    assert "day-9" in dashboard.get(f"/jobs/{keyed}").text
    # A due job: its place among its Queue's due jobs, then the policy's replay
    # (the first is next, and group fair has a Worker free: it starts at once)
    first = dashboard.get(f"/api/jobs/{seeded.ids['a'][0]}").json()["estimate"]
    assert (first["text"], first["seconds"]) == ("at once: a Worker is free", 0.0)
    third = dashboard.get(f"/api/jobs/{seeded.ids['a'][2]}").json()["estimate"]
    assert third["basis"].startswith("due now, number 3 of the 5 due job(s) of Queue a")
    assert third["groups"][0]["position"] == 2 and third["groups"][0]["ahead"] == 3
    # A scheduled job due later: the wait until due, then its Queue's estimate
    later = dashboard.get(f"/api/jobs/{seeded.ids['c'][0]}").json()
    assert later["kwargs"] == {}
    assert later["estimate"]["basis"].startswith("due in 3510 s (58 min); then")
    # then its turn, which the group's one busy minute on record is too short to time
    assert later["estimate"]["seconds"] is None
    assert later["estimate"]["text"] == (
        "in 3510 s (58 min) when it is due, then when its turn comes: not enough history "
        "yet to say how soon")


@pytest.mark.parametrize(("job_id", "status"), [
    ("0", 400), ("abc", 400), ("-1", 400), (str(2**63), 400), ("1e3", 400), ("999999", 404),
])
def test_api_job_checks_the_id(seeded: Seeded, serve: Serve, job_id: str, status: int) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.get(f"/api/jobs/{job_id}")
    assert reply.status == status
    assert ("no job" if status == 404 else "job ids are whole numbers") in reply.json()["error"]


def test_actions_need_the_token_and_change_nothing_without_it(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    job_id = seeded.ids["a"][0]
    attempts = [
        ("/api/queues/a/pause", {}), ("/api/queues/paused-q/resume", {}),
        ("/api/queues/a/limit", {"limit": "3"}), ("/api/queues/a/rate", {"rate": "5/1m"}),
        (f"/api/jobs/{job_id}/cancel", {}),
        (f"/api/jobs/{seeded.ids['failed'][0]}/requeue", {}),
    ]
    for path, form in attempts:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                        {"Cookie": "rota_dashboard=" + TOKEN}):
            reply = dashboard.post(path, data=form, headers=headers)
            assert reply.status == 401, (path, headers)
            assert "needs its token" in reply.json()["error"]
            assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    # Nothing changed
    a, paused = seeded.queue("a"), seeded.queue("paused-q")
    assert a is not None and (a.paused, a.limit, a.rate) == (False, None, None)
    assert paused is not None and paused.paused
    assert seeded.job(job_id).state is rota.JobState.SCHEDULED
    assert seeded.job(seeded.ids["failed"][0]).state is rota.JobState.DEAD_LETTERED


def test_queue_actions_with_the_token(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    # Pause, then resume
    reply = dashboard.post("/api/queues/a/pause", headers=AUTH)
    assert reply.status == 200 and reply.json() == {"queue": "a", "paused": True, "limit": None,
                                                     "rate": None}
    assert seeded.queue("a").paused  # type: ignore[union-attr]
    assert dashboard.post("/api/queues/a/resume", headers=AUTH).json()["paused"] is False
    assert not seeded.queue("a").paused  # type: ignore[union-attr]
    # Limit as a form field and as JSON; none clears it
    assert dashboard.post("/api/queues/a/limit", data={"limit": "3"}, headers=AUTH).json() \
        == {"queue": "a", "paused": False, "limit": 3, "rate": None}
    assert dashboard.post("/api/queues/a/limit", body={"limit": 5}, headers=AUTH) \
        .json()["limit"] == 5
    assert seeded.queue("a").limit == 5  # type: ignore[union-attr]
    assert dashboard.post("/api/queues/a/limit", body={"limit": None}, headers=AUTH) \
        .json()["limit"] is None
    # A Queue with no jobs yet can be paused (settings may precede jobs)
    assert dashboard.post("/api/queues/new-one/pause", headers=AUTH).json()["paused"]


def test_queues_show_their_rate(seeded: Seeded, serve: Serve) -> None:
    # Given a rate on Queue a (100 a minute, burst 10) and none on b
    seeded.app.set_queue_rate("a", 100, per=timedelta(minutes=1), burst=10)
    dashboard = serve(seeded.source, clock=seeded.clock)
    # Then the API, the Queues page and the Queue's page say so
    queues = {q["name"]: q for q in dashboard.get("/api/queues").json()}
    assert queues["a"]["rate"] == {"jobs": 100, "per_s": 60.0, "burst": 10,
                                   "text": "100/1m (burst 10)", "input": "100/1m"}
    assert queues["b"]["rate"] is None
    assert f'class="num rate-cell">{queues["a"]["rate"]["text"]}<' in dashboard.get(
        "/queues").text
    assert f'Rate {queues["a"]["rate"]["text"]}.' in dashboard.get("/queues/a").text
    assert "No rate limit." in dashboard.get("/queues/b").text


def test_the_rate_is_set_and_removed_with_the_token(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    # A form's text with a burst, then JSON without one
    reply = dashboard.post("/api/queues/a/rate", data={"rate": "100/1m", "burst": "10"},
                           headers=AUTH)
    assert reply.status == 200 and reply.json() == {
        "queue": "a", "paused": False, "limit": None, "rate": {
            "jobs": 100, "per_s": 60.0, "burst": 10, "text": "100/1m (burst 10)"}}
    rate = seeded.queue("a").rate  # type: ignore[union-attr]
    assert rate is not None and (rate.jobs, rate.per, rate.burst) == (
        100, timedelta(minutes=1), 10)
    assert dashboard.post("/api/queues/a/rate", body={"rate": "6/30s"}, headers=AUTH) \
        .json()["rate"]["text"] == "6/30s"
    # The Queues page's form shows the rate in force, as it is typed
    assert 'name="rate" size="6" placeholder="none" value="6/30s"' in dashboard.get(
        "/queues", headers=AUTH).text
    # Empty, none and null remove it
    for removal in ({"rate": ""}, {"rate": "none"}):
        seeded.app.set_queue_rate("a", 1, per=1)
        assert dashboard.post("/api/queues/a/rate", data=removal, headers=AUTH) \
            .json()["rate"] is None
    seeded.app.set_queue_rate("a", 1, per=1)
    assert dashboard.post("/api/queues/a/rate", body={"rate": None}, headers=AUTH) \
        .json()["rate"] is None
    assert seeded.queue("a").rate is None  # type: ignore[union-attr]


@pytest.mark.parametrize(("body", "error"), [
    ({}, "give the rate"),
    ({"rate": "fast"}, "is not a rate; expected N/PERIOD"),
    ({"rate": "0/1m"}, "from 1 to"),
    ({"rate": "5/0s"}, "positive"),
    ({"rate": 5}, "rate must be text"),
    ({"rate": "5/1m", "burst": "lots"}, "burst must be a whole number from 1 to"),
    ({"rate": "5/1m", "burst": True}, "burst must be a whole number"),
    ({"rate": "5/1m", "burst": 0}, "burst"),
    ({"rate": None, "burst": 3}, "burst goes with a rate"),
])
def test_a_bad_rate_is_refused_naming_the_problem_and_changes_nothing(
    seeded: Seeded, serve: Serve, body: dict[str, object], error: str
) -> None:
    seeded.app.set_queue_rate("b", 7, per=60)
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.post("/api/queues/b/rate", body=body)
    assert reply.status == 400 and error in reply.json()["error"]
    rate = seeded.queue("b").rate  # type: ignore[union-attr]
    assert rate is not None and rate.jobs == 7


@pytest.mark.parametrize("limit", [-1, "-1", "many", 1.5, True, [], "3x"])
def test_a_bad_limit_is_refused_and_changes_nothing(
    seeded: Seeded, serve: Serve, limit: object
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.post("/api/queues/a/limit", body={"limit": limit})
    assert reply.status == 400 and "limit" in reply.json()["error"]
    assert seeded.queue("a").limit is None  # type: ignore[union-attr]


def test_bad_queue_names_and_bodies_are_refused(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    assert dashboard.post("/api/queues/a%20b/pause").status == 400
    assert dashboard.post(f"/api/queues/{'x' * 201}/pause").status == 400
    assert dashboard.post("/api/queues/a/limit").json()["error"].startswith("give the limit")
    reply = dashboard.post("/api/queues/a/limit", body=[1])
    assert reply.status == 400 and "object" in reply.json()["error"]
    assert not any(q.paused for q in seeded.app.queues() if q.name != "paused-q")


def test_job_actions_cancel_and_requeue(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    job_id = seeded.ids["a"][0]
    reply = dashboard.post(f"/api/jobs/{job_id}/cancel")
    assert reply.status == 200 and reply.json()["cancelled"] is True
    assert seeded.job(job_id).state is rota.JobState.CANCELLED
    # Cancelling it again: 409, with the reason
    again = dashboard.post(f"/api/jobs/{job_id}/cancel")
    assert again.status == 409 and "cancelled" in again.json()["error"]
    # Requeue the cancelled and the dead-lettered job
    assert dashboard.post(f"/api/jobs/{job_id}/requeue").json()["requeued"] is True
    [failed] = seeded.ids["failed"]
    assert dashboard.post(f"/api/jobs/{failed}/requeue").json()["state"] == "scheduled"
    assert seeded.job(failed).state is rota.JobState.SCHEDULED
    # A scheduled job cannot be requeued; an unknown one is 404
    assert dashboard.post(f"/api/jobs/{failed}/requeue").status == 409
    assert dashboard.post("/api/jobs/999999/cancel").status == 404
    assert dashboard.post("/api/jobs/x/cancel").status == 400


def test_a_post_from_another_sites_page_is_refused(seeded: Seeded, serve: Serve) -> None:
    # Given a dashboard without a token (anyone on the machine may act)
    dashboard = serve(seeded.source, clock=seeded.clock)
    # When a page of another site makes the browser post to it
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}):
        reply = dashboard.post("/api/queues/a/pause", headers=headers)
        # Then it is refused and nothing changes
        assert reply.status == 403, headers
    assert not seeded.queue("a").paused  # type: ignore[union-attr]
    # While the dashboard's own pages may post
    own = dashboard.url
    assert dashboard.post("/api/queues/a/pause", headers={"Origin": own}).status == 200


def test_metrics_in_the_prometheus_text_format(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.get("/metrics")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(reply.text)
               for s in family.samples}
    assert samples[("rota_queue_jobs", (("queue", "a"), ("state", "scheduled")))] == 5
    assert samples[("rota_queue_jobs", (("queue", "a"), ("state", "succeeded")))] == 1
    assert samples[("rota_queue_jobs", (("queue", "emails"), ("state", "dead_lettered")))] == 1
    assert samples[("rota_queue_oldest_due_age_seconds", (("queue", "a"),))] \
        == pytest.approx(90.0)
    assert samples[("rota_queue_oldest_due_age_seconds", (("queue", "c"),))] == 0
    assert samples[("rota_queue_paused", (("queue", "paused-q"),))] == 1
    assert samples[("rota_queue_limit", (("queue", "paused-q"),))] == 2
    key = (("group", "fair"), ("outcome", "succeeded"), ("queue", "a"))
    assert samples[("rota_jobs_total", key)] == 60
    assert samples[("rota_group_workers", (("group", "fair"),))] == 1
    # The counter grows with the history, and only by what was added
    from rota.core.workers import ServedCount
    more = [ServedCount("fair", "a", "succeeded", 7)]
    seeded.app.store.refresh_worker("host:1:tok", NOW, dead_at=NOW + (NOW - NOW.replace(
        hour=0)), in_flight={}, served=more, new=more)
    again = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in text_string_to_metric_families(dashboard.get("/metrics").text)
             for s in family.samples}
    assert again[("rota_jobs_total", key)] == 67


def test_pages_render_and_escape_hostile_names(seeded: Seeded, serve: Serve) -> None:
    # Given a Queue and a job whose names are HTML
    hostile = "<script>alert(1)</script>"
    seeded.app.store.pause_queue("<b>q</b>")
    from rota.core.jobs import NewJob
    [job_id] = seeded.app.store.enqueue(
        [NewJob(name=hostile, queue="a", due_at=NOW, args_json='["<img src=x onerror=1>"]')],
        NOW)
    dashboard = serve(seeded.source, clock=seeded.clock)
    for path in ("/queues", "/workers", "/jobs", f"/jobs/{job_id}", "/queues/a",
                 "/queues/%3Cb%3Eq%3C/b%3E"):
        reply = dashboard.get(path, headers={"Accept": "text/html"})
        assert reply.status == 200, path
        assert "<script>alert" not in reply.text and "<b>q</b>" not in reply.text
        assert "<img src=x" not in reply.text
        assert "script-src 'self'" in reply.headers["Content-Security-Policy"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dashboard.get(f"/jobs/{job_id}").text


def test_static_assets_come_from_the_package(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    assert dashboard.get("/static/dashboard.css").status == 200
    assert "fetch(" in dashboard.get("/static/dashboard.js").text
    page = dashboard.get("/queues").text
    assert "http://" not in page.split("<body>")[0]  # no CDN: nothing loaded from elsewhere


def test_reads_use_a_read_only_store_and_actions_a_writable_one(
    sqlite_seeded: Seeded, serve: Serve
) -> None:
    # Given an SQLite store (read-only opening is an SQLite matter)
    dashboard = serve(sqlite_seeded.source, clock=sqlite_seeded.clock)
    source = dashboard.asgi.state.rota_dashboard.source
    # Pages read without ever opening a writable connection
    for path in ("/queues", "/workers", "/jobs", "/api/queues", "/metrics"):
        assert dashboard.get(path).status == 200
    assert len(source._owned) == 1
    with pytest.raises(rota.StoreError):
        source.reads.pause_queue("a")
    # The first action opens the writable one
    assert dashboard.post("/api/queues/a/pause").status == 200
    assert len(source._owned) == 2


def test_an_apps_groups_show_before_any_worker_ran(serve: Serve,
                                                   clock: rota.VirtualClock) -> None:
    from rota.store.memory import MemoryStore
    app = rota.App(MemoryStore(), clock=clock)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="notifications", policy=rota.Strict("emails", "reports"), pool_size=3))
    dashboard = serve(app)
    [group] = dashboard.get("/api/groups").json()
    assert (group["name"], group["workers"], group["served_total"]) == ("notifications", 0, 0)
    assert group["policy"]["kind"] == "strict" and group["pool_size"] == 3
    assert [q["queue"] for q in group["queues"]] == ["emails", "reports"]
    # The Queue page explains that there is no rate yet
    estimate = dashboard.get("/api/queues/emails").json()["estimate"]
    assert estimate["seconds"] is None and "no served history" in estimate["basis"]


def test_a_registry_that_cannot_be_read_is_said_on_the_page(
    serve: Serve, clock: rota.VirtualClock
) -> None:
    from rota.store.memory import MemoryStore

    class NoRegistry(MemoryStore):
        def worker_groups(self) -> list[rota.WorkerGroupInfo]:
            raise rota.StoreError("no such table: rota_worker_groups")

    dashboard = serve(NoRegistry(), clock=clock)
    assert dashboard.get("/api/groups").json() == []
    assert "the worker registry cannot be read: no such table" in dashboard.get("/workers").text


def test_mounted_under_a_prefix_every_link_and_redirect_keeps_it(
    serve: Serve, clock: rota.VirtualClock
) -> None:
    # Given the dashboard mounted at /ops/rota in the user's own Starlette app
    app = rota.App(MemoryStore(), clock=clock)
    seed(app, clock)
    served = serve(app.store, clock=clock, mount="/ops/rota")
    # Then its pages answer under the prefix and link under it
    page = served.get("/ops/rota/queues")
    assert page.status == 200
    assert 'name="next" value="/ops/rota/queues"' in page.text
    assert 'href="/ops/rota/static/dashboard.css"' in page.text
    assert 'action="/ops/rota/api/queues/a/pause"' in page.text
    assert served.get("/ops/rota/static/dashboard.js").status == 200
    # And a form post comes back to the page under the prefix
    reply = served.post("/ops/rota/api/queues/a/pause", data={"next": "/ops/rota/queues"},
                        headers={"Accept": "text/html"})
    assert reply.status == 200 and "paused" in reply.text
    assert next(q for q in app.queues() if q.name == "a").paused


def test_queue_names_with_slashes_and_form_redirects_stay_on_this_site(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    # A Queue name may hold '/': its routes still find it
    assert dashboard.post("/api/queues/team/emails/pause").json() == {
        "queue": "team/emails", "paused": True, "limit": None, "rate": None}
    assert dashboard.get("/api/queues/team/emails").json()["paused"] is True
    assert dashboard.get("/queues/team/emails").status == 200
    # A form's `next` may only name a path of this site
    for target, expected in (
        ("//evil.example/x", "/queues"), ("https://evil.example", "/queues"),
        ("/\\evil.example", "/queues"), ("/jobs?state=leased", "/jobs?state=leased"),
    ):
        request = urllib.request.Request(
            f"{dashboard.url}/api/queues/a/resume", method="POST",
            data=urllib.parse.urlencode({"next": target}).encode(),
            headers={"Accept": "text/html",
                     "Content-Type": "application/x-www-form-urlencoded"})
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(request, timeout=30)
            raise AssertionError("expected a redirect")
        except urllib.error.HTTPError as error:
            with error:
                assert error.code == 303 and error.headers["Location"] == expected, target


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_the_served_rate_prefers_fully_busy_minutes() -> None:
    from datetime import timedelta

    from rota.dashboard.sources import GroupObservation, busy_minutes

    # Given a group that served in minutes 0..4, the last one in progress, the first partial
    t0 = NOW.replace(second=0, microsecond=0) - timedelta(minutes=4)
    per_minute = {t0 + timedelta(minutes=i): n for i, n in enumerate([30, 600, 600, 600, 90])}
    # Then minutes 1..3 are full: 1,800 jobs in 180 s
    assert busy_minutes(per_minute, NOW) == (5, 3, 1800)
    group = GroupObservation("g", FAIR_POLICY, 4, served={"a": 1920}, busy_minutes=5,
                             full_minutes=3, full_served=1800)
    assert group.rate_per_s == pytest.approx(10.0) and "3 fully busy" in group.rate_note
    # And a group with no full minute falls back to a lower bound, and says so
    short = GroupObservation("g", FAIR_POLICY, 4, served={"a": 120}, busy_minutes=1)
    assert short.rate_per_s == pytest.approx(2.0) and "lower bound" in short.rate_note
    assert busy_minutes({t0: 5}, NOW) == (1, 0, 0)


FAIR_POLICY = rota.Weighted([("a", 6), ("b", 3), ("c", 1)])


def test_the_fairness_window_is_chosen_per_request(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    # The seeded history is in the minute of START; NOW is 90 s later
    assert dashboard.get("/api/groups?minutes=60").json()[0]["served_total"] == 100
    assert dashboard.get("/api/groups?minutes=1").json()[0]["window_minutes"] == 1
    assert dashboard.get("/api/groups?minutes=5000").status == 400
    assert "1440" in dashboard.get("/api/groups?minutes=x").json()["error"]
    assert dashboard.get("/workers?minutes=15").status == 200


def test_login_sets_a_strict_http_only_cookie_that_is_not_the_token(
    seeded: Seeded, serve: Serve
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(
        f"{dashboard.url}/login", method="POST",
        data=urllib.parse.urlencode({"token": TOKEN, "next": "/jobs"}).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(request, timeout=30)
    with caught.value as reply:
        assert reply.code == 303 and reply.headers["Location"] == "/jobs"
        cookie = reply.headers["Set-Cookie"]
    assert cookie.startswith("rota_dashboard=") and TOKEN not in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    # The cookie acts; a wrong token is 401 and sets nothing
    value = cookie.split(";")[0]
    assert dashboard.post("/api/queues/a/pause", headers={"Cookie": value}).status == 200
    wrong = dashboard.post("/login", data={"token": "nope"})
    assert wrong.status == 401 and wrong.headers["Set-Cookie"] is None


def test_the_login_page_names_every_action_the_api_offers(seeded: Seeded,
                                                          serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock, token=TOKEN)
    posts = [entry["path"] for entry in dashboard.get("/api").json()
             if entry["method"] == "POST"]
    actions = {path.rsplit("/", 1)[-1] for path in posts}
    assert actions == {"pause", "resume", "limit", "rate", "policy", "cancel", "requeue"}
    # The login page lists each of them, one line per method and path (the bulk cancel
    # and requeue of the jobs list beside those of one job)
    page = dashboard.get("/login").text
    assert "/api/jobs/cancel" in posts and "/api/jobs/{id}/cancel" in posts
    for path in posts:
        assert f"<code>POST {path}</code>" in page, path


def test_a_body_over_64_kib_is_refused_unread(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    reply = dashboard.post("/api/queues/a/limit", body={"limit": 1, "pad": "x" * 70_000})
    assert reply.status == 413 and "64 KiB" in reply.json()["error"]
    assert seeded.queue("a").limit is None  # type: ignore[union-attr]
    reply = dashboard.post("/api/queues/a/limit", data={"limit": "1"},
                           headers={"Content-Type": "text/csv"})
    assert reply.status == 415


def test_the_dashboard_reads_at_the_stores_time() -> None:
    from rota.dashboard.server import Source
    from rota.store import StoreClock

    assert isinstance(Source("memory://").clock, StoreClock)
    assert isinstance(Source(MemoryStore()).clock, StoreClock)
    virtual = rota.VirtualClock(NOW)
    assert Source("memory://", clock=virtual).clock is virtual
