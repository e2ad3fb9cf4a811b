"""ORM expressions spelt exactly like the durable tables' expression indexes.

Postgres only uses an expression index when a query repeats the indexed expression, and
SQLite only when the very same expression tree appears. Django's own JSON lookups do
neither (``KT("value__status")`` binds the key as a parameter on SQLite and renders
``json_extract(value, '$."status"')``; ``Cast(..., BigIntegerField())`` casts to bigint,
not float8), so the board builds its filters and sorts from these, which render:

=====================  =======================================  =====================================
expression             PostgreSQL                               SQLite
=====================  =======================================  =====================================
``JsonText("status")`` ``(value->>'status')``                    ``json_extract(value, '$.status')``
``RunStarted()``       ``((value->>'startedAt')::float8)``       ``json_extract(value, '$.startedAt')``
``JsonNumber("x")``    ``CASE WHEN jsonb_typeof(...) ...``       ``json_extract(value, '$.x')``
``JsonCast("x", "int")`` ``((value->>'x')::int)``              ``json_extract(value, '$.x')``
``Published()``        ``((value->>'publishedAt')::numeric)``    ``json_extract(value, '$.publishedAt')``
``RowKey()``           ``id COLLATE "C"``                        ``id``
=====================  =======================================  =====================================

Keys are fixed identifiers from this code base (checked against a pattern), never user
input, which is what allows writing them into the SQL as literals.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models
from django.db.models import F, Func, Lookup

from oqronkit import RECORD_KINDS

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What as_sql returns: the SQL and its parameters, a tuple as Django 6's own expressions give.
Sql = tuple[str, tuple[Any, ...]]


def _path(keys: tuple[str, ...]) -> tuple[str, ...]:
    if not keys or not all(_KEY.match(k) for k in keys):
        raise ValueError(f"JSON keys must be identifiers, got {keys!r}")
    return keys


class _ValueExpression(Func):
    """A function of the row's ``value`` column, rendered per database vendor."""

    def __init__(self, *keys: str, output_field: models.Field | None = None) -> None:
        self.keys = _path(keys)
        super().__init__(F("value"), output_field=output_field or self.default_output_field())

    def default_output_field(self) -> models.Field:
        return models.TextField()

    def pg_template(self) -> str:
        raise NotImplementedError

    def sqlite_template(self) -> str:
        return "json_extract(%(expressions)s, '$." + ".".join(self.keys) + "')"

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Sql:
        return self.as_sql(compiler, connection, template=self.pg_template(), **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Sql:
        return self.as_sql(compiler, connection, template=self.sqlite_template(), **extra)


def _pg_text(keys: tuple[str, ...]) -> str:
    """``value->'a'->>'b'``: the text of a (nested) key."""
    inner = "".join(f"->'{k}'" for k in keys[:-1])
    return f"%(expressions)s{inner}->>'{keys[-1]}'"


class JsonText(_ValueExpression):
    """``value->>'key'`` (nested keys: ``JsonText("error", "message")``)."""

    def pg_template(self) -> str:
        return f"({_pg_text(self.keys)})"


class RunStarted(_ValueExpression):
    """A run's ``startedAt`` as oqron_runs indexes it: cast unguarded, because the
    engine's index already refuses a non-numeric startedAt on that table."""

    def __init__(self) -> None:
        super().__init__("startedAt")

    def default_output_field(self) -> models.Field:
        return models.BigIntegerField()

    def pg_template(self) -> str:
        return "((%(expressions)s->>'startedAt')::float8)"


class JsonNumber(_ValueExpression):
    """A top-level numeric key of a job record (``createdAt``, ``diedAt``), cast only
    when it is a JSON number: oqron_jobs rows are not validated like runs."""

    def __init__(self, key: str) -> None:
        super().__init__(key)

    def default_output_field(self) -> models.Field:
        return models.BigIntegerField()

    def pg_template(self) -> str:
        key = self.keys[0]
        return (
            f"(CASE WHEN jsonb_typeof(%(expressions)s->'{key}') = 'number' "
            f"THEN (%(expressions)s->>'{key}')::numeric END)"
        )


class JsonInteger(JsonNumber):
    """A top-level key as an integer, guarded like :class:`JsonNumber`: the outer side
    of a comparison with :class:`JsonCast` ``int`` (Postgres compares int with int in
    the index; SQLite's plain ``json_extract`` keeps the index, where a ``CAST`` would
    give the comparison an affinity that hides it)."""

    def default_output_field(self) -> models.Field:
        return models.IntegerField()

    def pg_template(self) -> str:
        key = self.keys[0]
        return (
            f"(CASE WHEN jsonb_typeof(%(expressions)s->'{key}') = 'number' "
            f"THEN (%(expressions)s->>'{key}')::numeric::int END)"
        )


class JsonCast(_ValueExpression):
    """``((value->>'key')::<type>)`` unguarded, as a message row's log index spells it
    (``partition`` as int, ``offset`` as bigint): the engine writes those keys as
    numbers on every message row, and the partial index holds message rows only."""

    TYPES = {"int": models.IntegerField, "bigint": models.BigIntegerField}

    def __init__(self, key: str, sql_type: str) -> None:
        if sql_type not in self.TYPES:
            raise ValueError(f"unsupported cast {sql_type!r}")
        self.sql_type = sql_type
        super().__init__(key, output_field=self.TYPES[sql_type]())

    def pg_template(self) -> str:
        return f"((%(expressions)s->>'{self.keys[0]}')::{self.sql_type})"


class Published(_ValueExpression):
    """A retained message's ``publishedAt`` as the spec's dashboard query orders it:
    ``(value->>'publishedAt')::numeric`` (the engine refuses a message row whose
    publishedAt is not a number, so the cast is unguarded)."""

    def __init__(self) -> None:
        super().__init__("publishedAt")

    def default_output_field(self) -> models.Field:
        return models.BigIntegerField()

    def pg_template(self) -> str:
        return "((%(expressions)s->>'publishedAt')::numeric)"


class RowKey(Func):
    """The ``id`` column as the indexes' tie-breaker: byte order (``COLLATE "C"``) on
    Postgres, SQLite's default binary order."""

    output_field = models.TextField()

    def __init__(self) -> None:
        super().__init__(F("id"))

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Sql:
        return self.as_sql(compiler, connection, template='(%(expressions)s COLLATE "C")', **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Sql:
        return self.as_sql(compiler, connection, template="%(expressions)s", **extra)


class KindIs(Lookup):
    """``record_kind = '<kind>'`` with the kind as a literal: SQLite only uses a partial
    index (``WHERE record_kind = 'dlq'``) when the query spells the same literal. A
    lookup, not a boolean function, so Django adds no ``= 1`` / ``= true`` around it."""

    lookup_name = "kind_is_literal"

    def __init__(self, kind: str) -> None:
        if kind not in RECORD_KINDS:
            raise ValueError(f"unknown record kind {kind!r}")
        self.kind = kind
        super().__init__(F("record_kind"), kind)

    def as_sql(self, compiler: Any, connection: Any) -> Sql:
        lhs_sql, params = self.process_lhs(compiler, connection)
        return f"{lhs_sql} = '{self.kind}'", tuple(params)


class RowBefore(Func):
    """``(key, id) < (%s, %s)``: the keyset condition of a newest-first page, one row
    comparison so the index range starts right at the cursor."""

    output_field = models.BooleanField()
    conditional = True
    operator = "<"

    def __init__(self, key: Any, row: Any, after_key: Any, after_id: Any) -> None:
        super().__init__(key, row, models.Value(after_key), models.Value(after_id))

    def as_sql(self, compiler: Any, connection: Any, function: str | None = None, template: str | None = None,
               arg_joiner: str | None = None, **extra_context: Any) -> Sql:
        parts: list[str] = []
        params: list[Any] = []
        for expression in self.get_source_expressions():
            sql, expression_params = compiler.compile(expression)
            parts.append(sql)
            params.extend(expression_params)
        return f"({parts[0]}, {parts[1]}) {self.operator} ({parts[2]}, {parts[3]})", tuple(params)


class RowFrom(RowBefore):
    """``(column, key) >= (%s, %s)``: a range that starts at ``(value, key)``. With an
    equality on ``column`` instead, a partial index whose predicate is that equality
    (``oqron_runs_run_started_f8_idx``: ``WHERE namespace = 'runs'``) loses it from its
    index conditions (Postgres drops what the predicate implies), and the range on
    ``key``, behind ``column`` in the index, no longer bounds the scan: it read the
    whole index."""

    operator = ">="
