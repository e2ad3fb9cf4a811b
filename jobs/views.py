"""Job pages: the queues, the jobs of a queue by status, job detail and its actions
(cancel, promote now, retry, delete), every action through the engine's queue API."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from definitions.queries import audit_entries, queue_control
from oqronboard import overview
from oqronboard.base.audit import Action, job_namespace
from oqronboard.base.cursors import decode_cursor
from oqronboard.base.filters import clean_or_400
from oqronboard.base.pages import back, board_view, refresh_others, scope_of
from oqronboard.base.roles import operator_required
from oqronkit import JobNotFound, OqronError
from oqronkit.clock import now_ms
from runs.queries import job_runs

from .forms import JobListForm, check_queue
from .queries import JOB_STATUSES, get_job, pending_counts, queue_jobs

JOB_ACTIONS = ("cancel", "promote", "retry", "delete")


@board_view
def queues(request: HttpRequest) -> HttpResponse:
    """Every known queue with its depths (the overview's queue table)."""
    return render(request, "jobs/queues.html", {"overview": overview.build(scope_of(request))})


@board_view
def queue_jobs_page(request: HttpRequest, queue: str) -> HttpResponse:
    """The jobs of one queue in one status (waiting by default), newest first."""
    check_queue(queue)
    scope = scope_of(request)
    data = clean_or_400(JobListForm(request.GET))
    cursor = decode_cursor(data["cursor"])
    counts = None
    if data["status"]:
        status = data["status"]
    else:
        # No tab chosen: open the first one with jobs (waiting when all are empty).
        counts = _counts(request, queue)
        status = next((s for s in JOB_STATUSES if _nonzero(counts["counts"].get(s))), "waiting")
    context: dict = {"queue": queue, "status": status, "statuses": JOB_STATUSES}
    if request.htmx and request.GET.get("panel") == "counts":
        return render(request, "jobs/queue.html#counts", {**context, **(counts or _counts(request, queue))})
    rows, next_cursor = queue_jobs(scope, queue, status, cursor=cursor)
    context.update(rows=rows, next_query=urlencode({"status": status, "cursor": next_cursor}) if next_cursor else "")
    if request.htmx and cursor is not None:
        return render(request, "jobs/queue.html#rows", context)
    context.update(counts or _counts(request, queue))
    context["control"] = queue_control(scope, queue) or {"paused": False}
    return render(request, "jobs/queue.html", context)


def _counts(request: HttpRequest, queue: str) -> dict:
    """Waiting, delayed and active from the hot plane; the statuses it does not count
    from the durable plane, capped (two indexed queries)."""
    scope = scope_of(request)
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


def _nonzero(count: object) -> bool:
    if isinstance(count, str):  # "1000+"
        return True
    return isinstance(count, int) and count > 0


def _job_or_404(request: HttpRequest, queue: str, job_id: str):
    check_queue(queue)
    record = get_job(scope_of(request), queue, job_id)
    if record is None:
        raise Http404("No such job in this queue, project and environment (it may have completed).")
    return record


@board_view
def job_detail(request: HttpRequest, queue: str, job_id: str) -> HttpResponse:
    """A job (or dead letter), its runs newest first, and the operator actions taken on
    it (three queries)."""
    record = _job_or_404(request, queue, job_id)
    scope = scope_of(request)
    audit, _ = audit_entries(scope, job_namespace(queue, job_id), limit=20)
    return render(request, "jobs/detail.html", _job_context(record, queue, job_runs(scope, job_id), audit))


def _job_context(record, queue: str, runs: list, audit: list) -> dict:
    value = record.value if isinstance(record.value, dict) else {}
    dead = record.namespace.startswith("queue_dlq:")
    status = "dead" if dead else value.get("status")
    return {
        "job": value, "job_id": record.id, "queue": queue, "dead": dead, "status": status, "runs": runs,
        "audit": audit, "can_cancel": not dead, "can_promote": status == "delayed", "can_retry": dead,
        "can_delete": dead,
    }


@require_POST
@board_view
@operator_required
def job_action(request: HttpRequest, queue: str, job_id: str, action: str) -> HttpResponse:
    """Cancel, promote, retry or delete (confirmed) one job, through the queue API;
    audited. htmx gets the job's action panel back and every other panel refreshes."""
    if action not in JOB_ACTIONS:
        raise Http404("Unknown job action.")
    scope = scope_of(request)
    _job_or_404(request, queue, job_id)
    detail_url = reverse("job", args=[queue, job_id])
    if action == "delete" and request.POST.get("confirmed") != "yes":
        return render(request, "jobs/confirm_delete.html", {
            "count": 1, "pairs": [(queue, job_id)], "action_url": request.path, "back_url": detail_url,
        })
    controller = scope.queue(queue)
    audit = Action(scope, request.user.get_username(), action, queue=queue, targets=[(queue, job_id)])
    ok, message = _perform(controller, action, job_id, request.user.get_username())
    audit.save(ok=ok, result=message)
    if request.htmx:
        fresh = get_job(scope, queue, job_id)
        if fresh is None:
            response = render(request, "jobs/detail.html#gone", {"message": message, "queue": queue})
        else:
            context = _job_context(fresh, queue, [], [])
            response = render(request, "jobs/detail.html#actions", {**context, "message": message, "ok": ok})
        return refresh_others(response)
    (messages.success if ok else messages.warning)(request, message)
    if action == "delete" and ok:
        return back(request, reverse("dead-letters"))
    return back(request, detail_url)


def _perform(controller, action: str, job_id: str, user: str) -> tuple[bool, str]:
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
