"""PostgreSQL durable store: the spec's three jsonb tables behind a psycopg pool.

Batches travel as parallel arrays unnested server-side (one statement per table per
chunk), list queries spell the indexed expressions exactly, and every driver error is
wrapped at this boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ...errors import DuplicateRecord
from ...namespaces import TABLE_NAMES
from ..db_health import DatabaseHealth
from ..hot_types import Signal
from ..matching import fields_match
from ..types import EncodedRow, ListQuery, LogAppend, Scope, StoredRecord, _Absent
from . import log
from .arrays import BigintArray, TextArray
from .claim_read import PostgresClaimReads
from .heads import FloorRaiser
from .health import read_health
from .pipeline import pipelined as _pipelined
from .pool import LazyPool
from .search import ensure_search_index
from .statements import (
    QUERIES,
    RETIRED_OBJECTS,
    SCHEMA,
    SCHEMA_OBJECTS,
    SCHEMA_STATISTICS,
    composed,
    count_plan,
    joined_params,
    joined_statement,
    kind_statement,
    list_plan,
    release_statement,
    row_columns,
    statement,
)
from .upkeep import HorizonWatch, table_upkeep

#: Rows per statement in put_many / insert_many: big enough that round trips vanish
#: in the cost, small enough to keep each statement's parameters a few megabytes.
CHUNK_ROWS = 5000
#: Most statements one apply joins into one (statements.joined_statement); more go
#: as a pipeline in one transaction.
MAX_JOINED_PARTS = 8


class PostgresDurableStore(PostgresClaimReads):
    """Durable store on PostgreSQL (``postgres`` and ``redis-postgres`` modes).

    The pool opens on first use, so building a store never touches the network;
    ``connect_timeout`` bounds how long that first use (and any wait for a free
    connection) may take before :class:`~oqronkit.errors.BackendUnavailable`.
    """

    name = "postgres"
    supports_sql = True

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, connect_timeout: float = 10.0) -> None:
        # Autocommit: a single statement is atomic on its own and needs no BEGIN/COMMIT
        # round trips (a claim's read, an add's insert); several run in a transaction.
        # One database: a hot plane on the same URL settles jobs in our transactions.
        self.transaction_domain: str | None = url
        self.joins_database: str | None = url
        self.signal_domain: str | None = url
        self._pool = LazyPool(url, "oqronkit-durable", label="store", min_size=min_size, max_size=max_size,
                              timeout=connect_timeout, autocommit=True)
        self._horizon = HorizonWatch()
        self._floors = FloorRaiser(self._pool)  # claim_and_read raises queues' floors as the hot plane's claim does
        self.text_search_indexed = False  # the dead letters' trigram index exists (ensure_schema says)

    # -- lifecycle -------------------------------------------------------------------

    def ensure_schema(self) -> None:
        with self._pool.connection() as conn:
            drift = conn.execute(QUERIES["schema_drift"], {"names": list(SCHEMA_OBJECTS),
                                                           "statistics": list(SCHEMA_STATISTICS),
                                                           "retired": list(RETIRED_OBJECTS)}).fetchall()
            if drift:
                # One transaction; the script's advisory lock serialises processes.
                with conn.transaction():
                    conn.execute(SCHEMA)
            self.text_search_indexed = ensure_search_index(conn)

    def has_table(self, table: str) -> bool:
        with self._pool.connection() as conn:
            return bool(_scalar(conn.execute(QUERIES["has_table"], {"name": table})))

    def close(self) -> None:
        self._pool.close()

    def database_health(self, tables: Sequence[str], warning_s: float) -> DatabaseHealth:
        """The horizon's oldest holder and ``tables``' dead rows and vacuums (health.py)."""
        with self._pool.connection() as conn:
            return read_health(conn, tables, warning_s)

    def after_horizon(self) -> list[str]:
        """VACUUM the three tables once a transaction that held the horizon ended (upkeep.py)."""
        with self._pool.connection() as conn:
            return self._horizon.step(conn, list(TABLE_NAMES.values()))

    def upkeep(self) -> list[str]:
        """ANALYZE / VACUUM the three tables where autovacuum lags (see upkeep.py)."""
        with self._pool.connection() as conn:
            return table_upkeep(conn, list(TABLE_NAMES.values()), after_inserts=True)

    # -- writes ----------------------------------------------------------------------

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        self.apply(scope, rows, ())

    def apply(
        self, scope: Scope, puts: Sequence[EncodedRow], deletes: Sequence[tuple[str, str, str]]
    ) -> None:
        # Puts first, then deletes (as memory does), in the one transaction of the block.
        doomed: dict[tuple[str, str], list[str]] = {}
        for table, namespace, id in deletes:
            doomed.setdefault((table, namespace), []).append(id)
        with self._pool.connection() as conn:
            try:
                _apply(conn, scope, _writes(puts, trust_new=True), doomed)
            except psycopg.errors.UniqueViolation:
                # A row hinted new was there already (a run stored before, by a flush
                # while it ran or a write whose outcome was lost): write the rolled-back
                # batch again, every row an upsert.
                if conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.rollback()
                _apply(conn, scope, _writes(puts, trust_new=False), doomed)

    def apply_and_release(self, scope: Scope, puts: Sequence[EncodedRow], namespace: str, queue: str,
                          leases: Sequence[tuple[str, int]]) -> set[str]:
        """Postgres mode only, where the hot plane's tables are in this database: write
        ``puts``, release the ``leases`` ((job id, token)) of ``queue`` still held under
        their token, and delete the released jobs from ``namespace``, in one statement.
        Returns the ids released; nothing is written when it raises."""
        ids = TextArray([job_id for job_id, _ in leases])
        release = {"release_queue": queue, "release_namespace": namespace, "release_ids": ids,
                   "release_tokens": BigintArray([token for _, token in leases])}
        with self._pool.connection() as conn:
            try:
                return _apply_and_release(conn, scope, _writes(puts, trust_new=True), release)
            except psycopg.errors.UniqueViolation:
                # As in apply: a run hinted new was stored before; every row an upsert.
                if conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.rollback()
                return _apply_and_release(conn, scope, _writes(puts, trust_new=False), release)

    def insert_and_signal(self, scope: Scope, rows: Sequence[EncodedRow], queue: str, signals: Sequence[Signal],
                          now: int) -> None:
        """Postgres mode only: insert ``rows`` (fresh ids: a taken one raises
        DuplicateRecord and nothing is written) and signal ``signals`` of ``queue``, in one
        transaction and one round trip (pipelined); the signal's NOTIFY goes out at the commit."""
        from .hot import QUERIES as HOT_QUERIES  # the hot plane's own statement, as release_statement
        from .hot import signal_params

        parts = [(statement(query, table), row_columns(scope, chunk)) for query, table, chunk
                 in _writes(rows, trust_new=True)]
        parts.append((HOT_QUERIES["signal"].encode(), signal_params(scope, queue, signals, now)))
        try:
            with self._pool.connection() as conn:
                _pipelined(conn, parts)
        except psycopg.errors.UniqueViolation as exc:
            raise DuplicateRecord(f"a new record's id was taken: {exc}") from exc

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        inserted: set[tuple[str, str]] = set()
        with self._pool.connection() as conn, _atomic(conn, _statements(rows) > 1):
            for table, group in _by_table(rows):
                query = statement("insert_rows", table)
                for start in range(0, len(group), CHUNK_ROWS):
                    cursor = conn.execute(query, row_columns(scope, group[start:start + CHUNK_ROWS]))
                    inserted.update((ns, id) for ns, id in cursor.fetchall())
        return inserted

    def insert_guarded(self, scope: Scope, guard: EncodedRow, rows: Sequence[EncodedRow]) -> bool:
        with self._pool.connection() as conn, conn.transaction():
            # ON CONFLICT DO NOTHING: a taken guard returns no row and writes nothing.
            if not conn.execute(statement("insert_rows", guard.table), row_columns(scope, [guard])).fetchall():
                return False
            for query, table, chunk in _writes(rows, trust_new=False):  # not _apply: it may BEGIN/COMMIT itself
                conn.execute(statement(query, table), row_columns(scope, chunk))
            return True

    def insert_new(self, scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
        # COPY skips the per-row conflict arbitration of INSERT ... ON CONFLICT, and rows
        # stream: the server inserts the first ones while the caller builds the rest. A
        # taken key, or an exception from ``rows``, fails the whole COPY (one statement).
        project, environment = scope.project, scope.environment
        with self._pool.connection() as conn:
            try:
                with conn.cursor().copy(statement("copy_rows", table)) as copy:
                    for row in rows:
                        copy.write_row((project, environment, row.namespace, row.kind, row.id,
                                        row.value_json, row.inserted_at, row.expires_at))
            except psycopg.errors.UniqueViolation as exc:
                raise DuplicateRecord(f"A new record's key already exists; nothing of the batch was "
                                      f"written: {exc.diag.message_detail or exc}") from exc

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        params = _keys(scope, namespace, ids=TextArray(sorted(set(ids))))
        with self._pool.connection() as conn:
            return conn.execute(statement("delete_many", table), params).rowcount

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        key = _keys(scope, namespace, id=id)
        with self._pool.connection() as conn:
            if isinstance(expect, _Absent):
                if row is None:  # "delete if absent" changes nothing; it only checks
                    return not _scalar(conn.execute(statement("row_exists", table), key))
                # ON CONFLICT DO NOTHING makes "insert if absent" race-free.
                cursor = conn.execute(statement("insert_rows", table), row_columns(scope, [row]))
                return bool(cursor.fetchall())
            # FOR UPDATE holds the row until commit, so compare-then-write is atomic;
            # comparing in Python keeps the semantics identical to the memory backend.
            with conn.transaction():
                found = conn.execute(statement("lock_row", table), key).fetchone()
                if found is None or not fields_match(found[0], expect):
                    return False
                if row is None:
                    conn.execute(statement("delete_many", table), {**key, "ids": [id]})
                else:
                    changes = {"value": row.value_json, "kind": row.kind, "expires_at": row.expires_at}
                    conn.execute(statement("update_row", table), {**key, **changes})
                return True

    def append_log(self, scope: Scope, append: LogAppend) -> dict[str, int]:
        with self._pool.connection() as conn:
            return log.append_log(conn, scope, append)

    # -- reads -----------------------------------------------------------------------

    def read_log(self, scope: Scope, table: str, namespace: str, partition: int, after: int,
                 limit: int) -> list[StoredRecord]:
        with self._pool.connection() as conn:
            return log.read_log(conn, scope, table, namespace, partition, after, limit)

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        params = _keys(scope, namespace, ids=TextArray(dict.fromkeys(ids)))
        with self._pool.connection() as conn:
            rows = conn.execute(statement("get_many", table), params).fetchall()
        return [StoredRecord(*r) for r in rows]

    def get_fields(self, scope: Scope, table: str, namespace: str, ids: Sequence[str],
                   fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        params = _keys(scope, namespace, ids=TextArray(dict.fromkeys(ids)), fields=TextArray(fields))
        with self._pool.connection() as conn:
            rows = conn.execute(statement("get_fields", table), params).fetchall()
        return {id: picked or {} for id, picked in rows}

    def scan_statuses(
        self, scope: Scope, table: str, namespace: str, statuses: Sequence[str], cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, str]], str | None]:
        params = _keys(scope, namespace, after=cursor or "", statuses=TextArray(statuses), limit=limit)
        with self._pool.connection() as conn:
            rows = conn.execute(statement("scan_statuses", table), params).fetchall()
        found = [(id, status) for id, status, matches in rows if matches]
        return found, (rows[-1][0] if len(rows) == limit else None)

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        parts, params = list_plan(scope, query)
        with self._pool.connection() as conn:
            rows = conn.execute(composed(query.table, parts), params).fetchall()
        return [StoredRecord(*r) for r in rows]

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        parts, params = count_plan(scope, namespace, kind)
        with self._pool.connection() as conn:
            return int(_scalar(conn.execute(composed(table, parts), params)))

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        params = {"project": scope.project, "environment": scope.environment}
        with self._pool.connection() as conn:
            rows = conn.execute(kind_statement("count_by_namespace", table, kind), params).fetchall()
        return {namespace: int(n) for namespace, n in rows}

    # -- retention -------------------------------------------------------------------

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        params = {"project": scope.project, "environment": scope.environment, "now": now_ms}
        with self._pool.connection() as conn:
            return conn.execute(statement("prune_expired", table), params).rowcount

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        params = _keys(scope, namespace, cutoff=cutoff_ms, limit=limit)
        with self._pool.connection() as conn:
            return conn.execute(statement("prune_older_than", table), params).rowcount


