"""Typed arguments with pydantic models (the `rota[pydantic]` extra): an instance or a dict
at enqueue, validated by the model there (its ValidationError, a ValueError naming the
argument; nothing stored), stored as `model_dump(mode="json")`, given to the handler as
a model instance. Skipped, with the reason, without pydantic."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

import rota
from rota import Strict, WorkerGroupOptions

pydantic = pytest.importorskip(
    "pydantic", reason="pydantic is not installed: pip install 'rota[pydantic]'")

MakeApp = Callable[[], rota.App]


class Item(pydantic.BaseModel):
    sku: str
    quantity: int = pydantic.Field(default=1, gt=0)


class Invoice(pydantic.BaseModel):
    number: int
    issued_at: datetime
    items: list[Item] = pydantic.Field(default_factory=list)


def test_a_model_argument_is_validated_stored_as_json_and_given_back_as_a_model(
        make_app: MakeApp) -> None:
    # Given a job taking a model with a datetime and nested models
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(name="g", policy=Strict("q")))
    seen: list[Invoice] = []

    @app.job("bill", queue="q")
    def bill(invoice: Invoice, extra: list[Item] | None = None) -> None:
        seen.append(invoice)
        assert extra is None or all(isinstance(item, Item) for item in extra)

    issued = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    # When enqueued with an instance and with a dict (the model coerces "3" to 3)
    first = bill.enqueue(Invoice(number=1, issued_at=issued, items=[Item(sku="a")]))
    bill.enqueue({"number": "3", "issued_at": "2026-03-01T09:30:00Z"},
                 extra=[{"sku": "x", "quantity": 2}])
    # Then the store holds the model's JSON form (a datetime as ISO text)
    job = app.get_job(first)
    assert job is not None and job.args == ({
        "number": 1, "issued_at": "2026-03-01T09:30:00Z",
        "items": [{"sku": "a", "quantity": 1}]},)
    # And the handler receives models, datetimes parsed back
    assert app.run_until_idle() == 2
    assert seen == [Invoice(number=1, issued_at=issued, items=[Item(sku="a")]),
                    Invoice(number=3, issued_at=issued)]
    assert seen[1].issued_at == issued


def test_the_model_validation_refuses_with_a_value_error_and_stores_nothing(
        make_app: MakeApp) -> None:
    app = make_app()

    @app.job("bill", queue="q")
    def bill(invoice: Invoice) -> None: ...

    with pytest.raises(ValueError, match=r"(?s)job 'bill': argument 'invoice' is not a valid "
                                         r"Invoice: .*issued_at"):
        bill.enqueue({"number": 1})
    with pytest.raises(ValueError, match=r"(?s)not a valid Invoice.*items\.0\.quantity"):
        bill.enqueue({"number": 1, "issued_at": "2026-01-01T00:00:00Z",
                      "items": [{"sku": "a", "quantity": 0}]})
    with pytest.raises(TypeError, match=r"argument 'invoice' must be an instance of Invoice"):
        bill.enqueue("INV-1")
    assert sum(app.store.count_jobs().values()) == 0
