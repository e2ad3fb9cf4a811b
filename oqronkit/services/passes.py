"""What the reconciler's and the rescuer's passes did, for the board's plane drift.

Every pass publishes a small summary on the hot plane (one ephemeral key per service,
overwritten: the last pass, however often they run); a pass that repaired something,
failed, or was asked for by an operator is also kept in the durable namespace
``service_passes``, newest :data:`KEPT` only, so a Redis flush does not erase the record
of what repaired it. Writing one never fails the pass: it only describes it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from ..clock import now_ms
from ..errors import OqronError
from ..namespaces import SERVICE_PASSES
from ..planes import Planes

logger = logging.getLogger(__name__)
LAST_GROUP = "service-passes"
SERVICES = ("reconcile", "rescue")
#: Durable pass records kept (every service together); older ones are deleted on write.
KEPT = 40
#: Repaired job ids one record names at most (the counts are exact).
IDS_KEPT = 20
LAST_TTL_MS = 24 * 3600 * 1000


@dataclass
class ServicePass:
    """One pass of ``service``: when, how long, what it checked and repaired."""

    service: str
    started_at: int
    by: str
    manual: bool = False
    duration_ms: int = 0
    checked: int = 0
    repaired: dict[str, int] = field(default_factory=dict)  # action ("signalled", "stalled", "rescued") -> count
    jobs: list[dict[str, str]] = field(default_factory=list)  # {"queue", "job", "action"}, IDS_KEPT at most
    error: str | None = None

    def note(self, queue: str, job_id: str, action: str) -> None:
        self.repaired[action] = self.repaired.get(action, 0) + 1
        if len(self.jobs) < IDS_KEPT:
            self.jobs.append({"queue": queue, "job": job_id, "action": action})

    @property
    def total(self) -> int:
        return sum(self.repaired.values())

    def to_value(self) -> dict[str, Any]:
        return {"service": self.service, "startedAt": self.started_at, "by": self.by, "manual": self.manual,
                "durationMs": self.duration_ms, "checked": self.checked, "repaired": self.repaired,
                "jobs": self.jobs, "error": self.error}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> ServicePass:
        return cls(service=str(value.get("service", "")), started_at=int(value.get("startedAt") or 0),
                   by=str(value.get("by", "")), manual=bool(value.get("manual")),
                   duration_ms=int(value.get("durationMs") or 0), checked=int(value.get("checked") or 0),
                   repaired={str(k): int(v) for k, v in (value.get("repaired") or {}).items()},
                   jobs=[dict(j) for j in value.get("jobs") or []][:IDS_KEPT], error=value.get("error"))


def record_pass(engine: Planes, done: ServicePass) -> None:
    """Publish ``done`` as its service's last pass; keep it durably when it matters."""
    done.duration_ms = max(now_ms() - done.started_at, 0)
    value = done.to_value()
    try:
        engine.hot.kv_set(LAST_GROUP, {done.service: json.dumps(value)}, ttl_ms=LAST_TTL_MS, now=now_ms())
    except OqronError as exc:
        logger.info("could not publish the %s pass: %s", done.service, exc, extra={"action": "services.pass_publish"})
    if not (done.total or done.error or done.manual):
        return
    try:
        engine.durable.put(SERVICE_PASSES, f"{done.started_at:013d}-{done.service}", value)
        page = engine.durable.list(SERVICE_PASSES, order="inserted", descending=True, limit=KEPT + 20)
        stale = [record.id for record in page.records[KEPT:]]
        if stale:
            engine.durable.delete_many(SERVICE_PASSES, stale)
    except OqronError as exc:
        logger.info("could not keep the %s pass: %s", done.service, exc, extra={"action": "services.pass_keep"})


def last_passes(engine: Planes) -> dict[str, ServicePass | None]:
    """Each service's last pass as published on the hot plane (None: none since the
    hot plane last lost its keys, or no leader ran it yet)."""
    found = engine.hot.kv_get(LAST_GROUP, list(SERVICES), now_ms())
    passes: dict[str, ServicePass | None] = {}
    for service in SERVICES:
        raw = found.get(service)
        try:
            passes[service] = ServicePass.from_value(json.loads(raw)) if raw else None
        except (ValueError, TypeError, AttributeError):
            passes[service] = None
    return passes


def kept_passes(engine: Planes, *, limit: int = KEPT) -> list[ServicePass]:
    """The passes kept durably (repairs, failures, operators' runs), newest first."""
    page = engine.durable.list(SERVICE_PASSES, order="inserted", descending=True, limit=min(max(limit, 1), KEPT))
    return [ServicePass.from_value(dict(record.value)) for record in page.records]