def _writes(rows: Sequence[EncodedRow], *, trust_new: bool) -> list[tuple[str, str, list[EncodedRow]]]:
    """The statements writing ``rows``: (query name, table, chunk of rows); with
    ``trust_new`` the rows hinted new are plain inserts, the others upserts."""
    out = []
    for table, group in _by_table(rows):
        fresh = [r for r in group if r.new] if trust_new else []
        rest = [r for r in group if not r.new] if fresh else group
        for query, part in (("insert_fresh_rows", fresh), ("upsert_rows", rest)):
            out += [(query, table, part[start:start + CHUNK_ROWS]) for start in range(0, len(part), CHUNK_ROWS)]
    return out


def _apply(conn: psycopg.Connection[Any], scope: Scope, writes: list[tuple[str, str, list[EncodedRow]]],
           doomed: dict[tuple[str, str], list[str]]) -> None:
    """Writes first, then deletes (as memory does), in one transaction and round trip:
    one statement when they touch distinct keys, else a pipeline of statements."""
    parts = [(statement(query, table), row_columns(scope, chunk)) for query, table, chunk in writes]
    parts += [(statement("delete_many", table), _keys(scope, namespace, ids=TextArray(sorted(set(ids)))))
              for (table, namespace), ids in sorted(doomed.items())]
    if len(parts) == 1:
        conn.execute(*parts[0])
    elif len(parts) <= MAX_JOINED_PARTS and not _overlap(writes, doomed):
        conn.execute(joined_statement(tuple(q for q, _ in parts)), joined_params([p for _, p in parts]))
    else:
        _pipelined(conn, parts)


