"""Job and dead-letter queries of the board's pages, each served by an oqron_jobs index.

- jobs of a queue and status, newest first: ``oqron_jobs_status_created_idx``;
- dead letters newest first: ``oqron_jobs_dlq_died_idx`` (one queue),
  ``oqron_jobs_dlq_all_died_idx`` (every queue), ``oqron_jobs_dlq_fingerprint_idx``
  (one error group); these are partial indexes, hence :class:`KindIs`;
- dead-letter depth per queue: the spec's dashboard query, on ``oqron_jobs_dead_kind_idx``
  (Postgres; ``oqron_jobs_kind_idx`` on SQLite).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from django.db import connections
from django.db.models import Count, QuerySet

from oqronboard.base.cursors import PAGE_SIZE, encode_cursor
from oqronboard.base.expressions import JsonNumber, JsonText, KindIs, RowBefore, RowKey
from oqronboard.base.scope import BoardScope
from oqronkit.namespaces import JOB_PREFIX, dlq_namespace, job_namespace, queue_of

from .models import JobRecord, JobRecordQuerySet
from .search import newest_matches

JOB_STATUSES = ("waiting", "delayed", "active", "waiting-dependencies", "blocked")
# Counts the hot plane does not keep are counted up to this, then shown as "1000+".
COUNT_CAP = 1000


def jobs_of(scope: BoardScope) -> JobRecordQuerySet:
    return JobRecord.objects.scoped(scope.project, scope.environment)


def _dead_fields() -> dict[str, Any]:
    return {
        "status": JsonText("status"), "died": JsonText("diedAt"), "attempts": JsonText("attempts"),
        "reason": JsonText("deadReason"), "fingerprint": JsonText("errorFingerprint"),
        "error_type": JsonText("lastError", "type"), "error_message": JsonText("lastError", "message"),
        "created": JsonText("createdAt"),
    }


def _job_fields() -> dict[str, Any]:
    return {
        "status": JsonText("status"), "created": JsonText("createdAt"), "run_at": JsonText("runAt"),
        "attempts": JsonText("attempts"), "max_attempts": JsonText("maxAttempts"), "priority": JsonText("priority"),
        "worker": JsonText("workerId"), "run": JsonText("currentRunId"),
        "error_message": JsonText("lastError", "message"),
    }


def _page(qs: QuerySet | list[dict], key: str, limit: int) -> tuple[list[dict], str | None]:
    rows = list(qs[: limit + 1])
    for row in rows:
        for name in ("died", "created", "run_at", "attempts", "max_attempts", "priority"):
            if row.get(name) is not None:
                try:
                    row[name] = int(float(row[name]))
                except (TypeError, ValueError):
                    row[name] = None
        row["queue"] = queue_of(row["namespace"])
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor(last[key] or 0, last["id"])


def queue_jobs(
    scope: BoardScope, queue: str, status: str, *, cursor: tuple[int | float, str] | None = None,
    limit: int = PAGE_SIZE
) -> tuple[list[dict], str | None]:
    """Jobs of one queue in one status, newest first."""
    created = JsonNumber("createdAt")
    qs = (
        jobs_of(scope).filter(namespace=job_namespace(queue))
        .alias(f_status=JsonText("status"), created_key=created)
        .filter(f_status=status, created_key__isnull=False)
    )
    if cursor is not None:
        qs = qs.filter(created_key__lte=cursor[0]).filter(RowBefore(JsonNumber("createdAt"), RowKey(), *cursor))
    rows = qs.order_by(JsonNumber("createdAt").desc(), RowKey().desc()).values("id", "namespace", **_job_fields())
    return _page(rows, "created", limit)


@dataclass(frozen=True)
class DeadFilters:
    queue: str = ""
    fingerprint: str = ""
    search: str = ""
    # Only dead letters that died at or before this instant (the page's render time).
    died_before: int | None = None
    cursor: tuple[int | float, str] | None = None


def dead_queryset(scope: BoardScope, filters: DeadFilters) -> JobRecordQuerySet:
    """Dead letters matching ``filters``, newest death first (not yet sliced)."""
    qs = jobs_of(scope).filter(KindIs("dlq")).alias(died_key=JsonNumber("diedAt")).filter(died_key__isnull=False)
    if filters.queue:
        qs = qs.filter(namespace=dlq_namespace(filters.queue))
    if filters.fingerprint:
        qs = qs.alias(f_fp=JsonText("errorFingerprint")).filter(f_fp=filters.fingerprint)
    if filters.search:
        qs = qs.alias(f_message=JsonText("lastError", "message")).filter(f_message__icontains=filters.search)
    if filters.died_before is not None:
        qs = qs.filter(died_key__lte=filters.died_before)
    if filters.cursor is not None:
        qs = qs.filter(died_key__lte=filters.cursor[0]).filter(RowBefore(JsonNumber("diedAt"), RowKey(),
                                                                          *filters.cursor))
    return qs.order_by(JsonNumber("diedAt").desc(), RowKey().desc())


def dead_list(scope: BoardScope, filters: DeadFilters, *, limit: int = PAGE_SIZE) -> tuple[list[dict], str | None]:
    """One page of dead letters, newest death first. A text search first looks among the
    newest dead letters (:mod:`.search`: a common word fills the page there); when they
    hold too few matches, the trigram index finds every one (a rare word has few)."""
    if filters.search:
        newest = newest_matches(scope, search=filters.search, wanted=limit + 1, queue=filters.queue,
                                fingerprint=filters.fingerprint, died_before=filters.died_before,
                                cursor=filters.cursor, db=jobs_of(scope).db)
        if newest is not None:
            return _page(newest, "died", limit)
    return _page(dead_queryset(scope, filters).values("id", "namespace", **_dead_fields()), "died", limit)


def dead_targets(scope: BoardScope, filters: DeadFilters, *, limit: int) -> list[tuple[str, str]]:
    """``(queue, job id)`` of up to ``limit`` dead letters matching ``filters``."""
    rows = dead_queryset(scope, filters).values_list("namespace", "id")[:limit]
    return [(queue_of(namespace) or "", job_id) for namespace, job_id in rows]


EXPORT_CHUNK = 500


def dead_export_rows(scope: BoardScope, filters: DeadFilters, *, limit: int,
                     chunk: int = EXPORT_CHUNK) -> Iterator[dict[str, Any]]:
    """The dead letters to export, newest death first, in keyset pages of ``chunk``: the
    first rows leave before the rest are read. (A server-side cursor does not: outside
    a transaction Django declares it WITH HOLD, which reads every row at the start.)"""
    sent, cursor = 0, filters.cursor
    while sent < limit:
        page = list(dead_queryset(scope, replace(filters, cursor=cursor))
                    .values("id", "namespace", key=JsonNumber("diedAt"), **_dead_fields())[:min(chunk, limit - sent)])
        yield from page
        sent += len(page)
        if len(page) < chunk:
            return
        cursor = (page[-1]["key"], page[-1]["id"])


def dlq_depths(scope: BoardScope) -> dict[str, int]:
    """Dead-letter depth per queue, the spec's dashboard query::

        SELECT namespace, count(*) FROM oqron_jobs
        WHERE project = ... AND environment = ... AND record_kind = 'dlq' GROUP BY namespace
    """
    rows = jobs_of(scope).filter(KindIs("dlq")).values("namespace").annotate(n=Count("*")).order_by()
    return {queue_of(row["namespace"]) or "": row["n"] for row in rows}


_GROUPS_SQL = """
WITH RECURSIVE fps(fp) AS (
    SELECT (SELECT {fp} FROM oqron_jobs WHERE {where} AND {fp} IS NOT NULL ORDER BY {fp} LIMIT 1)
    UNION ALL
    SELECT (SELECT {fp} FROM oqron_jobs WHERE {where} AND {fp} > fps.fp ORDER BY {fp} LIMIT 1)
    FROM fps WHERE fps.fp IS NOT NULL
), groups AS MATERIALIZED (  -- else the stats subquery ran twice a group: for the filter below and the output
    SELECT fps.fp AS fp,
        (SELECT count(*) || ',' || count(DISTINCT namespace) || ',' || max(namespace) FROM (
            SELECT namespace FROM oqron_jobs WHERE {where} AND {fp} = fps.fp LIMIT {counted}) AS counted) AS stats,
        (SELECT {died} FROM oqron_jobs WHERE {where} AND {fp} = fps.fp ORDER BY {died} LIMIT 1) AS first_seen,
        (SELECT {died} FROM oqron_jobs WHERE {where} AND {fp} = fps.fp ORDER BY {died} DESC LIMIT 1) AS last_seen,
        (SELECT {error} FROM oqron_jobs WHERE {where} AND {fp} = fps.fp ORDER BY {died} DESC LIMIT 1) AS error
    FROM fps WHERE fps.fp IS NOT NULL
)
SELECT fp, stats, first_seen, last_seen, error FROM groups WHERE stats IS NOT NULL
ORDER BY last_seen DESC LIMIT {limit}
"""
_GROUP_EXPRESSIONS = {
    "postgresql": {
        "fp": "(value->>'errorFingerprint')",
        "died": "(CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END)",
        "error": "((value->'lastError')::text)",
    },
    "sqlite": {
        "fp": "json_extract(value, '$.errorFingerprint')",
        "died": "json_extract(value, '$.diedAt')",
        "error": "json_extract(value, '$.lastError')",
    },
}


def dead_groups(scope: BoardScope, *, queue: str = "", limit: int = 50,
                cap: int = COUNT_CAP) -> list[dict[str, Any]]:
    """Dead letters grouped by error fingerprint (type plus normalised message): count
    (up to ``cap``, then ``capped``), the queues among the counted ones, first and last
    seen, the latest failure's type and message; most recent group first.

    One statement, served by ``oqron_jobs_dlq_fingerprint_idx`` alone for the grouping:
    a skip scan finds each distinct fingerprint with one index probe, then per group a
    count over its index range (no JSON is decoded for it), first and last seen from
    the ends of that range and the latest row's error. Grouping every dead letter
    with ``GROUP BY`` instead decodes the JSON of every row (hundreds of ms at 20k).
    The count is capped because each counted row's visibility is read from the table
    (an expression index serves no index-only scan): ~1 us a row, 40 ms for 30,750.
    Dead letters without a fingerprint are not grouped.
    """
    connection = connections[jobs_of(scope).db]
    expressions = _GROUP_EXPRESSIONS.get(connection.vendor)
    if expressions is None:
        raise NotImplementedError(f"dead_groups: no SQL for {connection.vendor}")
    where = "project = %s AND environment = %s AND record_kind = 'dlq'"
    params: list[Any] = [scope.project, scope.environment]
    if queue:
        where += " AND namespace = %s"
        params.append(dlq_namespace(queue))
    sql = _GROUPS_SQL.format(where=where, limit=int(limit), counted=int(cap) + 1, **expressions)
    # Every subquery repeats ``where``: 2 in fps, 4 in groups.
    with connection.cursor() as cursor:
        cursor.execute(sql, params * 6)
        rows = cursor.fetchall()
    groups = []
    for fingerprint, stats, first, last, error in rows:
        count, queues, namespace = str(stats).split(",", 2)
        try:
            error = json.loads(error) if isinstance(error, str) else error
        except ValueError:
            error = None
        error = error if isinstance(error, dict) else {}
        groups.append({
            "fingerprint": fingerprint, "count": min(int(count), cap), "capped": int(count) > cap,
            "queues": int(queues),
            "queue": queue_of(namespace),
            "first": int(first) if first is not None else None, "last": int(last) if last is not None else None,
            "error_type": error.get("type"), "message": error.get("message"),
        })
    return groups


# A skip scan of the primary key (project, environment, namespace, id): one index probe
# per distinct job namespace, whatever the number of jobs. Job namespaces (queue_job:)
# sort after the dead letters' (queue_dlq:), the only other ones of oqron_jobs.
_JOB_QUEUES_SQL = """
WITH RECURSIVE ns(n) AS (
    SELECT (SELECT namespace FROM oqron_jobs WHERE {where} AND namespace >= %s ORDER BY namespace LIMIT 1)
    UNION ALL
    SELECT (SELECT namespace FROM oqron_jobs WHERE {where} AND namespace > ns.n ORDER BY namespace LIMIT 1)
    FROM ns WHERE ns.n IS NOT NULL
)
SELECT n FROM ns WHERE n IS NOT NULL LIMIT {limit}
"""


def job_queues(scope: BoardScope, *, limit: int = 1000) -> list[str]:
    """Every queue holding a job (any status) in oqron_jobs, whether or not a worker
    ever wrote its queue record (a producer enqueues without one): one statement."""
    connection = connections[jobs_of(scope).db]
    sql = _JOB_QUEUES_SQL.format(where="project = %s AND environment = %s", limit=int(limit))
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope.project, scope.environment, JOB_PREFIX, scope.project, scope.environment])
        rows = cursor.fetchall()
    return [name[len(JOB_PREFIX):] for (name,) in rows if isinstance(name, str) and name.startswith(JOB_PREFIX)]


def queue_sizes(scope: BoardScope, queues: list[str]) -> dict[str, tuple[int, int]]:
    """``(jobs, dead letters)`` of each of ``queues``: one count per namespace, each a
    primary-key range (a topic group's delivery queue holds at most its dispatch window
    of jobs; its dead letters are counted like the spec's depth query)."""
    if not queues:
        return {}
    namespaces = [build(q) for q in queues for build in (job_namespace, dlq_namespace)]
    rows = jobs_of(scope).filter(namespace__in=namespaces).values("namespace").annotate(n=Count("*")).order_by()
    counts = {row["namespace"]: row["n"] for row in rows}
    return {q: (counts.get(job_namespace(q), 0), counts.get(dlq_namespace(q), 0)) for q in queues}


def get_job(scope: BoardScope, queue: str, job_id: str) -> JobRecord | None:
    """A job (or its dead letter) by queue and id: primary-key reads."""
    return (
        jobs_of(scope).filter(namespace__in=[job_namespace(queue), dlq_namespace(queue)], id=job_id)
        .only("namespace", "id", "value").order_by("namespace").first()
    )


def find_jobs(scope: BoardScope, job_id: str, queues: list[str]) -> list[JobRecord]:
    """Jobs or dead letters with this id in any of ``queues`` (primary-key reads)."""
    if not queues:
        return []
    namespaces = [build(q) for q in queues for build in (job_namespace, dlq_namespace)]
    return list(jobs_of(scope).filter(namespace__in=namespaces, id=job_id).only("namespace", "id", "value")[:20])


def capped_count(qs: QuerySet, cap: int = COUNT_CAP) -> tuple[int, bool]:
    """``(count, more)``: counts at most ``cap`` rows, so a count is never unbounded."""
    count = qs.order_by()[: cap + 1].count()
    return min(count, cap), count > cap


def pending_counts(scope: BoardScope, queue: str) -> dict[str, tuple[int, bool]]:
    """Capped counts of the statuses the hot plane does not count."""
    base = jobs_of(scope).filter(namespace=job_namespace(queue)).alias(f_status=JsonText("status"))
    return {status: capped_count(base.filter(f_status=status)) for status in ("waiting-dependencies", "blocked")}

