"""The operator audit log as the board writes it: every action the board, the admin or
the JSON API takes becomes one record shaped and written by :mod:`oqronkit.audit`
(namespace ``audit``, a copy per affected job), the same shape the CLI writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oqronkit.audit import ACTION_CAP, MAX_IDS_KEPT, MAX_JOB_LINKS, audit_entry, by_queue, new_audit_id, save_audit
from oqronkit.clock import now_ms

from .scope import BoardScope
from .shared import new_generation

logger = logging.getLogger(__name__)
__all__ = ["ACTION_CAP", "MAX_IDS_KEPT", "MAX_JOB_LINKS", "Action", "by_queue", "new_audit_id", "summarise",
           "targets"]


@dataclass
class Action:
    """An operator action being performed; :meth:`save` writes its audit records."""

    scope: BoardScope
    user: str
    action: str
    source: str = "board"
    queue: str | None = None
    targets: list[tuple[str, str]] = field(default_factory=list)  # (queue, job id)
    extra: dict[str, Any] = field(default_factory=dict)

    def save(self, *, ok: bool, result: Any) -> dict[str, Any]:
        """Write the audit record (and the per-job copies); never raises: an action
        already done must not be reported as failed because its audit write failed."""
        entry = audit_entry(at=now_ms(), user=self.user, action=self.action, source=self.source, queue=self.queue,
                            targets=self.targets, ok=ok, result=result, project=self.scope.project,
                            environment=self.scope.environment, extra=self.extra)
        new_generation(self.scope)  # the pages this action changed are read afresh
        save_audit(self.scope.engine, entry, self.targets)
        logger.info("%s by %s on %d job(s): %s", self.action, self.user, len(self.targets), result,
                    extra={"action": f"board.{self.action}"})
        return entry


def targets(queue: str, ids: Iterable[str]) -> list[tuple[str, str]]:
    return [(queue, i) for i in ids]


def summarise(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
