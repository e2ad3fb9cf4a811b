"""Module logs (``module_logs:<module>``, kind ``log``) newest first: ids start with
their time in hex (ids.new_id), so a window is an id range of the primary key and the
keyset page walks it backwards."""

from __future__ import annotations

from typing import Any

from oqronboard.base.expressions import JsonText
from oqronboard.base.scope import BoardScope
from oqronkit.config import LOG_MODULES
from oqronkit.namespaces import module_logs_namespace

from .queries import records_of

LEVELS = ("debug", "info", "warning", "error", "critical")


def log_entries(scope: BoardScope, *, module: str | None, level: str | None, since: int, text: str | None,
                before: str | None, limit: int = 50) -> tuple[list[dict[str, Any]], str | None]:
    """Entries of ``module`` (every module when None) at ``level`` or above, logged since
    ``since`` (epoch ms), whose message holds ``text``; and the next page's ``before``."""
    modules = [module] if module else list(LOG_MODULES)
    qs = records_of(scope).filter(namespace__in=[module_logs_namespace(m) for m in modules],
                                  id__gte=f"{max(since, 0):012x}")
    if before:
        qs = qs.filter(id__lt=before)
    if level:
        qs = qs.alias(f_level=JsonText("level")).filter(f_level__in=LEVELS[LEVELS.index(level):])
    if text:
        qs = qs.alias(f_message=JsonText("message")).filter(f_message__icontains=text)
    found = list(qs.order_by("-id").values_list("id", "value")[: limit + 1])
    rows = [{**value, "id": id} for id, value in found[:limit] if isinstance(value, dict)]
    return rows, (found[limit - 1][0] if len(found) > limit else None)
