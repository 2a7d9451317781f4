"""The dashboard's ASGI application (Starlette): routes, input checks, rendering.

Reads go through a read-only store where the URL allows it; actions go through an `App`
over a writable store, opened on the first action (so a dashboard nobody clicks never
writes). Store calls are blocking, so every handler runs them in a worker thread.

Every input is checked before it reaches the store: job ids by the `MAX_JOB_ID` rule,
Queue names by `validate_queue_name` (and the names of a Queue page or a Queue action,
which may name a family, by `validate_entry`), states by `JobState`, limits by
`validate_queue_limit` (the range every store holds); the stores pass values as SQL parameters
only. Templates escape everything (Jinja2 autoescape); a strict Content-Security-Policy
forbids inline scripts.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, unquote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rota import Health, ScheduleInfo
from rota.app import App
from rota.app.schedules import row_info
from rota.app.status import store_warnings
from rota.core.clock import Clock
from rota.core.families import is_family, validate_entry
from rota.core.groups import WorkerGroupOptions, validate_group_name
from rota.core.job_filters import JobFilter, job_filter, parse_meta_pairs
from rota.core.jobs import MAX_JOB_ID, JobState
from rota.core.meta import meta_filter
from rota.core.plurals import counted
from rota.core.policy import DispatchPolicy
from rota.core.policy_text import parse_policy
from rota.core.queue_controls import QueueInfo, validate_queue_limit
from rota.core.queues import validate_queue_name
from rota.core.rates import RATE_FORM, QueueRate, parse_rate
from rota.core.settings_range import MAX_SETTING, setting_range
from rota.core.storage_health import StorageHealth
from rota.core.workers import RunningJob, WorkerInfo, in_flight_owners, running_jobs
from rota.dashboard import auth, metrics, views
from rota.dashboard.sources import GroupObservation, Observation, observe
from rota.store import Store, StoreError, open_store, store_clock_for
from rota.store.base import ScheduleStore, StorageReporting

logger = logging.getLogger("rota.dashboard")

HERE = Path(__file__).parent
DEFAULT_WINDOW = timedelta(minutes=60)
PAGE_SIZE = 50
MAX_BODY_BYTES = 64 * 1024
MAX_WINDOW_MINUTES = 24 * 60  # the served history is kept 24 hours
MAX_PAGE_SIZE = 500
FLASH_COOKIE = "rota_flash"  # the confirmation of an action, shown once after its redirect
MAX_FLASH_CHARS = 600
# The most jobs in flight the worker page lists, all workers together (longest running first).
MAX_RUNNING_SHOWN = 500

T = TypeVar("T")

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


# What `GET /api/` lists: (method, path, what it answers or does).
API_INDEX = (
    ("GET", "/api/queues", "every Queue: counts per state, due backlog, oldest due age, "
     "paused, limit, when a job enqueued now starts; the Queues of a family (tenant-*) "
     "in one row of kind 'family', its members by backlog"),
    ("GET", "/api/queues/{name}", "one Queue, the same shape, or a family (tenant-*) "
     "with its members"),
    ("GET", "/api/groups?minutes=N", "the Worker Groups (each with its chart: attempts "
     "succeeded, failed and cancelled per minute): served shares against their "
     "weights over the last N minutes (1 to 1440)"),
    ("GET", "/api/workers", "the worker processes registered in the store, alive or dead, "
     "each with its jobs in flight (id, name, Queue, attempt, running for)"),
    ("GET", "/api/jobs?queue=&state=&name=&meta=&limit=&offset=", "jobs, newest first "
     "(limit 1 to 500); meta: KEY=VALUE pairs (tenant=acme order=42) or a JSON object, "
     "paged by before=ID instead of offset"),
    ("GET", "/api/jobs/{id}", "one job, every field (its parents and children included), "
     "when it starts if scheduled, and the workflow around it"),
    ("POST", "/api/queues/{name}/pause", "pause the Queue, or every Queue of a family "
     "(tenant-*) (needs the token when one is set)"),
    ("POST", "/api/queues/{name}/resume", "resume the Queue or family (token)"),
    ("POST", "/api/queues/{name}/limit", "set the Queue's limit (a family's: each "
     "member's without one of its own): form field or JSON key "
     f"'limit', 0 to {MAX_SETTING} or none (token)"),
    ("POST", "/api/queues/{name}/rate", "set the Queue's rate (a family's: each "
     "member's, its own bucket): form field or JSON key "
     "'rate', N/PERIOD such as 10/1m or none, and optionally 'burst' (token)"),
    ("POST", "/api/groups/{name}/policy", "store the group's policy, followed by its "
     "running workers at their next pass: field or JSON key 'weighted' (a=5,b=1) or "
     "'strict' (a,b), or 'clear' for the code's policy (token)"),
    ("GET", "/api/schedules", "every schedule: in the App's code (with --app) and stored at "
     "run time, with its rule, Queue, pause, next and last fire"),
    ("POST", "/api/schedules/{name}/pause", "pause the schedule: no worker fires it until "
     "it is resumed (token)"),
    ("POST", "/api/schedules/{name}/resume", "resume the schedule at its next instant "
     "(token)"),
    ("POST", "/api/jobs/{id}/cancel", "cancel the job, or ask its worker to (token)"),
    ("POST", "/api/jobs/{id}/requeue", "requeue a dead-lettered, quarantined or cancelled "
     "job (token)"),
    ("POST", "/api/jobs/cancel", "cancel every job the filters select: fields or JSON keys "
     "queue, state, name, meta (as GET /api/jobs takes them); with none, 'everything' "
     "must be true; answers the count (token)"),
    ("POST", "/api/jobs/requeue", "requeue every dead-lettered, quarantined or cancelled "
     "job the filters select, the same fields (token)"),
    ("GET", "/healthz", "200 when the store answers with a current schema (and live "
     "workers serve the App's Queues), else 503 with the reason"),
    ("GET", "/metrics", "Prometheus text"),
)

# Every action (what the login page lists: each needs the token).
ACTIONS = tuple(entry for entry in API_INDEX if entry[0] == "POST")


class BadInput(Exception):
    """A request parameter that is not valid: 400 (or 404 for `not_found`)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Source:
    """The store(s), the clock and the groups one dashboard shows."""

    def __init__(
        self, source: str | Store | App, *, clock: Clock | None = None,
        window: timedelta = DEFAULT_WINDOW,
    ) -> None:
        self.window = window
        self._owned: list[Store] = []
        self._lock = threading.Lock()
        self._url: str | None = None
        self._actions: App | None = None
        self.defined: list[WorkerGroupOptions] = []
        self.app: App | None = source if isinstance(source, App) else None
        if isinstance(source, App):
            self.reads: Store = source.store
            self._actions = source
            self.defined = source.worker_groups
            self.clock: Clock = clock or source.clock
        elif isinstance(source, str):
            self._url = source
            self.reads = open_store(source, read_only=True)
            self._owned.append(self.reads)
            if source.split("://", 1)[0].lower() == "memory":
                self._actions = App(self.reads, clock=clock)  # one in-process store for both
            self.clock = store_clock_for(self.reads, clock)
        elif isinstance(source, Store):
            self.reads = source
            self._actions = App(source, clock=clock)
            self.clock = store_clock_for(source, clock)
        else:
            raise TypeError(
                "create_app takes a store URL, a rota.Store or a rota.App; got "
                f"{source!r}")
        # An App over the read store checks health without groups (and writes nothing).
        self._health_app = source if isinstance(source, App) else App(
            self.reads, clock=self.clock)

    @property
    def url(self) -> str:
        return self.reads.url

    def actions(self) -> App:
        """An App over a writable store (opened on first use when reads are read-only)."""
        with self._lock:
            if self._actions is None:
                assert self._url is not None
                store = open_store(self._url)
                self._owned.append(store)
                self._actions = App(store, clock=self.clock)
            return self._actions

    def health(self) -> Health:
        """The check of `rota health`: with an App, its groups' Queues need live workers."""
        return self._health_app.health()

    def storage(self) -> StorageHealth | None:
        """The store's report on its own storage, for `/metrics` (None: the store keeps
        none, or cannot say now: the gauges are left out rather than shown as 0)."""
        store = self.reads
        if not isinstance(store, StorageReporting):
            return None
        try:
            return store.storage_health()
        except StoreError as error:
            logger.warning("rota dashboard: cannot read the store's storage health: %s",
                           error)
            return None

    def storage_warnings(self) -> tuple[str, ...]:
        """The warnings of `rota health` about the store's storage, for the pages."""
        return store_warnings(self.reads)

    def schedules(self, now: datetime) -> list[ScheduleInfo]:
        """With an App, its schedules in code and the stored ones (`list_schedules`);
        with a store alone, every row: schedules in code as the App that registered each
        last defines it, and the stored ones."""
        if self.app is not None:
            return self.app.list_schedules()
        store = self.reads
        if not isinstance(store, ScheduleStore):
            return []
        return [row_info(row, now) for row in store.list_schedules()]

    def observe(self, now: datetime, window: timedelta | None = None) -> Observation:
        return observe(self.reads, now, window or self.window, self.defined)

    def groups(self, now: datetime) -> list[GroupObservation]:
        return self.observe(now).groups

    def close(self) -> None:
        with self._lock:
            owned, self._owned = self._owned, []
        for store in owned:
            store.close()


