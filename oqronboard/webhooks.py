"""The webhooks page's numbers: per webhook its endpoints (enabled or disabled with the
reason, the breaker's state and since when), deliveries in flight and dead; per
endpoint the last hour's success rate, p95 latency and last failure.

Three SQL queries, all indexed and bounded: the webhook records (one primary-key range
of oqron_records), the last hour's attempts newest first (at most ``RECENT_CAP``, on
the module index of oqron_runs) and each delivery queue's jobs and dead letters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from oqronboard.definitions.webhooks import WebhookRecords, webhook_records
from oqronboard.jobs.queries import queue_sizes
from oqronboard.runs.webhooks import RECENT_CAP, recent_attempts
from oqronkit.clock import now_ms
from oqronkit.webhooks.webhook import delivery_queue_name

from .base.filters import HOUR_MS
from .base.scope import BoardScope
from .base.values import json_int


@dataclass
class EndpointRow:
    """One endpoint as the board shows it."""

    webhook: str
    id: str
    url: str
    events: list[str]
    enabled: bool
    disabled_reason: str
    disabled_at: int | None
    description: str
    breaker: str  # closed | open | half-open
    breaker_since: int | None
    reopens_at: int | None
    consecutive_failures: int
    attempts: int = 0
    succeeded: int = 0
    failed: int = 0
    p95_ms: int | None = None
    last_failure: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)  # as read: a secret one's value masked

    @property
    def success_rate(self) -> float | None:
        """Succeeded over finished attempts in the last hour (None before any)."""
        finished = self.succeeded + self.failed
        return 100 * self.succeeded / finished if finished else None


@dataclass
class WebhookRow:
    name: str
    control: dict[str, Any]
    endpoints: list[EndpointRow] = field(default_factory=list)
    in_flight: int = 0
    dead: int = 0

    @property
    def queue(self) -> str:
        return delivery_queue_name(self.name)

    @property
    def paused(self) -> bool:
        return bool(self.control.get("paused"))

    def get(self, endpoint: str) -> EndpointRow | None:
        return next((e for e in self.endpoints if e.id == endpoint), None)


@dataclass
class WebhooksOverview:
    now: int
    webhooks: list[WebhookRow]
    capped: bool = False
    recent_capped: bool = False

    def get(self, name: str) -> WebhookRow | None:
        return next((w for w in self.webhooks if w.name == name), None)


def build(scope: BoardScope, *, webhook: str | None = None, stats: bool = True) -> WebhooksOverview:
    """Every webhook of the scope (or one), in three queries (one without ``stats``)."""
    now = now_ms()
    records, capped = webhook_records(scope, webhook=webhook)
    rows = [_webhook_row(found) for found in records.values()]
    overview = WebhooksOverview(now=now, webhooks=rows, capped=capped)
    if not stats or not rows:
        return overview
    recent = recent_attempts(scope, now - HOUR_MS)
    overview.recent_capped = len(recent) >= RECENT_CAP
    _add_stats(rows, recent)
    sizes = queue_sizes(scope, [w.queue for w in rows])
    for row in rows:
        row.in_flight, row.dead = sizes.get(row.queue, (0, 0))
    return overview


def _webhook_row(found: WebhookRecords) -> WebhookRow:
    row = WebhookRow(name=found.name, control=found.control or {})
    for endpoint_id, value in sorted(found.endpoints.items()):
        cb = found.breakers.get(endpoint_id, {})
        events, headers = value.get("events"), value.get("headers")
        state = cb.get("state") if cb.get("state") in ("closed", "open", "half-open") else "closed"
        row.endpoints.append(EndpointRow(
            webhook=found.name, id=endpoint_id, url=str(value.get("url", "")),
            events=[str(e) for e in events] if isinstance(events, list) else [],
            enabled=value.get("enabled") is not False, disabled_reason=str(value.get("disabledReason") or ""),
            disabled_at=json_int(value.get("disabledAt")), description=str(value.get("description") or ""),
            breaker=str(state), breaker_since=json_int(cb.get("since")), reopens_at=json_int(cb.get("reopensAt")),
            consecutive_failures=json_int(cb.get("consecutiveFailures")) or 0,
            last_failure=_breaker_failure(cb.get("lastFailure")),
            headers={str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}))
    return row


def _breaker_failure(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    return {"at": json_int(value.get("at")), "status": json_int(value.get("status")),
            "error": str(value.get("error") or ""), "run": None}


def _add_stats(rows: list[WebhookRow], recent: list[dict[str, Any]]) -> None:
    """Per endpoint: attempts, successes, failures, p95 latency and the newest failure."""
    latencies: dict[tuple[str, str], list[int]] = {}
    endpoints = {(w.name, e.id): e for w in rows for e in w.endpoints}
    for attempt in recent:  # newest first
        endpoint = endpoints.get((attempt["webhook"], attempt["endpoint"]))
        if endpoint is None:
            continue
        endpoint.attempts += 1
        if attempt["status"] == "completed":
            endpoint.succeeded += 1
        elif attempt["status"] == "failed":
            endpoint.failed += 1
            if endpoint.failed == 1:  # the newest failure of the hour beats the breaker's record
                endpoint.last_failure = {"at": attempt["started"], "status": attempt["http_status"],
                                         "error": attempt["error_message"] or "", "run": attempt["id"]}
        latency = attempt["http_ms"] if attempt["http_ms"] is not None else attempt["duration"]
        if latency is not None and attempt["status"] in ("completed", "failed"):
            latencies.setdefault((attempt["webhook"], attempt["endpoint"]), []).append(latency)
    for key, values in latencies.items():
        endpoints[key].p95_ms = p95(values)


def p95(values: list[int]) -> int | None:
    """The 95th percentile (nearest rank) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(0.95 * len(ordered)) - 1, 0)]
