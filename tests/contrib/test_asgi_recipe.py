"""The ASGI recipe of docs/integrations.md, tested with a real Starlette application (what
FastAPI is built on; its `lifespan=` is the same): the lifespan runs `app.serve()`, an
endpoint enqueues (inside its own database transaction), and the worker runs the job."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import rota
from tests.store.callers import callers_connection


def build(store_url: str) -> tuple[Starlette, rota.App, dict[int, threading.Event]]:
    jobs = rota.App(store_url)
    done: dict[int, threading.Event] = {1: threading.Event(), 2: threading.Event()}

    @jobs.job("confirm", queue="emails")
    def confirm(order: int) -> None:
        done[order].set()

    jobs.add_worker_group(rota.WorkerGroupOptions(name="web", policy=rota.Strict("emails"),
                                                  pool_size=4))

    @contextlib.asynccontextmanager
    async def lifespan(_web: Starlette) -> AsyncIterator[None]:
        async with jobs.serve():  # workers run beside the web app, stop gracefully with it
            yield

    async def plain(request: Request) -> JSONResponse:
        order = int(request.path_params["order"])
        return JSONResponse({"job": await confirm.enqueue_async(order)})

    async def transactional(request: Request) -> JSONResponse:
        order = int(request.path_params["order"])
        with callers_connection(store_url) as conn:  # the app's own database connection
            conn.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)")
            conn.execute(f"INSERT INTO orders (id) VALUES ({order:d})")  # an int: no injection
            job_id = await confirm.configure(connection=conn).enqueue_async(order)
            conn.commit()
        return JSONResponse({"job": job_id})

    web = Starlette(routes=[Route("/orders/{order}", plain, methods=["POST"]),
                            Route("/orders/{order}/txn", transactional, methods=["POST"])],
                    lifespan=lifespan)
    return web, jobs, done


def test_lifespan_serves_the_workers_and_endpoints_enqueue(durable_store_url: str) -> None:
    web, jobs, done = build(durable_store_url)
    try:
        with TestClient(web) as client:
            # When one endpoint enqueues plainly and another inside its transaction
            plain = client.post("/orders/1").json()["job"]
            txn = client.post("/orders/2/txn").json()["job"]
            # Then the workers started by the lifespan run both
            assert done[1].wait(30) and done[2].wait(30)
        # And after the lifespan ended (graceful stop) both are recorded as succeeded
        for job_id in (plain, txn):
            record = jobs.get_job(job_id)
            assert record is not None and record.state is rota.JobState.SUCCEEDED
    finally:
        jobs.close()