def _job_id(text: str) -> int:
    try:
        value = int(text) if text.isascii() and text.isdigit() else 0
    except ValueError:  # pragma: no cover - isdigit already checked
        value = 0
    if not 0 < value <= MAX_JOB_ID:
        raise BadInput(f"job ids are whole numbers from 1 to {MAX_JOB_ID}; got {text!r}")
    return value


def _queue(text: str) -> str:
    try:
        return validate_queue_name(text)
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None


def _entry(text: str) -> str:
    """A Queue name or a family (`tenant-*`): the names of Queue pages and actions."""
    try:
        return validate_entry(text)
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None


def _what(name: str) -> str:
    """What an action's confirmation calls `name`: "Queue a" or "Queue family tenant-*"."""
    return f"Queue family {name}" if is_family(name) else f"Queue {name}"


def _count(text: str | None, what: str, default: int, minimum: int, maximum: int) -> int:
    """A numeric query parameter: a whole number in its range, else 400 naming it."""
    if text is None or text == "":
        return default
    value = int(text) if text.isascii() and text.isdigit() else minimum - 1
    if not minimum <= value <= maximum:
        raise BadInput(
            f"{what} must be a whole number from {minimum} to {maximum}; got {text!r}")
    return value


def _state(text: str | None) -> JobState | None:
    if not text:
        return None
    try:
        return JobState(text)
    except ValueError:
        names = ", ".join(s.value for s in JobState)
        raise BadInput(f"state must be one of {names}; got {text!r}") from None


