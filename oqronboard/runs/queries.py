"""The run queries of the board's pages, each served by one of oqron_runs' indexes.

A list is always bounded by a time window on ``startedAt`` (default: the last 24 h)
and sorted newest first on ``(startedAt, id)``, the trailing columns of every run
index; a filter on status, name, module, worker or job picks the index whose leading
expression it pins (for the status and module values those indexes leave out, the
startedAt index with a filter). Pages are keyset pages: the cursor is the last row's
``(startedAt, id)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.db.models import Count, F, Func, Q, Value
from django.db.models.functions import Floor

from oqronboard.base.cursors import PAGE_SIZE, encode_cursor
from oqronboard.base.expressions import JsonNumber, JsonText, RowBefore, RowFrom, RowKey, RunStarted
from oqronboard.base.scope import BoardScope
from oqronkit.namespaces import RUNS

from .models import RunRecord, RunRecordQuerySet

# The modules whose runs are a queue's jobs (the run's name is the queue; a topic
# group's deliveries are jobs of its queue ``<topic>@<group>``).
QUEUE_MODULES = ("queue", "worker", "topic", "webhook")
# The dominant values oqron_runs' partial status and module indexes leave out
# (oqronkit/backends/postgres/sql/schema.sql).
UNINDEXED_STATUSES = ("completed",)
UNINDEXED_MODULES = ("queue", "worker")
# The modules whose runs a replay can run again (oqronkit.replay.create.QUEUE_MODULES).
REPLAYABLE_MODULES = ("queue", "worker")


def list_fields() -> dict[str, JsonText]:
    """The columns a list row shows, read as text from the JSON: a list never decodes a
    run's logs, input or output."""
    return {
        "name": JsonText("name"), "module": JsonText("module"), "status": JsonText("status"),
        "started": JsonText("startedAt"), "duration": JsonText("durationMs"), "worker": JsonText("workerId"),
        "attempts": JsonText("attempts"), "job": JsonText("jobId"), "error_type": JsonText("error", "type"),
        "error_message": JsonText("error", "message"), "progress": JsonText("progressPercent"),
    }


@dataclass(frozen=True)
class RunFilters:
    """Validated filters of a run list (see :mod:`runs.forms`)."""

    since: int
    until: int | None = None
    status: str = ""
    module: str = ""
    name: str = ""
    worker: str = ""
    job: str = ""
    search: str = ""
    cursor: tuple[int | float, str] | None = None


def runs_of(scope: BoardScope) -> RunRecordQuerySet:
    return RunRecord.objects.scoped(scope.project, scope.environment)


def filtered_runs(scope: BoardScope, filters: RunFilters) -> RunRecordQuerySet:
    """The runs ``filters`` match (every filter but the cursor), on the index it pins."""
    qs = runs_of(scope)
    fields = (("status", filters.status), ("name", filters.name), ("module", filters.module),
              ("workerId", filters.worker), ("jobId", filters.job))
    for key, value in fields:
        if value:
            qs = qs.alias(**{f"f_{key}": JsonText(key)}).filter(**{f"f_{key}": value})
    if not any(value for _, value in fields) or filters.status in UNINDEXED_STATUSES \
            or filters.module in UNINDEXED_MODULES:
        # Unfiltered, or on a value Postgres's partial status / module indexes leave
        # out: walk (project, environment, namespace, startedAt, id), which the planner
        # may still trade for another filter's index.
        qs = qs.filter(namespace=RUNS)
    qs = qs.alias(started=RunStarted()).filter(started__gte=filters.since)
    if filters.until is not None:
        qs = qs.filter(started__lt=filters.until)
    if filters.search:
        qs = qs.alias(f_message=JsonText("error", "message")).filter(f_message__icontains=filters.search)
    return qs


def replayable_run_ids(scope: BoardScope, filters: RunFilters) -> Iterator[str]:
    """The ids of the queue jobs' runs ``filters`` match, replays left out, newest first,
    streamed (the runs page's "replay every match")."""
    qs = (filtered_runs(scope, filters).alias(f_module=JsonText("module"), f_replay=JsonText("replayOf"))
          .filter(f_module__in=REPLAYABLE_MODULES).filter(Q(f_replay__isnull=True) | Q(f_replay="")))
    return cast(Iterator[str], qs.order_by(RunStarted().desc(), RowKey().desc()).values_list("id", flat=True)
                .iterator(chunk_size=2000))


