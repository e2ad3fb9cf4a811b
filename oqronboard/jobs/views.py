"""A job's actions (cancel, promote now, retry, delete), every one through the engine's
queue API and audited, and what the shell's job pages (:mod:`oqronboard.views.jobs`)
read of oqron_jobs: a queue's counts, a job or 404, a job's page context."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base import conf
from oqronboard.base.audit import Action
from oqronboard.base.pages import BoardRequest, back, board_view, refresh_others, scope_of
from oqronboard.base.roles import operator_required
from oqronboard.base.scope import BoardScope
from oqronboard.base.shared import shared_at
from oqronboard.base.templating import render
from oqronkit import JobNotFound, OqronError
from oqronkit.clock import now_ms
from oqronkit.namespaces import is_dead_letters

from .forms import check_queue
from .queries import get_job, pending_counts

JOB_ACTIONS = ("cancel", "promote", "retry", "delete")


def queue_counts(request: BoardRequest, queue: str) -> dict:
    """:func:`read_queue_counts`, shared by every viewer for a few seconds
    (``OQRON_BOARD_CACHE_SECONDS``; afresh after any action): they count every job of the
    queue. ``counts_at`` and ``shared_seconds`` let the page say so."""
    scope = scope_of(request)
    found, at = shared_at(scope, f"queue-counts:{queue}", lambda: read_queue_counts(scope, queue))
    return {**found, "counts_at": at, "shared_seconds": conf.cache_seconds()}


def read_queue_counts(scope: BoardScope, queue: str) -> dict:
    """Waiting, delayed and active from the hot plane; the statuses it does not count
    from the durable plane, capped (two indexed queries)."""
    counts: dict[str, object] = {}
    problem = ""
    try:
        depth = scope.engine.hot.depths(queue, now_ms())
        counts.update(waiting=depth.ready, delayed=depth.delayed, active=depth.active)
    except OqronError as exc:
        problem = str(exc)
    for status, (count, more) in pending_counts(scope, queue).items():
        counts[status] = f"{count}+" if more else count
    return {"counts": counts, "hot_problem": problem}


def job_or_404(request: BoardRequest, queue: str, job_id: str):
    check_queue(queue)
    record = get_job(scope_of(request), queue, job_id)
    if record is None:
        raise Http404("No such job in this queue, project and environment (it may have completed).")
    return record


def job_context(record, queue: str, runs: list, audit: list) -> dict:
    value = record.value if isinstance(record.value, dict) else {}
    dead = is_dead_letters(record.namespace)
    status = "dead" if dead else value.get("status")
    return {
        "job": value, "job_id": record.id, "queue": queue, "dead": dead, "status": status, "runs": runs,
        "audit": audit, "can_cancel": not dead, "can_promote": status == "delayed", "can_retry": dead,
        "can_delete": dead,
    }


@require_POST
@board_view
@operator_required
def job_action(request: BoardRequest, queue: str, job_id: str, action: str) -> HttpResponse:
    """Cancel, promote, retry or delete (confirmed) one job, through the queue API;
    audited. htmx gets the job's action panel back and every other panel refreshes."""
    if action not in JOB_ACTIONS:
        raise Http404("Unknown job action.")
    scope = scope_of(request)
    job_or_404(request, queue, job_id)
    detail_url = reverse("oqronboard:job", args=[queue, job_id])
    if action == "delete" and request.POST.get("confirmed") != "yes":
        return render(request, "oqronboard/jobs/confirm_delete.html", {
            "count": 1, "pairs": [(queue, job_id)], "action_url": request.path, "back_url": detail_url,
        })
    controller = scope.queue(queue)
    audit = Action(scope, request.user.get_username(), action, queue=queue, targets=[(queue, job_id)])
    ok, message = perform_job_action(controller, action, job_id, request.user.get_username())
    audit.save(ok=ok, result=message)
    if request.htmx:
        fresh = get_job(scope, queue, job_id)
        if fresh is None:
            response = render(request, "oqronboard/jobs/detail.html#gone", {"message": message, "queue": queue})
        else:
            context = job_context(fresh, queue, [], [])
            response = render(request, "oqronboard/jobs/detail.html#actions", {**context, "message": message, "ok": ok})
        return refresh_others(response)
    (messages.success if ok else messages.warning)(request, message)
    if action == "delete" and ok:
        return back(request, reverse("oqronboard:dead-letters"))
    return back(request, detail_url)


def perform_job_action(controller, action: str, job_id: str, user: str) -> tuple[bool, str]:
    """One of :data:`JOB_ACTIONS` on one job through the queue API: (done, message).
    The board's and the JSON API's job actions both call it."""
    try:
        if action == "cancel":
            done = controller.cancel(job_id, reason=f"cancelled by {user} on the board")
            return done, "Cancelled." if done else "Not cancelled: the job already finished."
        if action == "promote":
            done = controller.promote(job_id)
            return done, "Promoted: it runs now." if done else "Not promoted: the job is not delayed."
        if action == "retry":
            job = controller.retry(job_id)
            return True, f"Retried: back in the queue as {job.status}."
        removed = controller.delete_dead([job_id])
        return bool(removed), "Deleted." if removed else "Not deleted: the dead letter is gone."
    except JobNotFound:
        return False, "Nothing to do: the job is not a dead letter any more."
