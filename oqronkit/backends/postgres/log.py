"""Appending to and reading a partitioned log (a topic's retained messages) on PostgreSQL.

An append locks the partition's counter row (``SELECT ... FOR UPDATE``) and inserts
its messages in the same transaction: two appends to one partition commit one after
the other, so a reader never sees offset n+1 before offset n, and offsets, taken from
the counter, are never reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg

from ..sqlfiles import load_queries
from ..types import EncodedRow, LogAppend, Scope, StoredRecord
from .arrays import TextArray
from .broadcast import broadcast_channel
from .statements import row_columns, statement

_NOTIFY = load_queries("oqronkit.backends.postgres", "sql/broadcast.sql")["broadcast"]


def append_log(conn: psycopg.Connection[Any], scope: Scope, append: LogAppend) -> dict[str, int]:
    keys = {"project": scope.project, "environment": scope.environment}
    counter_key = {**keys, "namespace": append.counter_namespace, "id": append.counter_id}
    lookup = list(dict.fromkeys(append.ids if append.maybe_present is None else append.maybe_present))
    # Fresh ids are not looked up: besides a statement, that spares the planner a lookup
    # it misjudges on a table never analysed (a walk of the project's run rows).
    existing = {**keys, "namespace": append.namespace, "ids": TextArray(lookup)}
    # Pipelined: BEGIN, the counter's lock and the ids already appended go in one round
    # trip; then the messages, the counter and COMMIT.
    with conn.transaction():
        with conn.pipeline():
            locked = conn.execute(statement("lock_row", append.counter_table), counter_key)
            found = conn.execute(statement("get_many", append.table), existing) if lookup else None
            row = locked.fetchone()
            if row is None:  # the partition's first append: create its counter, then look again
                conn.execute(statement("insert_rows", append.counter_table), row_columns(scope, [append.counter(0)]))
                row = conn.execute(statement("lock_row", append.counter_table), counter_key).fetchone()
                found = conn.execute(statement("get_many", append.table), existing) if lookup else None
                assert row is not None  # inserted just now, or by a racing append we then waited for
            counter: int = row[0]["next"]
            offsets = {id: value["offset"] for _, id, _, value, _, _ in (found.fetchall() if found else [])}
        new = [id for id in dict.fromkeys(append.ids) if id not in offsets]
        if new:
            rows = append.build(new, counter)
            if lookup:  # ids from idempotency keys: another partition's append may race for one
                conn.execute(statement("insert_rows", append.table), row_columns(scope, list(rows)))
            else:  # fresh ids: COPY, ~5 us of server CPU a row less than INSERT .. ON CONFLICT
                _copy(conn, scope, append.table, rows)
            with conn.pipeline():  # the counter and the wake in one round trip, before COMMIT
                conn.execute(statement("upsert_rows", append.counter_table),
                             row_columns(scope, [append.counter(counter + len(new))]))
                if append.notify is not None:  # sent by the server when this commits
                    conn.execute(_NOTIFY, {"channel": broadcast_channel(scope, append.notify), "message": ""})
        offsets.update((id, counter + i) for i, id in enumerate(new))
    return offsets


def _copy(conn: psycopg.Connection[Any], scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
    # ``rows`` is lazy: psycopg sends each 32 KiB as it fills, so the server parses while we encode.
    with conn.cursor().copy(statement("copy_rows", table)) as copy:
        for row in rows:
            copy.write_row((scope.project, scope.environment, row.namespace, row.kind, row.id, row.value_json,
                            row.inserted_at, row.expires_at))


def read_log(conn: psycopg.Connection[Any], scope: Scope, table: str, namespace: str, partition: int, after: int,
             limit: int) -> list[StoredRecord]:
    rows = conn.execute(statement("read_log", table), {
        "project": scope.project, "environment": scope.environment, "namespace": namespace,
        "partition": partition, "after": after, "limit": limit}).fetchall()
    return [StoredRecord(*r) for r in rows]