def run_list(scope: BoardScope, filters: RunFilters, *, limit: int = PAGE_SIZE) -> tuple[list[dict], str | None]:
    """One page of runs, newest first, and the next page's cursor (None at the end)."""
    qs = filtered_runs(scope, filters)
    if filters.cursor is not None:
        # The plain bound lets SQLite start its index walk at the cursor too.
        qs = qs.filter(started__lte=filters.cursor[0]).filter(RowBefore(RunStarted(), RowKey(), *filters.cursor))
    # django-stubs types .values() rows by their literal fields only: list_fields()'s are missed.
    rows = cast(list[dict[str, Any]], list(
        qs.order_by(RunStarted().desc(), RowKey().desc()).values("id", **list_fields())[: limit + 1]
    ))
    for row in rows:
        _numbers(row, "started", "duration", "attempts", "progress")
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor(last["started"], last["id"])


def job_runs(scope: BoardScope, job_id: str, *, limit: int = 25) -> list[dict]:
    """The latest runs of one job, newest first (the jobId index)."""
    rows, _ = run_list(scope, RunFilters(since=0, job=job_id), limit=limit)
    return rows


def get_run(scope: BoardScope, run_id: str) -> RunRecord | None:
    """A run by id: a primary-key read."""
    return runs_of(scope).filter(namespace=RUNS, id=run_id).only("id", "value").first()


def last_hour_counts(scope: BoardScope, *, since: int, bucket_ms: int) -> list[dict[str, Any]]:
    """Runs started since ``since``, counted per (name, module, status, bucket): one
    range scan of (project, environment, namespace, startedAt) from ``(RUNS, since)``."""
    bucket = Floor(Func(RunStarted(), Value(bucket_ms), template="(%(expressions)s)", arg_joiner=" / "))
    rows = (
        runs_of(scope).filter(namespace=RUNS)
        # The range twice: alone for the planner's estimate (oqron_runs_started_stats),
        # as a row for the index's bounds (RowFrom says why).
        .alias(started=RunStarted()).filter(started__gte=since)
        .filter(RowFrom(F("namespace"), RunStarted(), RUNS, float(since)))
        .values(name=JsonText("name"), module=JsonText("module"), status=JsonText("status"), bucket=bucket)
        .annotate(count=Count("*")).order_by()
    )
    return [{**row, "bucket": int(row["bucket"])} for row in rows]


def runs_by_id(scope: BoardScope, ids: list[str]) -> dict[str, Mapping[str, Any]]:
    """Status, start and lateness of the given runs by id: one primary-key read."""
    if not ids:
        return {}
    rows = runs_of(scope).filter(namespace=RUNS, id__in=ids).values(
        "id", status=JsonText("status"), started=JsonText("startedAt"), late_ms=JsonText("lateMs"))
    return {row["id"]: row for row in rows}


def open_run_facts(scope: BoardScope, rolled: Mapping[str, str], *, since: int, until: int
                   ) -> dict[str, dict[str, Any]]:
    """What the rollup's buckets need to count each run of ``rolled`` (id -> the status it
    was rolled under; started in ``[since, until)``) as it is now: the runs of the window
    still in each such status, one range of ``oqron_runs_other_status_started_f8_idx``
    (ids only: no run is decoded), then name, module, status, jobId and queue of those
    that moved on, by primary key. A run not found is left out (deleted)."""
    if not rolled:
        return {}
    unchanged: dict[str, dict[str, Any]] = {}
    for status in sorted(set(rolled.values())):
        ids = (runs_of(scope).filter(namespace=RUNS)
               .alias(f_status=JsonText("status"), started=RunStarted())
               .filter(f_status=status, started__gte=since, started__lt=until).values_list("id", flat=True))
        unchanged.update({id: {"status": status} for id in ids if rolled.get(id) == status})
    changed = [id for id in rolled if id not in unchanged]
    if not changed:
        return unchanged
    rows = runs_of(scope).filter(namespace=RUNS, id__in=changed).values(
        "id", name=JsonText("name"), module=JsonText("module"), status=JsonText("status"), jobId=JsonText("jobId"),
        queue=JsonText("queue"))
    return {**unchanged, **{row.pop("id"): row for row in rows}}


def late_counts(scope: BoardScope, modules: tuple[str, ...], *, since: int, late_ms: int
                ) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (module, name) of ``modules``: runs started since ``since`` and how many of
    them fired more than ``late_ms`` late (one range of the startedAt index)."""
    rows = (
        runs_of(scope).filter(namespace=RUNS)
        .alias(started=RunStarted(), module=JsonText("module"), late_ms=JsonNumber("lateMs"))
        .filter(started__gte=since, module__in=modules)
        .values(kind=JsonText("module"), run_name=JsonText("name"))
        .annotate(total=Count("*"), late=Count("id", filter=Q(late_ms__gt=late_ms))).order_by()
    )
    return {(row["kind"], row["run_name"]): (row["total"], row["late"]) for row in rows}


def _numbers(row: dict, *keys: str) -> None:
    for key in keys:
        value = row.get(key)
        if value is None:
            continue
        try:
            number = float(value)
            row[key] = int(number) if number.is_integer() else number
        except (TypeError, ValueError):
            row[key] = None
