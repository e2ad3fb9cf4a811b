"""The webhook pages: every webhook with its endpoints (live), the delivery log (each
attempt, newest first, keyset pages, filters on webhook, endpoint, event, status and
time) and a delivery with its attempts side by side. They read oqron_records,
oqron_runs and oqron_jobs, so they live above the apps; the actions are
:mod:`oqronboard.views.webhook_actions`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponse

from oqronboard.base.templating import render
from oqronboard.jobs.queries import get_job
from oqronboard.runs.webhooks import attempt_page, delivery_attempts
from oqronkit.clock import now_ms
from oqronkit.namespaces import is_dead_letters
from oqronkit.queues.runs import RUN_STATUSES
from oqronkit.webhooks.webhook import delivery_queue_name

from .. import webhooks
from ..base.audit import ACTION_CAP
from ..base.filters import WINDOWS
from ..base.pages import BoardRequest, board_view, scope_of
from ..base.scope import BoardScope
from ..webhook_forms import FILTER_KEYS, delivery_filters

NO_WEBHOOK = "No webhook of that name in this project and environment."


@board_view
def webhooks_page(request: BoardRequest) -> HttpResponse:
    """Every webhook and its endpoints; ``?panel=live`` renders the live panel for htmx."""
    context = {"overview": webhooks.build(scope_of(request)), "rendered_at": now_ms()}
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/webhooks.html#live", context)
    return render(request, "oqronboard/webhooks.html", context)


def webhook_or_404(scope: BoardScope, name: str, *, stats: bool = False) -> webhooks.WebhookRow:
    found = webhooks.build(scope, webhook=name, stats=stats).get(name)
    if found is None:
        raise Http404(NO_WEBHOOK)
    return found


@board_view
def delivery_log(request: BoardRequest) -> HttpResponse:
    """Every attempt of every delivery, newest first; ``load more`` answers just the rows."""
    scope = scope_of(request)
    filters, data = delivery_filters(request.GET)
    rows, next_cursor = attempt_page(scope, filters)
    query = {k: v for k, v in request.GET.items() if k not in ("cursor", "panel") and v}
    more = bool(request.htmx and filters.cursor is not None)
    context: dict[str, Any] = {
        "rows": rows, "filters": data, "windows": list(WINDOWS), "statuses": RUN_STATUSES,
        "rendered_at": now_ms(), "action_cap": ACTION_CAP,
        "next_query": urlencode({**query, "cursor": next_cursor}) if next_cursor else "",
        "filter_items": [(k, request.GET[k]) for k in FILTER_KEYS if request.GET.get(k)],
        "filtered": any(data[k] for k in ("webhook", "endpoint", "event", "status", "before")),
        "names": [w.name for w in webhooks.build(scope, stats=False).webhooks] if not more else [],
    }
    return render(request, "oqronboard/webhook_log.html#rows" if more else "oqronboard/webhook_log.html", context)


@board_view
def delivery_detail(request: BoardRequest, webhook: str, delivery_id: str) -> HttpResponse:
    """One delivery: its job (in flight or dead) and its attempts side by side, each
    request beside its response (bodies as escaped text)."""
    scope = scope_of(request)
    runs = delivery_attempts(scope, webhook, delivery_id)
    job = get_job(scope, delivery_queue_name(webhook), delivery_id)
    if not runs and job is None:
        raise Http404("No delivery with this id in this webhook, project and environment (its runs may have "
                      "been pruned).")
    row = webhooks.build(scope, webhook=webhook, stats=False).get(webhook)
    value = job.value if job is not None and isinstance(job.value, dict) else {}
    dead = job is not None and is_dead_letters(job.namespace)
    newest = runs[-1] if runs else {}
    data = value.get("data") if isinstance(value.get("data"), dict) else newest.get("input") or {}
    endpoint_id = str((data or {}).get("endpointId") or newest.get("endpointId") or "")
    context = {
        "webhook": webhook, "delivery_id": delivery_id, "runs": runs, "job": job is not None, "dead": dead,
        "job_status": "dead" if dead else value.get("status"), "job_error": value.get("lastError") or {},
        "event": (data or {}).get("event") or newest.get("event"), "endpoint_id": endpoint_id,
        "endpoint": row.get(endpoint_id) if row is not None else None,
        "message_id": (data or {}).get("messageId") or newest.get("messageId"),
        "last_status": str(newest.get("status") or ""), "resendable": dead or (job is None and bool(runs)),
        "queue": delivery_queue_name(webhook),
        "correlation_id": value.get("correlationId") or newest.get("correlationId"),
    }
    return render(request, "oqronboard/webhook_delivery.html", context)
