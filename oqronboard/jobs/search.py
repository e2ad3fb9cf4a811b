"""The dead letters' text search among the newest ones, in one statement.

A common word fills a page among the newest dead letters; looking for it through the
trigram index instead reads and sorts every match. So the search first reads the newest
:data:`SEARCH_WINDOW` dead letters (from the page's cursor) newest first, on the same
death-time indexes as the list, and stops at the page's last match. A subquery bounds
the window, so no separate statement finds its edge: that one read 1,500 rows (each
record decompressed twice for its death time) before the search read them again.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

from oqronboard.base.scope import BoardScope
from oqronkit.namespaces import dlq_namespace

#: Dead letters a text search reads newest first before it asks the trigram index.
SEARCH_WINDOW = 1500

# The window's rows carry their record (not decoded); only the matches' fields are read.
_WINDOW_SQL = """
SELECT id, namespace, {fields} FROM (
    SELECT id, namespace, value, {died} AS died_key, {row_key} AS row_key FROM oqron_jobs
    WHERE project = %s AND environment = %s AND record_kind = 'dlq' AND {died} IS NOT NULL{filters}
    ORDER BY {died} DESC, {row_key} DESC LIMIT %s
) AS newest
WHERE {matches}
ORDER BY died_key DESC, row_key DESC
LIMIT %s
"""
_FIELDS = ("status", "died", "attempts", "reason", "fingerprint", "error_type", "error_message", "created")
_EXPRESSIONS = {
    "postgresql": {
        "died": "(CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END)",
        "row_key": 'id COLLATE "C"',
        "fp": "(value->>'errorFingerprint')",
        "matches": "UPPER(value->'lastError'->>'message') LIKE UPPER(%s)",
        "fields": ", ".join([
            "value->>'status'", "value->>'diedAt'", "value->>'attempts'", "value->>'deadReason'",
            "value->>'errorFingerprint'", "value->'lastError'->>'type'", "value->'lastError'->>'message'",
            "value->>'createdAt'"]),
    },
    "sqlite": {
        "died": "json_extract(value, '$.diedAt')",
        "row_key": "id",
        "fp": "json_extract(value, '$.errorFingerprint')",
        "matches": "json_extract(value, '$.lastError.message') LIKE %s ESCAPE '\\'",
        "fields": ", ".join(f"json_extract(value, '$.{path}')" for path in (
            "status", "diedAt", "attempts", "deadReason", "errorFingerprint", "lastError.type",
            "lastError.message", "createdAt")),
    },
}


def like_pattern(text: str) -> str:
    """``%text%`` with LIKE's wildcards in ``text`` taken literally (backslash escapes)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def newest_matches(scope: BoardScope, *, search: str, wanted: int, queue: str = "", fingerprint: str = "",
                   died_before: int | None = None, cursor: tuple[int | float, str] | None = None,
                   db: str = "default") -> list[dict[str, Any]] | None:
    """The first ``wanted`` dead letters whose last error message contains ``search``
    (case-insensitive), newest death first, when the newest :data:`SEARCH_WINDOW` (from
    ``cursor``) hold that many; else None (the caller asks the trigram index)."""
    connection = connections[db]
    expressions = _EXPRESSIONS.get(connection.vendor)
    if expressions is None:
        return None
    filters = ""
    params: list[Any] = [scope.project, scope.environment]
    if queue:
        filters += " AND namespace = %s"
        params.append(dlq_namespace(queue))
    if fingerprint:
        filters += f" AND {expressions['fp']} = %s"
        params.append(fingerprint)
    if died_before is not None:
        filters += f" AND {expressions['died']} <= %s"
        params.append(died_before)
    if cursor is not None:
        filters += f" AND {expressions['died']} <= %s AND ({expressions['died']}, {expressions['row_key']}) < (%s, %s)"
        params += [cursor[0], cursor[0], cursor[1]]
    sql = _WINDOW_SQL.format(filters=filters, **expressions)
    params += [SEARCH_WINDOW, like_pattern(search), wanted]
    with connection.cursor() as db_cursor:
        db_cursor.execute(sql, params)
        rows = [dict(zip(("id", "namespace", *_FIELDS), row, strict=True)) for row in db_cursor.fetchall()]
    return rows if len(rows) == wanted else None
