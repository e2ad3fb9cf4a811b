"""The durable plane's facade: one object per (backend, scope) that every module uses.

It stamps ``record_kind`` from the namespace, routes rows to their table, encodes and
size-checks values, times every backend call with a stable action name, and builds
opaque keyset cursors. Backends stay small and hold no logging.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from .backends.protocols import DurableStore, ReleasingStore
from .backends.types import ABSENT, EncodedRow, ListQuery, Order, Scope, StoredRecord, _Absent, sort_key
from .clock import now_ms
from .codec import check_size, encode_value, storage_problem, text_problem
from .config import DEFAULT_MAX_RECORD_BYTES
from .errors import InvalidNamespace, InvalidRecord, LegacyLayoutDetected
from .keyset_cursors import decode_cursor, encode_cursor
from .namespaces import RecordKind, TableKey, classify_namespace, table_for_kind

logger = logging.getLogger(__name__)
LEGACY_TABLE = "oqron_kv"
MAX_PAGE = 1000


class RecordWrite(NamedTuple):
    """One record to write with :meth:`DurablePlane.put_many`. (A named tuple, not a
    frozen dataclass: the worker makes one per run, and a frozen dataclass's
    ``__init__`` costs 0.8 us against 0.2.)"""

    namespace: str
    id: str
    value: Mapping[str, Any]
    expires_at: int | None = None
    # A hint that no row holds this key yet (a run written for the first time): a store
    # may insert it without conflict arbitration. A wrong hint costs a retry, not data.
    new: bool = False
    # The value holds only what JSON holds (codec.dumps_checked): encoded by the fast
    # encoder. The worker's run records; never a value straight from a user.
    checked: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    """A page of records and the cursor of the next page (None on the last)."""

    records: list[StoredRecord]
    next_cursor: str | None


class DurablePlane:
    """Scoped access to a :class:`DurableStore`. Cheap to copy with :meth:`scoped`."""

    def __init__(self, store: DurableStore, *, project: str, environment: str,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        self.store = store
        self.scope = Scope(project, environment)
        self.max_record_bytes = max_record_bytes

    def scoped(self, *, project: str, environment: str) -> DurablePlane:
        """The same store seen from another (project, environment)."""
        return DurablePlane(
            self.store, project=project, environment=environment,
            max_record_bytes=self.max_record_bytes,
        )

    # -- lifecycle -------------------------------------------------------------------

    def start(self, *, acknowledge_v1_layout: bool = False) -> None:
        """Refuse a database that still has the v1 table, then create the schema."""
        with self._timed("durable.start"):
            if self.store.has_table(LEGACY_TABLE) and not acknowledge_v1_layout:
                raise LegacyLayoutDetected(
                    f"The {self.store.name} database has a table named {LEGACY_TABLE!r}: the v1 "
                    "single-table layout. This engine stores data in oqron_records, oqron_jobs "
                    "and oqron_runs and never reads oqron_kv, so starting now would ignore your "
                    "pending jobs and reset every schedule pointer. Copy the v1 rows first with "
                    "`python manage.py oqron_migrate_v1 --apply` (run it without --apply for a "
                    "dry run), or set OQRON = {'ACKNOWLEDGE_V1_LAYOUT': True} to start anyway."
                )
            self.store.ensure_schema()

    def close(self) -> None:
        self.store.close()

    # -- writes ----------------------------------------------------------------------

    def put(self, namespace: str, id: str, value: Mapping[str, Any], *, expires_at: int | None = None) -> None:
        """Insert or replace one record."""
        row = self._encode(namespace, id, value, expires_at, now_ms())
        with self._timed("durable.put"):
            self.store.put_many(self.scope, [row])

    def put_many(self, writes: Iterable[RecordWrite]) -> int:
        """Insert or replace many records in one round trip per table; returns the count."""
        rows = self.encode_all(writes)
        if rows:
            with self._timed("durable.put_many"):
                self.store.put_many(self.scope, rows)
        return len(rows)

    def apply(
        self, *, puts: Iterable[RecordWrite] = (), deletes: Iterable[tuple[str, str]] = ()
    ) -> None:
        """Write ``puts`` and delete ``deletes`` ((namespace, id) pairs) atomically."""
        rows = self.encode_all(puts)
        pairs = list(deletes)  # each namespace checked once (a settle deletes one queue's jobs), each id
        tables = {ns: self._namespace_table(ns) for ns in {ns for ns, _ in pairs if type(ns) is str}}
        doomed = [(tables[ns] if type(ns) is str else self._namespace_table(ns), ns, self._checked_id(id))
                  for ns, id in pairs]
        if rows or doomed:
            with self._timed("durable.apply"):
                self.store.apply(self.scope, rows, doomed)

    def apply_and_release(self, *, puts: Iterable[RecordWrite], namespace: str, queue: str,
                          leases: Iterable[tuple[str, int]]) -> set[str]:
        """Postgres mode only (both planes in one database; see
        :attr:`Engine.settles_in_one_transaction`): write ``puts``, release the leases
        ((job id, token)) of ``queue`` still held under their token and delete the
        released jobs of ``namespace``, atomically. Returns the job ids released."""
        rows = self.encode_all(puts)
        store = cast(ReleasingStore, self.store)  # postgres mode: Engine.settles_in_one_transaction checked
        with self._timed("durable.apply"):
            return store.apply_and_release(self.scope, rows, namespace, queue, list(leases))

    def check(self, write: RecordWrite) -> None:
        """Raise what writing ``write`` would (InvalidRecord, ...): a refused batch's culprit."""
        self.encode_all([write])

    def insert(self, namespace: str, id: str, value: Mapping[str, Any], *, expires_at: int | None = None) -> bool:
        """Insert a record only if its id is free; True when inserted."""
        return bool(self.insert_many([RecordWrite(namespace, id, value, expires_at)]))

    def insert_many(self, writes: Iterable[RecordWrite]) -> set[tuple[str, str]]:
        """Insert the records whose ids are free; returns the (namespace, id) inserted."""
        rows = self.encode_all(writes)
        if not rows:
            return set()
        with self._timed("durable.insert_many"):
            return self.store.insert_many(self.scope, rows)

    def insert_guarded(self, guard: RecordWrite, rows: Iterable[RecordWrite]) -> bool:
        """Atomically insert ``guard`` if its id is free, with ``rows`` (upserts); False: none written."""
        encoded = self.encode_all([guard, *rows])
        with self._timed("durable.insert_guarded"):
            return self.store.insert_guarded(self.scope, encoded[0], encoded[1:])

    def insert_new_json(self, namespace: str, rows: Iterable[tuple[str, str]], *, checked: bool = False) -> None:
        """The bulk-enqueue path: insert records with fresh ids whose values the caller
        already encoded (``(id, JSON object text)`` pairs; ``checked``: ids from new_id and
        values whose parts passed codec.storage_problem, as plain_job_rows makes them, so
        only their size is checked).
        All of them, or none and :class:`DuplicateRecord` when an id is taken. ``rows``
        may be lazy: a store streams them, and an error raised while producing one
        (a bad payload) leaves nothing written."""
        table = self._namespace_table(namespace)
        kind = classify_namespace(namespace)
        at, limit = now_ms(), self.max_record_bytes

        def encoded() -> Iterator[EncodedRow]:
            seen: set[str] = set()
            for id, text in rows:
                if not checked:
                    self._checked_id(id)
                if id in seen:
                    raise InvalidRecord("A batch names the same (namespace, id) twice; write it once.")
                seen.add(id)
                problem = None if checked else storage_problem(text)
                if problem is not None:
                    raise InvalidRecord(f"{namespace}/{id}: the value cannot be stored: {problem}.")
                check_size(text, limit=limit, what=f"{namespace}/{id}")
                yield EncodedRow(namespace, id, kind, table, text, at, None)

        with self._timed("durable.insert_new"):
            self.store.insert_new(self.scope, table, encoded())

    def compare_and_set(
        self,
        namespace: str,
        id: str,
        *,
        expect: Mapping[str, Any] | _Absent,
        value: Mapping[str, Any] | None,
        expires_at: int | None = None,
    ) -> bool:
        """Write ``value`` (or delete when None) only if the record matches ``expect``:
        ``ABSENT`` for "does not exist", or a mapping of top-level fields and the values
        they must hold. Returns whether the write happened."""
        if not isinstance(expect, (Mapping, _Absent)):
            raise InvalidRecord("compare_and_set: expect must be ABSENT or a mapping of fields.")
        table = self._table(namespace, id)
        row = None if value is None else self._encode(namespace, id, value, expires_at, now_ms())
        with self._timed("durable.compare_and_set"):
            return self.store.compare_and_set(self.scope, table, namespace, id, expect, row)

    def delete(self, namespace: str, id: str) -> bool:
        return self.delete_many(namespace, [id]) == 1

    def delete_many(self, namespace: str, ids: Sequence[str]) -> int:
        table = self._namespace_table(namespace)
        if not ids:
            return 0
        keys = self._lookup_ids(ids)
        with self._timed("durable.delete_many"):
            return self.store.delete_many(self.scope, table, namespace, keys)

    # -- reads -----------------------------------------------------------------------

    def get(self, namespace: str, id: str) -> StoredRecord | None:
        found = self.get_many(namespace, [id])
        return found[0] if found else None

    def get_many(self, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        table = self._namespace_table(namespace)
        if not ids:
            return []
        keys = self._lookup_ids(ids)
        with self._timed("durable.get_many"):
            return self.store.get_many(self.scope, table, namespace, keys)

    def get_fields(self, namespace: str, ids: Sequence[str], fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Id -> the top-level ``fields`` it has, for the records among ``ids`` that exist."""
        table = self._namespace_table(namespace)
        if not ids:
            return {}
        keys = self._lookup_ids(ids)
        with self._timed("durable.get_fields"):
            return self.store.get_fields(self.scope, table, namespace, keys, tuple(fields))

    def scan_statuses(self, namespace: str, statuses: Sequence[str], *, page: int = 1000) -> Iterator[tuple[str, str]]:
        """``(id, status)`` of every record of ``namespace`` whose status is one of
        ``statuses``, page by page, without reading values (an id may repeat)."""
        found, cursor = self.scan_statuses_page(namespace, statuses, cursor=None, page=page)
        yield from found
        while cursor is not None:
            found, cursor = self.scan_statuses_page(namespace, statuses, cursor=cursor, page=page)
            yield from found

    def scan_statuses_page(self, namespace: str, statuses: Sequence[str], *, cursor: str | None,
                           page: int) -> tuple[builtins.list[tuple[str, str]], str | None]:
        """One page of :meth:`scan_statuses` after ``cursor`` (None: the first) and the next cursor."""
        table = self._namespace_table(namespace)
        with self._timed("durable.scan_statuses"):
            return self.store.scan_statuses(self.scope, table, namespace, tuple(statuses), cursor, page)

    def list(
        self, namespace: str | None = None, *, kind: str | None = None, status: str | None = None,
        name: str | None = None, module: str | None = None, correlation: str | None = None,
        table: TableKey | None = None, started_from: int | None = None, started_to: int | None = None,
        order: Order = "inserted", descending: bool = False, limit: int = 50, cursor: str | None = None,
    ) -> Page:
        """One page of a namespace (of every namespace of ``kind``; of a whole ``table``
        with a ``correlation`` id), filtered on indexed fields; ``next_cursor`` pages on."""
        if namespace is not None or kind is not None:
            table = self._namespace_table(namespace) if namespace is not None else table_for_kind(kind or "")
        elif table is None or correlation is None:
            raise InvalidNamespace("list needs a namespace, a record kind, or a table and a correlation id.")
        if kind is not None and namespace is not None and classify_namespace(namespace) != kind:
            return Page([], None)
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidRecord(f"list limit must be between 1 and {MAX_PAGE}, got {limit}.")
        query = ListQuery(
            table=table, namespace=namespace, kind=kind, status=status, name=name,
            module=module, correlation=correlation, started_from=started_from, started_to=started_to, order=order,
            descending=descending, limit=limit + 1, after=decode_cursor(cursor, order),
        )
        with self._timed("durable.list"):
            rows = self.store.list(self.scope, query)
        if len(rows) <= limit:
            return Page(rows, None)
        rows = rows[:limit]
        return Page(rows, encode_cursor(order, sort_key(rows[-1], order), rows[-1].id))

    def count(self, namespace: str | None = None, *, kind: str | None = None) -> int:
        """Rows of one namespace, one kind, or (with neither) all three tables."""
        if namespace is not None:
            tables: list[TableKey] = [self._namespace_table(namespace)]
        elif kind is not None:
            tables = [table_for_kind(kind)]
        else:
            tables = ["records", "jobs", "runs"]
        with self._timed("durable.count"):
            return sum(self.store.count(self.scope, t, namespace=namespace, kind=kind) for t in tables)

    def count_by_namespace(self, kind: str) -> dict[str, int]:
        """Row counts of one kind per namespace, e.g. ``count_by_namespace("dlq")``."""
        with self._timed("durable.count_by_namespace"):
            return self.store.count_by_namespace(self.scope, table_for_kind(kind), kind)

    # -- retention -------------------------------------------------------------------
    def prune_expired(self, *, now: int | None = None) -> int:
        """Delete every row of this scope whose ``expires_at`` has passed."""
        at = now_ms() if now is None else now
        with self._timed("durable.prune_expired"):
            return sum(self.store.prune_expired(self.scope, t, at) for t in ("records", "jobs", "runs"))

    def prune_older_than(self, namespace: str, *, cutoff_ms: int, limit: int = 10_000) -> int:
        """Delete up to ``limit`` rows of ``namespace`` inserted before ``cutoff_ms``
        (retention works in bounded batches so it never holds long locks)."""
        table = self._namespace_table(namespace)
        with self._timed("durable.prune_older_than"):
            return self.store.prune_older_than(self.scope, table, namespace, cutoff_ms, limit=limit)

    # -- helpers ---------------------------------------------------------------------

    def encode_all(self, writes: Iterable[RecordWrite]) -> builtins.list[EncodedRow]:
        at = now_ms()
        stamps: dict[str, tuple[RecordKind, TableKey]] = {}  # each namespace checked once a batch
        rows = [self._encode(w.namespace, w.id, w.value, w.expires_at, at, w.new, stamps, w.checked)
                for w in writes]
        keys = {(r.namespace, r.id) for r in rows}
        if len(keys) != len(rows):
            raise InvalidRecord("A batch names the same (namespace, id) twice; write it once.")
        return rows

    def _encode(
        self, namespace: str, id: str, value: Any, expires_at: int | None, at: int, new: bool = False,
        stamps: dict[str, tuple[RecordKind, TableKey]] | None = None, checked: bool = False,
    ) -> EncodedRow:
        stamp = stamps.get(namespace) if stamps is not None and type(namespace) is str else None
        if stamp is None:
            table = self._namespace_table(namespace)  # checks it first
            stamp = (classify_namespace(namespace), table)
            if stamps is not None:
                stamps[namespace] = stamp
        self._checked_id(id)
        if expires_at is not None and (not isinstance(expires_at, int) or isinstance(expires_at, bool)):
            raise InvalidRecord("expires_at must be integer epoch milliseconds or None.")
        text = encode_value(value, limit=self.max_record_bytes, what=f"{namespace}/{id}", checked=checked)
        return EncodedRow(namespace, id, stamp[0], stamp[1], text, at, expires_at, new)

    @staticmethod
    def _namespace_table(namespace: Any) -> TableKey:
        """The table of ``namespace``, checked."""
        if not isinstance(namespace, str) or not namespace or not namespace.strip():
            raise InvalidNamespace(f"A namespace must be a non-empty string, got {namespace!r}.")
        problem = text_problem(namespace)
        if problem is not None:
            raise InvalidNamespace(f"The namespace {namespace!r} cannot be stored: {problem}.")
        return table_for_kind(classify_namespace(namespace))

    @staticmethod
    def _lookup_ids(ids: Sequence[Any]) -> builtins.list[str]:
        """The ids of a read or delete as a list, each a string (an empty one just
        matches nothing); the same error on every backend for anything else."""
        keys = list(ids)
        for id in keys:
            if not isinstance(id, str):
                raise InvalidNamespace(f"A record id must be a string, got {id!r}.")
        return keys

    @staticmethod
    def _checked_id(id: Any) -> str:
        if not isinstance(id, str) or not id:
            raise InvalidNamespace(f"A record id must be a non-empty string, got {id!r}.")
        problem = text_problem(id)
        if problem is not None:
            raise InvalidNamespace(f"The record id {id!r} cannot be stored: {problem}.")
        return id

    def _table(self, namespace: Any, id: Any) -> TableKey:
        """The table of one record's key, both parts checked."""
        table = self._namespace_table(namespace)
        self._checked_id(id)
        return table

    @contextmanager
    def _timed(self, action: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "%s on %s took %.2f ms", action, self.store.name,
                    (time.perf_counter() - started) * 1000,
                    extra={"action": action, "backend": self.store.name},
                )


__all__ = ["ABSENT", "DurablePlane", "Page", "RecordWrite", "StoredRecord"]
