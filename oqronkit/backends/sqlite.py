"""Durable store on one SQLite file, shared by every thread and process of one machine.

Concurrency model (:mod:`.sqlite_conn`): WAL journal (readers and the single writer
never block each other), a busy timeout (a writer waits for the lock instead of
failing), one connection per thread (shared with the hot plane on the same file), and
every write as an explicit ``BEGIN IMMEDIATE`` transaction so the write lock is taken
before the first read: a deferred transaction that reads and then writes can fail with
"database is locked" however long the timeout, when another process committed in
between. All SQL lives in ``sql/sqlite/*.sql``.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..codec import decode_value
from ..errors import ConfigurationError, DuplicateRecord, InvalidNamespace
from ..namespaces import TABLE_NAMES
from .fields import FieldsOfWholeRows
from .matching import fields_match
from .sqlfiles import load_queries, load_sql
from .sqlite_conn import BUSY_TIMEOUT_S, SQLiteConnections
from .types import EncodedRow, ListQuery, LogAppend, Scope, StoredRecord, _Absent

_SCHEMA = load_sql("oqronkit.backends", "sql/sqlite/schema.sql")
_QUERIES = load_queries("oqronkit.backends", "sql/sqlite/queries.sql")
# The only identifiers ever put into SQL text: the three fixed table names, each
# substituted for the {table} placeholder once, here. Values are always `?` parameters.
_BY_TABLE: dict[str, dict[str, str]] = {
    key: {name: sql.replace("{table}", table) for name, sql in _QUERIES.items()}
    for key, table in TABLE_NAMES.items()
}
# (order, descending) -> (keyset fragment, ORDER BY fragment) in queries.sql.
_ORDERING = {
    ("started", False): ("after_started_asc", "order_started_asc"),
    ("started", True): ("after_started_desc", "order_started_desc"),
    ("inserted", False): ("after_inserted_asc", "order_inserted_asc"),
    ("inserted", True): ("after_inserted_desc", "order_inserted_desc"),
}


class SQLiteDurableStore(FieldsOfWholeRows):
    """The spec's three tables in one SQLite file (the default, zero-setup mode).

    Safe to share between threads (each gets its own connection) and between processes
    opening the same file. Connections open lazily, so a bad path surfaces as
    :class:`~oqronkit.errors.BackendUnavailable` on first use (``DurablePlane.start``).
    """

    name = "sqlite"
    supports_sql = True
    transaction_domain: str | None = None
    signal_domain: str | None = None

    def __init__(self, path: str, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        if path in ("", ":memory:"):
            # Each thread's connection would get its own private database.
            raise ConfigurationError(
                f"The SQLite durable store needs a file path, got {path!r}; use mode 'memory' "
                "for an in-process store."
            )
        self.path = path
        self._conns = SQLiteConnections(path, busy_timeout=busy_timeout, role="durable store")
        self.joins_database: str | None = self._conns.database_url

    # -- lifecycle -------------------------------------------------------------------

    def ensure_schema(self) -> None:
        self._conns.script("ensure_schema", _SCHEMA)  # one BEGIN IMMEDIATE ... COMMIT script

    def has_table(self, table: str) -> bool:
        with self._conns.guard("has_table") as conn:
            return conn.execute(_QUERIES["has_table"], (table,)).fetchone() is not None

    def close(self) -> None:
        self._conns.close()

    # -- writes ----------------------------------------------------------------------

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        with self._conns.write("put_many") as conn:
            _upsert(conn, scope, rows)

    def apply(
        self, scope: Scope, puts: Sequence[EncodedRow], deletes: Sequence[tuple[str, str, str]]
    ) -> None:
        # Puts first, then deletes (as memory does), all in one write transaction.
        with self._conns.write("apply") as conn:
            _upsert(conn, scope, puts)
            for table, namespace, id in deletes:
                conn.execute(_sql(table, "delete_one"), (scope.project, scope.environment, namespace, id))

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        inserted: set[tuple[str, str]] = set()
        with self._conns.write("insert_many") as conn:
            for row in rows:
                # RETURNING yields a row only when the insert happened (not on conflict).
                if conn.execute(_sql(row.table, "insert_if_free"), _row_params(scope, row)).fetchall():
                    inserted.add((row.namespace, row.id))
        return inserted

    def insert_guarded(self, scope: Scope, guard: EncodedRow, rows: Sequence[EncodedRow]) -> bool:
        with self._conns.write("insert_guarded") as conn:
            if not conn.execute(_sql(guard.table, "insert_if_free"), _row_params(scope, guard)).fetchall():
                return False
            _upsert(conn, scope, rows)
            return True

    def insert_new(self, scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
        rows = list(rows)  # before taking the write lock: building them is the caller's work
        query = _sql(table, "insert_new")
        with self._conns.write("insert_new") as conn:
            try:
                conn.executemany(query, [_row_params(scope, row) for row in rows])
            except sqlite3.IntegrityError as exc:  # write() rolls the whole batch back
                raise DuplicateRecord(f"A new record's key already exists; nothing of the batch was written: "
                                      f"{exc}") from exc

    def append_log(self, scope: Scope, append: LogAppend) -> dict[str, int]:
        keys = (scope.project, scope.environment)
        # The write transaction serialises appends: offsets commit in order.
        with self._conns.write("append_log") as conn:
            found = conn.execute(_sql(append.counter_table, "get_value"),
                                 (*keys, append.counter_namespace, append.counter_id)).fetchone()
            first: int = decode_value(found[0])["next"] if found is not None else 0
            lookup = list(dict.fromkeys(append.ids if append.maybe_present is None else append.maybe_present))
            rows = conn.execute(_sql(append.table, "get_many"),
                                (*keys, append.namespace, json.dumps(lookup))).fetchall() if lookup else []
            offsets: dict[str, int] = {row[1]: decode_value(row[3])["offset"] for row in rows}
            new = [id for id in dict.fromkeys(append.ids) if id not in offsets]
            if new:
                _upsert(conn, scope, [*append.build(new, first), append.counter(first + len(new))])
            offsets.update((id, first + i) for i, id in enumerate(new))
            return offsets

    def read_log(self, scope: Scope, table: str, namespace: str, partition: int, after: int,
                 limit: int) -> builtins.list[StoredRecord]:
        params = (scope.project, scope.environment, namespace, partition, after, limit)
        with self._conns.guard("read_log") as conn:
            return [_record(row) for row in conn.execute(_sql(table, "read_log"), params).fetchall()]

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        params = (scope.project, scope.environment, namespace, json.dumps(list(ids)))
        with self._conns.write("delete_many") as conn:
            return conn.execute(_sql(table, "delete_many"), params).rowcount

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        key = (scope.project, scope.environment, namespace, id)
        with self._conns.write("compare_and_set") as conn:
            # The write lock is already held, so nobody can change the row between this
            # read and our write; the comparison itself is the shared Python one, so
            # its semantics are exactly the memory backend's.
            found = conn.execute(_sql(table, "get_value"), key).fetchone()
            if isinstance(expect, _Absent):
                if found is not None:
                    return False
            elif found is None or not fields_match(decode_value(found[0]), expect):
                return False
            if row is None:
                conn.execute(_sql(table, "delete_one"), key)
            else:
                conn.execute(_sql(table, "upsert"), _row_params(scope, row))
            return True

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        params = (scope.project, scope.environment, now_ms)
        with self._conns.write("prune_expired") as conn:
            return conn.execute(_sql(table, "prune_expired"), params).rowcount

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        where = (scope.project, scope.environment, namespace)
        with self._conns.write("prune_older_than") as conn:
            return conn.execute(_sql(table, "prune_older_than"), (*where, *where, cutoff_ms, limit)).rowcount

    # -- reads -----------------------------------------------------------------------

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        params = (scope.project, scope.environment, namespace, json.dumps(list(ids)))
        with self._conns.guard("get_many") as conn:
            return [_record(row) for row in conn.execute(_sql(table, "get_many"), params).fetchall()]

    def scan_statuses(
        self, scope: Scope, table: str, namespace: str, statuses: Sequence[str], cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, str]], str | None]:
        params = (scope.project, scope.environment, namespace, cursor or "", json.dumps(list(statuses)), limit)
        with self._conns.guard("scan_statuses") as conn:
            rows = conn.execute(_sql(table, "scan_statuses"), params).fetchall()
        # The cursor is the last id walked past, matching or not (see queries.sql).
        found = [(id, status) for id, status, matches in rows if matches]
        return found, (rows[-1][0] if len(rows) == limit else None)

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        sql, params = list_statement(scope, query)
        with self._conns.guard("list") as conn:
            return [_record(row) for row in conn.execute(sql, params).fetchall()]

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        queries = _table_queries(table)
        parts, params = [queries["count_select"]], [scope.project, scope.environment]
        for fragment, wanted in (("and_namespace", namespace), ("and_kind", kind)):
            if wanted is not None:
                parts.append(queries[fragment])
                params.append(wanted)
        with self._conns.guard("count") as conn:
            return int(conn.execute("\n".join(parts), params).fetchone()[0])

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        params = (scope.project, scope.environment, kind)
        with self._conns.guard("count_by_namespace") as conn:
            return dict(conn.execute(_sql(table, "count_by_namespace"), params).fetchall())

    # -- connections -----------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (shared with the hot plane on the same file)."""
        return self._conns.connection()

    @property
    def _connections(self) -> builtins.list[tuple[threading.Thread, sqlite3.Connection]]:
        """Every open connection to the file, with the thread it belongs to."""
        return self._conns.file.connections

    @property
    def _pid(self) -> int:
        """The process the connections belong to; any other pid resets them on next use."""
        return self._conns.file.pid

    @_pid.setter
    def _pid(self, pid: int) -> None:
        self._conns.file.pid = pid


