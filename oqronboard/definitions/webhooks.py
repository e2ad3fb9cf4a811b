"""The webhook records of oqron_records: each webhook's control record (``webhook``),
its endpoints (``webhook_endpoints:<webhook>``) and their circuit breakers
(``webhook_cb``, id ``<webhook>/<endpoint>``), in one primary-key range read. An
endpoint's secret headers are masked as they are read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from oqronboard.base.scope import BoardScope
from oqronkit.namespaces import (
    WEBHOOK,
    WEBHOOK_CB,
    WEBHOOK_ENDPOINTS_PREFIX,
    webhook_endpoints_namespace,
    webhook_of_endpoints,
)
from oqronkit.webhooks.header_secrets import masked_endpoint

from .queries import records_of

MAX_WEBHOOK_RECORDS = 5000
# Every webhook_endpoints:<webhook> namespace sorts from the prefix up to this (':' + 1 is ';').
_ENDPOINTS_END = WEBHOOK_ENDPOINTS_PREFIX[:-1] + ";"


@dataclass
class WebhookRecords:
    """What oqron_records holds about one webhook."""

    name: str
    control: dict[str, Any] | None = None
    endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    breakers: dict[str, dict[str, Any]] = field(default_factory=dict)  # endpoint id -> webhook_cb value


def webhook_records(scope: BoardScope, *, webhook: str | None = None, limit: int = MAX_WEBHOOK_RECORDS
                    ) -> tuple[dict[str, WebhookRecords], bool]:
    """Every webhook's records by name (or one webhook's), and whether the read was capped."""
    if webhook is None:
        where = Q(namespace__in=[WEBHOOK, WEBHOOK_CB]) | Q(namespace__gt=WEBHOOK_ENDPOINTS_PREFIX,
                                                           namespace__lt=_ENDPOINTS_END)
    else:
        # A breaker's id is "<webhook>/<endpoint>": '/' + 1 is '0', so this range is one webhook's.
        where = (Q(namespace=WEBHOOK, id=webhook) | Q(namespace=webhook_endpoints_namespace(webhook))
                 | Q(namespace=WEBHOOK_CB, id__gt=webhook + "/", id__lt=webhook + "0"))
    rows = list(records_of(scope).filter(where).order_by("namespace", "id").values("namespace", "id", "value")
                [: limit + 1])
    found: dict[str, WebhookRecords] = {}
    for row in rows[:limit]:
        _file(found, row["namespace"], row["id"], row["value"])
    if webhook is not None:
        found = {k: v for k, v in found.items() if k == webhook}
    return dict(sorted(found.items())), len(rows) > limit


def _file(found: dict[str, WebhookRecords], namespace: str, id: str, value: Any) -> None:
    if not isinstance(value, dict):
        return
    if namespace == WEBHOOK:
        _webhook(found, id).control = value
    elif namespace == WEBHOOK_CB:
        # The record names its webhook and endpoint: the id is never split.
        name, endpoint = value.get("webhook"), value.get("endpointId")
        if isinstance(name, str) and isinstance(endpoint, str) and id == f"{name}/{endpoint}":
            _webhook(found, name).breakers[endpoint] = value
    else:
        name = webhook_of_endpoints(namespace)
        if name:
            _webhook(found, name).endpoints[id] = masked_endpoint(value)


def _webhook(found: dict[str, WebhookRecords], name: str) -> WebhookRecords:
    record = found.get(name)
    if record is None:
        record = found[name] = WebhookRecords(name)
    return record
