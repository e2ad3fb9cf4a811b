"""Run detail: one run in full, every run of its job side by side, and its job's state
while the job is still in oqron_jobs (it reads two tables, so it lives above the apps)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse

from oqronboard.base.templating import render
from oqronboard.jobs.queries import get_job
from oqronboard.runs.models import RunRecord
from oqronboard.runs.queries import QUEUE_MODULES, job_runs
from oqronboard.runs.views import live_context, run_or_404
from oqronkit.namespaces import is_dead_letters

from ..base.pages import BoardRequest, board_view, scope_of


@board_view
def run_detail(request: BoardRequest, run_id: str) -> HttpResponse:
    """One run in full, with every run of its job side by side (three queries)."""
    run = run_or_404(request, run_id)
    context = run_detail_context(request, run)
    context.update(live_context(request, run.id, context["run"]))
    return render(request, "oqronboard/runs/detail.html", context)


def run_detail_context(request: BoardRequest, run: RunRecord) -> dict[str, Any]:
    """A run's value, its job's runs and status (the page's and the JSON API's)."""
    scope = scope_of(request)
    value = run.value if isinstance(run.value, dict) else {}
    job_id = value.get("jobId")
    siblings = job_runs(scope, job_id) if isinstance(job_id, str) and job_id else []
    job = None
    queue = value.get("name") if value.get("module") in QUEUE_MODULES else None
    if isinstance(job_id, str) and job_id and isinstance(queue, str) and queue:
        job = get_job(scope, queue, job_id)
    job_status = None
    if job is not None:
        job_status = "dead" if is_dead_letters(job.namespace) else (job.value or {}).get("status")
    return {"run": value, "run_id": run.id, "siblings": siblings, "job_status": job_status, "queue": queue}
