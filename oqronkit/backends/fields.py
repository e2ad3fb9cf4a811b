"""``DurableStore.get_fields`` for the stores that decode a row whole anyway (memory,
SQLite, Redis: a row is one JSON text); Postgres picks the fields on the server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .types import Scope, StoredRecord


class FieldsOfWholeRows:
    """Mixed into a store that supplies ``get_many``."""

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        raise NotImplementedError

    def get_fields(self, scope: Scope, table: str, namespace: str, ids: Sequence[str],
                   fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {record.id: {name: record.value[name] for name in fields if name in record.value}
                for record in self.get_many(scope, table, namespace, ids)}