def _apply_and_release(conn: psycopg.Connection[Any], scope: Scope, writes: list[tuple[str, str, list[EncodedRow]]],
                       release: dict[str, Any]) -> set[str]:
    parts = [(statement(query, table), row_columns(scope, chunk)) for query, table, chunk in writes]
    params = {**joined_params([p for _, p in parts]), **release}
    params.setdefault("project", scope.project)
    params.setdefault("environment", scope.environment)
    rows = conn.execute(release_statement(tuple(q for q, _ in parts)), params).fetchall()
    return {job_id for (job_id,) in rows}


def _overlap(writes: list[tuple[str, str, list[EncodedRow]]], doomed: dict[tuple[str, str], list[str]]) -> bool:
    """Whether a key is both written and deleted (one statement would see neither)."""
    if not doomed:
        return False
    gone = {(table, namespace, id) for (table, namespace), ids in doomed.items() for id in ids}
    return not gone.isdisjoint({(row.table, row.namespace, row.id) for _, _, chunk in writes for row in chunk})


def _by_table(rows: Sequence[EncodedRow]) -> list[tuple[str, list[EncodedRow]]]:
    """Rows grouped per table, each group in key order: concurrent batches that share
    keys then lock them in the same order and cannot deadlock each other."""
    groups: dict[str, list[EncodedRow]] = {}
    for row in rows:
        groups.setdefault(row.table, []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: (r.namespace, r.id))
    return sorted(groups.items())


def _statements(rows: Sequence[EncodedRow]) -> int:
    """How many statements insert_many runs for ``rows``."""
    per_table: dict[str, int] = {}
    for row in rows:
        per_table[row.table] = per_table.get(row.table, 0) + 1
    return sum(-(-count // CHUNK_ROWS) for count in per_table.values())


def _atomic(conn: psycopg.Connection[Any], needed: bool) -> AbstractContextManager[Any]:
    """A transaction around several statements whose results are read before the next
    is sent (insert_many's RETURNING); one statement is atomic by itself. Writes that
    need no results go through :func:`_apply`, one round trip."""
    return conn.transaction() if needed else nullcontext()


def _keys(scope: Scope, namespace: str, **more: Any) -> dict[str, Any]:
    return {"project": scope.project, "environment": scope.environment, "namespace": namespace, **more}


def _scalar(cursor: psycopg.Cursor[Any]) -> Any:
    found = cursor.fetchone()
    return None if found is None else found[0]
