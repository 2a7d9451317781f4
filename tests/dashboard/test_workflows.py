"""Workflows in the dashboard, on every store: a job's parents and children in
/api/jobs/ID and on its page (links, states, the inline SVG graph around it), waiting jobs
in the Queue counts, and the cancel of a waiting job."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

import rota
from rota.store.memory import MemoryStore
from tests.dashboard.conftest import ServedDashboard

Serve = Callable[..., ServedDashboard]
TOKEN = "wf-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Flow:
    """extract -> transform -> load -> report (extract and transform succeeded, load
    scheduled, report waiting); a fan-in of 35 fetches (3 not due yet) into merge,
    waiting, with one child of its own, publish; and a job of no workflow, alone."""

    app: rota.App
    source: str | rota.Store
    clock: rota.VirtualClock
    extract: int
    transform: int
    load: int
    report: int
    fetches: list[int]
    later: list[int]
    merge: int
    publish: int
    alone: int


@pytest.fixture
def flow(store_url: str, clock: rota.VirtualClock) -> Iterator[Flow]:
    shared = MemoryStore() if store_url == "memory://" else None
    app = rota.App(shared if shared is not None else store_url, clock=clock)
    try:
        @app.job("step", queue="etl")
        def step(name: str) -> None: ...

        @app.job("fetch", queue="crawl")
        def fetch(page: int) -> int:
            return page

        app.add_worker_group(rota.WorkerGroupOptions(
            name="g", policy=rota.Strict("crawl", "etl"), pool_size=1))
        extract = step.enqueue("extract")
        transform = step.configure(after=[extract]).enqueue("transform")
        load = step.configure(after=[transform], delay=3600).enqueue("load")
        report = step.configure(after=[load]).enqueue("report")
        fetches = [fetch.enqueue(page) for page in range(32)]
        later = [fetch.configure(delay=3600).enqueue(page) for page in range(32, 35)]
        merge = step.configure(after=later + fetches, after_outcome="finished"
                               ).enqueue("merge")
        publish = step.configure(after=[merge]).enqueue("publish")
        alone = step.configure(delay=3600).enqueue("alone")
        assert app.run_until_idle() == 34  # the due fetches, extract and transform
        yield Flow(app, shared if shared is not None else store_url, clock, extract,
                   transform, load, report, fetches, later, merge, publish, alone)
    finally:
        app.close()


def svg_of(page: str) -> str:
    (svg,) = re.findall(r'<svg class="workflow-graph".*?</svg>', page, re.S)
    return svg


def nodes_of(svg: str) -> list[tuple[int, int]]:
    """(job id, level) of every node the graph draws."""
    return [(int(job), int(level)) for job, level in
            re.findall(r'<g class="node [^"]*" data-job="(\d+)" data-level="(-?\d)"', svg)]


def test_api_job_lists_parents_and_children_with_their_states(
        flow: Flow, serve: Serve) -> None:
    dashboard = serve(flow.source, clock=flow.clock)
    link = dashboard.get(f"/api/jobs/{flow.load}").json()
    assert (link["state"], link["waiting_for"]) == ("scheduled", None)
    assert link["parents"] == [{"id": flow.transform, "name": "step", "state": "succeeded"}]
    assert link["children"] == [{"id": flow.report, "name": "step", "state": "waiting"}]
    assert (link["parents_total"], link["children_total"]) == (1, 1)
    # Two levels each way, each node once, with the edges between them
    graph = link["workflow"]
    assert [(n["id"], n["level"], n["state"]) for n in graph["nodes"]] == [
        (flow.extract, -2, "succeeded"), (flow.transform, -1, "succeeded"),
        (flow.load, 0, "scheduled"), (flow.report, 1, "waiting")]
    assert graph["edges"] == [{"from": flow.extract, "to": flow.transform},
                              {"from": flow.transform, "to": flow.load},
                              {"from": flow.load, "to": flow.report}]
    assert graph["more"] == {}
    # A fan-in child: 30 parents listed, those it waits for first, the rest counted
    merge = dashboard.get(f"/api/jobs/{flow.merge}").json()
    assert (merge["state"], merge["parents_total"], merge["waiting_for"]) == ("waiting", 35, 3)
    assert [p["id"] for p in merge["parents"]] == (flow.later + flow.fetches)[:30]
    assert {p["state"] for p in merge["parents"][:3]} == {"scheduled"}
    assert {p["state"] for p in merge["parents"][3:]} == {"succeeded"}
    assert merge["children"] == [{"id": flow.publish, "name": "step", "state": "waiting"}]
    assert merge["workflow"]["more"] == {"parents": 5}
    assert list(merge)[-3:] == ["last_traceback", "estimate", "workflow"]
    # What each waits for: the fan-in every parent's end, the others every parent's success
    assert (merge["after_outcome"], link["after_outcome"]) == ("finished", "succeeded")
    assert "after_outcome" not in dashboard.get(f"/api/jobs/{flow.extract}").json()
    # A parent of the fan-in lists it as its child
    fetch = dashboard.get(f"/api/jobs/{flow.fetches[0]}").json()
    assert fetch["parents"] == [] and fetch["children"] == [
        {"id": flow.merge, "name": "step", "state": "waiting"}]
    # And a job outside any workflow has none, and no graph
    alone = dashboard.get(f"/api/jobs/{flow.alone}").json()
    assert (alone["parents"], alone["parents_total"], alone["children"],
            alone["children_total"], alone["waiting_for"], alone["workflow"]) == (
        [], 0, [], 0, None, None)


def test_job_page_links_parents_and_children_and_draws_the_graph(
        flow: Flow, serve: Serve) -> None:
    dashboard = serve(flow.source, clock=flow.clock)
    page = dashboard.get(f"/jobs/{flow.load}").text
    # Its parent and its child are links to their own pages, with their states
    assert re.search(rf'<tr data-job="{flow.transform}" class="state-succeeded"><td '
                     rf'class="num"><a href="/jobs/{flow.transform}">', page)
    assert re.search(rf'<tr data-job="{flow.report}" class="state-waiting"><td '
                     rf'class="num"><a href="/jobs/{flow.report}">', page)
    # And the graph: one node per job shown, grandparent to child, the others linked
    svg = svg_of(page)
    assert nodes_of(svg) == [(flow.extract, -2), (flow.transform, -1), (flow.load, 0),
                             (flow.report, 1)]
    for other in (flow.extract, flow.transform, flow.report):
        assert f'<a href="/jobs/{other}" class="node-link">' in svg
    assert f'href="/jobs/{flow.load}"' not in svg  # the job itself is no link
    assert svg.count('class="edge"') == 3
    assert 'class="node state-scheduled current"' in svg
    assert ('<td class="after-outcome">every parent succeeded (after_outcome succeeded; '
            'cancelled if one does not)</td>') in page
    # A fan-in: 30 parents drawn, "+5 more", and the grandchild-less child on the right
    merge_page = dashboard.get(f"/jobs/{flow.merge}").text
    assert ('<td class="after-outcome">every parent finished, however it ended '
            '(after_outcome finished)</td>') in merge_page
    svg = svg_of(merge_page)
    drawn = nodes_of(svg)
    assert [job for job, level in drawn if level == -1] == (flow.later + flow.fetches)[:30]
    assert [(job, level) for job, level in drawn if level >= 0] == [
        (flow.merge, 0), (flow.publish, 1)]
    assert re.search(r'<text [^>]*class="more" data-level="-1">\+5 more</text>', svg)
    # A page without a workflow has no graph
    page = dashboard.get(f"/jobs/{flow.alone}").text
    assert "<svg" not in page and 'class="relatives"' not in page


def test_waiting_jobs_are_counted_and_filtered(flow: Flow, serve: Serve) -> None:
    dashboard = serve(flow.source, clock=flow.clock)
    counts = {q["name"]: q["counts"] for q in dashboard.get("/api/queues").json()}
    assert (counts["etl"]["waiting"], counts["crawl"]["waiting"]) == (3, 0)
    page = dashboard.get("/queues").text
    assert '<td class="num" data-state="waiting">3</td>' in page
    listed = dashboard.get("/api/jobs?state=waiting").json()["jobs"]
    assert [job["id"] for job in listed] == [flow.publish, flow.merge, flow.report]
    assert '<option value="waiting" ' in dashboard.get("/jobs").text
    assert 'rota_queue_jobs{queue="etl",state="waiting"} 3.0' in dashboard.get(
        "/metrics").text


def test_cancel_a_waiting_job_from_its_page(flow: Flow, serve: Serve) -> None:
    dashboard = serve(flow.source, clock=flow.clock, token=TOKEN)
    # The page offers the cancel button for a waiting job
    page = dashboard.get(f"/jobs/{flow.merge}").text
    assert f'action="/api/jobs/{flow.merge}/cancel"' in page
    # And the cancel cancels it, and its child that needed it to succeed
    reply = dashboard.post(f"/api/jobs/{flow.merge}/cancel", headers=AUTH)
    assert reply.status == 200
    assert reply.json() == {"id": flow.merge, "cancelled": True, "state": "cancelled",
                            "cancel_requested": False}
    for job_id in (flow.merge, flow.publish):
        record = flow.app.get_job(job_id)
        assert record is not None and record.state is rota.JobState.CANCELLED
