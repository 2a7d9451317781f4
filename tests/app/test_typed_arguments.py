"""Typed arguments: a handler parameter annotated with a dataclass (or a pydantic model,
in tests/app/test_typed_arguments_pydantic.py) takes an instance or a dict at enqueue,
validated there (nothing stored when refused), stored as JSON, and the handler receives
an instance."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

import rota
from rota import Strict, WorkerGroupOptions
from rota.core.jobs import NewJob

MakeApp = Callable[[], rota.App]


@dataclass
class Line:
    sku: str
    quantity: int = 1


@dataclass
class Order:
    id: int
    customer: str
    lines: list[Line] = field(default_factory=list)
    gift: Line | None = None

    def __post_init__(self) -> None:
        if self.id <= 0:
            raise ValueError(f"an order id is positive; got {self.id}")


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


@dataclass
class Stamped:
    at: datetime


def app_with_group(make_app: MakeApp) -> rota.App:
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="g", policy=Strict("q")))
    return app


def stored(app: rota.App) -> int:
    return sum(app.store.count_jobs().values())


def test_a_dataclass_argument_is_stored_as_json_and_given_back_as_an_instance(
        make_app: MakeApp) -> None:
    # Given a job whose parameter is a dataclass holding a list and an optional of others
    app = app_with_group(make_app)
    seen: list[Order] = []

    @app.job("ship", queue="q")
    def ship(order: Order, note: str = "") -> None:
        seen.append(order)

    # When it is enqueued with an instance, and with a dict (positional and keyword)
    order = Order(7, "ada", [Line("a", 2), Line("b")], gift=Line("card"))
    by_instance = ship.enqueue(order)
    by_dict = ship.enqueue(order={"id": 8, "customer": "bob", "lines": [{"sku": "c"}]})
    # Then the store holds plain JSON, defaults filled in
    job = app.get_job(by_instance)
    assert job is not None and job.args == ({
        "id": 7, "customer": "ada", "lines": [{"sku": "a", "quantity": 2},
                                              {"sku": "b", "quantity": 1}],
        "gift": {"sku": "card", "quantity": 1}},)
    other = app.get_job(by_dict)
    assert other is not None and other.kwargs == {"order": {
        "id": 8, "customer": "bob", "lines": [{"sku": "c", "quantity": 1}], "gift": None}}
    # And the handler receives instances, nested ones included
    assert app.run_until_idle() == 2
    assert seen == [order, Order(8, "bob", [Line("c")])]
    assert all(isinstance(line, Line) for line in seen[0].lines)


def test_an_async_handler_receives_instances_too(make_app: MakeApp) -> None:
    app = app_with_group(make_app)
    seen: list[object] = []

    @app.job("async-ship", queue="q")
    async def ship(lines: list[Line], gift: Line | None = None) -> None:
        await asyncio.sleep(0)
        seen.append((lines, gift))

    ship.enqueue([{"sku": "a"}, Line("b", 3)])
    ship.enqueue([], gift={"sku": "g"})
    assert app.run_until_idle() == 2
    assert seen == [([Line("a"), Line("b", 3)], None), ([], Line("g"))]


def test_missing_and_unknown_fields_are_refused_naming_the_argument(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("ship", queue="q")
    def ship(order: Order) -> None: ...

    with pytest.raises(TypeError, match=r"job 'ship': argument 'order': Order is missing "
                                        r"the field\(s\) 'customer'; nothing was stored"):
        ship.enqueue({"id": 1})
    with pytest.raises(TypeError, match=r"argument 'order': Order has no field\(s\) 'colour'"):
        ship.enqueue({"id": 1, "customer": "a", "colour": "red"})
    with pytest.raises(TypeError, match=r"argument 'order.lines\[1\]': Line is missing"):
        ship.enqueue({"id": 1, "customer": "a", "lines": [{"sku": "a"}, {"quantity": 2}]})
    with pytest.raises(TypeError, match="argument 'order' must be an instance of Order or a "
                                        "dict of its fields; got int"):
        ship.enqueue(5)
    with pytest.raises(TypeError, match=r"argument 'order.lines' must be a list; got str"):
        ship.enqueue({"id": 1, "customer": "a", "lines": "abc"})
    assert stored(app) == 0


def test_the_dataclass_own_check_refuses_with_a_value_error_naming_the_argument(
        make_app: MakeApp) -> None:
    app = make_app()

    @app.job("ship", queue="q")
    def ship(order: Order) -> None: ...

    with pytest.raises(ValueError, match=r"job 'ship': argument 'order': Order\(id, customer\) "
                                         r"refused: an order id is positive; got 0"):
        ship.enqueue({"id": 0, "customer": "a"})
    with pytest.raises(ValueError, match=r"enqueue_many entry 1: job 'ship': argument 'order'"):
        ship.enqueue_many([({"id": 1, "customer": "a"},), ({"id": -1, "customer": "b"},)])
    assert stored(app) == 0


def test_a_datetime_field_is_refused_as_json_has_none(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("stamp", queue="q")
    def stamp(event: Stamped) -> None: ...

    with pytest.raises(TypeError, match=r"positional argument 0 is not JSON-serialisable"):
        stamp.enqueue(Stamped(datetime(2026, 1, 1, tzinfo=UTC)))
    assert stored(app) == 0


def test_a_stored_value_that_no_longer_fits_fails_the_attempt(make_app: MakeApp) -> None:
    # Given a job stored with plain JSON that misses a field (enqueued without the check)
    app = app_with_group(make_app)
    calls: list[Order] = []

    @app.job("ship", queue="q", retry=rota.RetryPolicy(max_attempts=1))
    def ship(order: Order) -> None:
        calls.append(order)

    job_id = ship.enqueue({"id": 1, "customer": "a"})
    app.store.enqueue([NewJob(
        name="ship", queue="q", due_at=app.clock.now(), args_json='[{"id": 2}]')],
        app.clock.now())
    # When both run
    app.run_until_idle()
    # Then the first ran; the second failed without reaching the handler, saying why
    assert [order.id for order in calls] == [1]
    bad = app.get_job(job_id + 1)
    assert bad is not None and bad.state is rota.JobState.DEAD_LETTERED
    assert bad.last_error is not None and "Order is missing the field(s) 'customer'" in \
        bad.last_error


def test_schedules_check_and_store_typed_arguments(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("ship", queue="q")
    def ship(order: Order) -> None: ...

    with pytest.raises(TypeError, match="missing the field"):
        app.schedule("nightly", ship, every=60, args=[{"id": 1}])
    app.schedule("nightly", ship, every=60, args=[Order(1, "a")])
    assert app.schedules["nightly"].args_json == \
        '[{"id":1,"customer":"a","lines":[],"gift":null}]'


def test_plain_handlers_have_no_typed_arguments(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("plain", queue="q")
    def plain(a: int, b: dict[str, int], *rest: Line, **more: Line) -> None: ...

    assert plain.typed is None


def test_import_rota_and_dataclass_arguments_work_without_pydantic() -> None:
    code = (
        "import sys; sys.modules['pydantic'] = None\n"
        "from dataclasses import dataclass\n"
        "import rota\n"
        "@dataclass\nclass P:\n    x: int\n"
        "app = rota.App('memory://')\n"
        "@app.job('j')\ndef j(p: P) -> None: pass\n"
        "job = app.get_job(j.enqueue({'x': 1}))\n"
        "assert job.args == ({'x': 1},), job.args\n"
        "assert 'pydantic' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "app.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_an_instance_holding_dicts_in_its_typed_fields_is_built_and_left_unchanged(
        make_app: MakeApp) -> None:
    # Given an Order instance whose lines were given as dicts (a dataclass never checks)
    app = app_with_group(make_app)
    seen: list[Order] = []

    @app.job("ship", queue="q")
    def ship(order: Order) -> None:
        seen.append(order)

    loose = Order(3, "cy", lines=[{"sku": "a"}])  # type: ignore[list-item]
    # When it is enqueued, it is stored as the Lines' JSON, and the caller's object is kept
    ship.enqueue(loose)
    assert loose.lines == [{"sku": "a"}]
    with pytest.raises(TypeError, match=r"argument 'order.lines\[0\]': Line is missing"):
        ship.enqueue(Order(4, "cy", lines=[{"quantity": 1}]))  # type: ignore[list-item]
    # And the handler gets Lines
    app.run_until_idle()
    assert seen == [Order(3, "cy", [Line("a")])]


def test_a_dataclass_that_holds_itself_converts_at_every_depth(make_app: MakeApp) -> None:
    app = app_with_group(make_app)
    seen: list[Node] = []

    @app.job("walk", queue="q")
    def walk(tree: Node) -> None:
        seen.append(tree)

    walk.enqueue({"name": "root", "children": [{"name": "a", "children": [{"name": "b"}]}]})
    app.run_until_idle()
    assert seen == [Node("root", [Node("a", [Node("b")])])]
    assert isinstance(seen[0].children[0].children[0], Node)