def _meta(value: object) -> dict[str, Any] | None:
    """A meta filter: a JSON object (in a JSON body, or as text starting with '{'), or
    KEY=VALUE pairs separated by spaces (rota.core.job_filters.parse_meta_pairs); None
    for none."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("{"):
                try:
                    value = json.loads(text)
                except ValueError:
                    raise BadInput(f"meta must be a JSON object or KEY=VALUE pairs; got "
                                   f"{text[:80]!r}") from None
            else:
                value = parse_meta_pairs(text.split())
        return meta_filter(value)
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None


def _selection(form: dict[str, Any]) -> tuple[JobFilter, bool]:
    """The filters of a bulk action's body, and whether it says `everything`."""
    queue = form.get("queue") or None
    try:
        selected = job_filter(None if queue is None else _queue(str(queue)),
                              form.get("state") or None, form.get("name") or None,
                              _meta(form.get("meta")))
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None
    return selected, _force(form.get("everything"))


def _policy_of(form: dict[str, Any]) -> DispatchPolicy | None:
    """The policy a POST gives: 'weighted' (a=5,b=1) or 'strict' (a,b), the syntax of
    `rota policy`; None for 'clear'. Its values are checked when it is set."""
    given = [key for key in ("weighted", "strict", "clear")
             if form.get(key) not in (None, "", False)]
    if len(given) != 1:
        raise BadInput("give one of: 'weighted' (Queue=weight pairs, e.g. a=5,b=1), "
                       "'strict' (Queues, highest priority first, e.g. a,b), or 'clear' "
                       "(back to the policy in the code)")
    if given[0] == "clear":
        return None
    text = form[given[0]]
    if not isinstance(text, str):
        raise BadInput(f"{given[0]!r} takes text like "
                       f"{'a=5,b=1' if given[0] == 'weighted' else 'a,b'}; got {text!r}")
    try:
        return parse_policy(text if given[0] == "strict" else None,
                            text if given[0] == "weighted" else None)
    except ValueError as error:
        raise BadInput(str(error).replace("--weighted", "weighted")) from None


_YES, _NO = {"1", "on", "true", "yes"}, {"", "0", "off", "false", "no"}


