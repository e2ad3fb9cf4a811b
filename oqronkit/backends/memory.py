"""In-process durable store: a real implementation held to the same contract suite as
SQLite and Postgres (values are kept as JSON text, so reads return fresh copies)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from ..codec import decode_value
from ..errors import DuplicateRecord
from .fields import FieldsOfWholeRows
from .matching import fields_match, matches_query
from .types import EncodedRow, ListQuery, LogAppend, Scope, StoredRecord, _Absent

# (table, project, environment, namespace, id) -> (kind, json, inserted_at, expires_at)
_Key = tuple[str, str, str, str, str]
_Row = tuple[str, str, int, int | None]


class MemoryDurableStore(FieldsOfWholeRows):
    """Dict-backed durable store for the ``memory`` mode and fast unit tests."""

    name = "memory"
    supports_sql = False
    transaction_domain: str | None = None
    joins_database: str | None = None
    signal_domain: str | None = None

    def __init__(self) -> None:
        self._rows: dict[_Key, _Row] = {}
        self._lock = threading.RLock()

    def ensure_schema(self) -> None:
        return None

    def has_table(self, table: str) -> bool:
        return False

    def close(self) -> None:
        return None

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        with self._lock:
            for row in rows:
                key = _key(scope, row.table, row.namespace, row.id)
                existing = self._rows.get(key)
                inserted = existing[2] if existing else row.inserted_at
                self._rows[key] = (row.kind, row.value_json, inserted, row.expires_at)

    def apply(
        self, scope: Scope, puts: Sequence[EncodedRow], deletes: Sequence[tuple[str, str, str]]
    ) -> None:
        with self._lock:
            self.put_many(scope, puts)
            for table, namespace, id in deletes:
                self._rows.pop(_key(scope, table, namespace, id), None)

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        inserted: set[tuple[str, str]] = set()
        with self._lock:
            for row in rows:
                key = _key(scope, row.table, row.namespace, row.id)
                if key not in self._rows:
                    self._rows[key] = (row.kind, row.value_json, row.inserted_at, row.expires_at)
                    inserted.add((row.namespace, row.id))
        return inserted

    def insert_new(self, scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
        rows = list(rows)
        keys = [_key(scope, table, row.namespace, row.id) for row in rows]
        with self._lock:
            for row, key in zip(rows, keys, strict=True):
                if key in self._rows:
                    raise DuplicateRecord(f"{row.namespace}/{row.id} already exists; nothing of the batch was written.")
            for row, key in zip(rows, keys, strict=True):
                self._rows[key] = (row.kind, row.value_json, row.inserted_at, row.expires_at)

    def insert_guarded(self, scope: Scope, guard: EncodedRow, rows: Sequence[EncodedRow]) -> bool:
        with self._lock:
            if _key(scope, guard.table, guard.namespace, guard.id) in self._rows:
                return False
            self.put_many(scope, [guard, *rows])
            return True

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        with self._lock:
            found = [(id, self._rows.get(_key(scope, table, namespace, id))) for id in dict.fromkeys(ids)]
        return [_record(namespace, id, row) for id, row in found if row is not None]

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        with self._lock:
            return sum(
                self._rows.pop(_key(scope, table, namespace, id), None) is not None
                for id in dict.fromkeys(ids)
            )

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        key = _key(scope, table, namespace, id)
        with self._lock:
            current = self._rows.get(key)
            if isinstance(expect, _Absent):
                if current is not None:
                    return False
            elif current is None or not fields_match(decode_value(current[1]), expect):
                return False
            if row is None:
                self._rows.pop(key, None)
            else:
                inserted = current[2] if current else row.inserted_at
                self._rows[key] = (row.kind, row.value_json, inserted, row.expires_at)
            return True

    def append_log(self, scope: Scope, append: LogAppend) -> dict[str, int]:
        with self._lock:
            offsets: dict[str, int] = {}
            for id in dict.fromkeys(append.ids if append.maybe_present is None else append.maybe_present):
                row = self._rows.get(_key(scope, append.table, append.namespace, id))
                if row is not None:
                    offsets[id] = decode_value(row[1])["offset"]
            new = [id for id in dict.fromkeys(append.ids) if id not in offsets]
            counter = self._rows.get(_key(scope, append.counter_table, append.counter_namespace, append.counter_id))
            first = decode_value(counter[1])["next"] if counter is not None else 0
            if new:
                self.put_many(scope, [*append.build(new, first), append.counter(first + len(new))])
            offsets.update((id, first + i) for i, id in enumerate(new))
            return offsets

    def read_log(
        self, scope: Scope, table: str, namespace: str, partition: int, after: int, limit: int
    ) -> list[StoredRecord]:
        with self._lock:
            rows = [(k[4], row) for k, row in self._rows.items()
                    if k[:4] == (table, scope.project, scope.environment, namespace)]
        records = [r for id, row in rows if (r := _record(namespace, id, row)).value.get("partition") == partition
                   and r.value["offset"] > after]
        return sorted(records, key=lambda r: r.value["offset"])[:limit]

    def scan_statuses(
        self, scope: Scope, table: str, namespace: str, statuses: Sequence[str], cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, str]], str | None]:
        with self._lock:
            rows = sorted((k[4], row[1]) for k, row in self._rows.items()
                          if k[:4] == (table, scope.project, scope.environment, namespace) and k[4] > (cursor or ""))
        page = rows[:limit]
        found = [(id, status) for id, text in page if (status := decode_value(text).get("status")) in statuses]
        # A status found among ``statuses`` is a str.
        return cast("list[tuple[str, str]]", found), (page[-1][0] if len(rows) > limit else None)

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        with self._lock:
            candidates = [
                (k[3], k[4], row) for k, row in self._rows.items()
                if k[0] == query.table and k[1] == scope.project and k[2] == scope.environment
                and (query.namespace is None or k[3] == query.namespace)
                and (query.kind is None or row[0] == query.kind)
            ]
        records = [_record(ns, id, row) for ns, id, row in candidates]
        return matches_query(records, query)

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        with self._lock:
            return sum(
                1 for k, row in self._rows.items()
                if k[0] == table and k[1] == scope.project and k[2] == scope.environment
                and (namespace is None or k[3] == namespace) and (kind is None or row[0] == kind)
            )

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._lock:
            for k, row in self._rows.items():
                if k[0] == table and k[1] == scope.project and k[2] == scope.environment and row[0] == kind:
                    counts[k[3]] = counts.get(k[3], 0) + 1
        return counts

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        with self._lock:
            doomed = [
                k for k, row in self._rows.items()
                if k[0] == table and k[1] == scope.project and k[2] == scope.environment
                and row[3] is not None and row[3] <= now_ms
            ]
            for k in doomed:
                del self._rows[k]
        return len(doomed)

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        with self._lock:
            doomed = sorted(
                (row[2], k) for k, row in self._rows.items()
                if k[0] == table and k[1] == scope.project and k[2] == scope.environment
                and k[3] == namespace and row[2] < cutoff_ms
            )[:limit]
            for _, k in doomed:
                del self._rows[k]
        return len(doomed)


def _key(scope: Scope, table: str, namespace: str, id: str) -> _Key:
    return (table, scope.project, scope.environment, namespace, id)


def _record(namespace: str, id: str, row: _Row) -> StoredRecord:
    kind, text, inserted_at, expires_at = row
    return StoredRecord(namespace, id, kind, decode_value(text), inserted_at, expires_at)
