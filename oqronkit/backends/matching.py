"""Record matching written once for backends that filter in Python (memory, Redis)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .types import ListQuery, StoredRecord, sort_key


def fields_match(value: Mapping[str, Any], expect: Mapping[str, Any]) -> bool:
    """Compare-and-set's test: every expected top-level field holds the expected JSON
    value (a missing field equals None)."""
    for field, wanted in expect.items():
        normalised = json.loads(json.dumps(wanted))
        if value.get(field) != normalised:
            return False
    return True


def matches_query(records: list[StoredRecord], query: ListQuery) -> list[StoredRecord]:
    """Filter, sort and cut ``records`` exactly as the SQL backends' list query does."""
    selected = [r for r in records if _matches(r, query)]
    selected.sort(key=lambda r: (sort_key(r, query.order), r.id), reverse=query.descending)
    if query.after is not None:
        after = query.after
        if query.descending:
            selected = [r for r in selected if (sort_key(r, query.order), r.id) < after]
        else:
            selected = [r for r in selected if (sort_key(r, query.order), r.id) > after]
    return selected[: query.limit]


def _matches(record: StoredRecord, query: ListQuery) -> bool:
    value = record.value
    for field, wanted in (("status", query.status), ("name", query.name), ("module", query.module),
                          ("correlationId", query.correlation)):
        if wanted is not None and value.get(field) != wanted:
            return False
    needs_started = query.order == "started" or query.started_from is not None or query.started_to is not None
    if needs_started:
        started = value.get("startedAt")
        if not isinstance(started, (int, float)) or isinstance(started, bool):
            return False
        if query.started_from is not None and started < query.started_from:
            return False
        if query.started_to is not None and started >= query.started_to:
            return False
    return True
