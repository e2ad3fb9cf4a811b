"""A webhook's operator actions: enable or disable an endpoint (with the reason),
resend one delivery, or resend every delivery the log showed (its filters, as of the
page's render time, at most ``ACTION_CAP`` attempts, after a confirmation that says
how many; or every match, however many, as a tracked operation the workers run). Each
goes through the engine's :class:`~oqronkit.webhooks.webhook.Webhook` built on the
board's scoped engine, is permission checked and audited."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronboard.runs.webhooks import delivery_attempts, matching_deliveries
from oqronkit.errors import InvalidJob, JobNotFound
from oqronkit.webhooks.handles import operator_webhook
from oqronkit.webhooks.webhook import Webhook, delivery_queue_name

from ..base.audit import ACTION_CAP, Action, summarise, targets
from ..base.pages import BoardRequest, back, board_view, refresh_others, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..webhook_forms import FILTER_KEYS, delivery_filters, disable_reason, rendered_at
from ..webhooks import EndpointRow, WebhookRow
from .operation_targets import start_resend
from .webhooks import webhook_or_404

NO_ENDPOINT = "No endpoint of that id on this webhook."


def engine_webhook(scope: BoardScope, row: WebhookRow) -> Webhook:
    """The engine's webhook on the scope's engine, with the stored settings (a resent
    delivery gets the workers' schedule); its secrets are placeholders: the board never signs."""
    return operator_webhook(scope.engine, row.name, row.control)


def endpoint_or_404(scope: BoardScope, webhook: str, endpoint: str) -> tuple[WebhookRow, EndpointRow]:
    row = webhook_or_404(scope, webhook)
    found = row.get(endpoint)
    if found is None:
        raise Http404(NO_ENDPOINT)
    return row, found


def _audit(request: BoardRequest, row: WebhookRow, action: str, **extra: Any) -> Action:
    return Action(scope_of(request), request.user.get_username(), action, queue=row.queue,
                  extra={"webhook": row.name, **extra})


def _answer(request: BoardRequest, ok: bool, message: str, fallback: str) -> HttpResponse:
    """htmx: the message for the page's result area, every live panel refreshed;
    otherwise a flash message and back to where the form was."""
    if request.htmx:
        return refresh_others(render(request, "oqronboard/webhooks.html#result", {"ok": ok, "message": message}))
    (messages.success if ok else messages.warning)(request, message)
    return back(request, fallback)


@require_POST
@board_view
@operator_required
def endpoint_enable(request: BoardRequest, webhook: str, endpoint: str) -> HttpResponse:
    """Enable an endpoint again (the engine also closes its breaker)."""
    row, found = endpoint_or_404(scope_of(request), webhook, endpoint)
    engine_webhook(scope_of(request), row).enable_endpoint(found.id)
    message = f"Endpoint {found.id} of webhook {row.name} enabled; its breaker is closed."
    _audit(request, row, "enable-endpoint", endpoint=found.id, target=f"endpoint {found.id} of webhook {row.name}",
           wasEnabled=found.enabled).save(ok=True, result=message)
    return _answer(request, True, message, reverse("oqronboard:webhooks"))


@require_POST
@board_view
@operator_required
def endpoint_disable(request: BoardRequest, webhook: str, endpoint: str) -> HttpResponse:
    """Disable an endpoint with the operator's reason (kept on its record)."""
    row, found = endpoint_or_404(scope_of(request), webhook, endpoint)
    reason = disable_reason(request.POST)
    engine_webhook(scope_of(request), row).disable_endpoint(found.id, reason)
    message = f"Endpoint {found.id} of webhook {row.name} disabled: {reason}"
    _audit(request, row, "disable-endpoint", endpoint=found.id, reason=reason,
           target=f"endpoint {found.id} of webhook {row.name}", wasEnabled=found.enabled).save(ok=True, result=message)
    return _answer(request, True, message, reverse("oqronboard:webhooks"))


def _resend(hook: Webhook, delivery_id: str, delivered: dict[str, Any] | None) -> str:
    """``resent``, ``queued`` (still waiting: left as it is) or ``failed``."""
    before = hook.queue.get_job(delivery_id)
    if before is not None and before.status != "dead":
        return "queued"
    try:
        hook.resend(delivery_id, delivered=delivered or None)
    except (JobNotFound, InvalidJob):
        return "failed"
    return "resent"


@require_POST
@board_view
@operator_required
def delivery_resend(request: BoardRequest, webhook: str, delivery_id: str) -> HttpResponse:
    """Send one delivery again: a dead letter is retried, a completed one is added
    again from its newest run's input (same webhook-id and body)."""
    scope = scope_of(request)
    row = webhook_or_404(scope, webhook)
    runs = delivery_attempts(scope, webhook, delivery_id)
    hook = engine_webhook(scope, row)
    if not runs and hook.queue.get_job(delivery_id) is None:
        raise Http404("No delivery with this id in this webhook, project and environment.")
    delivered = runs[-1].get("input") if runs and isinstance(runs[-1].get("input"), dict) else None
    outcome = _resend(hook, delivery_id, delivered)
    message = {"resent": f"Delivery {delivery_id} of webhook {row.name} sent again.",
               "queued": f"Delivery {delivery_id} is still queued: it will be delivered as it is.",
               "failed": f"Delivery {delivery_id} cannot be sent again: neither its job nor a run's input is left."
               }[outcome]
    action = _audit(request, row, "resend", target=f"delivery {delivery_id} of webhook {row.name}")
    action.targets = targets(row.queue, [delivery_id])
    action.save(ok=outcome == "resent", result=message)
    return _answer(request, outcome == "resent", message, reverse("oqronboard:webhook-delivery", args=[webhook,
                                                                                                       delivery_id]))


@require_POST
@board_view
@operator_required
def resend_matching(request: BoardRequest) -> HttpResponse:
    """POST: a confirmation saying how many deliveries the log's filters match (as of
    the page's render time); POST confirmed: send them again, audited; confirmed and
    ``tracked``: a tracked operation sends every match (no cap), its page opens."""
    scope = scope_of(request)
    at = rendered_at(request.POST)
    filters, data = delivery_filters(request.POST, rendered_at=at)
    if request.POST.get("confirmed") == "on" and request.POST.get("tracked") == "on":
        # Every match, by the workers, no cap: the operation's page shows its progress.
        shown_filters = {k: data[k] for k in FILTER_KEYS if data.get(k)}
        op = start_resend(scope, request.user.get_username(), filters, shown_filters)
        messages.success(request, f"Operation started: {op.name}.")
        return redirect("oqronboard:operation", op.id)
    found = matching_deliveries(scope, filters, limit=ACTION_CAP)
    shown = [(k, request.POST[k]) for k in FILTER_KEYS if request.POST.get(k)]
    log_url = reverse("oqronboard:webhook-log") + (f"?{urlencode(shown)}" if shown else "")
    if request.POST.get("confirmed") != "on":
        context = {"count": len(found), "ids": [k.split("\n", 1)[1] for k in list(found)[:20]], "filters": data,
                   "filter_items": shown,
                   "rendered_at": at, "capped": len(found) >= ACTION_CAP, "action_cap": ACTION_CAP,
                   "log_url": log_url}
        return render(request, "oqronboard/webhook_resend.html", context)
    outcomes = _resend_all(scope, found)
    resent = outcomes["resent"]
    message = f"Sent {len(resent)} of {len(found)} delivery(ies) again"
    if outcomes["queued"]:
        message += f"; {len(outcomes['queued'])} still queued, left as they are"
    if outcomes["failed"]:
        message += f"; {len(outcomes['failed'])} could not be (no job or run input left)"
    message += "."
    action = Action(scope, request.user.get_username(), "resend", queue=None,
                    extra={"filters": {k: data[k] for k in FILTER_KEYS if data.get(k)}, "renderedAt": at,
                           "target": "deliveries matching the log's filters", "count": len(found)})
    action.targets = resent
    action.save(ok=bool(resent), result=message + (f" ({summarise([j for _, j in resent])})" if resent else ""))
    (messages.success if resent else messages.warning)(request, message)
    return back(request, log_url)


def _resend_all(scope: BoardScope, found: dict[str, dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    """Resend each found delivery through its webhook; a webhook no longer in the
    scope's records is skipped (nothing to send with)."""
    outcomes: dict[str, list[tuple[str, str]]] = {"resent": [], "queued": [], "failed": []}
    hooks: dict[str, Webhook | None] = {}
    for key, delivered in found.items():
        name, delivery_id = key.split("\n", 1)
        if name not in hooks:
            try:
                hooks[name] = engine_webhook(scope, webhook_or_404(scope, name))
            except Http404:
                hooks[name] = None
        hook = hooks[name]
        outcome = _resend(hook, delivery_id, delivered) if hook is not None else "failed"
        outcomes[outcome].append((delivery_queue_name(name), delivery_id))
    return outcomes
