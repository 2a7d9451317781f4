"""rota.contrib.sqlalchemy: enqueue inside a SQLAlchemy 2 Session's or Connection's
transaction, on both durable stores with a real engine (a SQLite file through the
standard sqlite3 driver; PostgreSQL through psycopg 3, `postgresql+psycopg://`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, Integer, create_engine, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import rota
from rota.contrib.sqlalchemy import dbapi_connection


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)


def engine_url(store_url: str) -> str:
    if store_url.startswith("sqlite:"):
        return store_url
    from rota.store.postgres import parse_url as _parse_url  # psycopg is an optional extra

    return "postgresql+psycopg://" + _parse_url(store_url)[0].split("://", 1)[1]


@pytest.fixture
def app(durable_store_url: str, clock: rota.VirtualClock) -> Iterator[rota.App]:
    opened = rota.App(durable_store_url, clock=clock)
    opened.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    yield opened
    opened.close()


@pytest.fixture
def engine(app: rota.App) -> Iterator[Engine]:
    made = create_engine(engine_url(app.store.url))
    Base.metadata.create_all(made)
    yield made
    made.dispose()


def test_session_commit_makes_the_job_and_rollback_none(app: rota.App, engine: Engine) -> None:
    charged: list[int] = []

    @app.job("charge", queue="q")
    def charge(order: int) -> None:
        charged.append(order)

    # Given an order and its job in one Session transaction
    with Session(engine) as session:
        session.add(Order(id=42))
        session.flush()
        job_id = charge.configure(connection=dbapi_connection(session)).enqueue(42)
        assert app.get_job(job_id) is None  # not before the commit
        session.commit()
    # Then both exist and the job runs
    assert app.run_until_idle() == 1 and charged == [42]
    # And a rolled-back Session leaves neither
    with Session(engine) as session:
        session.add(Order(id=43))
        charge.configure(connection=dbapi_connection(session)).enqueue_many([(43,), (44,)])
        session.rollback()
    with Session(engine) as session:
        assert session.query(Order).count() == 1
    assert app.run_until_idle() == 0 and charged == [42]


def test_enqueue_before_any_statement_joins_the_session_transaction(
    app: rota.App, engine: Engine
) -> None:
    @app.job("charge", queue="q")
    def charge(order: int) -> None: ...

    with Session(engine) as session:
        charge.configure(connection=dbapi_connection(session), key="order-7").enqueue(7)
        session.add(Order(id=7))
        session.rollback()
    assert app.store.count_jobs() == {}
    with Session(engine) as session:
        charge.configure(connection=dbapi_connection(session)).enqueue(7)
        session.commit()
    assert app.run_until_idle() == 1


def test_core_connection_commit_as_you_go_and_engine_begin(
    app: rota.App, engine: Engine
) -> None:
    @app.job("charge", queue="q")
    def charge(order: int) -> None: ...

    with engine.connect() as conn:
        charge.configure(connection=dbapi_connection(conn)).enqueue(1)
        conn.execute(text("INSERT INTO orders (id) VALUES (1)"))
        conn.commit()
        charge.configure(connection=dbapi_connection(conn)).enqueue(2)
        conn.rollback()
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO orders (id) VALUES (3)"))
        charge.configure(connection=dbapi_connection(conn)).enqueue(3)
    jobs = app.store.list_jobs()
    assert [job.args for job in jobs] == [(1,), (3,)]


def test_anything_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Session or a sqlalchemy"):
        dbapi_connection(object())  # type: ignore[arg-type]
