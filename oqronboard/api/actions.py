"""The API's actions: the board's own action code (:mod:`jobs.views`, :mod:`jobs.dead`,
:mod:`oqronboard.views.definitions`), operators only, audited with source ``api``.
A POST's fields come as a JSON object or a form. Deletes need ``confirmed: true``, as
the board's confirmation page does."""

from __future__ import annotations

from typing import Any

from django.http import Http404, JsonResponse

from oqronboard.jobs.dead import delete_selected, retry_selected, selection_targets
from oqronboard.jobs.forms import selection
from oqronboard.jobs.queries import get_job
from oqronboard.jobs.views import JOB_ACTIONS, job_or_404, perform_job_action
from oqronkit.clock import now_ms
from oqronkit.namespaces import is_dead_letters

from ..base.audit import Action
from ..base.pages import BadFilter, BoardRequest, scope_of
from ..views.definitions import set_queue_paused
from .base import SOURCE, api_view, body

CONFIRM = "Deleting is for good: send confirmed=true to do it."


def _confirmed(fields: Any) -> bool:
    return str(fields.get("confirmed", "")).lower() in ("true", "yes", "on", "1")


@api_view("POST", operator=True)
def job_action(request: BoardRequest, queue: str, job_id: str, action: str) -> JsonResponse:
    """Cancel, promote, retry (a dead letter) or delete (a dead letter, confirmed) one job."""
    if action not in JOB_ACTIONS:
        raise Http404(f"Unknown job action: use one of {', '.join(JOB_ACTIONS)}.")
    fields = body(request)
    scope = scope_of(request)
    job_or_404(request, queue, job_id)
    if action == "delete" and not _confirmed(fields):
        raise BadFilter(CONFIRM)
    user = request.user.get_username()
    audit = Action(scope, user, action, source=SOURCE, queue=queue, targets=[(queue, job_id)])
    ok, message = perform_job_action(scope.queue(queue), action, job_id, user)
    audit.save(ok=ok, result=message)
    fresh = get_job(scope, queue, job_id)
    status = None if fresh is None else "dead" if is_dead_letters(fresh.namespace) else (fresh.value or {}).get(
        "status")
    # 409: the engine did nothing (the job had moved on); the message says why.
    return JsonResponse({"ok": ok, "message": message, "job_status": status}, status=200 if ok else 409)


def _selection(request: BoardRequest) -> dict:
    fields = body(request).copy()
    if fields.get("mode") == "matching" and not fields.get("rendered_at"):
        # A script has no rendered page: "matching" means what had died by now.
        fields["rendered_at"] = str(now_ms())
    return selection(fields)


@api_view("POST", operator=True)
def dead_retry(request: BoardRequest) -> dict[str, Any]:
    """Retry dead letters: ``ids`` (``queue:job id``, repeated or a list), or
    ``mode=matching`` with the filters queue, fingerprint, q (at most 1,000)."""
    data = _selection(request)
    pairs, retried, message = retry_selected(scope_of(request), request.user.get_username(), data, source=SOURCE)
    return {"ok": retried > 0, "message": message, "matched": len(pairs), "retried": retried}


@api_view("POST", operator=True)
def dead_delete(request: BoardRequest) -> dict[str, Any]:
    """Delete dead letters (the same selection as retry), with ``confirmed=true``."""
    scope = scope_of(request)
    data = _selection(request)
    if not data["confirmed"]:
        raise BadFilter(CONFIRM)
    pairs = selection_targets(scope, data)
    deleted, message = delete_selected(scope, request.user.get_username(), data, pairs, source=SOURCE)
    return {"ok": deleted > 0, "message": message, "matched": len(pairs), "deleted": deleted}


@api_view("POST", operator=True)
def queue_pause(request: BoardRequest, queue: str, paused: bool) -> dict[str, Any]:
    """Pause or resume a queue cluster-wide; 404 for a queue that is nowhere."""
    verb = set_queue_paused(scope_of(request), request.user.get_username(), queue, paused, source=SOURCE)
    return {"ok": True, "message": f"Queue {queue} {verb}.", "paused": paused}
