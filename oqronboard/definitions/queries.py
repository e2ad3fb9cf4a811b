"""Queries over oqron_records: definitions, control state, the audit log, and the
scopes the switcher offers."""

from __future__ import annotations

from typing import Any

from oqronboard.base.scope import BoardScope, configured_scope
from oqronkit.namespaces import QUEUE, webhook_of_endpoints
from oqronkit.webhooks.header_secrets import masked_endpoint

from .models import Record, RecordQuerySet

DEFINITION_KINDS = ("definition", "control")
MAX_DEFINITIONS = 500


def records_of(scope: BoardScope) -> RecordQuerySet:
    return Record.objects.scoped(scope.project, scope.environment)


def definitions(scope: BoardScope, *, limit: int = MAX_DEFINITIONS, annotate: dict[str, Any] | None = None
                ) -> list[Record]:
    """Every definition and control record (kind index), by kind, namespace and id;
    ``annotate`` adds per-row expressions (the page's queue usage) to the one query. A
    webhook endpoint's secret headers are masked (its record may predate the masking)."""
    records = list(
        records_of(scope).of_kind(*DEFINITION_KINDS).only("namespace", "record_kind", "id", "value", "inserted_at")
        .annotate(**(annotate or {})).order_by("record_kind", "namespace", "id")[:limit]
    )
    for record in records:
        if webhook_of_endpoints(record.namespace):
            record.value = masked_endpoint(record.value)
    return records


def queue_controls(scope: BoardScope) -> dict[str, dict[str, Any]]:
    """Each queue's control record (paused, concurrency, handler...) by queue name: a
    primary-key prefix read of the ``queue`` namespace."""
    rows = records_of(scope).filter(namespace=QUEUE).order_by("id").values_list("id", "value")[:1000]
    return {name: value if isinstance(value, dict) else {} for name, value in rows}


def queue_control(scope: BoardScope, name: str) -> dict[str, Any] | None:
    row = records_of(scope).filter(namespace=QUEUE, id=name).values_list("value", flat=True).first()
    return row if isinstance(row, dict) else None


def audit_entries(
    scope: BoardScope, namespace: str, *, before: str | None = None, limit: int = 50
) -> tuple[list[dict], str | None]:
    """Audit records of ``namespace`` newest first (ids start with the time), keyset
    paged on the id: a backward walk of the primary key."""
    qs = records_of(scope).filter(namespace=namespace)
    if before:
        qs = qs.filter(id__lt=before)
    rows = [v for v in qs.order_by("-id").values_list("value", flat=True)[: limit + 1] if isinstance(v, dict)]
    if len(rows) <= limit:
        return rows, None
    return rows[:limit], str(rows[limit - 1].get("id", ""))


def known_scopes(current: BoardScope | None = None) -> list[BoardScope]:
    """Every scope with definitions or control state (those a worker or an app ever
    registered), plus the configured one and ``current``; sorted. Callers offer only
    those the user may see (``oqronboard.base.roles.Access.visible``)."""
    found = {
        BoardScope(p, e)
        for p, e in Record.objects.of_kind("control", "definition")
        .order_by()
        .values_list("project", "environment")
        .distinct()
    }
    found.add(configured_scope())
    if current is not None:
        found.add(current)
    return sorted(found, key=lambda s: (s.project, s.environment))
