"""The operator audit log: every action the board (or the admin) takes, as records.

Written through the engine's durable plane, in the custom namespace ``audit`` (record
kind ``record``, table ``oqron_records``), one record per action: who, when, what, on
which ids, and the result. Each affected job also gets a copy in
``audit:job:<queue>:<job id>`` so its detail page lists "who did what to me" with one
primary-key range read. Ids start with the time in zero-padded milliseconds, so the
primary key orders the log newest first without another index.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oqronkit import OqronError, RecordWrite
from oqronkit.clock import now_ms
from oqronkit.codec import text_problem
from oqronkit.namespaces import AUDIT, job_audit_namespace

from .scope import BoardScope
from .shared import new_generation

logger = logging.getLogger(__name__)
# What one request acts on at most (the board's and the admin's actions alike).
ACTION_CAP = 1000
# A bulk action keeps this many ids in its record and links this many jobs to it.
MAX_IDS_KEPT = 1000
MAX_JOB_LINKS = 1000


def new_audit_id(at: int) -> str:
    return f"{at:013d}-{secrets.token_hex(4)}"


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
        at = now_ms()
        entry = {
            "id": new_audit_id(at), "at": at, "user": self.user, "action": self.action, "source": self.source,
            "queue": self.queue, "ids": [f"{q}/{j}" for q, j in self.targets[:MAX_IDS_KEPT]],
            "idCount": len(self.targets), "ok": ok, "result": result,
            "project": self.scope.project, "environment": self.scope.environment, **self.extra,
        }
        writes = [RecordWrite(AUDIT, entry["id"], entry)]
        # A job whose id the engine no longer accepts in a name (a newline, from an older
        # version) gets no copy: one refused namespace would fail the whole write.
        links = (job_audit_namespace(q, j) for q, j in self.targets[:MAX_JOB_LINKS])
        writes += [RecordWrite(ns, entry["id"], entry) for ns in links if text_problem(ns) is None]
        new_generation(self.scope)  # the pages this action changed are read afresh
        try:
            self.scope.engine.durable.put_many(writes)
        except OqronError as exc:
            logger.error("could not write the audit record of %s by %s: %s", self.action, self.user, exc,
                         extra={"action": "board.audit_failed"})
        logger.info("%s by %s on %d job(s): %s", self.action, self.user, len(self.targets), result,
                    extra={"action": f"board.{self.action}"})
        return entry


def targets(queue: str, ids: Iterable[str]) -> list[tuple[str, str]]:
    return [(queue, i) for i in ids]


def by_queue(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(queue, job id)`` targets grouped by queue: one engine call per queue."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for queue, job_id in pairs:
        grouped[queue].append(job_id)
    return grouped


def summarise(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