def _force(value: object) -> bool:
    """The 'force' field of a policy POST: a checkbox's 'on', 1/true/yes, JSON true; absent,
    empty, 0/false/no or JSON false is no. Anything else is refused, not guessed."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _YES | _NO:
        return value.strip().lower() in _YES
    raise BadInput(f"force takes 1 or 0 (true or false); got {value!r}")


def _limit(value: object) -> int | None:
    """A limit from a form (text) or JSON (int or null), or none: checked here by the
    rule every store holds (`validate_queue_limit`, its range included), before any store
    sees it."""
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "none"}):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            raise BadInput(f"limit must be a whole number, or none for no limit; got "
                           f"{value!r}")
        value = int(text)
    try:
        return validate_queue_limit(value)
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None


def _rate(value: object, burst: object) -> QueueRate | None:
    """A rate from a form (text, `10/1m`) or JSON (the same text, or null), with an
    optional burst (a whole number; empty: the rate's own jobs); none / empty / null: no
    rate. Checked by the rule every store holds (`parse_rate`) before any store sees it."""
    no_burst = burst is None or (isinstance(burst, str) and not burst.strip())
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "none"}):
        if not no_burst:
            raise BadInput("burst goes with a rate: give rate too, or leave burst empty")
        return None
    if not isinstance(value, str):
        raise BadInput(f"rate must be text such as 10/1m (N jobs per period), or none; got "
                       f"{value!r}")
    size: int | None = None
    if not no_burst:
        text = burst.strip() if isinstance(burst, str) else burst
        if isinstance(text, str) and text.isascii() and text.isdigit():
            text = int(text)
        if isinstance(text, bool) or not isinstance(text, int):
            raise BadInput(f"burst must be a whole number {setting_range(1)}; got {burst!r}")
        size = text
    try:
        return parse_rate(value, size)
    except (TypeError, ValueError) as error:
        raise BadInput(str(error)) from None


_BY_QUEUE = attrgetter("queue")  # the served counts' key of a Queue's chart
_BY_GROUP = attrgetter("group")  # and of a Worker Group's


class Dashboard:
    """The routes of one dashboard over one `Source`."""

    def __init__(self, source: Source, token: str | None) -> None:
        if token is not None and not token.strip():
            raise ValueError("the dashboard token must not be empty; omit it for no token")
        self.source = source
        self.token = token
        self.served_totals = metrics.ServedTotals()
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True, undefined=jinja2.StrictUndefined,
        )
        self.templates.filters["about"] = views.about
        self.templates.filters["ago"] = views.ago
        self.templates.filters["progress_bar"] = views.progress_bar
        self.templates.filters["pct"] = lambda share: "" if share is None else f"{share:.0%}"
        self.templates.filters["tojson_pretty"] = lambda value: json.dumps(
            value, indent=2, ensure_ascii=False)

    # -- helpers ----------------------------------------------------------------------

    async def _call(self, func: Callable[[], T]) -> T:
        return await run_in_threadpool(func)

    def _base(self, request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def _page(self, request: Request, template: str, status: int = 200,
              **context: Any) -> HTMLResponse:
        base = self._base(request)
        context.setdefault("title", str(context.get("status_code", "rota")))
        # Every page says when it was read, also those that read no time of their own.
        context.setdefault("now", self.source.clock.now())
        # The store's warnings (rota.core.storage_health): read by the Queues page only.
        context.setdefault("storage_warnings", ())
        flash = unquote(request.cookies.get(FLASH_COOKIE, ""))[:MAX_FLASH_CHARS]
        html = self.templates.get_template(template).render(
            base=base, store_url=self.source.url, token_set=self.token is not None,
            logged_in=self._may_act(request), path=request.url.path,
            here=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
            flash=flash, **context)
        response = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
        if flash:  # shown once
            response.delete_cookie(FLASH_COOKIE, path=base or "/")
        return response

    def _json(self, data: object, status: int = 200, **headers: str) -> JSONResponse:
        return JSONResponse(data, status_code=status, headers={**SECURITY_HEADERS, **headers})

    def _wants_html(self, request: Request) -> bool:
        return "text/html" in request.headers.get("accept", "")

    def _may_act(self, request: Request) -> bool:
        return auth.token_matches(
            self.token, authorization=request.headers.get("authorization"),
            cookie=request.cookies.get(auth.COOKIE_NAME))

    def _error(self, request: Request, message: str, status: int) -> Response:
        """A page for people (pages, and form posts from them), JSON for the API."""
        if request.url.path == f"{self._base(request)}/metrics":
            return Response(f"# {message}\n", status_code=status, media_type="text/plain")
        page = not request.url.path.startswith(f"{self._base(request)}/api/")
        if page or (request.method == "POST" and self._wants_html(request)):
            return self._page(request, "error.html", status=status, message=message,
                              status_code=status)
        return self._json({"error": message}, status=status)

    async def _snapshot(self) -> tuple[datetime, list[QueueInfo], list[GroupObservation]]:
        now, infos, seen = await self._observe()
        return now, infos, seen.groups

    async def _observe(
        self, window: timedelta | None = None
    ) -> tuple[datetime, list[QueueInfo], Observation]:
        def read() -> tuple[datetime, list[QueueInfo], Observation]:
            now = self.source.clock.now()
            return now, self.source.reads.queue_infos(now), self.source.observe(now, window)
        return await self._call(read)

    def _window(self, request: Request) -> timedelta:
        """The fairness view's window: `?minutes=N` (1 to 1440), else the dashboard's."""
        default = round(self.source.window.total_seconds() / 60)
        return timedelta(minutes=_count(request.query_params.get("minutes"), "minutes",
                                        default, 1, MAX_WINDOW_MINUTES))

    async def _form(self, request: Request) -> dict[str, Any]:
        """The body of a POST: JSON, or a URL-encoded form (one value per field)."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():  # never more than the cap in memory
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise BadInput("request body too large (64 KiB at most)", status=413)
            chunks.append(chunk)
        body = b"".join(chunks)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not body:
            return {}
        if kind == "application/json":
            try:
                data = json.loads(body)
            except ValueError:
                raise BadInput("the body is not valid JSON") from None
            if not isinstance(data, dict):
                raise BadInput("the JSON body must be an object, e.g. {\"limit\": 5}")
            return data
        if kind in {"application/x-www-form-urlencoded", ""}:
            try:
                fields = parse_qs(body.decode("utf-8"), keep_blank_values=True,
                                  strict_parsing=False, max_num_fields=20)
            except (UnicodeDecodeError, ValueError) as error:
                raise BadInput(f"the form body cannot be read: {error}") from None
            return {key: values[-1] for key, values in fields.items()}
        raise BadInput(f"send JSON or a form, not {kind!r}", status=415)

    # -- pages --------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        return RedirectResponse(f"{self._base(request)}/queues", status_code=307)

    async def queues_page(self, request: Request) -> Response:
        now, infos, groups = await self._snapshot()
        warnings = await self._call(self.source.storage_warnings)
        return self._page(request, "queues.html", title="Queues", now=now,
                          queues=views.queues_json(infos, now, groups),
                          storage_warnings=warnings)

    async def queue_page(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        window = self._window(request)
        now, infos, seen = await self._observe(window)
        if is_family(name):
            return self._page(request, "family.html", title=f"Queue family {name}", now=now,
                              family=views.family_json(views.row_for(name, infos, seen.groups),
                                                       now, infos, seen.groups))
        info = next((one for one in infos if one.name == name), None) or QueueInfo(
            name, counts=dict.fromkeys(JobState, 0))
        chart = views.timelines(seen.served, now, window, _BY_QUEUE).get(name)
        family = views.family_of_queues([info], views.policies_by_preference(seen.groups))
        return self._page(request, "queue.html", title=f"Queue {name}", now=now,
                          queue=views.queue_json(info, now, infos, seen.groups),
                          family=family.get(name),
                          chart=chart, window_minutes=round(window.total_seconds() / 60))

    async def _running(self, workers: list[WorkerInfo], now: datetime) -> list[RunningJob]:
        """What the live workers run now: the leased jobs of their groups' owner ids (none
        when the store cannot say now: the registry still shows)."""
        owners = in_flight_owners(workers)
        if not owners:
            return []
        try:
            jobs = await self._call(
                lambda: self.source.reads.jobs_in_flight(owners, MAX_RUNNING_SHOWN))
        except StoreError as error:
            logger.warning("rota dashboard: cannot read the jobs in flight: %s", error)
            return []
        return running_jobs(workers, jobs, now)

    async def workers_page(self, request: Request) -> Response:
        now, infos, seen = await self._observe(self._window(request))
        running = await self._running(seen.workers, now)
        groups = self._groups_with_charts(request, seen, infos, now)
        return self._page(request, "workers.html", title="Worker Groups", now=now,
                          groups=groups,
                          workers=[views.worker_json(w, now, running) for w in seen.workers],
                          running_cap=MAX_RUNNING_SHOWN if len(running) >= MAX_RUNNING_SHOWN
                          else None, note=seen.note)

    async def _schedules(self) -> tuple[datetime, list[dict[str, Any]]]:
        def read() -> tuple[datetime, list[dict[str, Any]]]:
            now = self.source.clock.now()
            return now, [views.schedule_json(info, now) for info in self.source.schedules(now)]
        return await self._call(read)

    async def schedules_page(self, request: Request) -> Response:
        now, schedules = await self._schedules()
        return self._page(request, "schedules.html", title="Schedules", now=now,
                          schedules=schedules, with_app=self.source.app is not None)

    async def api_schedules(self, request: Request) -> Response:
        _, schedules = await self._schedules()
        return self._json(schedules)

    async def jobs_page(self, request: Request) -> Response:
        listing = await self._jobs(request)
        return self._page(request, "jobs.html", title="Jobs", states=[s.value for s in JobState],
                          **listing)

    async def job_page(self, request: Request) -> Response:
        detail = await self._job(request)
        return self._page(request, "job.html", title=f"Job {detail['job']['id']}", **detail)

    async def login_page(self, request: Request) -> Response:
        if request.method == "GET":
            return self._page(request, "login.html", title="Log in", failed=False,
                              actions=ACTIONS,
                              next=auth.safe_next(request.query_params.get("next"),
                                                  f"{self._base(request)}/queues"))
        self._check_site(request)
        form = await self._form(request)
        given = str(form.get("token", ""))
        target = auth.safe_next(str(form.get("next", "")), f"{self._base(request)}/queues")
        if self.token is None:
            return RedirectResponse(target, status_code=303)
        if not auth.token_matches(self.token, authorization=f"Bearer {given}", cookie=None):
            return self._page(request, "login.html", status=401, title="Log in",
                              failed=True, next=target, actions=ACTIONS)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(auth.COOKIE_NAME, auth.session_value(self.token),
                            httponly=True, samesite="strict",
                            path=self._base(request) or "/")
        return response

    async def logout(self, request: Request) -> Response:
        self._check_site(request)
        response = RedirectResponse(f"{self._base(request)}/queues", status_code=303)
        response.delete_cookie(auth.COOKIE_NAME, path=self._base(request) or "/")
        return response

    # -- JSON reads -----------------------------------------------------------------------

    async def api_queues(self, request: Request) -> Response:
        now, infos, groups = await self._snapshot()
        return self._json(views.queues_json(infos, now, groups))

    async def api_queue(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        now, infos, groups = await self._snapshot()
        if is_family(name):
            return self._json(views.family_json(views.row_for(name, infos, groups), now,
                                                infos, groups))
        info = next((one for one in infos if one.name == name), None)
        if info is None:
            info = QueueInfo(name, counts=dict.fromkeys(JobState, 0))
        return self._json(views.queue_json(info, now, infos, groups))

    async def api_groups(self, request: Request) -> Response:
        now, infos, seen = await self._observe(self._window(request))
        return self._json(self._groups_with_charts(request, seen, infos, now))

    def _groups_with_charts(self, request: Request, seen: Observation, infos: list[QueueInfo],
                            now: datetime) -> list[dict[str, Any]]:
        """The groups' view, each with its chart of attempts over the window (None: it
        served nothing in it)."""
        groups = views.groups_json(seen.groups, infos, now)
        charts = views.timelines(seen.served, now, self._window(request), _BY_GROUP)
        for group in groups:
            group["chart"] = charts.get(group["name"])
        return groups

    async def api_workers(self, request: Request) -> Response:
        now, _infos, seen = await self._observe()
        running = await self._running(seen.workers, now)
        return self._json([views.worker_json(w, now, running) for w in seen.workers])

    async def api_jobs(self, request: Request) -> Response:
        listing = await self._jobs(request)
        return self._json({key: listing[key] for key in (
            "jobs", "queue", "state", "name", "meta", "limit", "offset", "next_offset",
            "next_before")})

    async def api_job(self, request: Request) -> Response:
        detail = await self._job(request)
        return self._json({**detail["job"], "estimate": detail["estimate"],
                           "workflow": detail["workflow"]})

    async def api_index(self, request: Request) -> Response:
        base = self._base(request)
        return self._json([{"method": method, "path": f"{base}{path}", "description": text}
                           for method, path, text in API_INDEX])

    async def healthz(self, request: Request) -> Response:
        """For load balancers and probes: no token needed, never cached."""
        health = await self._call(self.source.health)
        return self._json(health.to_json(), status=200 if health.ok else 503,
                          **{"Cache-Control": "no-store"})

    async def metrics_text(self, request: Request) -> Response:
        def snapshot() -> metrics.Snapshot:
            now = self.source.clock.now()
            seen = self.source.observe(now)
            served = self.served_totals.update(self.source.reads, now)
            return now, self.source.reads.queue_infos(now), seen.groups, served
        body = await self._call(lambda: metrics.render(snapshot, self.source.storage))
        return Response(body, media_type=metrics.CONTENT_TYPE,
                        headers={"X-Content-Type-Options": "nosniff"})

    async def _jobs(self, request: Request) -> dict[str, Any]:
        params = request.query_params
        queue = _queue(params["queue"]) if params.get("queue") else None
        state = _state(params.get("state"))
        name = params.get("name") or None
        if name is not None and len(name) > 200:
            raise BadInput("a job name has at most 200 characters")
        limit = _count(params.get("limit"), "limit", PAGE_SIZE, 1, MAX_PAGE_SIZE)
        offset = _count(params.get("offset"), "offset", 0, 0, MAX_JOB_ID)
        meta_text = params.get("meta") or ""
        meta = _meta(meta_text)
        # A meta filter pages by id (find_jobs' keyset), not by offset.
        before = _count(params.get("before"), "before", 0, 0, MAX_JOB_ID) or None
        if meta is not None:
            offset = 0
            jobs = await self._call(lambda: self.source.reads.find_jobs(
                queue=queue, state=state, name=name, meta=meta, limit=limit + 1,
                newest=True, beyond=before))
        else:
            jobs = await self._call(lambda: self.source.reads.list_jobs(
                queue=queue, state=state, name=name, limit=limit + 1, newest=True,
                offset=offset))
        more = len(jobs) > limit
        filters = {"queue": queue or "", "state": state.value if state else "",
                   "name": name or "", "meta": meta_text if meta is not None else ""}
        def page_link(**at: int) -> str:
            query = {k: v for k, v in {**filters, "limit": str(limit),
                                       **{k: str(v) for k, v in at.items()}}.items() if v}
            return f"{self._base(request)}/jobs?{urlencode(query)}"
        if meta is not None:
            next_link = page_link(before=jobs[limit - 1].id) if more else None
            previous_link = page_link() if before is not None else None
        else:
            next_link = page_link(offset=offset + limit) if more else None
            previous_link = page_link(offset=max(0, offset - limit)) if offset > 0 else None
        return {
            "jobs": [views.job_json(job) for job in jobs[:limit]],
            "queue": queue, "state": state.value if state else None, "name": name,
            "meta": meta, "limit": limit, "offset": offset,
            "next_offset": offset + limit if more and meta is None else None,
            "next_before": jobs[limit - 1].id if more and meta is not None else None,
            "filters": filters, "filtered": any(filters.values()),
            "next_link": next_link, "previous_link": previous_link,
        }

    async def _job(self, request: Request) -> dict[str, Any]:
        job_id = _job_id(request.path_params["id"])

        def read() -> dict[str, Any]:
            job = self.source.reads.get_job(job_id)
            if job is None:
                raise BadInput(f"no job {job_id} in {self.source.url}", status=404)
            now = self.source.clock.now()
            estimate = None
            if job.state is JobState.SCHEDULED:
                estimate = views.job_estimate_json(
                    job, now, self.source.reads.queue_infos(now), self.source.groups(now),
                    self.source.reads.due_position(job_id, now) if job.due_at <= now
                    else None)
            related, records = views.related_json(self.source.reads, job)
            workflow = views.workflow_json(self.source.reads, job, related, records)
            return {"job": views.job_json_with(job, related), "estimate": estimate,
                    "workflow": workflow, "now": now,
                    "graph": None if workflow is None else views.workflow_svg(workflow, job.id)}
        return await self._call(read)

    # -- actions ----------------------------------------------------------------------------

    def _check_site(self, request: Request) -> None:
        if auth.cross_site(origin=request.headers.get("origin"),
                           sec_fetch_site=request.headers.get("sec-fetch-site"),
                           host=request.headers.get("host")):
            raise BadInput("refused: this request comes from another site's page", status=403)

    async def _act(
        self, request: Request, plan: Callable[[dict[str, Any]], Callable[[App], dict[str, Any]]],
        back: str,
    ) -> Response:
        """Check the site and the token, read the body, then run the change `plan` makes
        of it (which may refuse the input with `BadInput` first) on the writable App."""
        self._check_site(request)
        if not self._may_act(request):
            message = "this dashboard needs its token for actions: send 'Authorization: " \
                "Bearer TOKEN', or log in on the dashboard's /login page"
            if self._wants_html(request):
                return self._page(request, "error.html", status=401, message=message,
                                  status_code=401)
            return self._json({"error": message}, status=401,
                              **{"WWW-Authenticate": 'Bearer realm="rota dashboard"'})
        form = await self._form(request)
        change = plan(form)
        result = await self._call(lambda: change(self.source.actions()))
        status = int(result.pop("_status", 200))
        done = str(result.pop("_done", ""))
        if status >= 400:
            return self._error(request, str(result.get("error")), status)
        if self._wants_html(request):
            target = auth.safe_next(str(form.get("next", "")) or None, back)
            response = RedirectResponse(target, status_code=303)
            # The page the browser lands on says what was done (then drops the cookie).
            response.set_cookie(FLASH_COOKIE, quote(done[:MAX_FLASH_CHARS], safe=""),
                                max_age=60, httponly=True, samesite="strict",
                                path=self._base(request) or "/")
            return response
        return self._json(result, status=status)

    async def pause(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        def change(app: App) -> dict[str, Any]:
            app.pause_queue(name)
            return {**self._settings(name),
                    "_done": f"Paused {_what(name)}: workers claim nothing from "
                    f"{'its Queues' if is_family(name) else 'it'} until it is resumed "
                    "(jobs running now finish)."}
        return await self._act(request, lambda form: change, f"{self._base(request)}/queues")

    async def resume(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        def change(app: App) -> dict[str, Any]:
            app.resume_queue(name)
            return {**self._settings(name), "_done": f"Resumed {_what(name)}."}
        return await self._act(request, lambda form: change, f"{self._base(request)}/queues")

    async def set_limit(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        def plan(form: dict[str, Any]) -> Callable[[App], dict[str, Any]]:
            if "limit" not in form:
                raise BadInput("give the limit: a form field or JSON key 'limit' (a whole "
                               f"number from 0 to {MAX_SETTING}, or none / null for no limit)")
            limit = _limit(form["limit"])
            def change(app: App) -> dict[str, Any]:
                app.set_queue_limit(name, limit)
                return {**self._settings(name), "_done": f"Removed the limit of {_what(name)}."
                        if limit is None else f"Set the limit of {_what(name)} to {limit} "
                        "jobs leased at once" + (", each of its Queues on its own."
                                                 if is_family(name) else ".")}
            return change
        return await self._act(request, plan, f"{self._base(request)}/queues")

    async def set_rate(self, request: Request) -> Response:
        name = _entry(request.path_params["name"])
        def plan(form: dict[str, Any]) -> Callable[[App], dict[str, Any]]:
            if "rate" not in form:
                raise BadInput(f"give the rate: a form field or JSON key 'rate' ({RATE_FORM}; "
                               "none / null for no rate), and optionally 'burst'")
            rate = _rate(form["rate"], form.get("burst"))
            def change(app: App) -> dict[str, Any]:
                if rate is None:
                    app.set_queue_rate(name, None)
                else:
                    app.set_queue_rate(name, rate.jobs, per=rate.per, burst=rate.burst)
                return {**self._settings(name), "_done": f"Removed the rate of {_what(name)}."
                        if rate is None else f"Set the rate of {_what(name)} to {rate}: "
                        "claims take its jobs no faster, all workers together"
                        + (", each of its Queues on its own." if is_family(name) else ".")}
            return change
        return await self._act(request, plan, f"{self._base(request)}/queues")

    async def set_policy(self, request: Request) -> Response:
        name = validate_group_name(request.path_params["name"])

        def plan(form: dict[str, Any]) -> Callable[[App], dict[str, Any]]:
            policy = _policy_of(form)
            force = _force(form.get("force"))

            def change(app: App) -> dict[str, Any]:
                # An unknown group: the App's ValueError (a 400) names the known ones.
                app.set_group_policy(name, policy, force=force)
                in_force = app.group_policy(name) if policy is not None else None
                return {
                    "group": name,
                    "policy": None if in_force is None else views.policy_json(in_force),
                    "source": "code" if policy is None else "stored",
                    "_done": f"Worker Group {name}: back to the policy in its code."
                    if policy is None else f"Worker Group {name}: "
                    f"{views.policy_text(policy)}; its running workers switch at their "
                    "next pass."}
            return change
        return await self._act(request, plan, f"{self._base(request)}/workers")

    async def pause_schedule(self, request: Request) -> Response:
        return await self._schedule_action(request, paused=True)

    async def resume_schedule(self, request: Request) -> Response:
        return await self._schedule_action(request, paused=False)

    async def _schedule_action(self, request: Request, *, paused: bool) -> Response:
        name = request.path_params["name"]  # the App checks it (a bad one: 400)

        def change(app: App) -> dict[str, Any]:
            try:
                (app.pause_schedule if paused else app.resume_schedule)(name)
            except KeyError as error:
                return {"_status": 404, "error": str(error.args[0])}
            return {"schedule": name, "paused": paused,
                    "_done": f"Paused schedule {name}: no worker fires it until it is "
                    "resumed." if paused else f"Resumed schedule {name}: it fires at its "
                    "next instant (those missed while paused are skipped)."}
        return await self._act(request, lambda form: change,
                               f"{self._base(request)}/schedules")

    def _settings(self, name: str) -> dict[str, Any]:
        now = self.source.clock.now()
        store = self.source.actions().store
        info = next((one for one in store.queue_infos(now) if one.name == name), None)
        rate = None if info is None else info.rate
        return {"queue": name, "paused": bool(info and info.paused),
                "limit": None if info is None else info.limit,
                "rate": None if rate is None else {
                    "jobs": rate.jobs, "per_s": rate.per.total_seconds(),
                    "burst": rate.burst, "text": str(rate)}}

    async def cancel(self, request: Request) -> Response:
        job_id = _job_id(request.path_params["id"])
        def change(app: App) -> dict[str, Any]:
            done = app.cancel(job_id)
            return self._job_outcome(app, job_id, done, "cancelled",
                                     "it has finished already")
        return await self._act(request, lambda form: change,
                               f"{self._base(request)}/jobs/{job_id}")

    async def requeue(self, request: Request) -> Response:
        job_id = _job_id(request.path_params["id"])
        def change(app: App) -> dict[str, Any]:
            done = app.requeue(job_id)
            return self._job_outcome(
                app, job_id, done, "requeued",
                "only dead_lettered, quarantined or cancelled jobs can be requeued")
        return await self._act(request, lambda form: change,
                               f"{self._base(request)}/jobs/{job_id}")

    async def bulk(self, request: Request) -> Response:
        """POST /api/jobs/cancel and /api/jobs/requeue: every job the filters select."""
        verb = "cancel" if request.url.path.endswith("/cancel") else "requeue"

        def plan(form: dict[str, Any]) -> Callable[[App], dict[str, Any]]:
            selected, everything = _selection(form)
            if selected.empty and not everything:
                raise BadInput(f"{verb} with no filter would change every job: give a "
                               "queue, state, name or meta, or everything=true")
            if self._wants_html(request) and not _force(form.get("confirm")):
                raise BadInput(f"tick the box to confirm: {verb} every job the filters "
                               "select")

            def change(app: App) -> dict[str, Any]:
                act = app.cancel_jobs if verb == "cancel" else app.requeue_jobs
                count = act(queue=selected.queue, state=selected.state, name=selected.name,
                            meta=selected.meta, everything=everything)
                said = f"Cancelled {counted(count, 'job')} (running ones on request)." \
                    if verb == "cancel" else f"Requeued {counted(count, 'job')}."
                return {"cancelled" if verb == "cancel" else "requeued": count,
                        "_done": said}
            return change

        return await self._act(request, plan, f"{self._base(request)}/jobs")

    def _job_outcome(self, app: App, job_id: int, done: bool, verb: str,
                     why_not: str) -> dict[str, Any]:
        job = app.store.get_job(job_id)
        if job is None:
            return {"_status": 404, "error": f"no job {job_id} in {app.store.url}"}
        if not done:
            return {"_status": 409, "id": job_id, verb: False, "state": job.state.value,
                    "error": f"job {job_id} is {job.state.value}: {why_not}"}
        if job.cancel_requested and job.state is JobState.LEASED:
            said = f"Asked for job {job_id} to be cancelled: its worker stops it at its " \
                "next heartbeat."
        else:
            said = f"Job {job_id} {verb}: now {job.state.value}."
        return {"id": job_id, verb: True, "state": job.state.value,
                "cancel_requested": job.cancel_requested, "_done": said}

    # -- the application --------------------------------------------------------------------

    def routes(self) -> list[Route | Mount]:
        def page(path: str, endpoint: Callable[[Request], Any],
                 methods: list[str] | None = None) -> Route:
            return Route(path, self._guard(endpoint), methods=methods or ["GET"])
        return [
            page("/", self.home),
            page("/queues", self.queues_page),
            page("/queues/{name:path}", self.queue_page),
            page("/workers", self.workers_page),
            page("/schedules", self.schedules_page),
            page("/jobs", self.jobs_page),
            page("/jobs/{id}", self.job_page),
            page("/login", self.login_page, ["GET", "POST"]),
            page("/logout", self.logout, ["POST"]),
            page("/api/queues", self.api_queues),
            page("/api/queues/{name:path}", self.api_queue),
            page("/api/queues/{name:path}/pause", self.pause, ["POST"]),
            page("/api/queues/{name:path}/resume", self.resume, ["POST"]),
            page("/api/queues/{name:path}/limit", self.set_limit, ["POST"]),
            page("/api/queues/{name:path}/rate", self.set_rate, ["POST"]),
            page("/api/groups", self.api_groups),
            page("/api/groups/{name}/policy", self.set_policy, ["POST"]),
            page("/api/workers", self.api_workers),
            page("/api/schedules", self.api_schedules),
            page("/api/schedules/{name:path}/pause", self.pause_schedule, ["POST"]),
            page("/api/schedules/{name:path}/resume", self.resume_schedule, ["POST"]),
            page("/api/jobs", self.api_jobs),
            page("/api/jobs/cancel", self.bulk, ["POST"]),
            page("/api/jobs/requeue", self.bulk, ["POST"]),
            page("/api/jobs/{id}", self.api_job),
            page("/api/jobs/{id}/cancel", self.cancel, ["POST"]),
            page("/api/jobs/{id}/requeue", self.requeue, ["POST"]),
            page("/metrics", self.metrics_text),
            page("/healthz", self.healthz),
            page("/api", self.api_index),
            page("/api/", self.api_index),
            Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
        ]

    def _guard(self, endpoint: Callable[[Request], Any]) -> Callable[[Request], Any]:
        """Expected failures become one clear message (JSON or a page), never a traceback."""
        async def guarded(request: Request) -> Response:
            try:
                response: Response = await endpoint(request)
                return response
            except BadInput as error:
                return self._error(request, str(error), error.status)
            except (TypeError, ValueError, OverflowError) as error:
                # A rule of the App refused the input (OverflowError: a number too large
                # for the store's driver): the message says which rule.
                return self._error(request, str(error), 400)
            except StoreError as error:
                return self._error(request, f"the store failed: {error}", 503)
        return guarded


def build(source: str | Store | App, *, token: str | None = None,
          clock: Clock | None = None, window: timedelta = DEFAULT_WINDOW) -> Starlette:
    """See `rota.dashboard.create_app`."""
    opened = Source(source, clock=clock, window=window)
    try:
        dashboard = Dashboard(opened, token)
    except BaseException:
        opened.close()
        raise

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            opened.close()

    application = Starlette(routes=dashboard.routes(), lifespan=lifespan)
    application.state.rota_dashboard = dashboard
    return application