def list_statement(scope: Scope, query: ListQuery) -> tuple[str, list[Any]]:
    """The SELECT for ``query`` and its parameters, composed only of fixed fragments of
    ``queries.sql``: the same filter, order and keyset as ``matching.matches_query``."""
    queries = _table_queries(query.table)
    parts, params = [queries["list_select"]], [scope.project, scope.environment]

    def add(fragment: str, *values: Any) -> None:
        parts.append(queries[fragment])
        params.extend(values)

    run_fields = {"and_status": query.status, "and_name": query.name, "and_module": query.module,
                  "and_correlation": query.correlation}
    # On oqron_runs a run-field filter should seek its own index (see and_namespace_unindexed).
    seek = query.table == "runs" and any(wanted is not None for wanted in run_fields.values())
    if query.namespace is not None:
        add("and_namespace_unindexed" if seek else "and_namespace", query.namespace)
    if query.kind is not None:
        add("and_kind_unindexed" if seek else "and_kind", query.kind)
    for fragment, wanted in run_fields.items():
        if wanted is not None:
            add(fragment, wanted)
    if query.order == "started" or query.started_from is not None or query.started_to is not None:
        add("and_has_started")
    if query.started_from is not None:
        add("and_started_from", query.started_from)
    if query.started_to is not None:
        add("and_started_to", query.started_to)
    after_fragment, order_fragment = _ORDERING[(query.order, query.descending)]
    if query.after is not None:
        key, id = query.after
        add(after_fragment, key, key, id)  # a scalar bound, then the row value
    add(order_fragment)
    add("limit", query.limit)
    return "\n".join(parts), params


def _table_queries(table: str) -> dict[str, str]:
    """The queries rendered for ``table``, which must be one of the whitelisted keys."""
    try:
        return _BY_TABLE[table]
    except KeyError:
        raise InvalidNamespace(
            f"Unknown durable table {table!r}; expected one of {', '.join(TABLE_NAMES)}."
        ) from None


def _sql(table: str, name: str) -> str:
    return _table_queries(table)[name]


def _upsert(conn: sqlite3.Connection, scope: Scope, rows: Sequence[EncodedRow]) -> None:
    """Upsert ``rows`` with one executemany per table (inside the caller's transaction)."""
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(row.table, []).append(_row_params(scope, row))
    for table, params in groups.items():
        conn.executemany(_sql(table, "upsert"), params)


def _row_params(scope: Scope, row: EncodedRow) -> tuple[Any, ...]:
    return (
        scope.project, scope.environment, row.namespace, row.kind, row.id,
        row.value_json, row.inserted_at, row.expires_at,
    )


def _record(row: tuple[Any, ...]) -> StoredRecord:
    namespace, id, kind, text, inserted_at, expires_at = row
    return StoredRecord(namespace, id, kind, decode_value(text), inserted_at, expires_at)
