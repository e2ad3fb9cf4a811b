"""The two planes' backend protocols. Modules talk to these (through the facades in
``oqronkit.durable`` and, later, ``oqronkit.hot``), never to a client library."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .types import EncodedRow, ListQuery, Scope, StoredRecord, _Absent


@runtime_checkable
class DurableStore(Protocol):
    """Truth and history: the spec's three tables, every call scoped to one
    (project, environment).

    Backends wrap driver errors into :class:`~oqronkit.errors.BackendUnavailable`
    and hold no logging or metrics (the facade does that).
    """

    name: str
    #: True when the rows live in SQL tables the board's Django models can read.
    supports_sql: bool

    def ensure_schema(self) -> None:
        """Create the three tables and their indexes if missing (never drops data)."""

    def has_table(self, table: str) -> bool:
        """Whether ``table`` exists in the target database (used for the v1 check)."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        """Upsert every row in one round trip (per table). An existing row keeps its
        ``inserted_at``; value, kind and ``expires_at`` are replaced."""

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        """Insert rows whose key is free; existing rows stay untouched. Returns the
        (namespace, id) pairs that were inserted. Race-free across processes."""

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        """The rows among ``ids`` that exist, in no particular order."""

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        """Delete the rows among ``ids``; returns how many existed."""

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        """Atomically: if the current row matches ``expect`` (``ABSENT``: no row; a
        mapping: the row exists and each listed top-level field equals the given JSON
        value), write ``row`` (or delete when None) and return True; else change
        nothing and return False."""

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        """One page of rows per ``query`` (keyset pagination, never OFFSET)."""

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        """Rows in ``table`` of one namespace and/or one kind."""

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        """Row counts of one kind grouped by namespace (e.g. DLQ depth per queue)."""

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        """Delete rows whose ``expires_at`` is at or before ``now_ms``."""

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        """Delete up to ``limit`` rows of ``namespace`` inserted before ``cutoff_ms``."""
