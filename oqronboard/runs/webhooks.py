"""The runs of webhook deliveries (``module`` ``webhook``, one per attempt), as the
webhook pages read them from oqron_runs.

- the delivery log, newest first: one webhook's attempts on
  ``oqron_runs_run_name_started_f8_idx`` (``name`` is ``webhook/<webhook>``), every
  webhook's on ``oqron_runs_other_module_started_f8_idx`` (module ``webhook``), keyset
  paged on ``(startedAt, id)`` and bounded by a time window; endpoint, event and
  status filter inside that range;
- the last hour's attempts, newest first, at most ``RECENT_CAP`` (success rate and
  p95 latency are computed from them);
- a delivery's attempts: the runs of its job (the jobId index), their requests' secret
  headers masked (a run an older version wrote holds their values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.db.models import F

from oqronboard.base.cursors import PAGE_SIZE, encode_cursor
from oqronboard.base.expressions import JsonText, RowBefore, RowKey, RunStarted
from oqronboard.base.scope import BoardScope
from oqronkit.webhooks.header_secrets import masked_attempt
from oqronkit.webhooks.webhook import delivery_queue_name

from .queries import list_fields, runs_of

MODULE = "webhook"
# Attempts of the last hour read at most (a busier hour's figures are over its newest ones).
RECENT_CAP = 5000
MAX_DELIVERY_ATTEMPTS = 20


@dataclass(frozen=True)
class AttemptFilters:
    """Validated filters of the delivery log (see the shell's webhook forms)."""

    since: int
    webhook: str = ""
    endpoint: str = ""
    event: str = ""
    status: str = ""
    before: int | None = None
    cursor: tuple[int | float, str] | None = None


def attempt_fields() -> dict[str, Any]:
    """What a log row shows: never a request or response body."""
    return {**list_fields(), "webhook": JsonText("webhook"), "endpoint": JsonText("endpointId"),
            "event": JsonText("event"), "message": JsonText("messageId"),
            "http_status": JsonText("response", "status"), "http_ms": JsonText("response", "durationMs")}


def attempts(scope: BoardScope, filters: AttemptFilters) -> Any:
    """The attempts matching ``filters``, newest first (a queryset, not yet read)."""
    qs = runs_of(scope).alias(f_module=JsonText("module")).filter(f_module=MODULE)
    if filters.webhook:
        qs = qs.alias(f_name=JsonText("name")).filter(f_name=delivery_queue_name(filters.webhook))
    for key, value in (("endpointId", filters.endpoint), ("event", filters.event), ("status", filters.status)):
        if value:
            qs = qs.alias(**{f"f_{key}": JsonText(key)}).filter(**{f"f_{key}": value})
    qs = qs.alias(started=RunStarted()).filter(started__gte=filters.since)
    if filters.before is not None:
        qs = qs.filter(started__lt=filters.before)
    if filters.cursor is not None:
        qs = qs.filter(started__lte=filters.cursor[0]).filter(RowBefore(RunStarted(), RowKey(), *filters.cursor))
    return qs.order_by(RunStarted().desc(), RowKey().desc())


def attempt_page(scope: BoardScope, filters: AttemptFilters, *, limit: int = PAGE_SIZE
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the delivery log, newest first; the next page's cursor."""
    rows = cast(list[dict[str, Any]], list(attempts(scope, filters).values("id", **attempt_fields())[: limit + 1]))
    for row in rows:
        for key in ("started", "duration", "attempts", "http_status", "http_ms"):
            row[key] = number(row[key])
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1]["started"] or 0, rows[-1]["id"])


def matching_deliveries(scope: BoardScope, filters: AttemptFilters, *, limit: int) -> dict[str, dict[str, Any]]:
    """The deliveries of the newest ``limit`` matching attempts: ``(webhook, delivery id)``
    as ``"<webhook>\\n<id>"`` -> the newest attempt's input (what a resend sends again)."""
    rows = attempts(scope, filters).values(w=JsonText("webhook"), job=JsonText("jobId"), input=F("value__input"))
    found: dict[str, dict[str, Any]] = {}
    for row in rows[:limit]:
        if isinstance(row["w"], str) and isinstance(row["job"], str):
            found.setdefault(f"{row['w']}\n{row['job']}", row["input"] if isinstance(row["input"], dict) else {})
    return found


def recent_attempts(scope: BoardScope, since: int, *, cap: int = RECENT_CAP) -> list[dict[str, Any]]:
    """The newest attempts (at most ``cap``) started at or after ``since``, every webhook's."""
    rows = attempts(scope, AttemptFilters(since=since)).values(
        "id", webhook=JsonText("webhook"), endpoint=JsonText("endpointId"), status=JsonText("status"),
        started=JsonText("startedAt"), duration=JsonText("durationMs"), http_status=JsonText("response", "status"),
        http_ms=JsonText("response", "durationMs"), error_message=JsonText("error", "message"))[:cap]
    out = []
    for row in rows:
        for key in ("started", "duration", "http_status", "http_ms"):
            row[key] = number(row[key])
        out.append(row)
    return out


def delivery_attempts(scope: BoardScope, webhook: str, delivery_id: str) -> list[dict[str, Any]]:
    """A delivery's newest attempts in full, oldest first: the runs of its job (the jobId
    index), every secret header of their requests masked."""
    qs = (runs_of(scope).alias(f_jobId=JsonText("jobId"), f_name=JsonText("name"))
          .filter(f_jobId=delivery_id, f_name=delivery_queue_name(webhook)))
    records = qs.order_by(RunStarted().desc(), RowKey().desc()).only("id", "value")[:MAX_DELIVERY_ATTEMPTS]
    return [{**masked_attempt(r.value), "id": r.id} for r in reversed(list(records)) if isinstance(r.value, dict)]


def number(value: Any) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None
