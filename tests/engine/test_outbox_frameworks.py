"""Staging from the places Python apps hold a transaction: SQLAlchemy 2 (its session's DBAPI
connection) and Django (inside ``transaction.atomic()``). Each runs only when the framework is
importable (both are in the ``test`` extra, neither in the core dependencies); the README shows
the same code."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import conninfo as ci

from engine.api import Engine
from engine.drivers.postgres import PostgresDriver
from engine.jobs import job


@job(name="ship_order", queue="orders", idempotency_key=lambda inp: f"order:{inp['order']}")
async def ship_order(ctx: Any, inp: Any) -> None:
    return None


def _count(dsn: str, sql: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0


def test_stage_inside_a_sqlalchemy_session_commits_and_rolls_back_with_it(pg_dsn: str) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    parts = ci.conninfo_to_dict(pg_dsn)
    url = sqlalchemy.engine.URL.create(
        "postgresql+psycopg", username=parts.get("user"), database=parts.get("dbname"), query={"host": parts["host"]}
    )
    sa = sqlalchemy.create_engine(url)
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with Session(sa) as session, session.begin():
            session.execute(sqlalchemy.text("create table app_order (id int primary key)"))
        with Session(sa) as session, session.begin():
            session.execute(sqlalchemy.text("insert into app_order values (1)"))
            conn = session.connection().connection.driver_connection  # the session's psycopg Connection
            eng.stage(conn, ship_order, {"order": 1})
        with pytest.raises(RuntimeError), Session(sa) as session, session.begin():
            session.execute(sqlalchemy.text("insert into app_order values (2)"))
            eng.stage(session.connection().connection.driver_connection, ship_order, {"order": 2})
            raise RuntimeError("the order fails")
        assert _count(pg_dsn, "select count(*) from app_order") == 1
        assert _count(pg_dsn, "select count(*) from jobs.outbox where idempotency_key = 'order:1'") == 1
        assert _count(pg_dsn, "select count(*) from jobs.outbox") == 1
    finally:
        eng.close()
        sa.dispose()


def test_stage_inside_django_transaction_atomic_commits_and_rolls_back_with_it(pg_dsn: str) -> None:
    pytest.importorskip("django")
    import django
    from django.conf import settings

    parts = ci.conninfo_to_dict(pg_dsn)
    if not settings.configured:
        settings.configure(
            DATABASES={
                "default": {
                    "ENGINE": "django.db.backends.postgresql",
                    "NAME": parts["dbname"],
                    "USER": parts.get("user"),
                    "HOST": parts["host"],
                }
            },
            USE_TZ=True,
        )
        django.setup()
    from django.db import connection, transaction

    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("create table app_order (id int primary key)")
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("insert into app_order values (1)")
            eng.stage(connection.connection, ship_order, {"order": 1})  # Django's psycopg connection
        with pytest.raises(RuntimeError), transaction.atomic():
            eng.stage(connection.connection, ship_order, {"order": 2})
            raise RuntimeError("the order fails")
        assert _count(pg_dsn, "select count(*) from jobs.outbox") == 1
        assert _count(pg_dsn, "select count(*) from jobs.outbox where idempotency_key = 'order:1'") == 1
    finally:
        connection.close()
        eng.close()
