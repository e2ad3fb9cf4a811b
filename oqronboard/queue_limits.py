"""The Limits page's queue section: each queue whose definition record (the ``queue``
control records of oqron_records) states a rate limit or a global concurrency, and how
many claims those limits held back in the last hour (the hot plane's per-minute counts,
``HotPlane.limit_held``)."""

from __future__ import annotations

from dataclasses import dataclass

from oqronboard.definitions.models import Record
from oqronkit.errors import OqronError
from oqronkit.namespaces import QUEUE
from oqronkit.queues.limits import limits_from_record

from .base.scope import BoardScope

#: Most queue records read for the section.
MAX_QUEUES = 500


@dataclass
class QueueLimitRow:
    name: str
    rate: tuple[int, int] | None  # (starts, window ms)
    global_concurrency: int | None
    held: int | None = None  # None: the hot plane did not answer


def queue_limit_rows(scope: BoardScope, now: int) -> tuple[list[QueueLimitRow], str | None]:
    """The limited queues by name, and the hot plane's error if it did not answer."""
    records = Record.objects.scoped(scope.project, scope.environment).filter(namespace=QUEUE) \
        .order_by("id").values_list("id", "value")[:MAX_QUEUES]
    rows = []
    for name, value in records:
        limits = limits_from_record(value) if isinstance(value, dict) else None
        if limits is not None:
            rows.append(QueueLimitRow(name, limits.rate, limits.concurrency))
    try:
        for row in rows:
            row.held = scope.engine.hot.limit_held(row.name, now)
    except OqronError as exc:
        return rows, str(exc)
    return rows, None
