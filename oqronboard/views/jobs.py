"""The queues, a queue's jobs by status and job detail: pages that read oqron_jobs with
the queues' control records and the jobs' runs and audit entries (several tables, so
above the apps). A job's actions are :mod:`jobs.views`."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse

from oqronboard.base.templating import render
from oqronboard.definitions.queries import audit_entries, queue_control
from oqronboard.job_rows import job_rows_html
from oqronboard.jobs.forms import JobListForm, check_queue
from oqronboard.jobs.queries import JOB_STATUSES, queue_jobs
from oqronboard.jobs.views import job_context, job_or_404, queue_counts
from oqronboard.overview_rows import jobs_rows_html
from oqronboard.runs.queries import job_runs
from oqronkit.namespaces import job_audit_namespace

from .. import overview
from ..base.cursors import decode_cursor
from ..base.filters import clean_or_400
from ..base.pages import BoardRequest, board_view, scope_of
from ..history import DEFAULT_SPAN
from .history_later import history_response, later_panel, wants_history


@board_view
def queues(request: BoardRequest) -> HttpResponse:
    """Every known queue with its depths (the overview's queue table)."""
    shown = overview.build(scope_of(request), charts=False)
    return render(request, "oqronboard/jobs/queues.html",
                  {"overview": shown, "queue_rows": jobs_rows_html(shown.queues)})


@board_view
def queue_jobs_page(request: BoardRequest, queue: str) -> HttpResponse:
    """The jobs of one queue in one status (waiting by default), newest first."""
    check_queue(queue)
    if wants_history(request):
        return history_response(request, "queue", queue, DEFAULT_SPAN, title=f"queue {queue}")
    scope = scope_of(request)
    data = clean_or_400(JobListForm(request.GET))
    cursor = decode_cursor(data["cursor"])
    counts = None
    if data["status"]:
        status = data["status"]
    else:
        # No tab chosen: open the first one with jobs (waiting when all are empty).
        counts = queue_counts(request, queue)
        status = next((s for s in JOB_STATUSES if _has_jobs(counts["counts"].get(s))), "waiting")
    context: dict = {"queue": queue, "status": status, "statuses": JOB_STATUSES}
    if request.htmx and request.GET.get("panel") == "counts":
        return render(request, "oqronboard/jobs/queue.html#counts", {**context, **(counts or queue_counts(request,
                                                                                                          queue))})
    rows, next_cursor = queue_jobs(scope, queue, status, cursor=cursor)
    context.update(rows=rows, job_rows=job_rows_html(queue, rows),
                   next_query=urlencode({"status": status, "cursor": next_cursor}) if next_cursor else "")
    if request.htmx and cursor is not None:
        return render(request, "oqronboard/jobs/queue.html#rows", context)
    context.update(counts or queue_counts(request, queue))
    context["control"] = queue_control(scope, queue) or {"paused": False}
    context["history_later"] = later_panel(request, DEFAULT_SPAN)
    return render(request, "oqronboard/jobs/queue.html", context)


def _has_jobs(count: object) -> bool:
    if isinstance(count, str):  # "1000+"
        return True
    return isinstance(count, int) and count > 0


@board_view
def job_detail(request: BoardRequest, queue: str, job_id: str) -> HttpResponse:
    """A job (or dead letter), its runs newest first, and the operator actions taken on
    it (three queries)."""
    record = job_or_404(request, queue, job_id)
    scope = scope_of(request)
    audit, _ = audit_entries(scope, job_audit_namespace(queue, job_id), limit=20)
    return render(request, "oqronboard/jobs/detail.html", job_context(record, queue, job_runs(scope, job_id), audit))
